"""Preemption against the real control plane: victims get DisruptionTarget and are deleted, the
preemptor is nominated and then bound where the victims were; and parity of preemption (and of the
default profile's PostFilter messages) with kube-scheduler v1.37.2 running its default profile."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch

from e2e.cluster.cluster import LocalCluster, build_binaries
from e2e.kube import events_for, gone, node_of, pod_manifest, scheduled_condition, wait_for
from e2e.process import start_kube_scheduler, stop_scheduler
from tests.integration.conftest import SchedulerProc, temporary_nodes

SCHED = "preempt-test"
# Parity: every scheduler runs its default profile (DynamicResources and DefaultPreemption on); py-scheduler
# twice, with asynchronous preemption (the default, as kube-scheduler 1.34) and with the gate off.
KUBE, PY, PY_SYNC = "kube-preempt", "py-preempt", "py-preempt-sync"
SIDES = (KUBE, PY, PY_SYNC)
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


def watching(core: client.CoreV1Api, proc: SchedulerProc, scheduler_name: str) -> SchedulerProc:
    """Wait until the scheduler's pod watch is live: a pod created after its initial list gets bound,
    which it can only have learned of from the watch. Until then a pod deleted between the initial
    list and the watch's own list would stay in its cache (the periodic resync repairs that later)."""
    wait_for(lambda: "py-scheduler started" in proc.log_text(), 60, what=f"{scheduler_name} initial sync")
    probe = f"probe-{scheduler_name}"
    core.create_namespaced_pod("default", pod_manifest(probe, scheduler_name=scheduler_name, cpu="1m", memory="1Mi"))
    wait_for(lambda: node_of(core, "default", probe), 60, what=f"{probe} bound")
    core.delete_namespaced_pod(probe, "default", grace_period_seconds=0)
    return proc


@pytest.fixture(scope="module")
def preempt_scheduler(core: client.CoreV1Api, start_py_scheduler: Callable[..., SchedulerProc]) -> SchedulerProc:
    return watching(core, start_py_scheduler("--scheduler-name", SCHED, name="preempt"), SCHED)


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


def assert_nominated_then_cleared(core: client.CoreV1Api, ns: str, name: str, since: str, node: str) -> None:
    """v1.37: the preemptor's status.nominatedNodeName names ``node`` before it is bound there, and the API
    server clears it at binding (ClearingNominatedNodeNameAfterBinding, on by default). Read from the pod's
    watch history since its creation, so the nomination is seen even though it is gone by now."""
    history = pod_events(core, ns, name, since, lambda _, o: bool(o.spec.node_name))
    assert history and history[-1][1].spec.node_name == node, (name, [o.spec.node_name for _, o in history])
    nominated = [o.status.nominated_node_name for _, o in history[:-1] if o.status.nominated_node_name]
    assert node in nominated, (name, nominated)
    assert core.read_namespaced_pod(name, ns).status.nominated_node_name is None


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
        assert_nominated_then_cleared(core, ns, "preemptor", created.metadata.resource_version, node)
        notes = [e.note for e in wait_for(lambda: events_for(api, ns, "victim", "Preempted"), 30,
                                          what="Preempted event")]
        assert notes == [f"Preempted by pod {created.metadata.uid} on node {node}"]
        failed = wait_for(lambda: events_for(api, ns, "preemptor", "FailedScheduling"), 30,
                          what="preemptor's FailedScheduling event")
        # The attempt that preempted: v1.37 appends its PostFilter's success to the filter verdicts.
        # (Later attempts, while the victim terminates, may say the pod is not eligible to preempt again.)
        preempted = f"preemption: found a potential placement for pod on node {node}, preempting 1 victims"
        assert any("1 Insufficient cpu," in e.note and e.note.endswith(preempted) for e in failed), [
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


# ----- parity with kube-scheduler's default profile ---------------------------------------------------


@pytest.fixture(scope="module")
def default_pair(
    cluster: LocalCluster, core: client.CoreV1Api, workdir: Path, start_py_scheduler: Callable[..., SchedulerProc]
) -> Iterator[SchedulerProc]:
    kube = start_kube_scheduler(build_binaries(build=False), cluster.kubeconfig, workdir, KUBE)
    py = watching(core, start_py_scheduler("--scheduler-name", PY, name="py-preempt"), PY)
    watching(core, start_py_scheduler("--scheduler-name", PY_SYNC, "--feature-gates",
                                      "SchedulerAsyncPreemption=false", name="py-preempt-sync"), PY_SYNC)
    try:
        yield py
    finally:
        stop_scheduler(kube)


def first_unschedulable_message(core: client.CoreV1Api, ns: str, name: str, since: str) -> str:
    """The message of the first PodScheduled=False condition the pod got after resourceVersion ``since``."""
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, ns, field_selector=f"metadata.name={name}",
                       resource_version=since, timeout_seconds=60):
        for c in ev["object"].status.conditions or []:
            if c.type == "PodScheduled" and c.status == "False":
                w.stop()
                return str(c.message)
    raise AssertionError(f"{name} got no PodScheduled=False condition")


def test_preemption_matches_upstream(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, priority_classes: None, default_pair: SchedulerProc,
) -> None:
    """Two identical node groups, one per scheduler (so the preemptors never compete for victims): node A
    holds a low-priority pod, node B a pod as important as the preemptor. Both preemptors evict A's pod,
    are nominated to A and land there, after the same message; then a pod that cannot preempt anyone,
    and one that may not preempt, get the same messages from both."""
    kubeconfig = str(cluster.kubeconfig)
    with ExitStack() as stack:
        nodes = {side: stack.enter_context(temporary_nodes(kubeconfig, 2, f"pre-{side}", cpu="2",
                                                           labels={"parity/side": side}))
                 for side in SIDES}
        grace = {"terminationGracePeriodSeconds": 5}
        for side, (a, b) in nodes.items():
            core.create_namespaced_pod(ns, pod_manifest(f"victim-{side}", scheduler_name="nobody", cpu="1500m",
                                                        priority_class="it-low", extra_spec={"nodeName": a, **grace}))
            core.create_namespaced_pod(ns, pod_manifest(f"peer-{side}", scheduler_name="nobody", cpu="1500m",
                                                        priority_class="it-high", extra_spec={"nodeName": b, **grace}))
        first: dict[str, str] = {}
        since: dict[str, str] = {}
        for side in SIDES:
            created = core.create_namespaced_pod(ns, pod_manifest(
                f"preemptor-{side}", scheduler_name=side, cpu="1", priority_class="it-high",
                node_selector={"parity/side": side}))
            since[side] = created.metadata.resource_version
            # v1.37's message names the node preemption chose: each side's own, so compare it without that.
            first[side] = first_unschedulable_message(core, ns, f"preemptor-{side}", created.metadata.resource_version
                                                      ).replace(f"pre-{side}-", "pre-<side>-")
        assert first[PY] == first[KUBE] == first[PY_SYNC]
        assert "2 Insufficient cpu" in first[PY] and first[PY].endswith(
            "preemption: found a potential placement for pod on node pre-<side>-0, preempting 1 victims"), first[PY]
        for side, (a, _) in nodes.items():
            try:
                bound = wait_for(lambda s=side: node_of(core, ns, f"preemptor-{s}"), 90, what=f"{side} preemptor bound")
            except AssertionError:
                raise AssertionError(default_pair.log_text()[-6000:]) from None
            assert bound == a
            assert_nominated_then_cleared(core, ns, f"preemptor-{side}", since[side], a)
            assert wait_for(lambda s=side: gone(core, ns, f"victim-{s}"), 60, what=f"{side} victim deleted")
        for case, cls in (("stuck", "it-low"), ("polite", "it-high-never")):
            msgs = {}
            for side in SIDES:
                created = core.create_namespaced_pod(ns, pod_manifest(
                    f"{case}-{side}", scheduler_name=side, cpu="1500m", priority_class=cls,
                    node_selector={"parity/side": side}))
                msgs[side] = first_unschedulable_message(core, ns, f"{case}-{side}", created.metadata.resource_version)
            assert msgs[PY] == msgs[KUBE] == msgs[PY_SYNC], case
            expected = {"stuck": "2 No preemption victims found for incoming pod",
                        "polite": "preemption: not eligible due to preemptionPolicy=Never."}[case]
            assert expected in msgs[PY], msgs[PY]
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)


def test_multi_victim_preemption_matches_upstream(
    cluster: LocalCluster, core: client.CoreV1Api, api: client.ApiClient, ns: str, priority_classes: None,
    default_pair: SchedulerProc,
) -> None:
    """A preemptor that needs both pods of a node gone (the asynchronous path holds it back until all but
    the last are evicted): every scheduler evicts both with the same condition and event, nominates the
    node, binds there, after the same first message."""
    kubeconfig = str(cluster.kubeconfig)
    with ExitStack() as stack:
        nodes = {side: stack.enter_context(temporary_nodes(kubeconfig, 1, f"multi-{side}", cpu="2",
                                                           labels={"parity/multi": side}))[0]
                 for side in SIDES}
        for side, n in nodes.items():
            for i in (1, 2):
                core.create_namespaced_pod(ns, pod_manifest(
                    f"low{i}-{side}", scheduler_name="nobody", cpu="1", priority_class="it-low",
                    extra_spec={"nodeName": n, "terminationGracePeriodSeconds": 3}))
        first, uids, since = {}, {}, {}
        for side in SIDES:
            created = core.create_namespaced_pod(ns, pod_manifest(
                f"big-{side}", scheduler_name=side, cpu="2", priority_class="it-high",
                node_selector={"parity/multi": side}))
            uids[side] = created.metadata.uid
            since[side] = created.metadata.resource_version
            first[side] = first_unschedulable_message(core, ns, f"big-{side}", created.metadata.resource_version
                                                      ).replace(f"multi-{side}-", "multi-<side>-")
        assert first[PY] == first[KUBE] == first[PY_SYNC]
        assert "1 Insufficient cpu" in first[PY] and first[PY].endswith(
            "preemption: found a potential placement for pod on node multi-<side>-0, preempting 2 victims"), first[PY]
        for side, n in nodes.items():
            assert wait_for(lambda s=side: node_of(core, ns, f"big-{s}"), 90, what=f"{side} preemptor bound") == n
            assert_nominated_then_cleared(core, ns, f"big-{side}", since[side], n)
            for i in (1, 2):
                assert wait_for(lambda s=side, i=i: gone(core, ns, f"low{i}-{s}"), 60, what=f"{side} victim gone")
                notes = [e.note for e in wait_for(lambda s=side, i=i: events_for(api, ns, f"low{i}-{s}", "Preempted"),
                                                  30, what="Preempted event")]
                # A retry that runs before the nominatedNodeName patch is seen may preempt the still
                # terminating victims again (kube-scheduler does it too): the same event, repeated.
                assert set(notes) == {f"Preempted by pod {uids[side]} on node {n}"}, (side, notes)
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)


DEFAULT_PROFILE_CASES: list[tuple[str, dict[str, Any], str]] = [
    # Request above every node's allocatable: UnschedulableAndUnresolvable, preemption cannot help.
    ("too-big", {"cpu": "100"}, "preemption: "),
    ("selector", {"node_selector": {"no-such-label": "x"}}, "Preemption is not helpful for scheduling."),
    # NodeAffinity's PreFilter rejects before DynamicResources' PreFilter runs; upstream's DynamicResources
    # PostFilter then fails reading its state, and that error ("not found") ends the PostFilter phase.
    ("matchfields-conflict", {"extra_spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["a"]},
            {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}}}}},
     ": pod affinity terms conflict. not found"),
]


@pytest.mark.parametrize(("case", "kw", "fragment"), DEFAULT_PROFILE_CASES,
                         ids=[c for c, _, _ in DEFAULT_PROFILE_CASES])
def test_default_profile_postfilter_messages_match_upstream(
    core: client.CoreV1Api, ns: str, default_pair: SchedulerProc, case: str, kw: dict[str, Any], fragment: str
) -> None:
    msgs = {}
    for side in SIDES:
        created = core.create_namespaced_pod(ns, pod_manifest(f"{case}-{side}", scheduler_name=side, **kw))
        msgs[side] = first_unschedulable_message(core, ns, f"{case}-{side}", created.metadata.resource_version)
    assert msgs[PY] == msgs[KUBE] == msgs[PY_SYNC]
    assert fragment in msgs[PY], msgs[PY]
