from __future__ import annotations

from typing import Any

from scheduler.framework.types import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.model.node import node_from_api
from scheduler.model.pod import Pod
from scheduler.queue import PriorityQueue
from scheduler.testing import make_pod
from tests.queue.qhelpers import fail, make_queue, pop_now

NODE = node_from_api({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}})
TOLERATION_ADDED = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION)


class Hint:
    """A hint fn that returns a fixed answer and remembers its calls."""

    def __init__(self, answer: QueueingHint = QueueingHint.QUEUE) -> None:
        self.answer = answer
        self.calls: list[tuple[str, Any, Any]] = []

    def __call__(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        self.calls.append((pod.name, old, new))
        return self.answer


def rejected(q: PriorityQueue, name: str, *plugins: str, pending: tuple[str, ...] = ()) -> Pod:
    q.add(make_pod().name(name).obj())
    qpi = pop_now(q)
    assert fail(q, qpi, *plugins, pending=pending) is None
    return qpi.pod


def test_event_of_no_interest_moves_nothing_and_is_not_recorded() -> None:
    hint = Hint()
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, hint)]})
    pod = rejected(q, "a", "P")
    q.add(make_pod().name("inflight").obj())
    pop_now(q)
    q.assigned_pod_deleted(make_pod().name("gone").node("n1").obj())
    assert q.queue_of(pod) == "unschedulable"
    assert hint.calls == []
    assert q.in_flight_event_count() == 0


def test_queue_skip_keeps_pod_unschedulable() -> None:
    hint = Hint(QueueingHint.QUEUE_SKIP)
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, hint)]})
    pod = rejected(q, "a", "P")
    q.node_added(NODE)
    assert q.queue_of(pod) == "unschedulable"
    assert hint.calls == [("a", None, NODE)]


def test_queue_goes_to_backoff_while_backing_off_else_active() -> None:
    q, clock = make_queue({"P": [ClusterEventWithHint(NODE_ADD, Hint())]})
    a = rejected(q, "a", "P")
    q.node_added(NODE)
    assert q.queue_of(a) == "backoff"
    clock.advance(5)
    b = rejected(q, "b", "P")
    clock.advance(5)  # b's 1 s backoff is long over
    q.node_added(NODE)
    assert q.queue_of(b) == "active"


def test_pending_plugin_queues_immediately() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, Hint())]})
    pod = rejected(q, "a", "Other", pending=("P",))
    q.node_added(NODE)
    assert q.queue_of(pod) == "active"  # skips the backoff it is still in


def test_only_rejector_plugins_are_consulted() -> None:
    mine, theirs = Hint(QueueingHint.QUEUE_SKIP), Hint()
    q, _ = make_queue(
        {"Mine": [ClusterEventWithHint(NODE_ADD, mine)], "Theirs": [ClusterEventWithHint(NODE_ADD, theirs)]}
    )
    pod = rejected(q, "a", "Mine")
    q.node_added(NODE)
    assert q.queue_of(pod) == "unschedulable"
    assert theirs.calls == [] and len(mine.calls) == 1


def test_missing_or_failing_hint_means_queue() -> None:
    def broken(pod: Pod, old: Any, new: Any) -> QueueingHint:
        raise ValueError("bad object")

    q, _ = make_queue({"NoHint": [ClusterEventWithHint(NODE_ADD)], "Broken": [ClusterEventWithHint(NODE_ADD, broken)]})
    a = rejected(q, "a", "NoHint")
    b = rejected(q, "b", "Broken")
    q.node_added(NODE)
    assert (q.queue_of(a), q.queue_of(b)) == ("backoff", "backoff")


def test_pre_check_narrows_candidates() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(ASSIGNED_POD_DELETE, Hint())]})
    low = rejected(q, "low", "P")
    q.add(make_pod().name("high").priority(10).obj())
    high = pop_now(q)
    fail(q, high, "P")
    q.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, None, None, pre_check=lambda p: p.priority <= 5)
    assert (q.queue_of(low), q.queue_of(high.pod)) == ("backoff", "unschedulable")


def test_in_flight_event_is_replayed_when_pod_comes_back() -> None:
    hint = Hint()
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, hint)]})
    q.add(make_pod().name("a").obj())
    qpi = pop_now(q)
    q.node_added(NODE)  # arrives while "a" is being scheduled
    assert q.in_flight_event_count() == 1
    fail(q, qpi, "P")
    assert q.queue_of(qpi.pod) == "backoff"  # not unschedulable: the node may fit it
    assert hint.calls == [("a", None, NODE)]
    assert q.in_flight_event_count() == 0  # trimmed once nobody is in flight


def test_events_before_pop_are_not_replayed() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, Hint())]})
    q.add(make_pod().name("early").obj())
    q.add(make_pod().name("late").obj())
    early = pop_now(q)
    q.node_added(NODE)  # recorded: "early" is in flight
    late = pop_now(q)
    fail(q, late, "P")
    assert q.queue_of(late.pod) == "unschedulable"
    assert q.in_flight_event_count() == 1  # still needed for "early"
    fail(q, early, "P")
    assert q.queue_of(early.pod) == "backoff"
    assert q.in_flight_event_count() == 0


def test_replayed_skip_leaves_pod_unschedulable() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, Hint(QueueingHint.QUEUE_SKIP))]})
    q.add(make_pod().name("a").obj())
    qpi = pop_now(q)
    q.node_added(NODE)
    fail(q, qpi, "P")
    assert q.queue_of(qpi.pod) == "unschedulable"


def test_update_of_in_flight_pod_is_recorded_not_queued() -> None:
    hint = Hint()
    q, _ = make_queue({"TaintToleration": [ClusterEventWithHint(TOLERATION_ADDED, hint)]})
    old = make_pod().name("a").resource_version("1").obj()
    q.add(old)
    qpi = pop_now(q)
    new = make_pod().name("a").tolerations([{"key": "k", "operator": "Exists"}]).resource_version("2").obj()
    q.update(old, new)
    assert q.queue_of(new) is None  # still in flight, not re-added
    fail(q, qpi, "TaintToleration")
    assert q.queue_of(new) == "backoff"
    assert hint.calls == [("a", old, new)]


def test_update_in_unschedulable_with_spec_change_uses_the_hints() -> None:
    hint = Hint()
    q, clock = make_queue({"TaintToleration": [ClusterEventWithHint(TOLERATION_ADDED, hint)], "P": []})
    old = make_pod().name("a").resource_version("1").obj()
    q.add(old)
    fail(q, pop_now(q), "TaintToleration")
    clock.advance(5)
    relabeled = make_pod().name("a").resource_version("2").labels({"x": "y"}).obj()
    q.update(old, relabeled)  # UpdatePodLabel: TaintToleration did not register it
    assert q.queue_of(old) == "unschedulable"
    assert q.get("default", "a").pod is relabeled  # type: ignore[union-attr]
    tolerated = (make_pod().name("a").tolerations([{"key": "k", "operator": "Exists"}]).resource_version("3")
                 .labels({"x": "y"}).obj())
    q.update(relabeled, tolerated)
    assert q.queue_of(old) == "active"
    assert pop_now(q).pod is tolerated


def test_wildcard_event_requeues_every_rejected_pod() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, Hint(QueueingHint.QUEUE_SKIP))]})
    pod = rejected(q, "a", "P")
    q.move_all_to_active_or_backoff(ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "Custom"))
    assert q.queue_of(pod) == "backoff"


def test_event_during_a_cycle_requeues_only_the_pods_in_flight_when_it_came() -> None:
    """What the pre-1.32 move-request-cycle rule did, done by the hints (always on since 1.34): a node
    added during a's attempt is replayed through P's hint when a comes back, b popped after it never sees it."""
    hint = Hint(QueueingHint.QUEUE)
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, hint)]})
    q.add(make_pod().name("a").obj())
    q.add(make_pod().name("b").obj())
    a = pop_now(q)
    q.node_added(NODE)  # during a's cycle
    b = pop_now(q)
    assert fail(q, a, "P") is None
    assert fail(q, b, "P") is None
    assert (q.queue_of(a.pod), q.queue_of(b.pod)) == ("backoff", "unschedulable")
    assert [call[0] for call in hint.calls] == ["a"]
    assert q.in_flight_pods() == []


def test_only_a_spec_change_some_rejector_registered_moves_the_pod() -> None:
    """A status-only update derives no event the rejector registered: the pod stays; a label change
    (UpdatePodLabel, registered by P) moves it."""
    label_hint = Hint(QueueingHint.QUEUE)
    q, _ = make_queue({"P": [ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL),
                                                  label_hint)]})
    old = make_pod().name("a").resource_version("1").obj()
    q.add(old)
    qpi = pop_now(q)
    assert fail(q, qpi, "P") is None
    status_only = make_pod().name("a").resource_version("2").nominated_node_name("n1").obj()  # status change only
    q.update(old, status_only)
    assert q.queue_of(old) == "unschedulable"
    assert label_hint.calls == []
    q.update(status_only, make_pod().name("a").resource_version("3").labels({"x": "y"}).obj())
    assert q.queue_of(old) == "backoff"
    assert [call[0] for call in label_hint.calls] == ["a"]
