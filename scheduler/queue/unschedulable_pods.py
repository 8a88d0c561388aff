"""unschedulablePods: the pods no event has yet made worth retrying, and the gated ones (upstream
pkg/scheduler/backend/queue/unschedulable_entities.go).

A map by pod key. A pod enters when an attempt failed and no event replayed since its pop makes it
worth retrying, or when a PreEnqueue plugin gates it; it leaves when a queueing hint, a flush or an
Activate moves it. Not locked: every caller holds the PriorityQueue's lock.

Upstream walks every pod of the map on each cluster event. Here the map is also kept in groups (pods
alike in what decides which hints an event reaches: profile, gate, rejecting plugins) and in key
indexes (e.g. the claims a pod names), both given by the queue's ``classify``, so that an event visits
only the groups and indexed pods it can concern. Whoever changes a stored pod in place calls
``refresh``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, KeysView, Sequence

from scheduler.queue.queued_pod_info import QueuedPodInfo

DEFAULT_POD_MAX_IN_UNSCHEDULABLE = 300.0  # DefaultPodMaxInUnschedulablePodsDuration (5 min)
SEED_POD_MAX_IN_UNSCHEDULABLE = 60.0  # unschedulableQTimeInterval in 1.16-1.18
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0

# (index, key): the pod is found under ``key`` of that index.
IndexEntry = tuple[Hashable, Hashable]
# A pod's group and its index entries.
Classification = tuple[Hashable, Sequence[IndexEntry]]
Classify = Callable[[QueuedPodInfo], Classification]


def _unclassified(qpi: QueuedPodInfo) -> Classification:
    del qpi
    return None, ()


class UnschedulablePods:
    """Pod key -> queued pod info. ``on_added(event)`` counts each pod that enters (gated ones too, as
    upstream's addOrUpdate records them)."""

    def __init__(self, on_added: Callable[[str], None], classify: Classify = _unclassified) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._on_added = on_added
        self._classify = classify
        self._seq: dict[str, int] = {}  # order of entry: events visit pods in it, as the map's order was
        self._counter = itertools.count()
        self._where: dict[str, Classification] = {}
        self._groups: dict[Hashable, dict[str, QueuedPodInfo]] = {}
        self._index: dict[IndexEntry, set[str]] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(self._pods.values())

    def keys(self) -> KeysView[str]:
        """The keys held, as a live view: ``key in`` it is a C-level test, where ``in`` this map is a call."""
        return self._pods.keys()

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._pods.get(key)

    def add_or_update(self, qpi: QueuedPodInfo, event: str) -> None:
        k = qpi.pod.key
        if k not in self._pods:
            self._on_added(event)
            self._seq[k] = next(self._counter)
        else:
            self._unlink(k)
        self._pods[k] = qpi
        self._link(k, qpi)

    def delete(self, key: str) -> QueuedPodInfo | None:
        qpi = self._pods.pop(key, None)
        if qpi is not None:
            self._unlink(key)
            del self._seq[key]
        return qpi

    def refresh(self, key: str) -> None:
        """The stored pod changed in place (a new pod object, a new gate): file it again."""
        qpi = self._pods.get(key)
        if qpi is not None:
            self._unlink(key)
            self._link(key, qpi)

    def set_classify(self, classify: Classify) -> None:
        """New profiles: every pod filed again under the new rule."""
        self._classify = classify
        self._where.clear()
        self._groups.clear()
        self._index.clear()
        for k, qpi in self._pods.items():
            self._link(k, qpi)

    def groups(self) -> Iterable[tuple[Hashable, dict[str, QueuedPodInfo]]]:
        return self._groups.items()

    def indexed(self, index: Hashable, keys: Iterable[Hashable]) -> set[str]:
        """The pod keys filed under any of ``keys`` in ``index``."""
        found: set[str] = set()
        for key in keys:
            pods = self._index.get((index, key))
            if pods:
                found |= pods
        return found

    def in_order(self, pods: list[QueuedPodInfo]) -> list[QueuedPodInfo]:
        """``pods`` in the order they entered."""
        seq = self._seq
        pods.sort(key=lambda q: seq[q.pod.key])
        return pods

    def classification(self, key: str) -> Classification | None:
        """Where the pod is filed (for tests checking that it matches the pod)."""
        return self._where.get(key)

    def gated_count(self) -> int:
        return sum(1 for q in self._pods.values() if q.gated)

    def older_than(self, now: float, seconds: float) -> list[QueuedPodInfo]:
        """The pods that entered, or were last flushed, more than ``seconds`` before ``now``
        (flushUnschedulableEntitiesLeftover)."""
        return [q for q in self._pods.values()
                if now - (q.timestamp if q.flush_timestamp is None else max(q.timestamp, q.flush_timestamp))
                > seconds]

    def _link(self, key: str, qpi: QueuedPodInfo) -> None:
        group, entries = where = self._classify(qpi)
        self._where[key] = where
        self._groups.setdefault(group, {})[key] = qpi
        for entry in entries:
            self._index.setdefault(entry, set()).add(key)

    def _unlink(self, key: str) -> None:
        where = self._where.pop(key, None)
        if where is None:
            return
        group, entries = where
        members = self._groups.get(group)
        if members is not None:
            members.pop(key, None)
            if not members:
                del self._groups[group]
        for entry in entries:
            pods = self._index.get(entry)
            if pods is not None:
                pods.discard(key)
                if not pods:
                    del self._index[entry]
