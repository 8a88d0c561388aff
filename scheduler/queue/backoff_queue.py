"""backoffQ (upstream pkg/scheduler/backend/queue/backoff_queue.go).

Two heaps, as upstream: pods rejected by plugins (podBackoffQ, ordered by their 1 s expiry window,
then by the QueueSort ``less``) and pods that failed with an error (podErrorBackoffQ, ordered by
expiry window). A pod's backoff is ``min(initial * 2**(count-1), max)`` with count = its consecutive
errors if any, else its unschedulable count, and ends on a window boundary.

Not locked: every caller holds the PriorityQueue's lock.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator

from scheduler.queue.heap import KeyedHeap
from scheduler.queue.queued_pod_info import QueuedPodInfo

DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
BACKOFF_ORDERING_WINDOW = 1.0  # backoffQOrderingWindowDuration; also the backoff flush period


def backoff_duration(count: int, initial: float, maximum: float) -> float:
    """``min(initial * 2**(count-1), maximum)``; 0 for count 0 (no failure, no penalty)."""
    if count <= 0:
        return 0.0
    duration = initial
    for _ in range(count - 1):
        if duration >= maximum:
            break
        duration *= 2
    return min(duration, maximum)


def align_to_window(t: float) -> float:
    """The start of the ordering window holding ``t`` (upstream alignToWindow)."""
    return math.floor(t / BACKOFF_ORDERING_WINDOW) * BACKOFF_ORDERING_WINDOW


def _key(qpi: QueuedPodInfo) -> str:
    return qpi.pod.key


class BackoffQueue:
    """The pods waiting out their backoff, and the backoff arithmetic the whole queue uses."""

    def __init__(self, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool], clock: Callable[[], float],
                 initial: float = DEFAULT_POD_INITIAL_BACKOFF, maximum: float = DEFAULT_POD_MAX_BACKOFF) -> None:
        self._less = less
        self._clock = clock
        self._initial = initial
        self._max = maximum
        self._backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap(_key, self._less_with_priority)
        self._error_backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap(_key, self._less_by_expiry)
        self._backoff_keys, self._error_keys = self._backoff.keys(), self._error_backoff.keys()  # live views

    @property
    def initial(self) -> float:
        return self._initial

    @property
    def maximum(self) -> float:
        return self._max

    def set_bounds(self, initial: float, maximum: float) -> None:
        """podInitialBackoffSeconds / podMaxBackoffSeconds of a reloaded configuration."""
        self._initial, self._max = initial, maximum

    # ----- the heaps

    def __len__(self) -> int:
        return len(self._backoff) + len(self._error_backoff)

    def __contains__(self, key: object) -> bool:
        return key in self._backoff or key in self._error_backoff

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return itertools.chain(self._backoff, self._error_backoff)

    def get(self, key: str) -> QueuedPodInfo | None:
        qpi = self._backoff.get(key)
        return qpi if qpi is not None else self._error_backoff.get(key)

    def add(self, qpi: QueuedPodInfo) -> None:
        """Into the error heap when no plugin rejected the pod (it failed), else the plugin heap."""
        k = qpi.pod.key
        if qpi.rejector_plugins:
            self._error_backoff.delete(k)
            self._backoff.add_or_update(qpi)
        else:
            self._backoff.delete(k)
            self._error_backoff.add_or_update(qpi)

    def update(self, key: str, update: Callable[[QueuedPodInfo], None]) -> bool:
        """Apply ``update`` to the queued pod in place and restore its heap's order; False if absent."""
        for heap in (self._backoff, self._error_backoff):
            qpi = heap.get(key)
            if qpi is not None:
                update(qpi)
                heap.add_or_update(qpi)
                return True
        return False

    def delete(self, key: str) -> QueuedPodInfo | None:
        """A key in neither heap (every new pod's, as it enters activeQ) costs no heap call."""
        if key in self._backoff_keys:
            return self._backoff.delete(key)
        return self._error_backoff.delete(key) if key in self._error_keys else None

    def pop_backoff(self) -> QueuedPodInfo | None:
        """The head of the plugin heap even before its backoff is over (SchedulerPopFromBackoffQ, when
        activeQ is empty); the error heap is never popped early."""
        return self._backoff.pop()

    def pop_all_backoff_completed(self) -> list[QueuedPodInfo]:
        """Remove and return the pods whose backoff window has passed (upstream popAllBackoffCompleted)."""
        completed: list[QueuedPodInfo] = []
        for heap in (self._backoff, self._error_backoff):
            while (head := heap.peek()) is not None and not self.is_pod_backing_off(head):
                heap.pop()
                completed.append(head)
        return completed

    # ----- backoff arithmetic

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        """Window-aligned time the pod's backoff ends (-inf: no backoff; upstream getBackoffTime); computed
        once per failure and cached on the pod info (the heaps order by it)."""
        if self._max == 0:
            return -math.inf
        count = qpi.consecutive_errors_count if qpi.consecutive_errors_count > 0 else qpi.unschedulable_count
        if count == 0:
            return -math.inf
        if qpi.backoff_expiration is None:
            duration = backoff_duration(count, self._initial, self._max)
            qpi.backoff_expiration = align_to_window(qpi.timestamp + duration)
        return qpi.backoff_expiration

    def is_pod_backing_off(self, qpi: QueuedPodInfo) -> bool:
        """Still backing off while its expiry window has not strictly passed the current window."""
        return self.backoff_expiry(qpi) >= align_to_window(self._clock())

    def _less_by_expiry(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.backoff_expiry(a) < self.backoff_expiry(b)

    def _less_with_priority(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        ea, eb = self.backoff_expiry(a), self.backoff_expiry(b)
        if ea != eb:
            return ea < eb
        return self._less(a, b)
