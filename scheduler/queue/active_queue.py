"""activeQ and the pods in flight (upstream pkg/scheduler/backend/queue/active_queue.go).

Upstream's activeQueue owns the heap of pods ready to be scheduled and, since a popped pod leaves the
heap, the record of which pods are being scheduled (inFlightPods) and of the cluster events received
meanwhile (inFlightEvents), replayed through the queueing hints when a pod comes back unschedulable.

Not locked: every caller holds the PriorityQueue's lock (upstream's activeQueue has its own lock
because its pop waits on it; here PriorityQueue's Condition does the waiting).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from scheduler.framework.types import ClusterEvent
from scheduler.model.pod import Pod
from scheduler.queue.heap import KeyedHeap, RankedHeap
from scheduler.queue.queued_pod_info import QueuedPodInfo

# scheduler_inflight_events label of the popped pods themselves (upstream PodPoppedInFlightEvent).
POD_POPPED = "PodPopped"


@dataclass(slots=True)
class InFlightEvent:
    """One cluster event received while some pod was in flight (upstream clusterEvent)."""

    event: ClusterEvent
    old_obj: Any
    new_obj: Any


def _key(qpi: QueuedPodInfo) -> str:
    return qpi.pod.key


class ActiveQueue:
    """The heap by the QueueSort plugin's ``less`` (or by its sort key ``rank``, which agrees with
    ``less``, on heapq), plus the in-flight pods and the events seen since each was popped."""

    def __init__(self, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool],
                 rank: Callable[[QueuedPodInfo], Any] | None = None) -> None:
        self._heap: KeyedHeap[QueuedPodInfo] | RankedHeap[QueuedPodInfo] = (
            KeyedHeap(_key, less) if rank is None else RankedHeap(_key, rank))
        # In-flight pods and the events received since each was popped, in arrival order.
        self._in_flight: OrderedDict[int, Pod | InFlightEvent] = OrderedDict()
        self._in_flight_pods: dict[str, int] = {}
        self._seq = itertools.count()

    # ----- the heap

    def __len__(self) -> int:
        return len(self._heap)

    def __contains__(self, key: object) -> bool:
        return key in self._heap

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(self._heap)

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._heap.get(key)

    def add_or_update(self, qpi: QueuedPodInfo, key: str | None = None) -> None:
        """``key``: the pod's key, when the caller has it."""
        self._heap.add_or_update(qpi, key)

    def delete(self, key: str) -> QueuedPodInfo | None:
        return self._heap.delete(key)

    def peek(self) -> QueuedPodInfo | None:
        return self._heap.peek()

    def pop(self) -> QueuedPodInfo | None:
        """The head of the heap; it is not yet marked in flight (see ``popped``)."""
        return self._heap.pop()

    # ----- in-flight pods and events

    def popped(self, pod: Pod) -> None:
        """The pod is being scheduled: events from now on are kept for it (the in-flight half of upstream's
        unlockedPop; the popping itself waits on the PriorityQueue's Condition)."""
        seq = next(self._seq)
        self._in_flight[seq] = pod
        self._in_flight_pods[pod.uid] = seq

    def is_in_flight(self, uid: str) -> bool:
        return uid in self._in_flight_pods

    def in_flight_uids(self) -> list[str]:
        return list(self._in_flight_pods)

    def done(self, uid: str) -> None:
        """The pod's attempt is over: forget it, and every event no remaining in-flight pod can need."""
        seq = self._in_flight_pods.pop(uid, None)
        if seq is None:
            return
        del self._in_flight[seq]
        # Events older than the oldest remaining in-flight pod can no longer be replayed to anyone.
        while self._in_flight:
            first_seq, entry = next(iter(self._in_flight.items()))
            if not isinstance(entry, InFlightEvent):
                break
            del self._in_flight[first_seq]

    def add_events_if_pod_in_flight(self, pod: Pod, old: Any, new: Any, events: Iterable[ClusterEvent]) -> bool:
        """Keep the events of an update of a pod being scheduled (upstream addEventsIfPodInFlight);
        False when the pod is not in flight."""
        if pod.uid not in self._in_flight_pods:
            return False
        for event in events:
            self._in_flight[next(self._seq)] = InFlightEvent(event, old, new)
        return True

    def add_event_if_any_in_flight(self, event: ClusterEvent, old: Any, new: Any) -> bool:
        """Keep a cluster event while any pod is in flight (upstream addEventIfAnyInFlight)."""
        if not self._in_flight_pods:
            return False
        self._in_flight[next(self._seq)] = InFlightEvent(event, old, new)
        return True

    def cluster_events_for_pod(self, uid: str) -> list[InFlightEvent] | None:
        """The events received since the pod was popped (upstream clusterEventsForPod); None when it is
        not in flight."""
        seq = self._in_flight_pods.get(uid)
        if seq is None:
            return None
        return [e for s, e in self._in_flight.items() if s > seq and isinstance(e, InFlightEvent)]

    def in_flight_pods(self) -> list[Pod]:
        return [p for p in self._in_flight.values() if isinstance(p, Pod)]

    def in_flight_event_count(self) -> int:
        return sum(1 for e in self._in_flight.values() if isinstance(e, InFlightEvent))

    def in_flight_counts(self) -> dict[str, int]:
        """In-flight pods (PodPopped) and recorded events, by event label."""
        counts = {POD_POPPED: len(self._in_flight_pods)}
        for entry in self._in_flight.values():
            if isinstance(entry, InFlightEvent):
                counts[entry.event.label] = counts.get(entry.event.label, 0) + 1
        return counts
