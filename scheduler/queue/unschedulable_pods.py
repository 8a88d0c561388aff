"""unschedulablePods: the pods no event has yet made worth retrying, and the gated ones (upstream
pkg/scheduler/backend/queue/unschedulable_pods.go).

A map by pod key. A pod enters when an attempt failed and no event replayed since its pop makes it
worth retrying, or when a PreEnqueue plugin gates it; it leaves when a queueing hint, a flush or an
Activate moves it. Not locked: every caller holds the PriorityQueue's lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from scheduler.queue.queued_pod_info import QueuedPodInfo

DEFAULT_POD_MAX_IN_UNSCHEDULABLE = 300.0  # DefaultPodMaxInUnschedulablePodsDuration (5 min)
SEED_POD_MAX_IN_UNSCHEDULABLE = 60.0  # unschedulableQTimeInterval in 1.16-1.18
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0


class UnschedulablePods:
    """Pod key -> queued pod info. ``on_added(event)`` counts each pod that enters (gated ones too, as
    upstream's addOrUpdate records them)."""

    def __init__(self, on_added: Callable[[str], None]) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._on_added = on_added

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(self._pods.values())

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._pods.get(key)

    def add_or_update(self, qpi: QueuedPodInfo, event: str) -> None:
        k = qpi.pod.key
        if k not in self._pods:
            self._on_added(event)
        self._pods[k] = qpi

    def delete(self, key: str) -> QueuedPodInfo | None:
        return self._pods.pop(key, None)

    def gated_count(self) -> int:
        return sum(1 for q in self._pods.values() if q.gated)

    def older_than(self, now: float, seconds: float) -> list[QueuedPodInfo]:
        """The pods that entered more than ``seconds`` before ``now`` (flushUnschedulablePodsLeftover)."""
        return [q for q in self._pods.values() if now - q.timestamp > seconds]
