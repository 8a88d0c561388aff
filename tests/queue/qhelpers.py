"""A fake clock, a PrioritySort-like less and a SchedulingGates-like plugin for the queue tests (pods come from
scheduler.testing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from scheduler.model.pod import Pod
from scheduler.queue import PriorityQueue, QueuedPodInfo, QueueProfile

GATES_EVENT = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)


class FakeClock:
    """Seconds, moved by hand; starts on a window boundary so backoff windows are easy to reason about."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def priority_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort: higher priority first, then earlier timestamp."""
    if a.pod.priority != b.pod.priority:
        return a.pod.priority > b.pod.priority
    return a.timestamp < b.timestamp


def priority_rank(qpi: QueuedPodInfo) -> tuple[int, float]:
    """priority_less as a sort key, as PrioritySort gives the scheduler's queue."""
    return -qpi.pod.priority, qpi.timestamp


class GatePlugin:
    """Mimics SchedulingGates' PreEnqueue."""

    name = "SchedulingGates"

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if pod.scheduling_gates:
            return unresolvable(f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]")
        return None


def gates_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE if not new.scheduling_gates else QueueingHint.QUEUE_SKIP


HintFn = Callable[[Pod, Any, Any], QueueingHint]


def make_queue(
    hints: dict[str, list[ClusterEventWithHint]] | None = None,
    *,
    clock: FakeClock | None = None,
    gates: bool = True,
    **kwargs: Any,
) -> tuple[PriorityQueue, FakeClock]:
    clock = clock or FakeClock()
    all_hints = dict(hints or {})
    pre = []
    if gates:
        pre.append(GatePlugin())
        all_hints.setdefault("SchedulingGates", [ClusterEventWithHint(GATES_EVENT, gates_hint)])
    profile = QueueProfile(pre_enqueue_plugins=pre, hints=all_hints)
    kwargs.setdefault("rank", priority_rank)  # activeQ on heapq, as the scheduler runs it
    q = PriorityQueue(priority_less, {"default-scheduler": profile}, clock=clock, **kwargs)
    return q, clock


def fail(q: PriorityQueue, qpi: QueuedPodInfo, *unschedulable: str, pending: tuple[str, ...] = ()) -> str | None:
    """What the scheduler does after a failed attempt: record rejectors and hand the pod back."""
    qpi.unschedulable_plugins = set(unschedulable)
    qpi.pending_plugins = set(pending)
    return q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle)


def pop_now(q: PriorityQueue) -> QueuedPodInfo:
    qpi = q.pop(timeout=0)
    assert qpi is not None
    return qpi
