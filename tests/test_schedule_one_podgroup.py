"""The pod-group cycle (GenericWorkload on) without an API server: a gang placed whole or not at all, the members'
messages and the PodGroup condition as upstream's, members arriving before their PodGroup, the basic policy,
PlacementFeasible's early exit and validatePodGroup's errors."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from scheduler.config.defaults import set_workload_gates
from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED
from scheduler.framework.features import Features
from scheduler.model.pod import Pod
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import RecordingEventSink
from tests.builders import api_node, api_pod


class Binder:
    def __init__(self) -> None:
        self.bound: list[tuple[str, str]] = []

    def bind(self, p: Pod, node_name: str) -> None:
        self.bound.append((p.key, node_name))


class StatusWriter:
    def __init__(self) -> None:
        self.patches: list[tuple[str, str, Mapping[str, Any]]] = []

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, object]) -> None:
        self.patches.append((namespace, name, patch))

    def last_condition(self) -> dict[str, Any]:
        cond: dict[str, Any] = self.patches[-1][2]["status"]["conditions"][0]  # type: ignore[index]
        return cond


@pytest.fixture(autouse=True)
def workload_gates() -> Iterator[None]:
    set_workload_gates(True, False)
    yield
    set_workload_gates(False, False)


WORKLOAD = Features(enable_generic_workload=True)


def make(binder: Binder, sink: RecordingEventSink, writer: StatusWriter, features: Features = WORKLOAD) -> Scheduler:
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{"schedulerName": "py-scheduler"}]})
    return Scheduler(cfg, build_registry(cfg), binder, sink, None, synchronous_binding=True, rng=random.Random(1),
                     tie_break="name", features=features, pod_group_status_writer=writer)


def pod_group(name: str, min_count: int | None = None, priority: int | None = None) -> dict[str, Any]:
    policy: dict[str, Any] = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-pg-{name}", "generation": 1,
                         "resourceVersion": "1"}, "spec": spec}


def member(name: str, group: str, cpu: str = "2", priority: int = 0) -> dict[str, Any]:
    obj = api_pod(name, cpu=cpu, priority=priority)
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


def run(s: Scheduler) -> None:
    while s.schedule_one(timeout=0):
        pass


@pytest.fixture
def parts() -> tuple[Binder, RecordingEventSink, StatusWriter]:
    return Binder(), RecordingEventSink(), StatusWriter()


def test_gang_that_fits_is_bound_whole(parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> None:
    b, sink, w = parts
    s = make(b, sink, w)
    for n in ("n1", "n2", "n3"):
        s.on_node_event(ADDED, api_node(n))
    s.on_pod_group_event(ADDED, pod_group("g", min_count=3))
    for i in range(3):
        s.on_pod_event(ADDED, member(f"p{i}", "g"))
    run(s)
    assert sorted(k for k, _ in b.bound) == ["default/p0", "default/p1", "default/p2"]
    cond = w.last_condition()
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "PodGroupInitiallyScheduled", "True", "Scheduled", "")
    assert cond["observedGeneration"] == 1
    assert not [e for e in sink.events if e[2] == "FailedScheduling"]


def test_gang_that_does_not_fit_binds_nothing(parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> None:
    b, sink, w = parts
    s = make(b, sink, w)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_group_event(ADDED, pod_group("g", min_count=3))
    for i in range(3):
        s.on_pod_event(ADDED, member(f"p{i}", "g"))
    assert s.schedule_one(timeout=0)
    assert b.bound == []
    assert s.cache.assumed_count() == 0 and s.cache.pod_count() == 0
    assert all(not info.pods for info in s.snapshot.list()), "every simulated assumption is reverted"
    group = ("minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
             "pod group preemption: No preemption victims found for incoming preemptor")
    got = _failed(sink)
    assert got["default/p0"] == f"pod group is unschedulable, {group}"
    assert got["default/p1"] == f"pod group is unschedulable, {group}"
    assert got["default/p2"] == "0/1 nodes are available: 1 Insufficient cpu."
    cond = w.last_condition()
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", group)
    # The whole group waits out its backoff as one entity.
    assert s.queue.pod_group_entities()["backoff"] == 1


def _failed(sink: RecordingEventSink) -> dict[str, str]:
    """The FailedScheduling message of each pod (its latest)."""
    return {key: note for key, _type, reason, note in sink.events if reason == "FailedScheduling"}


def test_members_before_their_pod_group(parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> None:
    b, sink, w = parts
    s = make(b, sink, w)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, member("p0", "g", cpu="1"))
    s.on_pod_event(ADDED, member("p1", "g", cpu="1"))
    assert not s.schedule_one(timeout=0), "members wait (incomplete) until their PodGroup is observed"
    assert s.queue.pod_group_member_counts() == (2, 0)
    s.on_pod_group_event(ADDED, pod_group("g", min_count=2))
    run(s)
    assert sorted(k for k, _ in b.bound) == ["default/p0", "default/p1"]


def test_basic_policy_binds_the_members_that_fit(parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> None:
    b, sink, w = parts
    s = make(b, sink, w)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_group_event(ADDED, pod_group("g"))
    s.on_pod_event(ADDED, member("p0", "g", cpu="3"))
    s.on_pod_event(ADDED, member("p1", "g", cpu="3"))
    assert s.schedule_one(timeout=0)
    assert b.bound == [("default/p0", "n1")]
    assert _failed(sink) == {"default/p1": "0/1 nodes are available: 1 Insufficient cpu."}
    assert w.last_condition()["reason"] == "Scheduled"


def test_placement_feasible_ends_a_hopeless_gang_early(parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> None:
    b, sink, w = parts
    s = make(b, sink, w)
    s.on_node_event(ADDED, api_node("n1", cpu="1"))
    s.on_pod_group_event(ADDED, pod_group("g", min_count=2))
    s.on_pod_event(ADDED, member("p0", "g"))
    s.on_pod_event(ADDED, member("p1", "g"))
    assert s.schedule_one(timeout=0)
    got = _failed(sink)
    # p0 fails; with one pod left minCount 2 cannot be met: p1 is never evaluated and gets the group's status as it
    # was before PodGroupPostFilter appended its message.
    assert got["default/p0"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert got["default/p1"] == "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    assert w.last_condition()["message"] == ("minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, "
                                             "pod group preemption: No preemption victims found for incoming preemptor")
    assert b.bound == []


def _two_of_a_gang_of_three(parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> Scheduler:
    """Two members of a gang with minCount 3 on one node: GangScheduling's PreEnqueue gates the group."""
    s = make(*parts)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_group_event(ADDED, pod_group("g", min_count=3))
    s.on_pod_event(ADDED, member("p0", "g", cpu="1"))
    s.on_pod_event(ADDED, member("p1", "g", cpu="1"))
    assert not s.schedule_one(timeout=0)
    assert s.queue.pod_group_entities()["gated"] == 1
    return s


def test_a_gang_below_min_count_is_gated(parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> None:
    b = parts[0]
    s = _two_of_a_gang_of_three(parts)
    s.on_pod_event(ADDED, member("p2", "g", cpu="1"))
    run(s)
    assert len(b.bound) == 3


def test_a_gated_gang_moves_on_its_pod_groups_update_only_when_min_count_goes_down(
    parts: tuple[Binder, RecordingEventSink, StatusWriter],
) -> None:
    """The handler's PodGroupUpdate asks GangScheduling's hint (upstream updatePodGroup): a label change leaves the
    gang gated, a lower minCount frees it."""
    b = parts[0]
    s = _two_of_a_gang_of_three(parts)
    relabelled = pod_group("g", min_count=3)
    relabelled["metadata"].update(resourceVersion="2", labels={"team": "a"})
    s.on_pod_group_event("MODIFIED", relabelled)
    assert not s.schedule_one(timeout=0) and s.queue.pod_group_entities()["gated"] == 1
    lowered = pod_group("g", min_count=2)
    lowered["metadata"]["resourceVersion"] = "3"
    s.on_pod_group_event("MODIFIED", lowered)
    run(s)
    assert sorted(k for k, _ in b.bound) == ["default/p0", "default/p1"]


def test_validate_pod_group_priority(parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> None:
    b, sink, w = parts
    s = make(b, sink, w)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_group_event(ADDED, pod_group("g", min_count=2))
    s.on_pod_event(ADDED, member("p0", "g", cpu="1", priority=5))
    s.on_pod_event(ADDED, member("p1", "g", cpu="1", priority=5))
    assert s.schedule_one(timeout=0)
    msg = "all pods in a single pod group should have the same priority as the pod group's priority, got 5 and 0"
    assert _failed(sink) == {"default/p0": msg, "default/p1": msg}
    cond = w.last_condition()
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "SchedulerError", msg)
    assert b.bound == []


@pytest.mark.parametrize("gate", [False, True])
def test_validate_pod_group_preemption_policy(
    gate: bool, parts: tuple[Binder, RecordingEventSink, StatusWriter],
) -> None:
    """PodGroupPreemptionPolicy off: the members must agree among themselves; on: with the PodGroup's policy."""
    b, sink, w = parts
    s = make(b, sink, w, Features(enable_generic_workload=True, enable_pod_group_preemption_policy=gate))
    s.on_node_event(ADDED, api_node("n1"))
    group = pod_group("g", min_count=2)
    group["spec"]["preemptionPolicy"] = "Never"
    s.on_pod_group_event(ADDED, group)
    for name in ("p0", "p1"):
        s.on_pod_event(ADDED, member(name, "g", cpu="1"))  # PreemptLowerPriority, the pod default
    run(s)
    if not gate:  # the members agree: the group's own policy is not read
        assert sorted(k for k, _ in b.bound) == ["default/p0", "default/p1"]
        return
    msg = ("all pods in a single pod group should have the same preemption policy as the pod group's preemption "
           "policy, got PreemptLowerPriority and Never")
    assert _failed(sink) == {"default/p0": msg, "default/p1": msg} and b.bound == []


def test_gate_off_schedules_members_one_by_one(parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> None:
    set_workload_gates(False, False)
    b, sink, w = parts
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{"schedulerName": "py-scheduler"}]})
    s = Scheduler(cfg, build_registry(cfg), b, sink, None, synchronous_binding=True, rng=random.Random(1),
                  tie_break="name")
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_group_event(ADDED, pod_group("g", min_count=3))
    s.on_pod_event(ADDED, member("p0", "g", cpu="1"))
    run(s)
    assert b.bound == [("default/p0", "n1")], "without the gate schedulingGroup means nothing"
    assert w.patches == []


def test_placement_algorithm_with_one_placement(parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> None:
    """TopologyAwareWorkloadScheduling on: the placement algorithm runs (the generator proposes the whole cluster);
    an infeasible gang says how many placements it tried."""
    set_workload_gates(True, True)
    b, sink, w = parts
    s = make(b, sink, w, Features(enable_generic_workload=True, enable_topology_aware_workload_scheduling=True))
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_group_event(ADDED, pod_group("g", min_count=3))
    for i in range(3):
        s.on_pod_event(ADDED, member(f"p{i}", "g"))
    assert s.schedule_one(timeout=0)
    assert b.bound == []
    assert s.algorithm.placement_nodes is None, "the placement's limit is lifted after the cycle"
    group = ("pod group is unschedulable, 0/1 placements are available, first placement status: "
             "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
             "pod group preemption: No preemption victims found for incoming preemptor")
    assert w.last_condition()["message"] == group
    assert _failed(sink)["default/p0"] == f"pod group is unschedulable, {group}"
    s.on_node_event(ADDED, api_node("n2"))
    s.queue.activate([s._pending["uid-p0"]])
    run(s)
    assert len(b.bound) == 3


def test_a_bound_member_arriving_last_completes_a_gated_gang(
        parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> None:
    b, sink, w = parts
    s = make(b, sink, w)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_group_event(ADDED, pod_group("g", min_count=3))
    s.on_pod_event(ADDED, member("p1", "g", cpu="1"))
    s.on_pod_event(ADDED, member("p2", "g", cpu="1"))
    assert not s.schedule_one(timeout=0)
    bound = member("p0", "g", cpu="1")
    bound["spec"]["nodeName"] = "n1"
    s.on_pod_event(ADDED, bound)
    run(s)
    assert sorted(k for k, _ in b.bound) == ["default/p1", "default/p2"]


def test_pod_groups_arrive_through_on_object_event(parts: tuple[Binder, RecordingEventSink, StatusWriter]) -> None:
    b, sink, w = parts
    s = make(b, sink, w)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, member("p0", "g", cpu="1"))
    s.on_object_event("scheduling.k8s.io/PodGroup", ADDED, pod_group("g", min_count=1))
    run(s)
    assert b.bound == [("default/p0", "n1")]


class LaggingServer:
    """The API server's PodGroup under the writer's patches (conditions merged field by field by type, as a
    strategic merge does), delivered to the scheduler's watch only when ``deliver`` is called."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.patches: list[Mapping[str, Any]] = []

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.patches.append(patch)
        conditions = [dict(c) for c in (self.obj.get("status") or {}).get("conditions") or []]
        for entry in patch["status"]["conditions"]:
            old = next((c for c in conditions if c["type"] == entry["type"]), None)
            if old is None:
                conditions.append(dict(entry))
            else:
                old.update(entry)
        meta = dict(self.obj["metadata"])
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        self.obj = {**self.obj, "metadata": meta, "status": {"conditions": conditions}}

    def deliver(self, s: Scheduler) -> None:
        s.on_pod_group_event("MODIFIED", self.obj)

    def condition(self) -> tuple[str, str, str]:
        c = self.obj["status"]["conditions"][0]
        return c["status"], c["reason"], c["message"]


def test_a_cycle_before_the_watch_patches_only_what_differs_from_its_stale_copy() -> None:
    """Upstream's retry of a successful group's failed member runs at once, before the watch brings back the True
    condition: it asks for False from the cached False, and util.PatchPodGroupStatus's two-way patch carries the
    message alone, so the server keeps True with the member's message (kube-scheduler, differential seed 21)."""
    server = LaggingServer(pod_group("g", min_count=2))
    sink = RecordingEventSink()
    b = Binder()
    s = make(b, sink, server)  # type: ignore[arg-type]
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_group_event(ADDED, server.obj)
    for i in range(3):
        s.on_pod_event(ADDED, member(f"p{i}", "g", cpu="3"))
    assert s.schedule_one(timeout=0)
    assert server.condition()[:2] == ("False", "Unschedulable")
    server.deliver(s)
    s.on_node_event(ADDED, api_node("n2"))
    s.queue.activate(s.queue.pod_group_members())
    assert s.schedule_one(timeout=0)  # p0 and p1 bound: True, not delivered yet
    assert sorted(k for k, _ in b.bound) == ["default/p0", "default/p1"]
    assert server.condition() == ("True", "Scheduled", "")
    assert s.schedule_one(timeout=0)  # p2 alone, requeued at once
    msg = "pod group is unschedulable, pod group preemption: No preemption victims found for incoming preemptor"
    assert server.patches[-1] == {"status": {"$setElementOrder/conditions": [{"type": "PodGroupInitiallyScheduled"}],
                                             "conditions": [{"type": "PodGroupInitiallyScheduled", "message": msg}]}}
    assert server.condition() == ("True", "Scheduled", msg)
    server.deliver(s)
    s.queue.activate(s.queue.pod_group_members())
    patches = len(server.patches)
    assert s.schedule_one(timeout=0)
    assert len(server.patches) == patches, "a True condition on the cached copy is never regressed"
