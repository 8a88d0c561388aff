"""The thin pod list-watch (scheduler.kube.podstream.PodStream) against the real API server, and the scheduler
under either pod watch (``run --pod-watch stream|kopf``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from kubernetes import client

from e2e.cluster.cluster import LocalCluster
from e2e.kube import gone, node_of, pod_manifest, scheduled_condition, wait_for
from scheduler.kube import podstream
from scheduler.kube.client import METADATA_LIST, RawApi, list_all, load_api_client
from scheduler.kube.kinds import NON_TERMINAL_PODS
from scheduler.kube.podstream import PodStream, wait_synced
from scheduler.kube.transform import PodLineDecoder, loads_trimmed, managed_fields_span, trim
from scheduler.kube.watchhttp import open_stream
from tests.integration.conftest import SchedulerProc


def test_stream_delivers_list_watch_and_synthesizes_missed_deletions(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines: list[bytes] = []
    decode = PodLineDecoder.loads
    monkeypatch.setattr(PodLineDecoder, "loads", lambda self, line: (lines.append(line), decode(self, line))[1])
    core.create_namespaced_pod(ns, pod_manifest("before", scheduler_name="nobody"))
    events: list[tuple[str, str]] = []

    def on_event(type_: str, obj: Any) -> None:
        if obj["metadata"].get("namespace") == ns:
            events.append((type_, obj["metadata"]["name"]))

    api = RawApi(load_api_client(str(cluster.kubeconfig)))
    stream = PodStream(api, on_event, field_selector="status.phase!=Succeeded,status.phase!=Failed")
    stream.start()
    try:
        assert wait_synced(stream, 30)
        assert ("ADDED", "before") in events
        core.create_namespaced_pod(ns, pod_manifest("during", scheduler_name="nobody"))
        wait_for(lambda: ("ADDED", "during") in events, 30, what="watch ADDED")
        core.delete_namespaced_pod("during", ns, grace_period_seconds=0)
        wait_for(lambda: ("DELETED", "during") in events, 30, what="watch DELETED")
    finally:
        stream.stop()
    # The API server's own watch lines take the byte cut of managedFields and the spec's lookup by its bytes, and
    # they leave what a whole decode and trim leave.
    ours = [line for line in lines if f'"namespace":"{ns}"'.encode() in line]
    assert len(ours) >= 2
    for line in ours:
        assert managed_fields_span(line) is not None, line
        whole = orjson.loads(line)
        trim(whole["object"])
        decoder = PodLineDecoder()
        assert loads_trimmed(line) == whole == decoder.loads(line) == decoder.loads(line)
        assert len(decoder) == 1, line

    # A relist after a watch outage: a pod deleted meanwhile comes out as DELETED.
    events.clear()
    core.delete_namespaced_pod("before", ns, grace_period_seconds=0)
    wait_for(lambda: not [p for p in core.list_namespaced_pod(ns).items if p.metadata.name == "before"], 30,
             what="pod gone")

    stream.relist()
    assert ("DELETED", "before") in events


def test_watches_the_server_ends_resume_without_a_relist_or_a_lost_event(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API server ends each watch after timeoutSeconds (1 s here); pods created across those ends,
    some while no watch is open, all arrive, from one list and several watches resumed at their last
    event's resourceVersion."""
    watches: list[str] = []

    def counted(pool: Any, path: str, *args: Any) -> Any:
        watches.append(path)
        return open_stream(pool, path, *args)

    monkeypatch.setattr(podstream, "open_stream", counted)
    added: list[str] = []
    api = RawApi(load_api_client(str(cluster.kubeconfig)))
    stream = PodStream(api, lambda t, o: added.append(o["metadata"]["name"])
                       if t == "ADDED" and o["metadata"].get("namespace") == ns else None, watch_timeout=1)
    stream.start()
    try:
        assert wait_synced(stream, 30)
        names = [f"w{i}" for i in range(16)]
        for name in names:
            core.create_namespaced_pod(ns, pod_manifest(name, scheduler_name="nobody"))
            time.sleep(0.25)  # pacing only: spreads the creations over several watches
        wait_for(lambda: sorted(added) == sorted(names), 30, what="every pod's ADDED event")
        wait_for(lambda: len(watches) >= 3, 30, what="the server ending watches")
    finally:
        stream.stop()
    assert stream.relists == 1
    assert len(added) == len(names)  # nothing delivered twice either: each watch resumed where the last ended


@pytest.mark.parametrize("watch", ["stream", "kopf"])
def test_scheduler_decides_alike_with_either_pod_watch(
    core: client.CoreV1Api, ns: str, start_py_scheduler: Callable[..., SchedulerProc], watch: str
) -> None:
    """``run --pod-watch``: the default stream and kopf's @on.event deliver the same pods, so the scheduler
    decides the same: the schedulable pods bound, one that fits nowhere reported Unschedulable, and a pod
    deleted before it could be scheduled forgotten (the next pod still binds)."""
    name = f"{watch}-test"
    start_py_scheduler("--scheduler-name", name, "--pod-watch", watch, name=watch)
    names = [f"s{i}" for i in range(20)]
    for n in names:
        core.create_namespaced_pod(ns, pod_manifest(n, scheduler_name=name))
    core.create_namespaced_pod(ns, pod_manifest("nowhere", scheduler_name=name, node_selector={"no-such": "label"}))
    wait_for(lambda: all(node_of(core, ns, n) for n in names), 60, what=f"pods bound via the {watch} watch")
    cond = wait_for(lambda: (c := scheduled_condition(core, ns, "nowhere")) is not None and c.reason == "Unschedulable"
                    and c, 60, what="the unschedulable pod reported")
    assert cond.status == "False" and node_of(core, ns, "nowhere") is None
    core.delete_namespaced_pod("nowhere", ns, grace_period_seconds=0)
    wait_for(lambda: gone(core, ns, "nowhere"), 30, what="the unschedulable pod deleted")
    core.create_namespaced_pod(ns, pod_manifest("after", scheduler_name=name))
    wait_for(lambda: node_of(core, ns, "after"), 60, what=f"a pod after a deletion bound via the {watch} watch")


def test_a_metadata_list_names_the_non_terminal_pods_without_their_specs(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str
) -> None:
    """The relist's LIST (scheduler.kube.sync.reconcile): the API server answers the field selector with
    PartialObjectMetadata items, whose UIDs are all the reconciliation reads."""
    created = core.create_namespaced_pod(ns, pod_manifest("meta", scheduler_name="nobody"))
    api = RawApi(load_api_client(str(cluster.kubeconfig)))
    items = [i for i in list_all(api, "/api/v1/pods", NON_TERMINAL_PODS, limit=2, accept=METADATA_LIST)
             if i["metadata"].get("namespace") == ns]
    assert [i["metadata"]["uid"] for i in items] == [created.metadata.uid]
    assert items[0]["kind"] == "PartialObjectMetadata" and "spec" not in items[0] and "status" not in items[0]
    assert "managedFields" not in items[0]["metadata"]
