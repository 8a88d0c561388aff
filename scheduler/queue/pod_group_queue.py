"""The scheduling queue's pod groups (kube-scheduler v1.37 with GenericWorkload on, no composite groups): upstream's
QueuedPodGroupInfo, workload forest (here: the observed PodGroup objects), incompletePodGroupPods (members whose
PodGroup is not observed yet) and pendingPodGroupPods (members arriving while their group is in flight).

A queued group is one entity: it waits active, backing off or gated (a member's PreEnqueue rejected it), and is
popped whole. PriorityQueue (scheduling_queue.py) owns one of these and calls it under its lock; pods of no group
never reach it. Groups are ordered as PrioritySort orders entities: higher priority, then earlier timestamp.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import itertools
import math
from collections.abc import Callable, Iterator, Set
from dataclasses import dataclass, field

from scheduler.framework.podgroup import PodGroupInfo
from scheduler.model.pod import Pod
from scheduler.model.workload import PodGroup
from scheduler.queue.backoff_queue import align_to_window, backoff_duration
from scheduler.queue.queued_pod_info import QueuedPodInfo

GroupKey = tuple[str, str]  # (namespace, PodGroup name)

ACTIVE, BACKOFF, GATED = "active", "backoff", "gated"


def member_order(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
    """PodGroupMemberPodsOrderingFunc: priority descending, attempts descending, timestamp, then name."""
    if a.pod.priority != b.pod.priority:
        return -1 if a.pod.priority > b.pod.priority else 1
    if a.attempts != b.attempts:
        return -1 if a.attempts > b.attempts else 1
    if a.timestamp != b.timestamp:
        return -1 if a.timestamp < b.timestamp else 1
    if a.pod.name != b.pod.name:
        return -1 if a.pod.name < b.pod.name else 1
    return 0


_member_key = functools.cmp_to_key(member_order)


def group_key_of(pod: Pod) -> GroupKey:
    return pod.namespace, pod.pod_group_name


@dataclass(slots=True, eq=False)
class QueuedPodGroupInfo:
    """framework.QueuedPodGroupInfo: the group's PodGroupInfo, its queued members in member order, and the
    queueing parameters of the whole group (attempts, counts, backoff, gate)."""

    info: PodGroupInfo
    members: list[QueuedPodInfo] = field(default_factory=list)
    timestamp: float = 0.0
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: Set[str] = frozenset()
    pending_plugins: Set[str] = frozenset()
    gating_plugin: str | None = None
    gating_message: str = ""
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    backoff_expiration: float | None = None
    flush_timestamp: float | None = None  # the last UnschedulableTimeout flush of the group while gated

    @property
    def key(self) -> GroupKey:
        return self.info.namespace, self.info.name

    @property
    def priority(self) -> int:
        return self.info.priority

    @property
    def pod_group(self) -> PodGroup | None:
        return self.info.pod_group

    def add_pod(self, qpi: QueuedPodInfo) -> None:
        """AddPod: in member order, mirrored in the PodGroupInfo's unscheduled pods."""
        if not self.members or member_order(self.members[-1], qpi) <= 0:  # members mostly arrive in order
            self.members.append(qpi)
            self.info.unscheduled_pods.append(qpi.pod)
            return
        i = bisect.bisect_left([_member_key(m) for m in self.members], _member_key(qpi))
        self.members.insert(i, qpi)
        self.info.unscheduled_pods.insert(i, qpi.pod)

    def remove_pod(self, pod: Pod) -> QueuedPodInfo | None:
        for i, m in enumerate(self.members):
            if m.pod.name == pod.name:
                del self.members[i]
                del self.info.unscheduled_pods[i]
                return m
        return None

    def update_pod(self, pod: Pod) -> bool:
        for i, m in enumerate(self.members):
            if m.pod.name == pod.name:
                m.pod = pod
                self.info.unscheduled_pods[i] = pod
                return True
        return False

    def set_members(self, members: list[QueuedPodInfo]) -> None:
        self.members = list(members)
        self.info.unscheduled_pods = [m.pod for m in self.members]

    def inc_attempts(self) -> None:
        self.attempts += 1
        for m in self.members:
            m.attempts += 1


class PodGroupQueue:
    """The pod-group half of the PriorityQueue (see the module). Not thread-safe: its owner's lock is held."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.forest: dict[GroupKey, PodGroup] = {}
        self.incomplete: dict[GroupKey, dict[str, QueuedPodInfo]] = {}
        self.pending: dict[GroupKey, dict[str, QueuedPodInfo]] = {}
        self.queued: dict[GroupKey, QueuedPodGroupInfo] = {}
        self.where: dict[GroupKey, str] = {}
        self.gated: dict[GroupKey, None] = {}  # the keys whose state is GATED, in order: every event walks them
        self.in_flight: GroupKey | None = None  # upstream's last popped entity, while it is a group
        # The active groups by PrioritySort's order, with lazy deletion: an entry whose group left, changed
        # priority or timestamp, or is not active any more is dropped when it surfaces.
        self._active_heap: list[tuple[int, float, int, GroupKey, QueuedPodGroupInfo]] = []
        self._seq = itertools.count()

    # ----- read access

    def __bool__(self) -> bool:
        return bool(self.queued) or bool(self.incomplete) or bool(self.pending)

    def members(self) -> Iterator[QueuedPodInfo]:
        for g in self.queued.values():
            yield from g.members

    def count(self, state: str) -> int:
        return sum(1 for w in self.where.values() if w == state)

    def member_counts_by_state(self) -> dict[str, int]:
        """The members of the queued groups per state (active, backoff, gated)."""
        out = {ACTIVE: 0, BACKOFF: 0, GATED: 0}
        for key, state in self.where.items():
            out[state] += len(self.queued[key].members)
        return out

    def member_counts(self) -> tuple[int, int]:
        """Pods in incompletePodGroupPods and pendingPodGroupPods (scheduler_pending_pods' two member queues)."""
        return sum(len(v) for v in self.incomplete.values()), sum(len(v) for v in self.pending.values())

    def holds(self, pod: Pod) -> str | None:
        """Where a member waits: the group's state, "incomplete" or "pending"; None if nowhere."""
        key = group_key_of(pod)
        if pod.key in self.incomplete.get(key, {}):
            return "incomplete"
        if pod.key in self.pending.get(key, {}):
            return "pending"
        g = self.queued.get(key)
        if g is not None and any(m.pod.name == pod.name for m in g.members):
            return self.where[key]
        return None

    # ----- the group entities

    def new_group(self, key: GroupKey, qpi: QueuedPodInfo | None = None) -> QueuedPodGroupInfo:
        """newQueuedPodGroupInfoFromRootLookup: a group made for its first member takes that member's timestamps."""
        g = QueuedPodGroupInfo(PodGroupInfo(key[0], key[1], self.forest.get(key)), timestamp=self._clock())
        if qpi is not None:
            g.add_pod(qpi)
            g.timestamp, g.initial_attempt_timestamp = qpi.timestamp, qpi.initial_attempt_timestamp
        return g

    def put(self, g: QueuedPodGroupInfo, state: str) -> None:
        self.queued[g.key] = g
        self.where[g.key] = state
        if state == GATED:
            self.gated[g.key] = None
        else:
            self.gated.pop(g.key, None)
        if state == ACTIVE:
            heapq.heappush(self._active_heap, (-g.priority, g.timestamp, next(self._seq), g.key, g))

    def take(self, key: GroupKey) -> tuple[QueuedPodGroupInfo | None, str | None]:
        g = self.queued.pop(key, None)
        self.gated.pop(key, None)
        return g, self.where.pop(key, None)

    def best_active(self) -> QueuedPodGroupInfo | None:
        """The active group PrioritySort puts first (higher priority, then earlier timestamp; then the first put)."""
        heap = self._active_heap
        while heap:
            neg_priority, timestamp, _, key, g = heap[0]
            if (self.queued.get(key) is g and self.where.get(key) == ACTIVE and g.priority == -neg_priority
                    and g.timestamp == timestamp):
                return g
            heapq.heappop(heap)
        return None

    def best_active_by(
        self, less: Callable[[QueuedPodGroupInfo, QueuedPodGroupInfo], bool],
    ) -> QueuedPodGroupInfo | None:
        """The active group ``less`` puts first (the earliest queued among equals)."""
        best: QueuedPodGroupInfo | None = None
        for key, state in self.where.items():
            if state == ACTIVE:
                g = self.queued[key]
                if best is None or less(g, best):
                    best = g
        return best

    def backoff_expiry(self, g: QueuedPodGroupInfo, initial: float, maximum: float) -> float:
        """getBackoffTime of the group entity, window-aligned, cached until its counts change; the maximum grows
        with the square root of the members (upstream calculateBackoffDuration)."""
        if maximum == 0:
            return float("-inf")
        count = g.consecutive_errors_count if g.consecutive_errors_count > 0 else g.unschedulable_count
        if count == 0:
            return float("-inf")
        if g.backoff_expiration is None:
            size = len(g.members)
            if size > 1:  # calculateBackoffDuration: a bigger entity may back off longer, by sqrt of its pods
                maximum *= math.sqrt(size)
            g.backoff_expiration = align_to_window(g.timestamp + backoff_duration(count, initial, maximum))
        return g.backoff_expiration

    def backoff_completed(self, initial: float, maximum: float) -> list[QueuedPodGroupInfo]:
        now = align_to_window(self._clock())
        return [self.queued[k] for k, w in list(self.where.items())
                if w == BACKOFF and self.backoff_expiry(self.queued[k], initial, maximum) < now]

    # ----- member pools

    @staticmethod
    def pool_add(pool: dict[GroupKey, dict[str, QueuedPodInfo]], qpi: QueuedPodInfo) -> None:
        pool.setdefault(group_key_of(qpi.pod), {})[qpi.pod.key] = qpi

    @staticmethod
    def pool_delete(pool: dict[GroupKey, dict[str, QueuedPodInfo]], pod: Pod) -> QueuedPodInfo | None:
        key = group_key_of(pod)
        pods = pool.get(key)
        if not pods:
            return None
        qpi = pods.pop(pod.key, None)
        if not pods:
            del pool[key]
        return qpi

    @staticmethod
    def pool_update(pool: dict[GroupKey, dict[str, QueuedPodInfo]], pod: Pod) -> bool:
        qpi = pool.get(group_key_of(pod), {}).get(pod.key)
        if qpi is None:
            return False
        qpi.pod = pod
        return True

    @staticmethod
    def pool_clear(pool: dict[GroupKey, dict[str, QueuedPodInfo]], key: GroupKey) -> list[QueuedPodInfo]:
        return list(pool.pop(key, {}).values())
