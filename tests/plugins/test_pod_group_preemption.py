"""Workload-aware preemption (DefaultPreemption's PodGroupPostFilter and the PodGroupEvaluator) on hand-made
clusters: the real Framework with NodeResourcesFit, the pod-group states in the snapshot, and a group algorithm
that places the members one by one on the first node that fits, assuming each on the snapshot and forgetting
them all at the end, as the pod-group cycle does."""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.cache import Snapshot
from scheduler.config.load import build_registry, load_dict
from scheduler.config.types import PluginRef, Profile
from scheduler.edge import RelatedObject
from scheduler.eventhandlers import ADDED
from scheduler.framework.features import Features
from scheduler.framework.interface import CycleState, NodeToStatus
from scheduler.framework.podgroup import (
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupSchedulingFunc,
    ProposedAssignment,
)
from scheduler.framework.podgrouppreemption import resolve_preemption_policy
from scheduler.framework.preemption import PodDisruptionBudget, filter_pods_with_pdb_violation, pdb_from_api
from scheduler.framework.preemption_victims import (
    POD_GROUP_KEY_TYPE,
    POD_KEY_TYPE,
    Victim,
    cross_nodes_victims,
    filter_victims_with_pdb_violation,
    victim_importance,
)
from scheduler.framework.preemptor import GroupPreemptor
from scheduler.framework.runtime import Framework, FrameworkOptions
from scheduler.framework.status import Code, Status, success, unschedulable
from scheduler.kube.recorder import _pod_ref
from scheduler.metrics import Metrics
from scheduler.model.pod import Pod, pod_from_api
from scheduler.model.workload import API_VERSION, KIND_POD_GROUP, PodGroup, parse_pod_group
from scheduler.plugins.default_preemption import DefaultPreemption
from scheduler.plugins.node_resources_fit import NodeResourcesFit
from scheduler.scheduler import Scheduler, disruption_target_condition
from scheduler.testing.framework import TestActions, make_object_store, make_snapshot
from scheduler.whatif.offline import OfflineWriter, RecordingBinder, RecordingEventSink
from tests.builders import api_pod, sched_node, sched_pod
from tests.plugins.test_default_preemption import Cluster as SchedulerCluster
from tests.plugins.test_default_preemption import Writer

NOW = "2026-01-01T00:00:00Z"


def group(name: str, priority: int | None, *, mode: str = "single", min_count: int = 0,
          policy: str | None = None, uid: str = "") -> PodGroup:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}} if min_count else {"basic": {}},
                            "disruptionMode": {mode: {}}}
    if priority is not None:
        spec["priority"] = priority
    if policy is not None:
        spec["preemptionPolicy"] = policy
    return parse_pod_group({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                            "metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"},
                            "spec": spec})


def pod(name: str, cpu: str, node: str = "", priority: int = 0, pod_group: str = "", start: str = "",
        labels: Mapping[str, str] | None = None, policy: str = "", nominated: str = "",
        terminating_by_preemption: bool = False) -> Pod:
    w = sched_pod(name, cpu=cpu, node_name=node, priority=priority)
    for k, v in (labels or {}).items():
        w.label(k, v)
    if start:
        w.start_time(start)
    if policy:
        w.preemption_policy(policy)
    if nominated:
        w.nominated_node_name(nominated)
    if terminating_by_preemption:
        w.terminating().condition("DisruptionTarget", "True", "PreemptionByScheduler")
    raw = w.api()
    if pod_group:
        raw["spec"]["schedulingGroup"] = {"podGroupName": pod_group}
    return pod_from_api(raw)


class Cluster:
    """A framework (NodeResourcesFit, DefaultPreemption) over nodes, bound pods and pod groups."""

    def __init__(self, nodes: Sequence[tuple[str, str]], bound: Sequence[Pod], groups: Sequence[PodGroup],
                 objects: Sequence[Mapping[str, Any]] = (), async_preemption: bool = False,
                 actions: TestActions | None = None, parallelism: int = 1) -> None:
        self.snapshot: Snapshot = make_snapshot([sched_node(n, cpu=c).obj() for n, c in nodes], bound)
        states = self.snapshot.pod_group_states()
        for g in groups:
            states.state((g.namespace, g.name)).set_pod_group(g)
        for p in bound:
            if p.pod_group_name:
                states.state((p.namespace, p.pod_group_name)).add_pod(p)
        self.actions = actions or TestActions(store=make_object_store(objects))
        profile = Profile("default-scheduler", {
            "preFilter": [PluginRef("NodeResourcesFit")], "filter": [PluginRef("NodeResourcesFit")],
            "postFilter": [PluginRef("DefaultPreemption")], "podGroupPostFilter": [PluginRef("DefaultPreemption")],
        }, plugin_config={"NodeResourcesFit": {}, "DefaultPreemption": {}})
        features = Features(enable_async_preemption=async_preemption, enable_generic_workload=True)
        options = FrameworkOptions(scheduler=self.actions, snapshot=self.snapshot, objects=self.actions.store,
                                   parallelism=parallelism, rng=random.Random(0), features=features)
        registry = {"NodeResourcesFit": NodeResourcesFit, "DefaultPreemption": DefaultPreemption}
        self.fwk = Framework(profile, registry, options)
        self.plugin: DefaultPreemption = self.fwk.plugins["DefaultPreemption"]

    def add_members(self, members: Sequence[Pod]) -> None:
        for p in members:
            self.snapshot.pod_group_states().state((p.namespace, p.pod_group_name)).add_pod(p)

    def algorithm(self, members: Sequence[Pod], min_count: int) -> PodGroupSchedulingFunc:
        """Each member on the first node (snapshot order) that passes the filters, assumed there; the group
        fits with at least ``min_count`` placed. Everything assumed is forgotten before returning."""
        def run() -> tuple[PodGroupAssignments, Status | None]:
            placed: list[ProposedAssignment] = []
            for p in members:
                state = CycleState()
                _, s, _ = self.fwk.run_pre_filter_plugins(state, p, self.snapshot.list())
                if not success(s):
                    continue
                for info in self.snapshot.list():
                    if success(self.fwk.run_filter_plugins_with_nominated_pods(state, p, info)):
                        self.snapshot.assume_pod(p.with_node(info.name))
                        placed.append(ProposedAssignment(p, info.name, state))
                        break
            for a in reversed(placed):
                self.snapshot.forget_pod(a.pod)
            status = None if len(placed) >= min_count else unschedulable("not enough members placed")
            return PodGroupAssignments(None, placed), status
        return run

    def post_filter(self, g: PodGroup, members: Sequence[Pod], min_count: int = 0) -> tuple[Any, Status | None]:
        self.add_members(members)
        info = PodGroupInfo(g.namespace, g.name, g, list(members))
        return self.plugin.pod_group_post_filter(CycleState(), info, self.algorithm(members, min_count or len(members)))

    def preempted(self) -> list[str]:
        return sorted(v.partition("/")[2] for v, _, _ in self.actions.preempted)

    def pods_on(self, node: str) -> list[str]:
        info = self.snapshot.get(node)
        assert info is not None
        return sorted(p.name for p in info.pods.values())


def test_gang_needs_victims_on_several_nodes_and_members_are_nominated() -> None:
    bound = [pod("low-a", "3", "n1", priority=1, start=NOW), pod("low-b", "3", "n2", priority=1, start=NOW),
             pod("keep", "1", "n3", priority=1, start=NOW)]
    gang = group("gang", 10, min_count=2)
    members = [pod(f"m{i}", "3", priority=10, pod_group="gang") for i in range(2)]
    c = Cluster([("n1", "4"), ("n2", "4"), ("n3", "2")], bound, [gang])
    result, status = c.post_filter(gang, members)
    assert status is not None and status.code == Code.SUCCESS
    assert status.message == "pod group preemption: found a placement for podgroup, preempting 2 victims"
    assert c.preempted() == ["low-a", "low-b"]
    assert {v[1] for v in c.actions.preempted} == {"default/gang"}  # the group is the preemptor
    assert {v[2] for v in c.actions.preempted} == {"cluster"}
    assert result.nominating_infos == {"default/m0": "n1", "default/m1": "n2"}
    # The snapshot is as it was: victims back, no member left on a node.
    assert c.pods_on("n1") == ["low-a"] and c.pods_on("n2") == ["low-b"] and c.pods_on("n3") == ["keep"]


def test_preempt_never_member_makes_the_group_ineligible() -> None:
    bound = [pod("low", "4", "n1", priority=1)]
    g = group("g", 10)
    members = [pod("m0", "3", priority=10, pod_group="g"), pod("m1", "1", priority=10, pod_group="g", policy="Never")]
    c = Cluster([("n1", "4")], bound, [g])
    result, status = c.post_filter(g, members)
    assert result is None
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message == "pod group preemption: not eligible due to preemptionPolicy=Never."
    assert c.preempted() == []


def test_pod_group_preemption_policy_gate_reads_the_group() -> None:
    members = [pod("m0", "1", pod_group="g", policy="Never")]
    assert resolve_preemption_policy(group("g", 1), members, False) == "Never"
    assert resolve_preemption_policy(group("g", 1), members, True) == "PreemptLowerPriority"
    assert resolve_preemption_policy(group("g", 1, policy="Never"), [], True) == "Never"


def test_equal_priority_is_no_victim() -> None:
    bound = [pod("same", "4", "n1", priority=10)]
    g = group("g", 10)
    c = Cluster([("n1", "4")], bound, [g])
    result, status = c.post_filter(g, [pod("m0", "2", priority=10, pod_group="g")])
    assert result is None
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == "pod group preemption: No preemption victims found for incoming preemptor"
    assert c.preempted() == []


def test_victim_group_with_disruption_mode_all_is_evicted_whole() -> None:
    # v1 alone would make room on n1, but its group (mode all) goes with it, v2 on n2 included.
    victims = group("victims", 1, mode="all")
    bound = [pod("v1", "4", "n1", priority=100, pod_group="victims", start=NOW),
             pod("v2", "1", "n2", priority=100, pod_group="victims", start=NOW),
             pod("other", "1", "n2", priority=1, start=NOW)]
    g = group("g", 10)
    c = Cluster([("n1", "4"), ("n2", "4")], bound, [victims, g])
    result, status = c.post_filter(g, [pod("m0", "4", priority=10, pod_group="g")])
    assert status is not None and status.code == Code.SUCCESS, status
    assert status.message == "pod group preemption: found a placement for podgroup, preempting 2 victims"
    assert c.preempted() == ["v1", "v2"]  # "other" is reprieved: the member fits on n1 with it
    assert result.nominating_infos == {"default/m0": "n1"}


def test_victim_group_with_disruption_mode_single_loses_only_one_member() -> None:
    victims = group("victims", 1, mode="single")
    bound = [pod("v1", "4", "n1", pod_group="victims", start="2026-01-01T00:00:00Z"),
             pod("v2", "4", "n2", pod_group="victims", start="2026-01-01T00:00:01Z")]
    g = group("g", 10)
    c = Cluster([("n1", "4"), ("n2", "4")], bound, [victims, g])
    result, status = c.post_filter(g, [pod("m0", "4", priority=10, pod_group="g")])
    assert status is not None and status.code == Code.SUCCESS
    # Each member is a unit of its own with the group's priority. With both gone the member lands on n1; v1
    # (started earlier: more important) is tried first and cannot stay, v2 can.
    assert c.preempted() == ["v1"]
    assert result.nominating_infos == {"default/m0": "n1"}


def test_group_that_does_not_fit_even_without_victims_returns_the_algorithm_status() -> None:
    bound = [pod("low", "1", "n1", priority=1)]
    g = group("g", 10)
    c = Cluster([("n1", "4")], bound, [g])
    result, status = c.post_filter(g, [pod("m0", "8", priority=10, pod_group="g")])
    assert result is None
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.message == "pod group preemption: not enough members placed"
    assert c.pods_on("n1") == ["low"]


def test_pdb_protected_victim_is_reprieved_before_a_more_important_one() -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "db"}}}, "status": {"disruptionsAllowed": 0}}
    # Either victim alone makes room; by importance "web" would be tried first and stay, but a victim whose
    # eviction violates a PDB is tried first.
    bound = [pod("db", "2", "n1", priority=1, labels={"app": "db"}, start=NOW),
             pod("web", "2", "n1", priority=5, start=NOW)]
    g = group("g", 10)
    c = Cluster([("n1", "4")], bound, [g], objects=[pdb])
    result, status = c.post_filter(g, [pod("m0", "2", priority=10, pod_group="g")])
    assert status is not None and status.code == Code.SUCCESS
    assert c.preempted() == ["web"]
    assert result.nominating_infos == {"default/m0": "n1"}


def test_pdb_violation_when_the_placement_needs_the_protected_victim() -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "db"}}}, "status": {"disruptionsAllowed": 0}}
    # The algorithm, run with every victim gone, puts the member on n1 (the first node): its victim goes,
    # PDB or not; "web" on n2 is not needed.
    bound = [pod("db", "4", "n1", priority=1, labels={"app": "db"}, start=NOW),
             pod("web", "4", "n2", priority=5, start=NOW)]
    g = group("g", 10)
    c = Cluster([("n1", "4"), ("n2", "4")], bound, [g], objects=[pdb])
    result, status = c.post_filter(g, [pod("m0", "4", priority=10, pod_group="g")])
    assert status is not None and status.code == Code.SUCCESS
    assert c.preempted() == ["db"]
    assert result.nominating_infos == {"default/m0": "n1"}


def test_ongoing_preemption_keeps_the_current_nominations() -> None:
    bound = [pod("going", "4", "n1", priority=1, terminating_by_preemption=True)]
    g = group("g", 10)
    members = [pod("m0", "4", priority=10, pod_group="g", nominated="n1"), pod("m1", "1", priority=10, pod_group="g")]
    c = Cluster([("n1", "4")], bound, [g])
    result, status = c.post_filter(g, members)
    assert status is not None and status.code == Code.SUCCESS
    assert status.message == "pod group preemption: ongoing preemption on nominated nodes"
    assert result.nominating_infos == {"default/m0": "n1", "default/m1": ""}
    assert c.preempted() == []


def test_async_preemption_marks_the_group_until_done() -> None:
    bound = [pod("low", "4", "n1", priority=1)]
    g = group("g", 10)
    member = pod("m0", "4", priority=10, pod_group="g")
    c = Cluster([("n1", "4")], bound, [g], async_preemption=True)
    result, status = c.post_filter(g, [member])
    assert status is not None and status.code == Code.SUCCESS
    assert result.nominating_infos == {"default/m0": "n1"}
    c.plugin.evaluator.executor().shutdown(wait=True)
    assert c.preempted() == ["low"]
    assert c.plugin.pre_enqueue(member) is None  # the preemption finished: the mark is gone
    c.plugin.evaluator._preempting.add(g.uid)
    status = c.plugin.pre_enqueue(member)
    assert status is not None and status.message == "waiting for the preemption for this pod group to be finished"


class ConcurrentEvictions(TestActions):
    """TestActions whose first ``together`` evictions wait for each other at a barrier (so they must run side by
    side), recording how many other evictions were still under way when each one started."""

    def __init__(self, together: int, fail: bool = False) -> None:
        super().__init__()
        self.barrier = threading.Barrier(together, timeout=10)
        self.fail = fail
        self.lock = threading.Lock()
        self.in_flight = 0
        self.started: list[tuple[str, int]] = []  # (victim, evictions under way or done before it), in start order
        self.finished: list[str] = []

    def preempt(self, victim: Pod, preemptor: Pod, node_name: str, plugin: str, *,
                group: GroupPreemptor | None = None) -> Status | None:
        with self.lock:
            self.started.append((victim.name, len(self.finished)))
            self.in_flight += 1
            first = len(self.started) <= self.barrier.parties
        if first:
            self.barrier.wait()  # BrokenBarrierError after 10 s if they were not side by side
        try:
            if self.fail:
                return unschedulable("the API server said no")
            return super().preempt(victim, preemptor, node_name, plugin, group=group)
        finally:
            with self.lock:
                self.in_flight -= 1
                self.finished.append(victim.name)


def _victim_per_node(n: int) -> tuple[list[tuple[str, str]], list[Pod], list[Pod]]:
    nodes = [(f"n{i}", "4") for i in range(n)]
    bound = [pod(f"low{i}", "4", f"n{i}", priority=1, start=NOW) for i in range(n)]
    members = [pod(f"m{i}", "4", priority=10, pod_group="g") for i in range(n)]
    return nodes, bound, members


def test_async_group_preemption_evicts_all_but_the_last_side_by_side_then_the_last() -> None:
    # Upstream's prepareCandidateAsync: Parallelizer().Until over victims[:-1], then the last victim alone.
    nodes, bound, members = _victim_per_node(5)
    actions = ConcurrentEvictions(together=4)
    g = group("g", 10)
    c = Cluster(nodes, bound, [g], async_preemption=True, actions=actions, parallelism=4)
    result, status = c.post_filter(g, members)
    assert result is not None and len(result.nominating_infos) == 5
    assert status is not None and status.code == Code.SUCCESS
    c.plugin.evaluator.executor().shutdown(wait=True)
    assert c.preempted() == [f"low{i}" for i in range(5)]
    assert [done for _, done in actions.started[:4]] == [0, 0, 0, 0], "the first four went out together"
    assert actions.started[4][1] == 4, "the last victim went out after the other four were done"
    assert c.plugin.pre_enqueue(members[0]) is None and actions.activated == []


def test_async_group_preemption_starts_no_eviction_after_a_failure_and_activates_the_members() -> None:
    nodes, bound, members = _victim_per_node(6)
    actions = ConcurrentEvictions(together=2, fail=True)
    g = group("g", 10)
    c = Cluster(nodes, bound, [g], async_preemption=True, actions=actions, parallelism=2)
    c.post_filter(g, members)
    c.plugin.evaluator.executor().shutdown(wait=True)
    assert len(actions.started) == 2, "the two failures under way stop the rest, the last victim included"
    assert sorted(actions.activated) == sorted(p.key for p in members)
    assert c.plugin.pre_enqueue(members[0]) is None


def test_victims_across_nodes_group_whole_units_in_importance_order() -> None:
    victims = group("all", 3, mode="all")
    bound = [pod("a1", "1", "n1", pod_group="all", start=NOW), pod("a2", "1", "n2", pod_group="all", start=NOW),
             pod("solo", "1", "n1", priority=3, start=NOW), pod("member", "1", "n2", pod_group="single", start=NOW)]
    c = Cluster([("n1", "4"), ("n2", "4")], bound, [victims, group("single", 3)])
    m = c.plugin.pod_group_evaluator
    assert m is not None
    vs = cross_nodes_victims(c.snapshot.list(), m.lookups.pod_group, m.lookups.scheduled_pods, c.snapshot.get, 0.0)
    assert [sorted(p.name for p in v.pods) for v in vs] == [["a1", "a2"], ["solo"], ["member"]]
    assert [v.key_type for v in vs] == [POD_GROUP_KEY_TYPE, POD_KEY_TYPE, POD_GROUP_KEY_TYPE]
    assert sorted(v.affected_nodes for v in vs[:1]) == [{"n1": c.snapshot.get("n1"), "n2": c.snapshot.get("n2")}]
    # Same priority: the two-pod group first, then the single member's unit (a group's), then the pod.
    assert [min(p.name for p in v.pods) for v in sorted(vs, key=victim_importance)] == ["a1", "member", "solo"]


def test_pod_group_post_filter_runs_in_the_snapshots_mutation_session() -> None:
    """Victims leave the cycle's snapshot (and their groups' states) only inside the session the plugin opens and
    always ends: afterwards the nodes and states are as they were; a session already open is upstream's error."""
    victims = group("victims", 1)
    bound = [pod("low", "4", "n1", priority=1, pod_group="victims", start=NOW)]
    g = group("g", 10)
    c = Cluster([("n1", "4")], bound, [victims, g])
    n1 = c.snapshot.get("n1")
    seen: list[list[str]] = []
    algorithm = c.algorithm([pod("m0", "4", priority=10, pod_group="g")], 1)

    def spying() -> tuple[PodGroupAssignments, Status | None]:
        seen.append([*c.pods_on("n1"), str(c.snapshot.pod_group_states().get("default", "victims").all_pods_count())])
        return algorithm()

    c.add_members([pod("m0", "4", priority=10, pod_group="g")])
    info = PodGroupInfo("default", "g", g, [pod("m0", "4", priority=10, pod_group="g")])
    _, status = c.plugin.pod_group_post_filter(CycleState(), info, spying)
    assert status is not None and status.code == Code.SUCCESS
    assert seen == [["0"]], "the algorithm ran with the victim gone from its node and its group's state"
    assert c.snapshot.get("n1") is n1 and c.pods_on("n1") == ["low"]
    assert c.snapshot.pod_group_states().get("default", "victims").all_pods_count() == 1
    c.snapshot.start_mutations()
    _, status = c.plugin.pod_group_post_filter(CycleState(), info, spying)
    assert status is not None and status.code == Code.ERROR
    assert status.message == "pod group preemption: failed to start mutations: cannot stack mutations"


def test_disruption_condition_names_a_preempting_group() -> None:
    victim = pod("v", "1", "n1")
    cond = disruption_target_condition(victim, pod("m0", "1"), "podgroup")
    assert cond is not None
    assert cond["message"] == "py-scheduler: preempting to accommodate a higher priority podgroup"
    assert cond["reason"] == "PreemptionByScheduler"


def test_scheduler_evicts_for_a_group_and_names_it() -> None:
    w = Writer()
    c = SchedulerCluster(writer=w).add(sched_node("n1", "2").api(), api_pod("v", node_name="n1", priority=1))
    victim = pod_from_api(api_pod("v", node_name="n1", priority=1))
    member = pod("m0", "1", priority=9, pod_group="g")
    g = group("g", 9)
    assert c.s.preempt(victim, member, "cluster", "DefaultPreemption", group=GroupPreemptor(g, [member], 9)) is None
    (patch_call, delete_call) = w.calls
    (cond,) = patch_call[3]["status"]["conditions"]
    assert cond["message"] == "py-scheduler: preempting to accommodate a higher priority podgroup"
    assert delete_call[:3] == ("delete", "default", "v")
    assert c.preempted() == [("default/v", "Preempted by podgroup uid-g on node cluster")]


def test_event_related_object_of_a_group_is_the_pod_group() -> None:
    ref = _pod_ref(RelatedObject("default", "g", "uid-g", "7", KIND_POD_GROUP, API_VERSION))
    assert ref == {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "namespace": "default",
                   "name": "g", "uid": "uid-g", "resourceVersion": "7"}
    assert _pod_ref(pod("p", "1"))["kind"] == "Pod"


def test_a_pod_preempting_a_member_of_a_group_with_mode_all_evicts_the_whole_group() -> None:
    victims = group("victims", 1, mode="all")
    bound = [pod("v1", "4", "n1", pod_group="victims", start=NOW),
             pod("v2", "1", "n2", pod_group="victims", start=NOW), pod("high", "3", "n2", priority=20, start=NOW)]
    c = Cluster([("n1", "4"), ("n2", "4")], bound, [victims])
    preemptor = pod("p", "4", priority=10)
    state = CycleState()
    _, s, _ = c.fwk.run_pre_filter_plugins(state, preemptor, c.snapshot.list())
    assert success(s)
    statuses = NodeToStatus({n.name: st for n in c.snapshot.list()
                             if (st := c.fwk.run_filter_plugins(state, preemptor, n)) is not None})
    assert set(statuses.statuses) == {"n1", "n2"}
    result, status = c.fwk.run_post_filter_plugins(state, preemptor, statuses)
    assert status is not None and status.code == Code.SUCCESS, status
    assert result is not None and result.nominated_node_name == "n1"
    assert c.preempted() == ["v1", "v2"]  # v2 on n2 goes with its group


def test_a_pod_sees_a_group_members_priority_as_the_groups() -> None:
    # The member's own priority (0) is below the preemptor's, its group's (50) is not.
    bound = [pod("member", "4", "n1", pod_group="strong", start=NOW)]
    c = Cluster([("n1", "4")], bound, [group("strong", 50)])
    preemptor = pod("p", "4", priority=10)
    state = CycleState()
    c.fwk.run_pre_filter_plugins(state, preemptor, c.snapshot.list())
    rejected = c.fwk.run_filter_plugins(state, preemptor, c.snapshot.list()[0])
    assert rejected is not None and rejected.code == Code.UNSCHEDULABLE
    result, status = c.fwk.run_post_filter_plugins(state, preemptor, NodeToStatus({"n1": rejected}))
    assert result is not None and result.nominated_node_name == ""
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert "No preemption victims found for incoming pod" in status.message
    assert c.preempted() == []


def test_a_pod_stops_at_the_first_pdb_it_exceeds() -> None:
    def budget(name: str, labels: Mapping[str, str], allowed: int) -> PodDisruptionBudget:
        return pdb_from_api({"metadata": {"name": name, "namespace": "default"},
                             "spec": {"selector": {"matchLabels": dict(labels)}},
                             "status": {"disruptionsAllowed": allowed}})
    pdbs = [budget("apps", {"app": "x"}, 0), budget("tiers", {"tier": "y"}, 1)]
    both, tier_only = pod("both", "1", labels={"app": "x", "tier": "y"}), pod("tier", "1", labels={"tier": "y"})
    # v1.37: "both" exceeds "apps" and stops there, so "tiers" keeps its budget for "tier" (before, "both" spent
    # it too and "tier" was counted as violating).
    assert filter_pods_with_pdb_violation([both, tier_only], pdbs) == ([both], [tier_only])
    violating, fine = filter_victims_with_pdb_violation(
        [_unit(both), _unit(tier_only)], pdbs)
    assert [(v.pods[0].name, n) for v, n in violating] == [("both", 1)] and [v.pods[0].name for v in fine] == ["tier"]


def _unit(p: Pod) -> Victim:
    return Victim([p], p.priority, 0.0, POD_KEY_TYPE)


# --- through the scheduler's pod-group cycle ---------------------------------------------------------------


def _pod_group_obj(name: str, priority: int, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "1"},
            "spec": {**spec, "priority": priority}}


def _member(name: str, cpu: str, group_name: str, priority: int, node: str = "") -> dict[str, Any]:
    p = api_pod(name, cpu=cpu, node_name=node, priority=priority)
    p["spec"]["schedulingGroup"] = {"podGroupName": group_name}
    return p


def test_group_cycle_unschedulable_then_victims_evicted_then_members_nominated_and_bound() -> None:
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{"schedulerName": "py-scheduler",
                                   "plugins": {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}}]})
    sink, binder, writer, metrics = RecordingEventSink(), RecordingBinder(), OfflineWriter(), Metrics()
    s = Scheduler(cfg, build_registry(cfg), binder, sink, metrics, synchronous_binding=True, rng=random.Random(1),
                  tie_break="name", writer=writer,
                  features=Features(enable_async_preemption=False, enable_generic_workload=True))
    writer.connect(s)
    for n in ("n1", "n2"):
        s.on_node_event(ADDED, sched_node(n, "4").api())
    # A batch group (disruptionMode all) across both nodes, and a plain pod on n2; all of priority 1.
    s.on_pod_group_event(ADDED, _pod_group_obj("batch", 1, {"schedulingPolicy": {"basic": {}},
                                                            "disruptionMode": {"all": {}}}))
    s.on_pod_event(ADDED, _member("b1", "3", "batch", 1, node="n1"))
    s.on_pod_event(ADDED, _member("b2", "1", "batch", 1, node="n2"))
    s.on_pod_event(ADDED, api_pod("keep", cpu="3", node_name="n2", priority=1))
    s.on_pod_group_event(ADDED, _pod_group_obj("gang", 10, {"schedulingPolicy": {"gang": {"minCount": 2}},
                                                           "disruptionMode": {"single": {}}}))
    s.on_pod_event(ADDED, _member("m0", "4", "gang", 10))
    s.on_pod_event(ADDED, _member("m1", "1", "gang", 10))

    assert s.schedule_one(timeout=0)
    # Without victims m0 takes n1 and m1 n2; "batch" cannot come back (b1 blocks m0) and goes whole, b2 with it;
    # "keep" fits beside m1 and stays.
    assert sorted((k, note) for k, _, reason, note in sink.events if reason == "Preempted") == [
        ("default/b1", "Preempted by podgroup uid-gang on node cluster"),
        ("default/b2", "Preempted by podgroup uid-gang on node cluster")]
    assert sink.nominated == {"default/m0": "n1", "default/m1": "n2"}
    assert binder.bindings == []
    sample = metrics.registry.get_sample_value
    assert sample("scheduler_workload_preemption_attempts_total", {"result": "Success"}) == 1
    assert sample("scheduler_workload_preemption_victims_sum") == 2
    assert sample("scheduler_preemption_workload_disruptions_sum", {"preemptor": "podgroup"}) == 1
    assert sample("scheduler_preemption_evaluation_duration_seconds_count",
                  {"preemptor": "podgroup", "result": "Success"}) == 1
    assert sample("scheduler_preemption_execution_duration_seconds_count",
                  {"preemptor": "podgroup", "result": "success"}) == 1
    assert sample("scheduler_preemption_pdb_violations_total", {"preemptor": "podgroup"}) is None  # no budget

    s.queue.activate([s._pending["uid-m0"], s._pending["uid-m1"]])
    assert s.schedule_one(timeout=0)
    assert sorted(binder.bindings) == [("default/m0", "n1"), ("default/m1", "n2")]


def test_a_plain_pod_goes_before_a_group_member_of_the_same_priority() -> None:
    # Upstream's "Priority: mix of no groups and pod groups": the member (a pod-group unit) is more important.
    bound = [pod("plain", "1", "n1", priority=1, start=NOW), pod("member", "1", "n1", pod_group="pg1", start=NOW)]
    g = group("g", 10)
    c = Cluster([("n1", "2")], bound, [group("pg1", 1), g])
    result, status = c.post_filter(g, [pod("m0", "1", priority=10, pod_group="g")])
    assert status is not None and status.code == Code.SUCCESS
    assert c.preempted() == ["plain"]
    assert result.nominating_infos == {"default/m0": "n1"}
