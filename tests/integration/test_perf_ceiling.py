"""The benchmark's ceiling binders against a real kube-apiserver: with ``--events`` every binding is followed
by one Scheduled event, over the same few kept-alive connections; the Go binder (``ceiling-go``) binds every
pod of its schedulerName, listed or watched, and writes one event per binding."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
from kubernetes import client, config

from e2e.cluster.cluster import LocalCluster, build_binaries, create_nodes
from e2e.perf.ceiling import Binder
from e2e.perf.schedulers import GO_CEILING_BINARY
from scheduler.testing import make_pod

NAME = "ceiling-test"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path_factory.mktemp("ceiling") / "cluster")
    c.up(lean=True)
    try:
        yield c
    finally:
        c.down()


def _api(c: LocalCluster) -> client.ApiClient:
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(c.kubeconfig), client_configuration=cfg)
    return client.ApiClient(cfg)


def test_events_follow_each_binding_on_kept_alive_connections(cluster: LocalCluster) -> None:
    api = _api(cluster)
    create_nodes(str(cluster.kubeconfig), 3)
    core = client.CoreV1Api(api)
    pods = [core.create_namespaced_pod("default", make_pod().name(f"c-{i}").scheduler_name(NAME).no_uid().api())
            for i in range(12)]
    binder = Binder(_api(cluster), NAME, qps=0, burst=1, workers=2, events=True)
    assert binder.load_nodes() == 3
    for p in pods:
        binder.offer(api.sanitize_for_serialization(p))
    binder.pool.shutdown(wait=True)
    assert (binder.bound, binder.failed) == (12, 0)

    deadline = time.monotonic() + 10
    while True:
        events = client.EventsV1Api(api).list_namespaced_event("default").items
        scheduled = [e for e in events if e.reason == "Scheduled" and e.reporting_controller == NAME]
        if len(scheduled) >= 12 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    by_pod = {e.regarding.uid: e for e in scheduled}
    assert set(by_pod) == {p.metadata.uid for p in pods} and len(scheduled) == 12
    for p in pods:
        node = core.read_namespaced_pod(p.metadata.name, "default").spec.node_name
        assert by_pod[p.metadata.uid].note == f"Successfully assigned default/{p.metadata.name} to {node}"
    # Kept alive: an event sent on a connection still holding its binding's response failed and reconnected.
    assert binder.connections_opened() <= 3


GO_NAME = "ceiling-go-test"


def test_go_binder_binds_every_pod_of_its_name_and_writes_one_event_each(cluster: LocalCluster) -> None:
    """The Go ceiling (e2e/cluster/gobin/cmd/ceiling-binder) with --events: pods created before it started
    (its LIST) and after (its WATCH) are all bound, round-robin, each with one Scheduled event as
    kube-scheduler writes it; a pod of another schedulerName is left alone. On SIGTERM it prints the
    Python ceiling's exit line."""
    exe = build_binaries(build=True) / GO_CEILING_BINARY
    api = _api(cluster)
    core = client.CoreV1Api(api)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": GO_NAME}})
    if len(core.list_node().items) < 3:  # run on its own, without the test above
        create_nodes(str(cluster.kubeconfig), 3, prefix="go")
    nodes = {n.metadata.name for n in core.list_node().items}

    before = [core.create_namespaced_pod(GO_NAME, make_pod().name(f"b-{i}").namespace(GO_NAME).scheduler_name(GO_NAME)
                                         .no_uid().api()) for i in range(6)]
    other = core.create_namespaced_pod(GO_NAME, make_pod().name("other").namespace(GO_NAME)
                                       .scheduler_name("someone-else").no_uid().api())
    cmd = [str(exe), "--kubeconfig", str(cluster.kubeconfig), "--scheduler-name", GO_NAME, "--qps", "0",
           "--workers", "4", "--events"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        first = ""
        while not first.startswith("ceiling:"):  # klog's lines, if any, come first
            first = proc.stdout.readline()
            assert first, "the binder exited before listing the nodes"
        assert first.startswith(f"ceiling: {len(nodes)} nodes, scheduler name {GO_NAME}")
        after = [core.create_namespaced_pod(GO_NAME, make_pod().name(f"a-{i}").namespace(GO_NAME)
                                            .scheduler_name(GO_NAME).no_uid().api()) for i in range(6)]
        pods = before + after
        deadline = time.monotonic() + 60
        while True:
            placed = {p.metadata.name: p.spec.node_name for p in core.list_namespaced_pod(GO_NAME).items}
            scheduled = [e for e in client.EventsV1Api(api).list_namespaced_event(GO_NAME).items
                         if e.reason == "Scheduled" and e.reporting_controller == GO_NAME]  # fmt: skip
            done = all(placed.get(p.metadata.name) for p in pods) and len(scheduled) >= len(pods)
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    (last,) = [line for line in out.splitlines() if line.startswith("ceiling: bound")]
    m = re.fullmatch(r"ceiling: bound (\d+), failed (\d+), connections opened (\d+)", last)
    assert m and (int(m[1]), int(m[2])) == (len(pods), 0) and 1 <= int(m[3]) <= 3, last  # HTTP/2: one, shared
    assert proc.returncode == 0
    assert placed[other.metadata.name] is None
    assert {placed[p.metadata.name] for p in pods} == nodes  # round-robin: 12 pods over every node
    by_pod = {e.regarding.uid: e for e in scheduled}
    assert len(scheduled) == len(pods) and set(by_pod) == {p.metadata.uid for p in pods}
    for p in pods:
        e = by_pod[p.metadata.uid]
        assert e.note == f"Successfully assigned {GO_NAME}/{p.metadata.name} to {placed[p.metadata.name]}"
        assert (e.action, e.type, e.regarding.kind) == ("Binding", "Normal", "Pod")
