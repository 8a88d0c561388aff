"""HTTP extenders on the real control plane: a py-scheduler whose configuration lists a real extender
(tests/extender_server.py, served from this test process) for filter, prioritize, bind and preempt, an
ignorable extender that answers 500, and one that times out for the pods whose resource it manages.

The extender binds pods itself (a Binding POST with the admin credentials, as a real binding extender
would), so a pod bound at all proves the bind verb replaced DefaultBinder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from e2e.cluster.cluster import LocalCluster
from e2e.kube import events_for, gone, node_of, pod_manifest, wait_for
from tests.extender_server import ExtenderServer
from tests.integration.conftest import SchedulerProc, create_priority_classes, temporary_nodes

SCHED = "py-ext"
MEMBER = {"it-ext/member": "yes"}
SLOW = "example.com/slow"
CLASSES = (("it-ext-low", 10), ("it-ext-high", 1000))


@pytest.fixture(scope="module")
def extender(api: client.ApiClient) -> Iterator[ExtenderServer]:
    core = client.CoreV1Api(api)

    def bind(body: dict[str, Any]) -> str:
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": body["PodName"], "namespace": body["PodNamespace"], "uid": body["PodUID"]},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": body["Node"]}}
        try:
            core.create_namespaced_binding(body["PodNamespace"], binding, _preload_content=False)
        except client.ApiException as exc:
            return f"binding rejected: {exc.status} {exc.reason}"
        return ""

    server = ExtenderServer().start()
    server.behaviour.bind = bind
    server.behaviour.slow_seconds = 3.0
    yield server
    server.stop()


@pytest.fixture(scope="module")
def nodes(cluster: LocalCluster) -> Iterator[list[str]]:
    with temporary_nodes(str(cluster.kubeconfig), 3, "ext", cpu="1", labels=MEMBER) as names:
        yield names


@pytest.fixture(scope="module")
def ext_scheduler(extender: ExtenderServer, nodes: list[str], workdir: Path, api: client.ApiClient,
                  start_py_scheduler: Callable[..., SchedulerProc]) -> SchedulerProc:
    create_priority_classes(api, CLASSES)
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": SCHED}],
        "extenders": [
            {"urlPrefix": f"{extender.url}/ok", "filterVerb": "filter", "prioritizeVerb": "prioritize",
             "weight": 5, "bindVerb": "bind", "preemptVerb": "preempt"},
            {"urlPrefix": f"{extender.url}/broken", "filterVerb": "filter", "ignorable": True},
            {"urlPrefix": f"{extender.url}/slow", "filterVerb": "filter", "httpTimeout": "500ms",
             "managedResources": [{"name": SLOW, "ignoredByScheduler": True}]},
        ],
    }
    path = workdir / "extenders.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = start_py_scheduler("--config", str(path), name="extenders")
    wait_for(lambda: "py-scheduler started" in proc.log_text(), 60, what="extender scheduler initial sync")
    return proc


def member_pod(name: str, cpu: str = "100m", priority_class: str | None = None, **extra: str) -> dict[str, Any]:
    manifest = pod_manifest(name, scheduler_name=SCHED, cpu=cpu, node_selector=MEMBER, priority_class=priority_class)
    if extra:
        resources = manifest["spec"]["containers"][0]["resources"]
        resources["requests"].update(extra)
        resources["limits"] = dict(extra)
    return manifest


def failed_message(api: client.ApiClient, ns: str, name: str) -> str:
    events = wait_for(lambda: events_for(api, ns, name, "FailedScheduling"), 30, what=f"{name} FailedScheduling")
    return str(events[-1].note)


def test_filter_prioritize_and_bind_through_the_extender(
    core: client.CoreV1Api, api: client.ApiClient, ns: str, nodes: list[str], extender: ExtenderServer,
    ext_scheduler: SchedulerProc,
) -> None:
    first, second, third = nodes
    extender.behaviour.failed = {first: "extender: node is drained"}
    extender.behaviour.scores = {second: 2, third: 9}
    core.create_namespaced_pod(ns, member_pod("p"))
    assert wait_for(lambda: node_of(core, ns, "p"), 60, what="p bound") == third
    binding = next(b for b in extender.bindings if b["PodName"] == "p")
    assert binding["PodNamespace"] == ns and binding["Node"] == third
    # The Scheduled event is written after the binding, by the event writers (upstream's recorder too): wait.
    wait_for(lambda: events_for(api, ns, "p", "Scheduled"), 30, what="p's Scheduled event")
    # The filter saw only the nodes the in-tree filters passed (the node selector excludes the others).
    pod_calls = [c for c in extender.calls("filter") if c["Pod"]["metadata"]["name"] == "p"]
    assert sorted(n["metadata"]["name"] for n in pod_calls[0]["Nodes"]["items"]) == sorted(nodes)
    assert any(c["Pod"]["metadata"]["name"] == "p" for c in extender.calls("filter", mode="broken"))


def test_extenders_get_objects_without_managed_fields(
    core: client.CoreV1Api, ns: str, nodes: list[str], extender: ExtenderServer, ext_scheduler: SchedulerProc,
) -> None:
    """The API server keeps managedFields on the pod and its nodes; the scheduler drops them where objects enter
    its cache (as kube-scheduler's pod informer), so the extender's payload has none."""
    core.create_namespaced_pod(ns, member_pod("trimmed"))
    assert wait_for(lambda: node_of(core, ns, "trimmed"), 60, what="trimmed bound")
    assert core.read_namespaced_pod("trimmed", ns).metadata.managed_fields
    assert all(core.read_node(n).metadata.managed_fields for n in nodes)
    call = next(c for c in extender.calls("filter") if c["Pod"]["metadata"]["name"] == "trimmed")
    assert "managedFields" not in call["Pod"]["metadata"]
    assert call["Nodes"]["items"] and not [n for n in call["Nodes"]["items"] if "managedFields" in n["metadata"]]


def test_failed_nodes_in_the_message_and_timeout(
    core: client.CoreV1Api, api: client.ApiClient, ns: str, nodes: list[str], extender: ExtenderServer,
    ext_scheduler: SchedulerProc,
) -> None:
    extender.behaviour.failed = {n: "extender: node is drained" for n in nodes}
    try:
        core.create_namespaced_pod(ns, member_pod("nowhere"))
        message = failed_message(api, ns, "nowhere")
        assert message.startswith("0/") and "3 extender: node is drained" in message
        assert "preemption: " in message
    finally:
        extender.behaviour.failed = {}
    core.create_namespaced_pod(ns, member_pod("slow", **{SLOW: "1"}))
    message = failed_message(api, ns, "slow")
    assert message.startswith(f'Post "{extender.url}/slow/filter"') and "timed out" in message
    assert node_of(core, ns, "slow") is None


def test_preempt_verb_chooses_the_victim(
    core: client.CoreV1Api, api: client.ApiClient, ns: str, nodes: list[str], extender: ExtenderServer,
    ext_scheduler: SchedulerProc,
) -> None:
    extender.behaviour.scores = {}
    for i, n in enumerate(nodes):
        manifest = member_pod(f"low-{i}", cpu="800m", priority_class="it-ext-low")
        manifest["spec"]["nodeSelector"] = {"kubernetes.io/hostname": n}
        core.create_namespaced_pod(ns, manifest)
    for i, n in enumerate(nodes):
        assert wait_for(lambda i=i: node_of(core, ns, f"low-{i}"), 60, what=f"low-{i} bound") == n
    extender.behaviour.preempt_nodes = {nodes[1]}
    try:
        core.create_namespaced_pod(ns, member_pod("high", cpu="800m", priority_class="it-ext-high"))
        wait_for(lambda: gone(core, ns, "low-1"), 60, what="low-1 preempted")
        assert wait_for(lambda: node_of(core, ns, "high"), 60, what="high bound") == nodes[1]
    finally:
        extender.behaviour.preempt_nodes = None
    assert not gone(core, ns, "low-0") and not gone(core, ns, "low-2")
    call = next(c for c in extender.calls("preempt") if c["Pod"]["metadata"]["name"] == "high")
    assert sorted(call["NodeNameToVictims"]) == sorted(nodes)
