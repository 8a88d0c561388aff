"""The queue's pod-group paths (GenericWorkload on): members wait for their PodGroup (incomplete), join their queued
group, wait while it is in flight (pending) and come back with it; a deleted PodGroup sends them back to incomplete."""

from __future__ import annotations

from scheduler.framework import types
from scheduler.framework.events import UNSCHEDULED_POD_ADD
from scheduler.framework.status import Status, unresolvable, unschedulable
from scheduler.framework.types import NODE_ADD, ClusterEventWithHint, QueueingHint
from scheduler.model.node import node_from_api
from scheduler.model.pod import Pod
from scheduler.model.workload import parse_pod_group
from scheduler.queue import PriorityQueue, QueueProfile
from scheduler.queue.pod_group_queue import QueuedPodGroupInfo
from scheduler.testing import make_pod
from tests.queue.qhelpers import FakeClock, make_queue, priority_less, priority_rank


def group(name: str = "g", priority: int = 0) -> dict:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "priority": priority}}


def test_members_wait_for_their_pod_group_then_pop_as_one_entity() -> None:
    q, _ = make_queue()
    q.generic_workload = True
    q.add(make_pod().name("b").pod_group("g").obj())
    q.add(make_pod().name("a").pod_group("g").obj())
    assert q.pop(timeout=0) is None
    assert q.pod_group_member_counts() == (2, 0)
    q.add_pod_group(parse_pod_group(group()))
    entity = q.pop(timeout=0)
    assert isinstance(entity, QueuedPodGroupInfo)
    assert [m.pod.name for m in entity.members] == ["a", "b"], "same priority and timestamp: by name"
    assert entity.info.unscheduled_pods == [m.pod for m in entity.members]
    assert entity.attempts == 1 and all(m.attempts == 1 for m in entity.members)


def test_a_group_is_ordered_with_pods_by_priority() -> None:
    q, clock = make_queue()
    q.generic_workload = True
    q.add(make_pod().name("low").priority(1).obj())
    clock.advance(1)
    q.add_pod_group(parse_pod_group(group(priority=5)))
    q.add(make_pod().name("m").priority(5).pod_group("g").obj())
    first = q.pop(timeout=0)
    assert isinstance(first, QueuedPodGroupInfo)
    second = q.pop(timeout=0)
    assert second is not None and not isinstance(second, QueuedPodGroupInfo) and second.pod.name == "low"


def test_members_arriving_in_flight_come_back_with_the_group() -> None:
    q, clock = make_queue()
    q.generic_workload = True
    q.add_pod_group(parse_pod_group(group()))
    q.add(make_pod().name("a").pod_group("g").obj())
    entity = q.pop(timeout=0)
    assert isinstance(entity, QueuedPodGroupInfo)
    q.add(make_pod().name("b").pod_group("g").obj())
    assert q.pod_group_member_counts() == (0, 1)
    member = entity.members[0]
    member.unschedulable_plugins = {"GangScheduling"}
    assert q.add_unschedulable_if_not_present(member, q.scheduling_cycle) is None
    assert q.pod_group_member_counts() == (0, 2)
    assert q.add_attempted_pod_group_if_needed(entity, unschedulable("no")) is None
    assert q.pod_group_member_counts() == (0, 0)
    assert q.pod_group_entities()["backoff"] == 1
    clock.advance(2)
    q.flush_backoff_completed()
    again = q.pop(timeout=0)
    assert isinstance(again, QueuedPodGroupInfo)
    assert sorted(m.pod.name for m in again.members) == ["a", "b"]
    assert again.unschedulable_count == 1


def test_deleting_the_pod_group_sends_members_back_to_incomplete() -> None:
    q, _ = make_queue()
    q.generic_workload = True
    q.add_pod_group(parse_pod_group(group()))
    q.add(make_pod().name("a").pod_group("g").obj())
    q.delete_pod_group("default", "g")
    assert q.pod_group_member_counts() == (1, 0)
    assert q.pop(timeout=0) is None
    q.delete(make_pod().name("a").pod_group("g").obj())
    assert q.pod_group_member_counts() == (0, 0)


def test_gate_off_queues_members_as_pods() -> None:
    q, _ = make_queue()
    q.add(make_pod().name("a").pod_group("g").obj())
    qpi = q.pop(timeout=0)
    assert qpi is not None and not isinstance(qpi, QueuedPodGroupInfo)


def test_groups_pop_by_priority_then_timestamp() -> None:
    q, clock = make_queue()
    q.generic_workload = True
    for name, prio in (("g1", 1), ("g2", 1), ("g3", 9)):
        q.add_pod_group(parse_pod_group(group(name, priority=prio)))
        q.add(make_pod().name(f"{name}-a").priority(prio).pod_group(name).obj())
        clock.advance(1)
    order = []
    while (entity := q.pop(timeout=0)) is not None:
        assert isinstance(entity, QueuedPodGroupInfo)
        order.append(entity.info.name)
    assert order == ["g3", "g1", "g2"]


class Hold:
    """A PreEnqueue plugin that holds every pod until told, registered for NodeAdd."""

    name = "Hold"

    def __init__(self) -> None:
        self.holding = True
        self.checks = 0

    def pre_enqueue(self, pod: Pod) -> Status | None:
        self.checks += 1
        return unresolvable("held") if self.holding else None


def test_a_gated_group_wakes_on_an_event_its_gating_plugin_registered() -> None:
    hold = Hold()
    q = PriorityQueue(priority_less, {"default-scheduler": QueueProfile(
        pre_enqueue_plugins=[hold], hints={"Hold": [ClusterEventWithHint(NODE_ADD)]})}, clock=FakeClock(),
        rank=priority_rank)
    q.generic_workload = True
    q.add_pod_group(parse_pod_group(group()))
    q.add(make_pod().name("a").pod_group("g").obj())
    assert q.pop(timeout=0) is None and q.pod_group_entities()["gated"] == 1
    hold.holding = False
    q.node_added(node_from_api({"metadata": {"name": "n1"}}))
    entity = q.pop(timeout=0)
    assert isinstance(entity, QueuedPodGroupInfo) and entity.members[0].pod.name == "a"


def test_a_gated_group_moves_only_when_a_members_rejectors_hint_says_queue() -> None:
    """isEntityWorthRequeuing: the event reaches the gated group through its gating plugin's registration, then
    the members' rejectors' hints decide (here the gating plugin's, which PreEnqueue made a rejector)."""
    hold = Hold()
    answers: list[QueueingHint] = []

    def hint(pod: Pod, old: object, new: object) -> QueueingHint:
        return answers.pop(0)

    q = PriorityQueue(priority_less, {"default-scheduler": QueueProfile(
        pre_enqueue_plugins=[hold], hints={"Hold": [ClusterEventWithHint(NODE_ADD, hint)]})}, clock=FakeClock(),
        rank=priority_rank)
    q.generic_workload = True
    q.add_pod_group(parse_pod_group(group()))
    q.add(make_pod().name("a").pod_group("g").obj())
    assert q.pop(timeout=0) is None and q.pod_group_entities()["gated"] == 1
    hold.holding = False
    answers.append(QueueingHint.QUEUE_SKIP)
    q.node_added(node_from_api({"metadata": {"name": "n1"}}))
    assert not answers, "the member's rejector was asked"
    assert q.pop(timeout=0) is None and q.pod_group_entities()["gated"] == 1, "Skip: PreEnqueue is not run again"
    answers.append(QueueingHint.QUEUE)
    q.node_added(node_from_api({"metadata": {"name": "n2"}}))
    entity = q.pop(timeout=0)
    assert isinstance(entity, QueuedPodGroupInfo) and entity.members[0].pod.name == "a"


def attempt_fails(q: PriorityQueue) -> None:
    """Pop the group; every member rejected by NodeResourcesFit, the group Unschedulable."""
    entity = q.pop(timeout=0)
    assert isinstance(entity, QueuedPodGroupInfo)
    for m in entity.members:
        m.unschedulable_plugins = {"NodeResourcesFit"}
        assert q.add_unschedulable_if_not_present(m, q.scheduling_cycle) is None
    assert q.add_attempted_pod_group_if_needed(entity, unschedulable("no")) is None


def test_group_moves_are_counted_as_upstreams_incoming_entities_and_pending_pods() -> None:
    """recordIncomingEntitiesMetrics for a group: every member in scheduler_queue_incoming_pods_total, the group
    once in the podgroup row unless its strategy named the queue; scheduler_pending_pods counts the members."""
    q, clock = make_queue()
    q.generic_workload = True
    records: list[tuple[str, str, int, bool]] = []
    q.group_metrics = lambda *r: records.append(r)
    q.add_pod_group(parse_pod_group(group()))
    q.add(make_pod().name("a").pod_group("g").obj())
    q.add(make_pod().name("b").pod_group("g").obj())
    assert records == [("active", "UnscheduledPodAdd", 1, True),  # a new group
                       ("active", "UnscheduledPodAdd", 2, False)]  # back where it was: no new entity
    assert q.pod_group_members_by_state() == {"active": 2, "backoff": 0, "gated": 0}
    attempt_fails(q)
    assert records[-1] == ("backoff", "ScheduleAttemptFailure", 2, True)
    assert q.pod_group_members_by_state() == {"active": 0, "backoff": 2, "gated": 0}
    clock.advance(2)
    q.flush_backoff_completed()
    assert records[-1] == ("active", "BackoffComplete", 2, True)


def test_a_groups_maximum_backoff_grows_with_the_square_root_of_its_members() -> None:
    """calculateBackoffDuration: maxBackoff * sqrt(size) for an entity of several pods (defaults 1 s .. 10 s)."""
    q, _ = make_queue()
    q.generic_workload = True
    q.add_pod_group(parse_pod_group(group()))
    for name in ("a", "b", "c", "d"):
        q.add(make_pod().name(name).pod_group("g").obj())
    attempt_fails(q)
    again = next(iter(q._groups.queued.values()))
    again.unschedulable_count = 6  # 1 s * 2**5 = 32 s: above 10 s, below 10 s * sqrt(4) = 20 s
    again.backoff_expiration = None
    assert q._groups.backoff_expiry(again, 1.0, 10.0) == again.timestamp + 20.0


def test_a_gated_groups_member_update_moves_it_only_through_a_rejectors_hint() -> None:
    """Update of a member of a gated group: each (TargetPod) event of the change goes to the members' rejectors'
    hints; nothing registered for it leaves the group gated, PreEnqueue not run."""
    own_label = ClusterEventWithHint(
        types.ClusterEvent(types.EventResource.UNSCHEDULED_POD, types.ActionType.UPDATE_POD_LABEL))
    for registered, moves in (([ClusterEventWithHint(NODE_ADD)], False), ([own_label], True)):
        hold = Hold()
        q = PriorityQueue(priority_less, {"default-scheduler": QueueProfile(
            pre_enqueue_plugins=[hold], hints={"Hold": registered})}, clock=FakeClock(), rank=priority_rank)
        q.generic_workload = True
        q.add_pod_group(parse_pod_group(group()))
        old = make_pod().name("a").pod_group("g").resource_version("1").obj()
        q.add(old)
        assert q.pop(timeout=0) is None and q.pod_group_entities()["gated"] == 1
        hold.holding = False
        q.update(old, make_pod().name("a").pod_group("g").resource_version("2").labels({"x": "y"}).obj())
        assert (q.pod_group_entities()["gated"] == 0) is moves
        assert isinstance(q.pop(timeout=0), QueuedPodGroupInfo) is moves


def test_groups_and_pods_are_ordered_by_the_profiles_queue_sort() -> None:
    """An unranked QueueSort (here: by name, the reverse of arrival) orders groups against pods and among
    themselves, as upstream's one activeQ heap by the plugin's Less over entities."""
    def by_name(a: object, b: object) -> bool:
        return a.pod.name < b.pod.name  # type: ignore[attr-defined]

    q = PriorityQueue(by_name, {}, clock=FakeClock())
    q.generic_workload = True
    for name in ("z-g", "m-g"):
        q.add_pod_group(parse_pod_group(group(name)))
    q.add(make_pod().name("zz").pod_group("z-g").obj())
    q.add(make_pod().name("nn").obj())
    q.add(make_pod().name("mm").pod_group("m-g").obj())
    q.add(make_pod().name("aa").obj())
    order = []
    while (e := q.pop(timeout=0)) is not None:
        order.append(e.info.name if isinstance(e, QueuedPodGroupInfo) else e.pod.name)
    assert order == ["aa", "m-g", "nn", "z-g"]


def test_a_gated_group_is_retried_by_the_leftover_flush_only_after_the_unschedulable_timeout() -> None:
    """flushUnschedulableEntitiesLeftover: gated longer than podMaxInUnschedulablePodsDuration (5 min) since it was
    queued or last flushed, not at every 30-s run."""
    hold = Hold()
    clock = FakeClock()
    q = PriorityQueue(priority_less, {"default-scheduler": QueueProfile(pre_enqueue_plugins=[hold])}, clock=clock,
                      rank=priority_rank)
    q.generic_workload = True
    q.add_pod_group(parse_pod_group(group()))
    q.add(make_pod().name("a").pod_group("g").obj())
    assert q.pop(timeout=0) is None and q.pod_group_entities()["gated"] == 1
    checks = hold.checks
    for _ in range(9):  # 270 s of 30-s flushes
        clock.advance(30)
        q.flush_unschedulable_pods_leftover()
    assert hold.checks == checks  # PreEnqueue not asked again
    clock.advance(31)
    q.flush_unschedulable_pods_leftover()  # 301 s
    assert hold.checks == checks + 1 and q.pod_group_entities()["gated"] == 1
    clock.advance(240)
    q.flush_unschedulable_pods_leftover()
    assert hold.checks == checks + 1  # 240 s after its flush: not yet
    clock.advance(61)
    hold.holding = False
    q.flush_unschedulable_pods_leftover()
    entity = q.pop(timeout=0)
    assert isinstance(entity, QueuedPodGroupInfo) and entity.members[0].pod.name == "a"


def test_a_member_joining_a_gated_group_leaves_it_gated_until_the_add_events_hints_say_queue() -> None:
    """addToPodGroupIfExists with queueSkip, then the handler's UnscheduledPodAdd: only the gating plugin's
    registered events are looked at, and its hint decides."""
    hold = Hold()
    asked: list[str] = []

    def hint(pod: Pod, old: object, new: object) -> QueueingHint:
        asked.append(pod.name)
        return QueueingHint.QUEUE

    q = PriorityQueue(priority_less, {"default-scheduler": QueueProfile(
        pre_enqueue_plugins=[hold], hints={"Hold": [ClusterEventWithHint(UNSCHEDULED_POD_ADD, hint)]})},
        clock=FakeClock(), rank=priority_rank)
    q.generic_workload = True
    q.add_pod_group(parse_pod_group(group()))
    q.add(make_pod().name("a").pod_group("g").obj())
    checks = hold.checks
    b = make_pod().name("b").pod_group("g").obj()
    q.add(b)
    assert hold.checks == checks and q.pod_group_entities()["gated"] == 1  # PreEnqueue not run on the join
    hold.holding = False
    q.move_all_to_active_or_backoff(UNSCHEDULED_POD_ADD, None, b)
    assert asked and hold.checks > checks
    entity = q.pop(timeout=0)
    assert isinstance(entity, QueuedPodGroupInfo) and [m.pod.name for m in entity.members] == ["a", "b"]
