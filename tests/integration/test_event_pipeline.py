"""Pipelined Event writes (HTTP/1.1 pipelining over one TLS connection) against the real 1.37.2 API server:
it answers every request in order, errors stay with their request, and the event sink writes a burst of
Scheduled events exactly once each."""

from __future__ import annotations

from typing import Any

import orjson
from kubernetes import client

from scheduler.kube.client import ApiError, ApiWriter, RawApi
from scheduler.kube.ratelimit import TokenBucket
from scheduler.kube.recorder import ApiEventSink
from scheduler.model.apierrors import ConflictError
from scheduler.model.pod import pod_from_api


def _event(ns: str, name: str, note: str = "pipelined") -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "it", "reportingInstance": "it-1",
        "action": "Binding", "reason": "Scheduled", "type": "Normal", "note": note,
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name.split(".")[0]},
    }  # fmt: skip


def _event_names(api: client.ApiClient, ns: str) -> list[str]:
    return sorted(e.metadata.name for e in client.EventsV1Api(api).list_namespaced_event(ns).items)


def test_the_api_server_answers_pipelined_requests_in_order(api: client.ApiClient, ns: str) -> None:
    raw = RawApi(api)
    path = f"/apis/events.k8s.io/v1/namespaces/{ns}/events"
    names = [f"p{i}.{i:x}" for i in range(24)]
    answers = raw.pipeline([("POST", path, _event(ns, n), "application/json") for n in names])
    assert [orjson.loads(a)["metadata"]["name"] for a in answers if isinstance(a, bytes)] == names
    assert len(raw._direct._idle) == 1  # type: ignore[union-attr]  # one connection, kept for the next
    # The same names again (409 each), an invalid one between them (422): each error stays with its request.
    bad = _event(ns, "bad.1")
    bad["type"] = "Sideways"
    answers = raw.pipeline([("POST", path, b, "application/json") for b in (_event(ns, names[0]), bad,
                                                                              _event(ns, "fresh.1"))])
    assert isinstance(answers[0], ConflictError)
    assert isinstance(answers[1], ApiError) and answers[1].status == 422
    assert isinstance(answers[2], bytes) and orjson.loads(answers[2])["metadata"]["name"] == "fresh.1"
    assert _event_names(api, ns) == sorted([*names, "fresh.1"])


def test_create_events_reports_each_final_error_and_writes_the_rest(api: client.ApiClient, ns: str) -> None:
    writer = ApiWriter(RawApi(api), TokenBucket(0, 1))
    assert writer.create_events([(ns, _event(ns, "a.1")), (ns, _event(ns, "b.1"))]) == [None, None]
    failures = writer.create_events([(ns, _event(ns, "a.1")), (ns, _event(ns, "c.1"))])
    assert isinstance(failures[0], ConflictError) and failures[1] is None
    assert _event_names(api, ns) == ["a.1", "b.1", "c.1"]


def test_a_burst_of_scheduled_events_is_written_once_each(api: client.ApiClient, ns: str) -> None:
    """400 events at once through the live sink: its writers batch what queued and pipeline it."""
    sink = ApiEventSink(ApiWriter(RawApi(api), TokenBucket(0, 1)))
    pods = [pod_from_api({"metadata": {"name": f"p{i}", "namespace": ns, "uid": f"u{i}", "resourceVersion": "1"},
                          "spec": {}}) for i in range(400)]  # fmt: skip
    for p in pods:
        sink.event(p, "Normal", "Scheduled", "Binding", f"Successfully assigned {ns}/{p.name} to n1", "py-scheduler")
    sink.close()
    sink.join(60)
    events = client.EventsV1Api(api).list_namespaced_event(ns).items
    assert sink.dropped == 0
    assert sorted(e.regarding.name for e in events) == sorted(p.name for p in pods)
    assert {(e.reason, e.action, e.type, e.reporting_controller) for e in events} == {
        ("Scheduled", "Binding", "Normal", "py-scheduler")}
    assert all(e.note == f"Successfully assigned {ns}/{e.regarding.name} to n1" for e in events)
    assert all(s.name for s in sink._series.values())  # every series knows its Event: repeats would patch it
