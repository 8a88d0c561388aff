"""v1.37's queue metrics: a pending pod requeued by its own update is counted under TargetPod..., and
scheduler_queue_incoming_entities_total counts a pod as upstream's recordIncomingEntitiesMetrics does (not
when a queueing hint's strategy named the queue it lands in); the unschedulable flush marks the pods it
moves for scheduler_pod_scheduled_after_flush_total."""

from __future__ import annotations

from scheduler.framework.types import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from scheduler.model.pod import Pod
from scheduler.queue import PriorityQueue
from scheduler.testing import make_pod
from tests.queue.qhelpers import FakeClock, fail, make_queue, pop_now

OWN_LABEL = ClusterEventWithHint(ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_LABEL))


def requeued_by_its_own_update(backoff_over: bool) -> tuple[list[tuple[str, str, bool]], PriorityQueue, Pod]:
    """A pod rejected by P (registered for its own label changes), then relabelled; the queue's records."""
    records: list[tuple[str, str, bool]] = []
    q, clock = make_queue({"P": [OWN_LABEL]}, metrics=lambda *record: records.append(record))
    old = make_pod().name("a").resource_version("1").obj()
    q.add(old)
    fail(q, pop_now(q), "P")
    if backoff_over:
        clock.advance(60)
    new = make_pod().name("a").resource_version("2").labels({"x": "y"}).obj()
    q.update(old, new)
    return records, q, new


def test_a_pending_pod_requeued_by_its_own_update_is_counted_as_a_target_pod_event() -> None:
    records, q, new = requeued_by_its_own_update(backoff_over=True)  # the Queue hint sends it to activeQ
    assert q.queue_of(new) == "active"
    assert records == [
        ("active", "UnscheduledPodAdd", True),  # a new pod: no strategy, counted
        ("unschedulable", "ScheduleAttemptFailure", False),  # QueueSkip named unschedulablePods
        ("active", "TargetPodUpdatePodLabel", True),  # strategy queueAfterBackoff, landed in activeQ
    ]


def test_a_requeue_into_the_queue_its_strategy_names_is_no_incoming_entity() -> None:
    records, q, new = requeued_by_its_own_update(backoff_over=False)
    assert records[-1] == ("backoff", "TargetPodUpdatePodLabel", False)  # the queue queueAfterBackoff names
    assert pop_now(q).pod is new  # nothing else to do: popped from backoffQ
    assert records[-1] == ("active", "PopFromBackoffQ", True)


def test_the_flush_marks_the_pods_it_moves_until_their_next_attempt() -> None:
    clock = FakeClock()
    q, _ = make_queue({"P": [OWN_LABEL]}, clock=clock, pod_max_in_unschedulable=60.0)
    q.add(make_pod().name("a").obj())
    qpi = pop_now(q)
    fail(q, qpi, "P")
    assert not qpi.was_flushed_from_unschedulable
    clock.advance(61)
    q.flush_unschedulable_pods_leftover()
    assert q.queue_of(qpi.pod) in ("active", "backoff") and qpi.was_flushed_from_unschedulable
    assert pop_now(q) is qpi
    fail(q, qpi, "P")
    assert not qpi.was_flushed_from_unschedulable
