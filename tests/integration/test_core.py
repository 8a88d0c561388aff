"""Issue 3: queue order, event-driven requeue, nominated nodes and bind failures on a real control plane."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kubernetes import client

from e2e.cluster.cluster import LocalCluster
from e2e.kube import node_of, pod_manifest, scheduled_condition, wait_for
from tests.integration.conftest import SchedulerProc, create_priority_classes, temporary_nodes


@pytest.fixture(scope="module")
def priority_classes(api: client.ApiClient) -> Iterator[None]:
    create_priority_classes(api, (("it-low", 10), ("it-high", 1000)))
    yield


def test_priority_order_is_respected(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, priority_classes: None,
    start_py_scheduler: Callable[..., SchedulerProc],
) -> None:
    """Both pods are pending when the scheduler starts; the one node fits one of them: the
    higher-priority pod, created last, must win."""
    with temporary_nodes(str(cluster.kubeconfig), 1, "prio", cpu="1", labels={"it/prio": "yes"}) as [node]:
        sel = {"it/prio": "yes"}
        core.create_namespaced_pod(ns, pod_manifest("low", scheduler_name="prio-test", cpu="600m",
                                                    node_selector=sel, priority_class="it-low"))
        core.create_namespaced_pod(ns, pod_manifest("high", scheduler_name="prio-test", cpu="600m",
                                                    node_selector=sel, priority_class="it-high"))
        start_py_scheduler("--scheduler-name", "prio-test", name="prio")
        assert wait_for(lambda: node_of(core, ns, "high"), 60, what="high-priority pod bound") == node
        cond = wait_for(lambda: scheduled_condition(core, ns, "low"), 60, what="low-priority pod attempted")
        assert cond.reason == "Unschedulable"
        assert node_of(core, ns, "low") is None


def test_unschedulable_pod_moves_when_a_node_is_added(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str
) -> None:
    core.create_namespaced_pod(ns, pod_manifest("needs-6", cpu="6"))
    cond = wait_for(lambda: scheduled_condition(core, ns, "needs-6"), 60, what="first attempt")
    assert "Insufficient cpu" in cond.message
    with temporary_nodes(str(cluster.kubeconfig), 1, "bigger", cpu="8") as [node]:
        # The leftover flush would take 5 minutes: being bound within 30 s proves the NodeAdd event moved it.
        assert wait_for(lambda: node_of(core, ns, "needs-6"), 30, what="pod bound after NodeAdd") == node
        core.delete_namespaced_pod("needs-6", ns, grace_period_seconds=0)


def test_nominated_node_is_used_when_it_fits(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, start_py_scheduler: Callable[..., SchedulerProc],
) -> None:
    """LeastAllocated prefers the big node; the pod nominated to the small one must go there."""
    sel = {"it/nom": "yes"}
    with (
        temporary_nodes(str(cluster.kubeconfig), 1, "nom-big", cpu="16", labels=sel) as [big],
        temporary_nodes(str(cluster.kubeconfig), 1, "nom-small", cpu="2", labels=sel) as [small],
    ):
        for name in ("nominated", "free"):
            core.create_namespaced_pod(ns, pod_manifest(name, scheduler_name="nom-test", node_selector=sel))
        core.patch_namespaced_pod_status("nominated", ns, {"status": {"nominatedNodeName": small}})
        start_py_scheduler("--scheduler-name", "nom-test", name="nom")
        assert wait_for(lambda: node_of(core, ns, "nominated"), 60, what="nominated pod bound") == small
        assert wait_for(lambda: node_of(core, ns, "free"), 60, what="other pod bound") == big
        for name in ("nominated", "free"):
            core.delete_namespaced_pod(name, ns, grace_period_seconds=0)


def test_pods_deleted_mid_binding_leave_the_cache_consistent(
    core: client.CoreV1Api, scheduler: SchedulerProc, ns: str
) -> None:
    names = [f"racy-{i}" for i in range(40)]
    for n in names:
        core.create_namespaced_pod(ns, pod_manifest(n))
    for n in names:
        core.delete_namespaced_pod(n, ns, grace_period_seconds=0)
    core.create_namespaced_pod(ns, pod_manifest("survivor"))
    wait_for(lambda: node_of(core, ns, "survivor"), 60, what="survivor bound")

    def consistent() -> bool:
        assumed = scheduler.metric("scheduler_cache_size", 'type="assumed_pods"')
        cached = scheduler.metric("scheduler_cache_size", 'type="pods"')
        bound = [p for p in core.list_pod_for_all_namespaces().items
                 if p.spec.node_name and p.status.phase not in ("Succeeded", "Failed")]
        return assumed == 0 and cached == len(bound)

    wait_for(consistent, 60, 0.5, "assumed pods forgotten and cache == bound pods")
    assert scheduler.proc.poll() is None
