"""Issue 15 against a real control plane of its own (this module stops and restarts its API server):
idempotent Binding, conditional PodScheduled writes, one-line API errors, create-then-delete pods
without false errors, and nodes deleted while the API server was down leaving the cache on the relist."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from e2e.cluster.cluster import LocalCluster, create_nodes
from e2e.kube import create_namespace, gone, pod_manifest, scheduled_condition, wait_for
from e2e.process import start_scheduler, stop_scheduler
from scheduler.edge import BoundElsewhereError
from scheduler.kube.binder import ApiBinder
from scheduler.kube.client import ApiWriter, RawApi
from scheduler.kube.ratelimit import TokenBucket
from scheduler.kube.recorder import ApiEventSink
from scheduler.model.pod import pod_from_api

NOBODY = "faults-nobody"


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path_factory.mktemp("faults") / "cluster")
    c.up()
    try:
        create_nodes(str(c.kubeconfig), 2, prefix="keep")
        create_nodes(str(c.kubeconfig), 2, prefix="doomed", labels={"doomed": "yes"})
        yield c
    finally:
        c.down()


@pytest.fixture(scope="module")
def core(own: LocalCluster) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(own.kubeconfig)))


@pytest.fixture(scope="module")
def writer(own: LocalCluster) -> ApiWriter:
    return ApiWriter(RawApi(config.new_client_from_config(config_file=str(own.kubeconfig))), TokenBucket(50, 100))


@pytest.fixture(scope="module")
def scheduler_log(own: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    log = tmp_path_factory.mktemp("faults-sched") / "scheduler.log"
    proc = start_scheduler(own.kubeconfig, log, ["--metrics-port", "0"])
    try:
        yield log
    finally:
        stop_scheduler(proc)


@pytest.fixture
def ns(core: client.CoreV1Api) -> str:
    return create_namespace(core, "faults")


def unscheduled(core: client.CoreV1Api, ns: str, name: str) -> object:
    core.create_namespaced_pod(ns, pod_manifest(name, scheduler_name=NOBODY))
    return pod_from_api(json.loads(core.read_namespaced_pod(name, ns, _preload_content=False).data))


def test_binding_is_idempotent_and_names_the_winner(core: client.CoreV1Api, writer: ApiWriter, ns: str) -> None:
    pod = unscheduled(core, ns, "p")
    binder = ApiBinder(writer)
    binder.bind(pod, "keep-0")  # type: ignore[arg-type]
    binder.bind(pod, "keep-0")  # type: ignore[arg-type]  # the retry of a Binding that was committed: success
    with pytest.raises(BoundElsewhereError) as elsewhere:
        binder.bind(pod, "keep-1")  # type: ignore[arg-type]
    assert elsewhere.value.node == "keep-0"
    core.delete_namespaced_pod("p", ns, grace_period_seconds=0)
    wait_for(lambda: gone(core, ns, "p"), 30, what="p deleted")
    unscheduled(core, ns, "p")  # same name, new uid: the old pod is gone
    with pytest.raises(client.ApiException) as recreated:
        binder.bind(pod, "keep-0")  # type: ignore[arg-type]
    assert recreated.value.status == 404


def test_api_errors_are_one_clean_line(writer: ApiWriter, ns: str) -> None:
    with pytest.raises(client.ApiException) as missing:
        writer.patch_pod_status(ns, "nope", {"status": {}})
    assert str(missing.value) == 'pods "nope" not found'


def test_a_late_condition_write_does_not_contradict_a_binding(
    core: client.CoreV1Api, writer: ApiWriter, ns: str
) -> None:
    bound, pending = unscheduled(core, ns, "bound"), unscheduled(core, ns, "pending")
    ApiBinder(writer).bind(bound, "keep-0")  # type: ignore[arg-type]
    core.patch_namespaced_pod("pending", ns, {"metadata": {"labels": {"touched": "yes"}}})  # a newer version
    sink = ApiEventSink(writer, workers=1)
    for p in (bound, pending):  # both as the scheduler last saw them: unbound, older resourceVersions
        sink.pod_condition(p, "SchedulerError", "running Bind plugin: boom", None)  # type: ignore[arg-type]
    sink.close()
    for t in sink._threads:
        t.join(30)
    assert scheduled_condition(core, ns, "bound") is None or scheduled_condition(core, ns, "bound").status == "True"
    cond = scheduled_condition(core, ns, "pending")
    assert (cond.status, cond.reason) == ("False", "SchedulerError")


def test_pods_deleted_before_binding_leave_no_false_errors(
    core: client.CoreV1Api, ns: str, scheduler_log: Path
) -> None:
    for i in range(40):
        core.create_namespaced_pod(ns, pod_manifest(f"brief-{i}"))
        core.delete_namespaced_pod(f"brief-{i}", ns, grace_period_seconds=0)
    core.create_namespaced_pod(ns, pod_manifest("marker"))
    wait_for(lambda: core.read_namespaced_pod("marker", ns).spec.node_name, 60, what="marker bound")
    time.sleep(2)
    errors = [line for line in scheduler_log.read_text().splitlines() if "scheduling error" in line and ns in line]
    assert errors == []
    events = client.EventsV1Api(core.api_client).list_namespaced_event(ns).items
    assert [e.regarding.name for e in events if e.reason == "FailedScheduling"] == []


def test_nodes_deleted_while_the_api_server_was_down_leave_the_cache(
    own: LocalCluster, core: client.CoreV1Api, ns: str, scheduler_log: Path
) -> None:
    core.create_namespaced_pod(ns, pod_manifest("before", node_selector={"doomed": "yes"}))
    wait_for(lambda: core.read_namespaced_pod("before", ns).spec.node_name, 60, what="before bound")
    own.kill("kube-apiserver")
    for n in ("doomed-0", "doomed-1"):
        own.etcd_delete(f"/registry/minions/{n}")  # no watch can report these deletions
    own.restart("kube-apiserver")
    start = time.monotonic()
    wait_for(lambda: "relist: removed" in scheduler_log.read_text(), 60, what="the relist reconciliation")
    core.create_namespaced_pod(ns, pod_manifest("after", node_selector={"doomed": "yes"}))
    cond = wait_for(lambda: scheduled_condition(core, ns, "after"), 60, what="after attempted")
    assert core.read_namespaced_pod("after", ns).spec.node_name is None
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    assert cond.message.startswith("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector")
    assert time.monotonic() - start < 60  # far below the 300 s periodic resync
