"""Coscheduling with hand-made pods, PodGroups and a handle: each extension point and the status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.cache.objects import ObjectStore
from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import CoschedulingArgs
from scheduler.framework.interface import CycleState, NodeToStatus
from scheduler.framework.status import Code, Status
from scheduler.model.pod import Pod, pod_from_api
from scheduler.plugins.coscheduling import Coscheduling
from scheduler.plugins.helper.podgroup import POD_GROUP_LABEL, podgroup_from_api
from scheduler.queue.queued_pod_info import QueuedPodInfo
from tests.builders import make_node
from tests.plugins.util import node_info


def gpod(name: str, group: str = "g", cpu: str = "1", node: str = "", phase: str = "", priority: int = 0,
         ns: str = "default") -> Pod:
    spec: dict[str, Any] = {"schedulerName": "py-scheduler", "priority": priority,
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    labels = {POD_GROUP_LABEL: group} if group else {}
    return pod_from_api({"metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": labels},
                         "spec": spec, "status": {"phase": phase} if phase else {}})


def podgroup(name: str = "g", min_member: Any = 3, created: str = "2026-01-01T00:00:00Z",
             min_resources: Mapping[str, str] | None = None, timeout: int | None = None,
             phase: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-pg-{name}", "creationTimestamp": created},
            "spec": spec, "status": {"phase": phase} if phase else {}}


class Waiting:
    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.decision: str | None = None

    def get_pod(self) -> Pod:
        return self.pod

    def allow(self, plugin_name: str) -> None:
        self.decision = "allow"

    def reject(self, plugin_name: str, msg: str) -> None:
        self.decision = f"reject: {msg}"

    def rejected(self) -> bool:
        return bool(self.decision and self.decision.startswith("reject"))


class Writer:
    def __init__(self) -> None:
        self.statuses: list[tuple[str, dict[str, Any]]] = []
        self.events: list[tuple[str, str, str]] = []

    def patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        self.statuses.append((name, dict(status)))

    def event(self, podgroup: Mapping[str, Any], type_: str, reason: str, note: str) -> None:
        self.events.append((type_, reason, note))


class Handle:
    def __init__(self, writer: Writer | None = None) -> None:
        self.store = ObjectStore()
        self.waiting: list[Waiting] = []
        self.activated: list[str] = []
        self.writer = writer

    def snapshot(self) -> Any:
        raise AssertionError("Coscheduling counts assigned members itself")

    def objects(self) -> ObjectStore:
        return self.store

    def nominated_pods_for(self, node_name: str) -> list[Pod]:
        return []

    def bind(self, pod: Pod, node_name: str) -> None:
        return None

    def parallelism(self) -> int:
        return 1

    def iterate_over_waiting_pods(self) -> list[Waiting]:
        return list(self.waiting)

    def activate_pods(self, pods: list[Pod]) -> None:
        self.activated.extend(p.name for p in pods)

    def podgroup_writer(self) -> Writer | None:
        return self.writer


def plugin(args: Mapping[str, Any] | None = None, writer: Writer | None = None) -> tuple[Coscheduling, Handle]:
    h = Handle(writer)
    return Coscheduling(dict(args or {}), h), h


def add_members(pl: Coscheduling, *pods: Pod) -> None:
    for p in pods:
        pl.on_pod_event(False, p)


def test_args_defaults_and_validation() -> None:
    assert plugin_args(CoschedulingArgs, {}) == CoschedulingArgs(60, 0)
    assert plugin_args(CoschedulingArgs, {"permitWaitingTimeSeconds": 5, "podGroupBackoffSeconds": 2}) == \
        CoschedulingArgs(5, 2)
    with pytest.raises(ValueError, match="podGroupBackoffSeconds"):
        plugin_args(CoschedulingArgs, {"podGroupBackoffSeconds": -1})
    with pytest.raises(ValueError, match="permitWaitingTimeSeconds"):
        plugin_args(CoschedulingArgs, {"permitWaitingTimeSeconds": "10s"})


def test_queue_sort_keeps_groups_together_by_priority_then_group_age() -> None:
    pl, h = plugin()
    h.store.upsert("PodGroup", podgroup("old", created="2026-01-01T00:00:00Z"))
    h.store.upsert("PodGroup", podgroup("new", created="2026-01-02T00:00:00Z"))
    pods = [gpod("a-new", "new"), gpod("z-old", "old"), gpod("b-new", "new"), gpod("a-old", "old"),
            gpod("hi", "new", priority=10)]
    infos = [QueuedPodInfo(p, timestamp=0.0) for p in pods]
    import functools

    order = sorted(infos, key=functools.cmp_to_key(lambda a, b: -1 if pl.less(a, b) else 1 if pl.less(b, a) else 0))
    assert [q.pod.name for q in order] == ["hi", "a-old", "z-old", "a-new", "b-new"]


def test_pre_filter_rejects_missing_invalid_and_incomplete_groups() -> None:
    pl, h = plugin()
    p = gpod("p0")
    _, st = pl.pre_filter(CycleState(), p, [])
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert 'PodGroup "default/g"' in st.message and "does not exist" in st.message
    h.store.upsert("PodGroup", podgroup(min_member=0))
    _, st = pl.pre_filter(CycleState(), p, [])
    assert st is not None and "spec.minMember is 0: it must be at least 1" in st.message
    h.store.upsert("PodGroup", podgroup(min_member=3))
    add_members(pl, gpod("p0"), gpod("p1"))
    _, st = pl.pre_filter(CycleState(), p, [])
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert "current pods number: 2, minMember of group: 3" in st.message
    add_members(pl, gpod("p2"))
    assert pl.pre_filter(CycleState(), p, []) == (None, None)
    assert pl.pre_filter(CycleState(), gpod("lone", group=""), []) == (None, None)


def test_pre_filter_checks_min_resources_against_free_capacity() -> None:
    pl, h = plugin()
    h.store.upsert("PodGroup", podgroup(min_member=2, min_resources={"cpu": "10"}))
    add_members(pl, gpod("p0"), gpod("p1"))
    nodes = [node_info(make_node("n1", cpu="4")), node_info(make_node("n2", cpu="4"), [gpod("x", "", node="n2")])]
    _, st = pl.pre_filter(CycleState(), gpod("p0"), nodes)
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert 'PodGroup "default/g"' in st.message and "missing cpu 3000m" in st.message
    # The group's own pods count as free; enough room passes and is remembered.
    nodes.append(node_info(make_node("n3", cpu="4")))
    assert pl.pre_filter(CycleState(), gpod("p0"), nodes) == (None, None)
    assert pl.pre_filter(CycleState(), gpod("p0"), []) == (None, None)


def test_permit_waits_until_min_member_then_allows_all() -> None:
    pl, h = plugin({"permitWaitingTimeSeconds": 7})
    h.store.upsert("PodGroup", podgroup(min_member=3))
    p0, p1, p2 = gpod("p0"), gpod("p1"), gpod("p2")
    add_members(pl, p0, p1, p2)
    h.activated.clear()
    pl.reserve(CycleState(), p0, "n")
    st, timeout = pl.permit(CycleState(), p0, "n")
    assert st is not None and st.code == Code.WAIT and timeout == 7
    h.waiting.append(Waiting(p0))
    pl.reserve(CycleState(), p1, "n")
    st, _ = pl.permit(CycleState(), p1, "n")
    assert st is not None and st.code == Code.WAIT
    h.waiting.append(Waiting(p1))
    h.waiting.append(Waiting(gpod("other", "h")))
    pl.reserve(CycleState(), p2, "n")
    assert pl.permit(CycleState(), p2, "n") == (None, 0.0)
    assert [w.decision for w in h.waiting] == ["allow", "allow", None]


def test_permit_uses_the_group_timeout() -> None:
    pl, h = plugin()
    h.store.upsert("PodGroup", podgroup(min_member=2, timeout=3))
    st, timeout = pl.permit(CycleState(), gpod("p0"), "n")
    assert st is not None and st.code == Code.WAIT and timeout == 3


def test_post_filter_rejects_waiting_siblings_and_backs_off() -> None:
    pl, h = plugin({"podGroupBackoffSeconds": 30})
    h.store.upsert("PodGroup", podgroup(min_member=3))
    p0, p1, p2 = gpod("p0"), gpod("p1"), gpod("p2")
    add_members(pl, p0, p1, p2)
    pl.reserve(CycleState(), p0, "n")
    h.waiting = [Waiting(p0), Waiting(gpod("o", "h"))]
    _, st = pl.post_filter(CycleState(), p1, NodeToStatus())
    assert st is not None and st.code == Code.UNSCHEDULABLE
    assert 'PodGroup "default/g" gets rejected due to Pod p1 is unschedulable' in st.message
    assert h.waiting[0].decision is not None and "rejected with PodGroup" in h.waiting[0].decision
    assert h.waiting[1].decision is None
    _, st = pl.pre_filter(CycleState(), p2, [])
    assert st is not None and 'PodGroup "default/g" failed recently' in st.message


def test_post_filter_leaves_a_nearly_complete_group_alone() -> None:
    pl, h = plugin()
    h.store.upsert("PodGroup", podgroup(min_member=10))
    members = [gpod(f"p{i}") for i in range(10)]
    add_members(pl, *members)
    for p in members[:9]:
        pl.reserve(CycleState(), p, "n")
    h.waiting = [Waiting(members[0])]
    _, st = pl.post_filter(CycleState(), members[9], NodeToStatus())
    assert st is not None and st.code == Code.UNSCHEDULABLE and not st.reasons
    assert h.waiting[0].decision is None


def test_unreserve_rejects_every_waiting_sibling() -> None:
    pl, h = plugin()
    h.store.upsert("PodGroup", podgroup(min_member=3))
    p0, p1 = gpod("p0"), gpod("p1")
    add_members(pl, p0, p1, gpod("p2"))
    pl.reserve(CycleState(), p0, "n")
    pl.reserve(CycleState(), p1, "n")
    h.waiting = [Waiting(p0)]
    pl.unreserve(CycleState(), p1, "n")
    assert h.waiting[0].decision is not None and "member p1 was unreserved" in h.waiting[0].decision
    assert pl.manager.assigned_count(podgroup_from_api(podgroup(min_member=3))) == 0  # neither counts now


def test_events_register_podgroup_changes() -> None:
    pl, _ = plugin()
    resources = {e.event.resource.value for e in pl.events_to_register()}
    assert resources == {"PodGroup", "Pod", "Node"}


def test_status_walks_every_phase_in_order_with_counts() -> None:
    w = Writer()
    pl, h = plugin(writer=w)
    pg = podgroup(min_member=2)
    h.store.upsert("PodGroup", pg)
    pl.on_object_event("PodGroup", False, pg)
    add_members(pl, gpod("p0"), gpod("p1"))
    add_members(pl, gpod("p0", node="n", phase="Pending"), gpod("p1", node="n", phase="Running"))
    add_members(pl, gpod("p0", node="n", phase="Running"))
    add_members(pl, gpod("p0", node="n", phase="Succeeded"), gpod("p1", node="n", phase="Succeeded"))
    phases = [s["phase"] for _, s in w.statuses]
    deduped = [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p]
    assert deduped == ["Pending", "Scheduling", "Scheduled", "Running", "Finished"]
    assert w.statuses[-1][1] | {"scheduleStartTime": ""} == {
        "phase": "Finished", "scheduled": 2, "running": 0, "succeeded": 2, "failed": 0, "scheduleStartTime": ""}
    assert "scheduleStartTime" in w.statuses[1][1]
    assert [r for t, r, _ in w.events] == ["Pending", "Scheduling", "Scheduled", "Running", "Finished"]


def test_failed_member_fails_the_group_and_invalid_spec_is_reported_once() -> None:
    w = Writer()
    pl, h = plugin(writer=w)
    pg = podgroup(min_member=1, phase="Running")
    h.store.upsert("PodGroup", pg)
    add_members(pl, gpod("p0", node="n", phase="Failed"))
    assert w.statuses[-1][1]["phase"] == "Failed"
    bad = podgroup("bad", min_member=-1)
    pl.on_object_event("PodGroup", False, bad)
    pl.on_object_event("PodGroup", False, bad)
    warnings = [n for t, r, n in w.events if r == "InvalidPodGroup"]
    assert warnings == ["PodGroup default/bad cannot be scheduled: spec.minMember is -1: it must be at least 1"]


def test_a_group_that_becomes_whole_is_activated() -> None:
    pl, h = plugin()
    h.store.upsert("PodGroup", podgroup(min_member=2))
    add_members(pl, gpod("p0"))
    assert h.activated == []
    add_members(pl, gpod("p1"))
    assert sorted(h.activated) == ["p0", "p1"]


def test_a_restart_does_not_overwrite_status_before_members_are_known() -> None:
    w = Writer()
    pl, h = plugin(writer=w)
    pg = podgroup(min_member=1, phase="Running")
    pg["status"].update({"scheduled": 1, "running": 1})
    h.store.upsert("PodGroup", pg)
    pl.on_object_event("PodGroup", False, pg)
    assert w.statuses == []
    add_members(pl, gpod("p0", node="n", phase="Running"))
    assert w.statuses == []  # same counts as stored: nothing to write
    add_members(pl, gpod("p0", node="n", phase="Succeeded"))
    assert w.statuses[-1][1] | {"scheduleStartTime": ""} == {
        "phase": "Finished", "scheduled": 1, "running": 0, "succeeded": 1, "failed": 0, "scheduleStartTime": ""}


def test_permit_does_not_count_a_sibling_rejected_but_not_yet_unreserved() -> None:
    pl, h = plugin()
    h.store.upsert("PodGroup", podgroup(min_member=3))
    p0, p1, p2 = gpod("p0"), gpod("p1"), gpod("p2")
    add_members(pl, p0, p1, p2)
    for p in (p0, p1):
        pl.reserve(CycleState(), p, "n")
    timed_out = Waiting(p0)
    timed_out.decision = "reject: timeout"
    h.waiting = [timed_out, Waiting(p1)]
    pl.reserve(CycleState(), p2, "n")
    st, _ = pl.permit(CycleState(), p2, "n")
    assert st is not None and st.code == Code.WAIT  # 2 of 3, not 3
    assert h.waiting[1].decision is None


def test_post_filter_after_its_own_prefilter_rejection_does_nothing() -> None:
    pl, h = plugin({"podGroupBackoffSeconds": 30})
    h.store.upsert("PodGroup", podgroup(min_member=3))
    p0 = gpod("p0")
    add_members(pl, p0, gpod("p1"), gpod("p2"))
    h.waiting = [Waiting(gpod("p1"))]
    gate = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["gated"], plugin="Coscheduling")
    _, st = pl.post_filter(CycleState(), p0, NodeToStatus(absent=gate))
    assert st is not None and st.code == Code.UNSCHEDULABLE and not st.reasons
    assert h.waiting[0].decision is None and not pl.manager.backed_off("default/g")


def test_deleting_the_podgroup_rejects_its_waiting_members() -> None:
    pl, h = plugin()
    pg = podgroup(min_member=3)
    h.store.upsert("PodGroup", pg)
    h.waiting = [Waiting(gpod("p0")), Waiting(gpod("o", "h"))]
    pl.on_object_event("PodGroup", True, pg)
    assert h.waiting[0].decision == 'reject: PodGroup "default/g" was deleted'
    assert h.waiting[1].decision is None
