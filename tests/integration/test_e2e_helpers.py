"""The e2e helpers' reads against the real API server."""

from __future__ import annotations

from kubernetes import client

from e2e.kube import events_for
from scheduler.kube.client import RawApi


def test_events_for_reads_past_core_events_without_event_time(api: client.ApiClient, ns: str) -> None:
    """The node controller writes NodeNotReady about pods as core/v1 events with no eventTime; the client's
    events.k8s.io model cannot hold one, so a listing that included it failed the test that read it."""
    raw = RawApi(api)  # plain JSON: the generated client would rewrite eventTime in a format the server rejects
    raw.request("POST", f"/api/v1/namespaces/{ns}/events", {
        "metadata": {"name": "p.legacy"}, "involvedObject": {"kind": "Pod", "namespace": ns, "name": "p"},
        "reason": "NodeNotReady", "message": "Node is not ready", "type": "Warning", "source": {"component": "nc"},
    })  # fmt: skip
    raw.request("POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", {
        "metadata": {"name": "p.sched"}, "eventTime": "2026-01-01T00:00:00.000000Z", "reason": "Scheduled",
        "action": "Binding", "type": "Normal", "note": "Successfully assigned", "reportingController": "t",
        "reportingInstance": "t-1", "regarding": {"kind": "Pod", "namespace": ns, "name": "p"},
    })  # fmt: skip
    assert [e.note for e in events_for(api, ns, "p", "Scheduled")] == ["Successfully assigned"]
    assert events_for(api, ns, "p", "FailedScheduling") == []
