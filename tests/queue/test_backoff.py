from __future__ import annotations

from scheduler.framework.types import FORCE_ACTIVATE
from scheduler.queue import DEFAULT_POD_INITIAL_BACKOFF, DEFAULT_POD_MAX_BACKOFF, backoff_duration
from scheduler.testing import make_pod
from tests.queue.qhelpers import FakeClock, fail, make_queue, pop_now


def test_default_backoff_sequence() -> None:
    got = [backoff_duration(c, DEFAULT_POD_INITIAL_BACKOFF, DEFAULT_POD_MAX_BACKOFF) for c in range(1, 7)]
    assert got == [1, 2, 4, 8, 10, 10]


def test_seed_era_values_give_the_same_sequence() -> None:
    # v1.16: podInitialBackoffDuration 1 s, podMaxBackoffDuration 10 s (counted from attempts back then).
    assert [backoff_duration(c, 1.0, 10.0) for c in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_configured_backoff_sequence() -> None:
    assert [backoff_duration(c, 0.5, 3.0) for c in range(1, 6)] == [0.5, 1, 2, 3, 3]
    assert backoff_duration(0, 1.0, 10.0) == 0
    assert backoff_duration(200, 1.0, 10.0) == 10


def test_error_and_unschedulable_counts() -> None:
    q, clock = make_queue({"P": []})
    q.add(make_pod().name("p").obj())
    qpi = pop_now(q)
    fail(q, qpi)
    fail_again = q.pop(timeout=0)
    assert fail_again is None  # error backoff: not popped before expiry
    clock.advance(2)
    q.flush_backoff_completed()
    qpi = pop_now(q)
    fail(q, qpi)
    assert (qpi.consecutive_errors_count, qpi.unschedulable_count) == (2, 0)
    clock.advance(3)
    q.flush_backoff_completed()
    qpi = pop_now(q)
    fail(q, qpi, "P")
    assert (qpi.consecutive_errors_count, qpi.unschedulable_count) == (0, 1)


def test_backoff_uses_error_count_when_errors_are_ongoing() -> None:
    q, clock = make_queue()
    q.add(make_pod().name("p").obj())
    qpi = pop_now(q)
    qpi.unschedulable_count = 4  # long history of rejections (would be 8 s)
    fail(q, qpi)  # first error: 1 s
    assert q.backoff_expiry(qpi) == clock.now + 1


def test_expiry_is_aligned_to_the_window() -> None:
    q, clock = make_queue({"P": []})
    clock.now = 1000.4
    q.add(make_pod().name("p").obj())
    qpi = pop_now(q)
    fail(q, qpi, "P")
    assert q.backoff_expiry(qpi) == 1001.0  # 1001.4 truncated to the second


def test_error_backoff_flush_with_fake_clock_counts_1_to_6() -> None:
    q, clock = make_queue()
    q.add(make_pod().name("p").obj())
    qpi = pop_now(q)
    for count, expected in enumerate([1, 2, 4, 8, 10, 10], start=1):
        fail(q, qpi)
        assert qpi.consecutive_errors_count == count
        start = clock.now
        # Still backing off through the whole expiry window ...
        clock.now = start + expected + 0.999
        q.flush_backoff_completed()
        assert q.queue_of(qpi.pod) == "backoff"
        # ... and flushed at the next window boundary.
        clock.now = start + expected + 1
        q.flush_backoff_completed()
        assert q.queue_of(qpi.pod) == "active"
        qpi = pop_now(q)


def test_unschedulable_backoff_with_seed_values() -> None:
    q, clock = make_queue({"P": []}, pod_initial_backoff=1.0, pod_max_backoff=10.0)
    q.add(make_pod().name("p").obj())
    qpi = pop_now(q)
    got = []
    for _ in range(6):
        fail(q, qpi, "P")
        got.append(q.backoff_expiry(qpi) - clock.now)
        q.activate([qpi.pod])
        qpi = pop_now(q)
    assert got == [1, 2, 4, 8, 10, 10]


def test_max_backoff_zero_disables_backoff() -> None:
    q, _ = make_queue(pod_max_backoff=0)
    q.add(make_pod().name("p").obj())
    qpi = pop_now(q)
    fail(q, qpi)  # error, would normally back off
    assert q.queue_of(qpi.pod) == "active"


def test_error_pods_are_not_popped_before_expiry_but_rejected_pods_are() -> None:
    q, clock = make_queue({"P": []})
    q.add(make_pod().name("err").obj())
    q.add(make_pod().name("rej").obj())
    err, rej = pop_now(q), pop_now(q)
    fail(q, err)
    fail(q, rej, "P")
    # "rej" went to unschedulablePods (no event), so only "err" backs off: nothing to pop.
    assert q.pop(timeout=0) is None
    q.activate([rej.pod])
    assert pop_now(q).pod.name == "rej"
    clock.advance(2)
    q.flush_backoff_completed()
    assert pop_now(q).pod.name == "err"


def test_backoff_window_orders_by_priority_then_expiry() -> None:
    clock = FakeClock(1000.0)
    q, _ = make_queue({"P": []}, clock=clock)
    for name, prio in (("low", 1), ("high", 9), ("later", 100)):
        q.add(make_pod().name(name).priority(prio).obj())
    later = pop_now(q)
    high = pop_now(q)
    low = pop_now(q)
    fail(q, low, "P")  # 1000.0 + 1 -> window 1001
    clock.now = 1000.6
    fail(q, high, "P")  # 1001.6 -> window 1001, higher priority
    clock.now = 1001.2
    fail(q, later, "P")  # 1002.2 -> window 1002, highest priority but a later window
    q.move_all_to_active_or_backoff(FORCE_ACTIVATE)
    assert q.lengths()["backoff"] == 3
    assert [pop_now(q).pod.name for _ in range(3)] == ["high", "low", "later"]
