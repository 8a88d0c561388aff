"""The benchmark's ceiling binder against a real kube-apiserver: with ``--events`` every binding is followed
by one Scheduled event, over the same few kept-alive connections."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from e2e.cluster.cluster import LocalCluster, create_nodes
from e2e.perf.ceiling import Binder

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


def _pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"c-{i}", "namespace": "default"},
            "spec": {"schedulerName": NAME, "containers": [{"name": "c", "image": "pause"}]}}


def test_events_follow_each_binding_on_kept_alive_connections(cluster: LocalCluster) -> None:
    api = _api(cluster)
    create_nodes(str(cluster.kubeconfig), 3)
    core = client.CoreV1Api(api)
    pods = [core.create_namespaced_pod("default", _pod(i)) for i in range(12)]
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
