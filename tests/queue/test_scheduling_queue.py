from __future__ import annotations

import threading

from scheduler.framework.status import Status, unresolvable, unschedulable
from scheduler.framework.types import NODE_ADD, ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from scheduler.model.node import node_from_api
from scheduler.model.pod import Pod
from scheduler.queue import SEED_POD_MAX_IN_UNSCHEDULABLE, PriorityQueue, QueueProfile
from scheduler.testing import make_pod
from tests.queue.qhelpers import FakeClock, GatePlugin, fail, make_queue, pop_now, priority_less, priority_rank

NODE = node_from_api({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}})


def test_priority_order_then_fifo() -> None:
    q, clock = make_queue()
    for name, prio in (("a", 1), ("b", 5), ("c", 1), ("d", 5)):
        q.add(make_pod().name(name).priority(prio).obj())
        clock.advance(0.1)
    assert [pop_now(q).pod.name for _ in range(4)] == ["b", "d", "a", "c"]


def test_pop_counts_attempts_and_cycles() -> None:
    q, clock = make_queue()
    q.add(make_pod().name("a").obj())
    assert q.scheduling_cycle == 0
    qpi = pop_now(q)
    assert (qpi.attempts, q.scheduling_cycle, qpi.initial_attempt_timestamp) == (1, 1, clock.now)
    assert q.in_flight_pods() == [qpi.pod]
    first = qpi.initial_attempt_timestamp
    fail(q, qpi)
    clock.advance(5)
    q.flush_backoff_completed()
    qpi = pop_now(q)
    assert (qpi.attempts, q.scheduling_cycle, qpi.initial_attempt_timestamp) == (2, 2, first)


def test_pop_blocks_until_add() -> None:
    q, _ = make_queue()
    got: list[str] = []
    waiting = threading.Event()

    def consumer() -> None:
        waiting.set()
        qpi = q.pop(timeout=10)
        got.append(qpi.pod.name if qpi else "none")

    t = threading.Thread(target=consumer)
    t.start()
    waiting.wait()
    q.add(make_pod().name("a").obj())
    t.join(timeout=10)
    assert got == ["a"]


def test_pop_times_out_and_close_wakes_waiters() -> None:
    q, _ = make_queue()
    assert q.pop(timeout=0.01) is None
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(q.pop()))
    t.start()
    q.close()
    t.join(timeout=10)
    assert got == [None]
    q.add(make_pod().name("a").obj())
    assert q.pop(timeout=0) is None  # closed


def test_pop_from_backoff_when_active_is_empty() -> None:
    records: list[tuple[str, str]] = []
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD)]}, metrics=lambda qu, ev, _entity: records.append((qu, ev)))
    q.add(make_pod().name("a").obj())
    qpi = pop_now(q)
    fail(q, qpi, "P")
    q.node_added(NODE)
    assert q.queue_of(qpi.pod) == "backoff"
    assert pop_now(q) is qpi  # still backing off, but nothing else to do
    assert records[-2:] == [("backoff", "NodeAdd"), ("active", "PopFromBackoffQ")]


def test_active_pods_win_over_backoff_pods() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD)]})
    q.add(make_pod().name("a").priority(100).obj())
    qpi = pop_now(q)
    fail(q, qpi, "P")
    q.node_added(NODE)
    q.add(make_pod().name("b").priority(0).obj())
    assert pop_now(q).pod.name == "b"


def test_leftover_flush_default_five_minutes() -> None:
    q, clock = make_queue({"P": []})
    q.add(make_pod().name("a").obj())
    qpi = pop_now(q)
    fail(q, qpi, "P")
    assert q.queue_of(qpi.pod) == "unschedulable"
    clock.advance(299)
    q.flush_unschedulable_pods_leftover()
    assert q.queue_of(qpi.pod) == "unschedulable"
    clock.advance(2)
    q.flush_unschedulable_pods_leftover()
    assert q.queue_of(qpi.pod) == "active"  # backoff long over


def test_leftover_flush_seed_sixty_seconds() -> None:
    q, clock = make_queue({"P": []}, pod_max_in_unschedulable=SEED_POD_MAX_IN_UNSCHEDULABLE)
    q.add(make_pod().name("a").obj())
    qpi = pop_now(q)
    fail(q, qpi, "P")
    clock.advance(60)
    q.flush_unschedulable_pods_leftover()
    assert q.queue_of(qpi.pod) == "unschedulable"  # strictly longer than the limit
    clock.advance(0.5)
    q.flush_unschedulable_pods_leftover()
    assert q.queue_of(qpi.pod) == "active"


def test_leftover_flush_goes_to_backoff_if_still_backing_off() -> None:
    q, clock = make_queue({"P": []}, pod_max_in_unschedulable=1, pod_max_backoff=100, pod_initial_backoff=50)
    q.add(make_pod().name("a").obj())
    qpi = pop_now(q)
    fail(q, qpi, "P")
    clock.advance(2)
    q.flush_unschedulable_pods_leftover()
    assert q.queue_of(qpi.pod) == "backoff"


def test_leftover_flush_leaves_gated_pods_alone() -> None:
    q, clock = make_queue()
    q.add(make_pod().name("g").scheduling_gates(*("wait",)).obj())
    clock.advance(1000)
    q.flush_unschedulable_pods_leftover()
    assert q.lengths() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}


class Switch:
    """A PreEnqueue plugin that gates until it is opened, and registers no event: only a flush can
    notice it opened (upstream re-runs PreEnqueue of gated pods on the UnschedulableTimeout flush)."""

    name = "Switch"

    def __init__(self) -> None:
        self.open = False
        self.calls = 0

    def pre_enqueue(self, pod: Pod) -> Status | None:
        self.calls += 1
        return None if self.open else unresolvable("closed")


def test_leftover_flush_reruns_pre_enqueue_of_gated_pods_once_a_period() -> None:
    switch = Switch()
    clock = FakeClock()
    node_add = ClusterEvent(EventResource.NODE, ActionType.ADD)
    profile = QueueProfile(pre_enqueue_plugins=[switch], hints={"Switch": [ClusterEventWithHint(node_add)]})
    q = PriorityQueue(priority_less, {"default-scheduler": profile}, clock=clock, rank=priority_rank)
    q.add(make_pod().name("g").obj())
    clock.advance(301)
    q.flush_unschedulable_pods_leftover()
    assert (switch.calls, q.queue_of(make_pod().name("g").obj())) == (2, "gated")  # checked again, still closed
    clock.advance(30)
    q.flush_unschedulable_pods_leftover()
    assert switch.calls == 2  # a full period from the last flush, not from when it entered
    switch.open = True
    clock.advance(271)
    q.flush_unschedulable_pods_leftover()
    assert (switch.calls, q.queue_of(make_pod().name("g").obj())) == (3, "active")


def test_gated_pod_waits_until_gates_removed() -> None:
    q, _ = make_queue({"Other": [ClusterEventWithHint(NODE_ADD)]})
    old = make_pod().name("g").scheduling_gates(*("a", "b")).resource_version("1").obj()
    q.add(old)
    assert q.queue_of(old) == "gated"
    assert q.get("default", "g").gating_plugin == "SchedulingGates"  # type: ignore[union-attr]
    assert q.gating_message("default/g") == "waiting for scheduling gates: [a b]"
    q.move_all_to_active_or_backoff(NODE_ADD)  # not an event SchedulingGates registered
    assert q.queue_of(old) == "gated"
    fewer = make_pod().name("g").scheduling_gates(*("a",)).resource_version("2").obj()
    q.update(old, fewer)
    assert q.queue_of(old) == "gated"
    q.update(fewer, make_pod().name("g").resource_version("3").obj())
    assert q.queue_of(old) == "active"
    assert q.gating_message("default/g") == ""
    qpi = pop_now(q)
    assert qpi.gating_plugin is None and qpi.pod.scheduling_gates == ()


def test_delete_from_each_sub_queue() -> None:
    q, _ = make_queue({"P": []})
    q.add(make_pod().name("backoff").obj())
    q.add(make_pod().name("unsched").obj())
    b, u = pop_now(q), pop_now(q)
    fail(q, b)  # error -> backoff
    fail(q, u, "P")  # -> unschedulable
    q.add(make_pod().name("active").nominated_node_name("n1").obj())
    q.add(make_pod().name("gated").scheduling_gates(*("x",)).obj())
    assert q.lengths() == {"active": 1, "backoff": 1, "unschedulable": 1, "gated": 1}
    assert [p.name for p in q.nominated_pods_for_node("n1")] == ["active"]
    for name in ("active", "backoff", "unsched", "gated"):
        q.delete(make_pod().name(name).obj())
    assert q.lengths() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert q.nominated_pods_for_node("n1") == []


def test_pod_bound_elsewhere_leaves_the_queue() -> None:
    q, _ = make_queue()
    old = make_pod().name("a").resource_version("1").nominated_node_name("n1").obj()
    q.add(old)
    q.update(old, make_pod().name("a").node("n2").resource_version("2").obj())
    assert q.queue_of(old) is None
    assert q.nominated_pods_for_node("n1") == []
    q.add(make_pod().name("b").node("n2").obj())  # assigned pods never enter the queue
    assert q.pending_pods()[1] == "activeQ:0; backoffQ:0; unschedulablePods:0"


def test_update_in_active_is_in_place_and_same_rv_ignored() -> None:
    q, clock = make_queue()
    a = make_pod().name("a").priority(1).resource_version("1").obj()
    q.add(a)
    clock.advance(1)
    q.add(make_pod().name("b").priority(2).obj())
    q.update(a, make_pod().name("a").priority(1).resource_version("1").labels({"ignored": "x"}).obj())
    assert q.get("default", "a").pod is a  # type: ignore[union-attr]
    q.update(a, make_pod().name("a").priority(3).resource_version("2").obj())
    first = pop_now(q)
    assert (first.pod.name, first.pod.priority) == ("a", 3)


def test_update_of_unknown_pod_adds_it() -> None:
    q, _ = make_queue()
    q.update(make_pod().name("a").resource_version("1").obj(), make_pod().name("a").resource_version("2").obj())
    assert q.queue_of(make_pod().name("a").obj()) == "active"


def test_add_unschedulable_if_already_present_is_an_error_and_still_done() -> None:
    q, _ = make_queue()
    q.add(make_pod().name("a").obj())
    qpi = pop_now(q)
    q.add(make_pod().name("a").obj())  # the informer re-added it meanwhile
    err = fail(q, qpi)
    assert err is not None and "active queue" in err
    assert q.in_flight_pods() == []


def test_pending_pods_summary_and_lengths() -> None:
    q, _ = make_queue({"P": []})
    q.add(make_pod().name("a").obj())
    q.add(make_pod().name("b").obj())
    qpi = pop_now(q)
    fail(q, qpi, "P")
    q.add(make_pod().name("g").scheduling_gates(*("x",)).obj())
    pods, summary = q.pending_pods()
    assert summary == "activeQ:1; backoffQ:0; unschedulablePods:2"
    assert sorted(p.name for p in pods) == ["a", "b", "g"]
    assert q.lengths() == {"active": 1, "backoff": 0, "unschedulable": 1, "gated": 1}


def test_activate_moves_unschedulable_and_backoff_pods() -> None:
    q, _ = make_queue({"P": []})
    q.add(make_pod().name("u").obj())
    q.add(make_pod().name("b").obj())
    u, b = pop_now(q), pop_now(q)
    fail(q, u, "P")
    fail(q, b)
    q.activate([u.pod, b.pod, make_pod().name("unknown").obj()])
    assert (q.queue_of(u.pod), q.queue_of(b.pod)) == ("active", "active")


def test_activate_in_flight_pod_requeues_it_when_it_comes_back() -> None:
    q, _ = make_queue({"P": []})
    q.add(make_pod().name("a").obj())
    qpi = pop_now(q)
    q.activate([qpi.pod])
    fail(q, qpi, "P")
    assert q.queue_of(qpi.pod) == "backoff"


def test_force_activate_of_another_pod_does_not_requeue() -> None:
    q, _ = make_queue({"P": []})
    q.add(make_pod().name("a").obj())
    q.add(make_pod().name("b").obj())
    a, b = pop_now(q), pop_now(q)
    q.activate([b.pod])  # event recorded for b only
    fail(q, a, "P")
    assert q.queue_of(a.pod) == "unschedulable"


def test_metrics_callback_sees_incoming_pods() -> None:
    records: list[tuple[str, str]] = []
    q, _ = make_queue(metrics=lambda queue, event, _entity: records.append((queue, event)))
    q.add(make_pod().name("a").obj())
    q.add(make_pod().name("g").scheduling_gates(*("x",)).obj())
    # A gated pod enters unschedulablePods: upstream's queue_incoming_pods_total says "unschedulable"
    # (only scheduler_pending_pods tells gated pods apart).
    assert records == [("active", "UnscheduledPodAdd"), ("unschedulable", "UnscheduledPodAdd")]


def test_pre_enqueue_runs_only_for_the_pods_profile() -> None:
    q = PriorityQueue(
        priority_less,
        {"default-scheduler": QueueProfile(), "gated": QueueProfile(pre_enqueue_plugins=[GatePlugin()])},
        clock=FakeClock(),
    )
    q.add(make_pod().name("a").scheduling_gates(*("x",)).obj())
    q.add(make_pod().name("b").scheduler_name("gated").scheduling_gates(*("x",)).obj())
    assert (q.queue_of(make_pod().name("a").obj()), q.queue_of(make_pod().name("b").obj())) == ("active", "gated")


def test_pre_enqueue_exception_gates_the_pod() -> None:
    class Broken:
        name = "Broken"

        def pre_enqueue(self, pod: object) -> None:
            raise RuntimeError("boom")

    q = PriorityQueue(priority_less, {"default-scheduler": QueueProfile(pre_enqueue_plugins=[Broken()])})
    q.add(make_pod().name("a").obj())
    assert q.queue_of(make_pod().name("a").obj()) == "gated"


def test_run_flushes_in_the_background() -> None:
    clock = FakeClock()
    q, _ = make_queue(clock=clock)
    q.add(make_pod().name("a").obj())
    qpi = pop_now(q)
    fail(q, qpi)  # error backoff: pop() does not take it early
    clock.advance(30)
    q.run()
    try:
        got = q.pop(timeout=10)  # the 1 s flush moves it to activeQ
        assert got is qpi
    finally:
        q.close()


def test_gated_pod_moves_only_on_its_gating_plugins_events() -> None:
    class WaitForNode:
        name = "WaitForNode"
        ready = False

        def pre_enqueue(self, pod: object) -> Status | None:
            return None if self.ready else unschedulable("no node yet")

    gate = WaitForNode()
    profile = QueueProfile(pre_enqueue_plugins=[gate], hints={"WaitForNode": [ClusterEventWithHint(NODE_ADD)]})
    q = PriorityQueue(priority_less, {"default-scheduler": profile}, clock=FakeClock())
    q.add(make_pod().name("a").obj())
    q.move_all_to_active_or_backoff(NODE_ADD, None, NODE)
    assert q.queue_of(make_pod().name("a").obj()) == "gated"  # PreEnqueue ran again and still says no
    gate.ready = True
    q.node_added(NODE)
    assert q.queue_of(make_pod().name("a").obj()) == "active"


def test_update_in_backoff_is_in_place() -> None:
    q, _ = make_queue()
    old = make_pod().name("a").resource_version("1").obj()
    q.add(old)
    qpi = pop_now(q)
    fail(q, qpi)
    new = make_pod().name("a").resource_version("2").labels({"x": "y"}).obj()
    q.update(old, new)
    assert q.queue_of(new) == "backoff"
    assert q.get("default", "a") is qpi and qpi.pod is new


def test_concurrent_producers_and_consumer_see_each_pod_once() -> None:
    q, _ = make_queue()
    names = [f"p{i}-{j}" for i in range(4) for j in range(50)]

    def producer(i: int) -> None:
        for j in range(50):
            q.add(make_pod().name(f"p{i}-{j}").obj())

    threads = [threading.Thread(target=producer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    popped: list[str] = []
    while len(popped) < len(names):
        qpi = q.pop(timeout=10)
        assert qpi is not None
        popped.append(qpi.pod.name)
        q.done(qpi.pod.uid)
    for t in threads:
        t.join()
    assert sorted(popped) == sorted(names)
    assert q.in_flight_pods() == []
