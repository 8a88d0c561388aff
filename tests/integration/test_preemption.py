"""Preemption against the real control plane: victims get DisruptionTarget and are deleted, the
preemptor is nominated and then bound where the victims were."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, watch

from e2e.cluster.cluster import LocalCluster
from e2e.kube import events_for, node_of, pod_manifest, scheduled_condition, wait_for
from tests.integration.conftest import SchedulerProc, temporary_nodes

SCHED = "preempt-test"
CLASSES = (("it-low", 10, None), ("it-high", 1000, None), ("it-high-never", 1000, "Never"))


@pytest.fixture(scope="module")
def priority_classes(api: client.ApiClient) -> Iterator[None]:
    sched_api = client.SchedulingV1Api(api)
    for name, value, policy in CLASSES:
        body: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                "metadata": {"name": name}, "value": value}
        if policy:
            body["preemptionPolicy"] = policy
        try:
            sched_api.create_priority_class(body)
        except client.ApiException as exc:
            if exc.status != 409:
                raise
    yield


@pytest.fixture(scope="module")
def preempt_scheduler(start_py_scheduler: Callable[..., SchedulerProc]) -> SchedulerProc:
    return start_py_scheduler("--scheduler-name", SCHED, name="preempt")


def pod_events(core: client.CoreV1Api, ns: str, name: str, since: str, until: Callable[[str, Any], bool],
               timeout: int = 90) -> list[tuple[str, Any]]:
    """Every watch event of one pod after resourceVersion ``since``, up to the first that ``until`` accepts."""
    seen: list[tuple[str, Any]] = []
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, ns, field_selector=f"metadata.name={name}",
                       resource_version=since, timeout_seconds=timeout):
        seen.append((ev["type"], ev["object"]))
        if until(ev["type"], ev["object"]):
            w.stop()
            break
    return seen


def test_high_priority_pod_preempts_a_low_priority_one(
    cluster: LocalCluster, core: client.CoreV1Api, api: client.ApiClient, ns: str, priority_classes: None,
    preempt_scheduler: SchedulerProc,
) -> None:
    sel = {"it/preempt": "one"}
    with temporary_nodes(str(cluster.kubeconfig), 1, "preempt-one", cpu="1", labels=sel) as [node]:
        core.create_namespaced_pod(ns, pod_manifest("victim", scheduler_name=SCHED, cpu="600m", node_selector=sel,
                                                    priority_class="it-low",
                                                    extra_spec={"terminationGracePeriodSeconds": 5}))
        assert wait_for(lambda: node_of(core, ns, "victim"), 60, what="victim bound") == node
        victim_rv = core.read_namespaced_pod("victim", ns).metadata.resource_version
        victim_uid = core.read_namespaced_pod("victim", ns).metadata.uid
        created = core.create_namespaced_pod(ns, pod_manifest("preemptor", scheduler_name=SCHED, cpu="600m",
                                                              node_selector=sel, priority_class="it-high"))

        victim_history = pod_events(core, ns, "victim", victim_rv, lambda t, _: t == "DELETED")
        assert victim_history[-1][0] == "DELETED", "the victim is deleted"
        marked = [o for _, o in victim_history for c in (o.status.conditions or []) if c.type == "DisruptionTarget"]
        assert marked, "the victim got the DisruptionTarget condition before it went"
        cond = next(c for c in marked[0].status.conditions if c.type == "DisruptionTarget")
        assert (cond.status, cond.reason, cond.message) == (
            "True", "PreemptionByScheduler", f"{SCHED}: preempting to accommodate a higher priority pod")
        assert marked[0].metadata.uid == victim_uid

        assert wait_for(lambda: node_of(core, ns, "preemptor"), 90, what="preemptor bound") == node
        assert core.read_namespaced_pod("preemptor", ns).status.nominated_node_name == node
        notes = [e.note for e in wait_for(lambda: events_for(api, ns, "victim", "Preempted"), 30,
                                          what="Preempted event")]
        assert notes == [f"Preempted by pod {created.metadata.uid} on node {node}"]
        failed = wait_for(lambda: events_for(api, ns, "preemptor", "FailedScheduling"), 30,
                          what="preemptor's FailedScheduling event")
        # The attempt that preempted: its PostFilter succeeded, so nothing is appended to the filter verdicts.
        # (Later attempts, while the victim terminates, may say the pod is not eligible to preempt again.)
        assert any("1 Insufficient cpu," in e.note and "preemption:" not in e.note for e in failed), [
            e.note for e in failed]
        core.delete_namespaced_pod("preemptor", ns, grace_period_seconds=0)


def test_pod_with_preemption_policy_never_does_not_preempt(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, priority_classes: None, preempt_scheduler: SchedulerProc,
) -> None:
    sel = {"it/preempt": "never"}
    with temporary_nodes(str(cluster.kubeconfig), 1, "preempt-never", cpu="1", labels=sel) as [node]:
        core.create_namespaced_pod(ns, pod_manifest("stays", scheduler_name=SCHED, cpu="600m", node_selector=sel,
                                                    priority_class="it-low"))
        assert wait_for(lambda: node_of(core, ns, "stays"), 60, what="low pod bound") == node
        core.create_namespaced_pod(ns, pod_manifest("polite", scheduler_name=SCHED, cpu="600m", node_selector=sel,
                                                    priority_class="it-high-never"))
        cond = wait_for(lambda: scheduled_condition(core, ns, "polite"), 60, what="polite pod attempted")
        assert cond.reason == "Unschedulable"
        assert cond.message.endswith(" preemption: not eligible due to preemptionPolicy=Never.")
        stays = core.read_namespaced_pod("stays", ns)
        assert stays.metadata.deletion_timestamp is None
        assert not [c for c in stays.status.conditions or [] if c.type == "DisruptionTarget"]
        assert core.read_namespaced_pod("polite", ns).status.nominated_node_name is None
