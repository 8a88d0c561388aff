"""PriorityQueue: activeQ, backoffQ and unschedulablePods, as kube-scheduler v1.37 runs them for pods
(upstream pkg/scheduler/backend/queue/scheduling_queue.go; the three queues are in active_queue.py,
backoff_queue.py and unschedulable_pods.py, as upstream's pkg/scheduler/backend/queue/active_queue.go,
pkg/scheduler/backend/queue/backoff_queue.go and pkg/scheduler/backend/queue/unschedulable_entities.go).

Semantics follow ``pkg/scheduler/backend/queue`` with queueing hints on (always, in 1.37: the gate is gone and
there is no mode without them) and SchedulerPopFromBackoffQ on:

- activeQ is a heap by the QueueSort plugin's ``less``; ``pop`` blocks until it is non-empty and,
  when it is empty, takes the head of backoffQ even before its backoff is over.
- backoffQ is two heaps: pods rejected by plugins (ordered by 1 s expiry window, then ``less``) and
  pods that failed with an error (ordered by expiry window). Backoff is
  ``min(initial * 2**(count-1), max)`` with count = consecutive errors if any, else unschedulable count.
- unschedulablePods is a map that also holds pods gated by a PreEnqueue plugin.
- cluster events move unschedulable pods only through the queueing hints of the plugins that
  rejected them; events seen while a pod is being scheduled are replayed when it comes back.
- an event visits only the unschedulable pods it can move: they are filed by group (profile, gate,
  rejecting plugins) and under the keys of keyed hints (``ClusterEventWithHint.pod_keys``, e.g. the
  claims a pod names), so a claim event asks only its claim's pods; the moves are those of upstream's
  walk over every pod. A gated pod moves only on its gating plugin's events or the leftover flush.

One lock guards everything; a Condition on it wakes ``pop``. Hints and PreEnqueue plugins run under
the lock (as upstream), so they must not call back into the queue.

Pods bound elsewhere: ``update(old, new)`` with ``new.node_name`` set deletes the pod from the queue
(upstream's filtered informer turns that update into a Delete), and ``add`` ignores assigned pods.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from scheduler.framework.events import (
    BACKOFF_COMPLETE,
    FORCE_ACTIVATE_LABEL,
    POP_FROM_BACKOFF_Q,
    SCHEDULE_ATTEMPT_FAILURE,
    TARGET_POD_UPDATE,
    UNSCHEDULED_POD_ADD,
    as_target_pod_events,
    event_matches,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
    unscheduled_pod_update_events,
)
from scheduler.framework.interface import PreEnqueuePlugin
from scheduler.framework.runtime import code_name
from scheduler.framework.status import SUCCESS_NAME, Status, error, success
from scheduler.framework.types import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    FORCE_ACTIVATE,
    NODE_ADD,
    NODE_DELETE,
    UNSCHEDULABLE_TIMEOUT,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.queue.active_queue import ActiveQueue
from scheduler.queue.backoff_queue import (
    BACKOFF_ORDERING_WINDOW,
    DEFAULT_POD_INITIAL_BACKOFF,
    DEFAULT_POD_MAX_BACKOFF,
    BackoffQueue,
    align_to_window,
)
from scheduler.queue.nominator import Nominator
from scheduler.queue.pod_group_paths import PodGroupPaths
from scheduler.queue.pod_group_queue import PodGroupQueue, QueuedPodGroupInfo
from scheduler.queue.queued_pod_info import QueuedPodInfo
from scheduler.queue.queueing_strategy import STRATEGY_QUEUE, Strategy
from scheduler.queue.unschedulable_pods import (
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE,
    UNSCHEDULABLE_FLUSH_INTERVAL,
    Classification,
    IndexEntry,
    UnschedulablePods,
)

log = logging.getLogger(__name__)

# Queue names as the scheduler_pending_pods / scheduler_queue_incoming_pods_total metrics label them.
ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"

LessFunc = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
# (queue label, event label, entity): one pod entered that queue because of that event; ``entity`` says
# whether scheduler_queue_incoming_entities_total counts it too (v1.37 recordIncomingEntitiesMetrics: not
# when a queueing hint's strategy already named the queue it lands in).
MetricsCallback = Callable[[str, str, bool], None]
# (plugin, event label, hint label "Queue"|"QueueSkip"|"Error", seconds): one queueing hint ran.
HintMetricsCallback = Callable[[str, str, str, float], None]
# (profile, status code name, seconds): the PreEnqueue plugins of one pod ran.
PreEnqueueMetricsCallback = Callable[[str, str, float], None]


@dataclass(slots=True)
class QueueProfile:
    """What the queue needs of one scheduling profile (keyed by schedulerName)."""

    pre_enqueue_plugins: Sequence[PreEnqueuePlugin] = field(default_factory=list)
    # plugin name -> the events it registered (EnqueueExtensions), each with its hint fn or None.
    hints: Mapping[str, Sequence[ClusterEventWithHint]] = field(default_factory=dict)


_STRATEGY_QUEUE = STRATEGY_QUEUE

# A group of unschedulable pods: (profile, the gating plugin's events or None when not gated,
# unschedulable plugins, pending plugins): all an event's way to a pod's hints depends on.
_Group = tuple[str, tuple[ClusterEvent, ...] | None, frozenset[str], frozenset[str]]


class _Reach(Enum):
    """Which pods of a group a cluster event can move."""

    NONE = 0  # none: the gate check or every hint it reaches would skip them
    ALL = 1  # every pod is asked, as upstream asks
    KEYED = 2  # only those filed under the event's keys of the (keyed) registrations it reaches


@dataclass(frozen=True, slots=True)
class _Plan:
    reach: _Reach
    keyed: tuple[ClusterEventWithHint, ...] = ()


_NONE = _Plan(_Reach.NONE)
_ALL = _Plan(_Reach.ALL)
# The labels of the events whose entry into activeQ records the pod's own nomination (upstream moveToActiveQ).
_NOMINATING = frozenset({UNSCHEDULED_POD_ADD.label, TARGET_POD_UPDATE.label})
_MAX_PLANS = 4096  # (group, event) plans remembered before starting afresh
_ANY_KEY = object()  # a pod whose keys could not be read is filed under it: every keyed event asks it


class PriorityQueue(PodGroupPaths):
    """The scheduling queue. All public methods are thread-safe."""

    def __init__(
        self,
        less: LessFunc,
        profiles: Mapping[str, QueueProfile] | None = None,
        *,
        pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        pod_max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE,
        clock: Callable[[], float] = time.monotonic,
        metrics: MetricsCallback | None = None,
        hint_metrics: HintMetricsCallback | None = None,
        pre_enqueue_metrics: PreEnqueueMetricsCallback | None = None,
        is_bound: Callable[[Pod], bool] | None = None,
        unschedulable_flush_interval: float = UNSCHEDULABLE_FLUSH_INTERVAL,
        rank: Callable[[QueuedPodInfo], Any] | None = None,
    ) -> None:
        """``rank``, a sort key agreeing with ``less`` (QueueSortRankPlugin), lets activeQ run on heapq."""
        self._max_in_unschedulable = pod_max_in_unschedulable
        self._clock = clock
        self._metrics = metrics
        self._hint_metrics = hint_metrics
        self._pre_enqueue_metrics = pre_enqueue_metrics
        self._unschedulable_flush_interval = unschedulable_flush_interval
        self.nominator = Nominator(is_bound) if is_bound is not None else Nominator()

        self._pre_enqueue: dict[str, list[PreEnqueuePlugin]] = {}
        self._hints: dict[str, list[tuple[str, ClusterEventWithHint]]] = {}
        self._interest: dict[ClusterEvent, bool] = {}
        self._plugin_events: dict[str, list[ClusterEvent]] = {}
        # profile -> the registrations that narrow their events by pod keys (ClusterEventWithHint.pod_keys)
        self._keyed: dict[str, list[ClusterEventWithHint]] = {}
        # (pod group, event) -> which of the group's pods the event can move (see _plan)
        self._plans: dict[tuple[Hashable, ClusterEvent], _Plan] = {}
        self._index_profiles(profiles or {})

        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        # pop() calls waiting on _cond: Condition.notify_all is Python code that costs every added pod even with
        # nobody to wake, and the scheduling thread is busy while pods stream in.
        self._waiters = 0
        self._active = ActiveQueue(less, rank)
        # The QueueSort plugin's order, for pod groups against pods (and among groups when it has no rank).
        self._less = less
        self._ranked = rank is not None
        self._backoff = BackoffQueue(less, clock, pod_initial_backoff, pod_max_backoff)
        self._unschedulable = UnschedulablePods(lambda event: self._record(UNSCHEDULABLE, event), self._classify)
        self._unschedulable_keys = self._unschedulable.keys()  # a live view: activeQ's entry asks it for every pod
        self._strategy_queue: str | None = None  # the queue the strategy of the requeue under way names

        # GenericWorkload (set by the Scheduler): members of pod groups are queued as their group (pod_group_paths.py).
        self.generic_workload = False
        self._groups = PodGroupQueue(clock)

        self._cycle = 0
        self._closed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------- properties and read access

    @property
    def scheduling_cycle(self) -> int:
        """Incremented on every pop; pass the value seen at pop to add_unschedulable_if_not_present. Read without
        the lock (an attribute read is atomic under the GIL): the scheduling thread reads it after each pop."""
        return self._cycle

    def pending_pods(self) -> tuple[list[Pod], str]:
        """All queued pods and a summary like ``activeQ:1; backoffQ:0; unschedulablePods:2``."""
        with self._lock:
            active = [q.pod for q in self._active]
            backoff = [q.pod for q in self._backoff]
            unsched = [q.pod for q in self._unschedulable]
            if self._groups:
                g = self._groups
                unsched.extend(m.pod for m in g.members())
                for pool in (g.incomplete, g.pending):
                    unsched.extend(q.pod for pods in pool.values() for q in pods.values())
        summary = f"activeQ:{len(active)}; backoffQ:{len(backoff)}; unschedulablePods:{len(unsched)}"
        return active + backoff + unsched, summary

    def lengths(self) -> dict[str, int]:
        """Pods of no pod group per queue (``scheduler_pending_pods{queue=active|backoff|unschedulable|gated}``
        adds the members of the queued groups: ``pod_group_members_by_state``)."""
        with self._lock:
            gated = self._unschedulable.gated_count()
            return {
                ACTIVE: len(self._active),
                BACKOFF: len(self._backoff),
                UNSCHEDULABLE: len(self._unschedulable) - gated,
                GATED: gated,
            }

    def get(self, namespace: str, name: str) -> QueuedPodInfo | None:
        key = f"{namespace}/{name}"
        with self._lock:
            qpi = self._active.get(key)
            if qpi is None:
                qpi = self._backoff.get(key)
            return qpi if qpi is not None else self._unschedulable.get(key)

    def queue_of(self, pod: Pod) -> str | None:
        """Which sub-queue holds the pod: active, backoff, unschedulable, gated, or None."""
        with self._lock:
            if self.generic_workload and pod.pod_group_name:
                return self._groups.holds(pod)  # its group's state, or incomplete / pending
            k = pod.key
            if k in self._active:
                return ACTIVE
            if k in self._backoff:
                return BACKOFF
            qpi = self._unschedulable.get(k)
            if qpi is None:
                return None
            return GATED if qpi.gated else UNSCHEDULABLE

    def gating_message(self, key: str) -> str:
        """Why the pod ``namespace/name`` is gated (its PreEnqueue status message); "" if it is not."""
        with self._lock:
            qpi = self._unschedulable.get(key)
            return qpi.gating_message if qpi is not None and qpi.gated else ""

    def in_flight_pods(self) -> list[Pod]:
        with self._lock:
            return self._active.in_flight_pods()

    def in_flight_event_count(self) -> int:
        """Recorded events not yet trimmed (upstream scheduler_inflight_events, summed)."""
        with self._lock:
            return self._active.in_flight_event_count()

    def in_flight_counts(self) -> dict[str, int]:
        """scheduler_inflight_events: in-flight pods (PodPopped) and recorded events, by event label."""
        with self._lock:
            return self._active.in_flight_counts()

    def unschedulable_by_plugin(self) -> dict[tuple[str, str], int]:
        """scheduler_unschedulable_pods: queued pods per (rejecting or gating plugin, profile); upstream
        counts a pod from its failure until it is popped again."""
        counts: dict[tuple[str, str], int] = {}
        with self._lock:
            for qpi in itertools.chain(self._active, self._backoff, self._unschedulable):
                for plugin in qpi.unschedulable_plugins | qpi.pending_plugins:
                    key = (plugin, qpi.pod.scheduler_name)
                    counts[key] = counts.get(key, 0) + 1
        return counts

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self.nominator.nominated_pods_for_node(node_name)

    # ---------------------------------------------------------------------------- pod lifecycle

    def add(self, pod: Pod) -> None:
        """A new unscheduled pod: PreEnqueue, then activeQ (or unschedulablePods as gated)."""
        if pod.node_name:
            return  # assigned pods belong to the cache, never to the queue
        with self._lock:
            if self.generic_workload and pod.pod_group_name:
                self._add_group_member(self._new_qpi(pod))
                return
            if self._move_to_active(self._new_qpi(pod), UNSCHEDULED_POD_ADD.label) and self._waiters:
                self._cond.notify_all()

    def update(self, old: Pod | None, new: Pod) -> list[ClusterEvent]:
        """An unscheduled pod changed (informer update). Returns the events derived from the change
        (none for a resync), which the event handler labels its metric samples with."""
        with self._lock:
            if new.node_name:
                self._delete_unlocked(new)  # bound by someone else: it left the unscheduled set
                return []
            events = unscheduled_pod_update_events(old, new)
            if not events:
                return events  # periodic resync, nothing changed
            if self.generic_workload and new.pod_group_name:
                own = as_target_pod_events(events)
                if not self._active.add_events_if_pod_in_flight(new, old, new, own):
                    self._update_group_member(old, new, own)
                return events
            own = as_target_pod_events(events)
            if self._active.add_events_if_pod_in_flight(new, old, new, own):
                return events  # it is being scheduled; the update is replayed if it comes back
            if old is not None and self._update_in_heaps(old, new):
                return events
            qpi = self._unschedulable.get(new.key)
            if qpi is not None:
                self._update_unschedulable(qpi, old, new, own)
                return events
            # In no queue: added as a new pod (v1.37 addPod, labelled UnscheduledPodAdd).
            if self._move_to_active(self._new_qpi(new), UNSCHEDULED_POD_ADD.label):
                self._wake()
            return events

    def delete(self, pod: Pod) -> None:
        """The pod is gone (or bound): remove it from every sub-queue and from the nominator."""
        with self._lock:
            if self.generic_workload and pod.pod_group_name:
                self._delete_group_member(pod)
                return
            self._delete_unlocked(pod)

    def activate(self, pods: Iterable[Pod]) -> None:
        """Force pods from unschedulablePods/backoffQ into activeQ (upstream Activate).

        A pod that is in flight instead gets a ForceActivate event, so it is requeued if it comes back.
        """
        with self._lock:
            activated = False
            for pod in pods:
                if self.generic_workload and pod.pod_group_name:
                    if self._activate_group_of(pod):
                        activated = True
                    else:
                        self._active.add_events_if_pod_in_flight(pod, None, pod, [FORCE_ACTIVATE])
                    continue
                if self._activate_one(pod):
                    activated = True
                    continue
                self._active.add_events_if_pod_in_flight(pod, None, pod, [FORCE_ACTIVATE])
            if activated:
                self._wake()

    # ---------------------------------------------------------------------------------- pop / done

    def pop(self, timeout: float | None = None) -> QueuedPodInfo | QueuedPodGroupInfo | None:
        """Block until a pod is available; None on timeout or once the queue is closed.

        Each pop counts an attempt, increments the scheduling cycle and marks the pod in flight.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:
                    return None
                if self._groups.where:
                    group = self._pop_group_if_first()
                    if group is not None:
                        self._popped_group(group)
                        return group
                qpi = self._pop_head()
                if qpi is not None:
                    break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._waiters += 1
                try:
                    self._cond.wait(remaining)
                finally:
                    self._waiters -= 1  # wait() has taken the lock again, on a timeout or an exception too
            qpi.attempts += 1
            self._cycle += 1
            if qpi.initial_attempt_timestamp is None:
                qpi.initial_attempt_timestamp = self._clock()
            self._active.popped(qpi.pod)
            return qpi

    def done(self, uid: str) -> None:
        """The pod's attempt is over (requeued, bound or dropped): stop tracking events for it."""
        with self._lock:
            self._active.done(uid)

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, scheduling_cycle: int) -> str | None:
        """Return a pod whose attempt failed; the replayed in-flight events decide where it goes.

        Returns an error message if the pod is already queued (a bug upstream logs), else None.
        Always marks the pod done. (``scheduling_cycle`` is upstream's argument; with queueing hints,
        always on, the in-flight events decide instead of the cycle of the last move request.)
        """
        with self._lock:
            if self.generic_workload and qpi.pod.pod_group_name:
                self._unschedulable_group_member(qpi)
                return None
            try:
                return self._add_unschedulable(qpi)
            finally:
                self._active.done(qpi.pod.uid)

    # ---------------------------------------------------------------------------- cluster events

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old_obj: Any = None,
        new_obj: Any = None,
        pre_check: Callable[[Pod], bool] | None = None,
    ) -> None:
        """A cluster event happened: requeue the unschedulable pods it may help (per their hints).

        ``pre_check`` narrows the candidates (e.g. priority ≤ a deleted nominated pod's priority).
        """
        with self._lock:
            self._move_all(event, old_obj, new_obj, pre_check)

    def move_all_for_events(
        self,
        events: Iterable[ClusterEvent],
        old_obj: Any = None,
        new_obj: Any = None,
        pre_check: Callable[[Pod], bool] | None = None,
    ) -> None:
        """Several derived events for one object change (node update, assigned pod update)."""
        with self._lock:
            for event in events:
                self._move_all(event, old_obj, new_obj, pre_check)

    def assigned_pod_added(self, pod: Pod) -> None:
        self.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(self, old: Pod, new: Pod, event: ClusterEvent | None = None) -> list[ClusterEvent]:
        """``event`` None derives the events from the change (pod_scheduling_properties_change);
        returns the events moved for."""
        events = [event] if event is not None else pod_scheduling_properties_change(old, new)
        self.move_all_for_events(events, old, new)
        return events

    def assigned_pod_deleted(self, pod: Pod) -> None:
        self.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)

    def node_added(self, node: Node, pre_check: Callable[[Pod], bool] | None = None) -> None:
        self.move_all_to_active_or_backoff(NODE_ADD, None, node, pre_check)

    def node_updated(
        self, old: Node, new: Node, pre_check: Callable[[Pod], bool] | None = None
    ) -> list[ClusterEvent]:
        """Nothing scheduling-relevant changed → no event → nothing moves. Returns the events."""
        events = node_scheduling_properties_change(old, new)
        self.move_all_for_events(events, old, new, pre_check)
        return events

    def node_deleted(self, node: Node) -> None:
        self.move_all_to_active_or_backoff(NODE_DELETE, node, None)

    # ------------------------------------------------------------------------- flushes and loop

    def flush_backoff_completed(self) -> None:
        """Move pods whose backoff window has passed to activeQ (PreEnqueue already ran on entry)."""
        with self._lock:
            activated = False
            for qpi in self._backoff.pop_all_backoff_completed():
                activated = self._move_to_active(qpi, BACKOFF_COMPLETE, from_backoff=True) or activated
            if self._groups.where:
                activated = self._flush_group_backoff() or activated
            if activated:
                self._wake()

    def flush_unschedulable_pods_leftover(self) -> None:
        """Pods waiting longer than pod_max_in_unschedulable get an UnschedulableTimeout event."""
        with self._lock:
            now = self._clock()
            stale = self._unschedulable.older_than(now, self._max_in_unschedulable)
            for qpi in stale:
                qpi.was_flushed_from_unschedulable = True  # scheduler_pod_scheduled_after_flush_total
                qpi.flush_timestamp = now  # one gated again waits another full period
            if stale:
                self._move_pods(stale, UNSCHEDULABLE_TIMEOUT, None, None)
            if self._groups.gated:
                self._flush_gated_groups(now)

    def run(self) -> None:
        """Start the daemon thread flushing backoffQ every 1 s (window-aligned) and leftovers every 30 s."""
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._loop, name="scheduling-queue-flush", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop the flush thread, forget in-flight pods and wake every pop() (which returns None)."""
        with self._lock:
            self._closed = True
            self._stop.set()
            for uid in self._active.in_flight_uids():
                self._active.done(uid)
            self._wake()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _loop(self) -> None:
        now = self._clock()
        first = min(max(align_to_window(now + BACKOFF_ORDERING_WINDOW) - now, 0.0), BACKOFF_ORDERING_WINDOW)
        start = time.monotonic()
        next_backoff = start + first
        next_leftover = start  # wait.Until runs its function once right away
        while not self._stop.is_set():
            now_real = time.monotonic()
            if now_real >= next_leftover:
                self._safely(self.flush_unschedulable_pods_leftover)
                next_leftover += self._unschedulable_flush_interval
            if now_real >= next_backoff:
                self._safely(self.flush_backoff_completed)
                while next_backoff <= now_real:
                    next_backoff += BACKOFF_ORDERING_WINDOW
            self._stop.wait(max(min(next_backoff, next_leftover) - time.monotonic(), 0.0))

    @staticmethod
    def _safely(fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception:  # keep the loop alive; the queue state stays consistent per call
            log.exception("scheduling queue flush failed")

    # --------------------------------------------------------------------- internals (lock held)

    def _wake(self) -> None:
        """Wake every waiting pop (the lock held); with none waiting there is nothing to notify."""
        if self._waiters:
            self._cond.notify_all()

    def _new_qpi(self, pod: Pod) -> QueuedPodInfo:
        return QueuedPodInfo(pod, self._clock())  # positional: keywords cost more, once for every added pod

    def _record(self, queue: str, event: str) -> None:
        if self._metrics is not None:
            self._metrics(queue, event, queue != self._strategy_queue)

    def _pop_head(self) -> QueuedPodInfo | None:
        """activeQ head, else (PopFromBackoffQ) the backoffQ head; skip pods already in flight."""
        while True:
            qpi = self._active.pop()
            if qpi is None:
                qpi = self._backoff.pop_backoff()
                if qpi is None:
                    return None
                self._record(ACTIVE, POP_FROM_BACKOFF_Q)
            if self._active.is_in_flight(qpi.pod.uid):
                log.error("pod %s is tracked in multiple places in the scheduler; discarding", qpi.pod.key)
                continue
            return qpi

    def _delete_unlocked(self, pod: Pod) -> None:
        self.nominator.delete_nominated_pod_if_exists(pod)
        k = pod.key
        if self._active.delete(k) is not None or self._backoff.delete(k) is not None:
            return
        self._unschedulable.delete(k)

    def _update_in_heaps(self, old: Pod, new: Pod) -> bool:
        """Update in place in activeQ or backoffQ; ordering keys (timestamp, counts) are unchanged."""

        def set_pod(qpi: QueuedPodInfo) -> None:
            qpi.pod = new

        qpi = self._active.get(old.key)
        if qpi is not None:
            qpi.pod = new
            self._active.add_or_update(qpi)
        elif not self._backoff.update(old.key, set_pod):
            return False
        self.nominator.update_nominated_pod(old, new)
        return True

    def _update_unschedulable(self, qpi: QueuedPodInfo, old: Pod | None, new: Pod, events: list[ClusterEvent]) -> None:
        qpi.pod = new
        self._unschedulable.refresh(new.key)  # its keys may have changed (a claim named in its status)
        if old is not None:
            self.nominator.update_nominated_pod(old, new)
        for event in events:
            strategy = self._worth_requeuing(qpi, event, old, new)
            if self._requeue(qpi, strategy, event.label) in (ACTIVE, BACKOFF):
                self._wake()
                break

    def _activate_one(self, pod: Pod) -> bool:
        k = pod.key
        qpi = self._unschedulable.get(k)
        from_backoff = False
        if qpi is None:
            qpi = self._backoff.delete(k)
            if qpi is None:
                return False
            from_backoff = True
        return self._move_to_active(qpi, FORCE_ACTIVATE_LABEL, from_backoff=from_backoff)

    def _add_unschedulable(self, qpi: QueuedPodInfo) -> str | None:
        k = qpi.pod.key
        if k in self._unschedulable:
            return f"pod {k} is already present in the unschedulable queue"
        if k in self._active:
            return f"pod {k} is already present in the active queue"
        if k in self._backoff:
            return f"pod {k} is already present in the backoff queue"
        qpi.was_flushed_from_unschedulable = False  # back from an attempt
        if qpi.rejector_plugins:
            qpi.unschedulable_count += 1
            qpi.consecutive_errors_count = 0  # the error streak is over
        else:
            qpi.consecutive_errors_count += 1  # no plugin rejected it: an error (API, plugin crash ...)
        qpi.timestamp = self._clock()
        qpi.backoff_expiration = None
        queue = self._requeue(qpi, self._hint_for_returning_pod(qpi), SCHEDULE_ATTEMPT_FAILURE)
        if queue in (ACTIVE, BACKOFF):
            self._wake()
        return None

    def _hint_for_returning_pod(self, qpi: QueuedPodInfo) -> Strategy:
        """Replay the events received while the pod was in flight through its rejectors' hints."""
        if not qpi.rejector_plugins:
            return Strategy.AFTER_BACKOFF
        events = self._active.cluster_events_for_pod(qpi.pod.uid)
        if events is None:
            log.error("in-flight pod %s not found in the scheduling queue", qpi.pod.key)
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for e in events:
            s = self._worth_requeuing(qpi, e.event, e.old_obj, e.new_obj)
            if s is Strategy.IMMEDIATELY:
                return s
            if s is Strategy.AFTER_BACKOFF:
                strategy = s
                if not qpi.pending_plugins:
                    return s
        return strategy

    def _move_all(self, event: ClusterEvent, old: Any, new: Any, pre_check: Callable[[Pod], bool] | None) -> None:
        if not self._is_event_of_interest(event):
            return
        if self._groups.gated:
            self._wake_gated_groups(event, old, new)
        if not self._unschedulable:  # no pod waits for a hint (every pod watch event comes here): as _move_pods
            self._active.add_event_if_any_in_flight(event, old, new)
            return
        pods = self._candidates(event, old, new)
        if pre_check is not None:
            pods = [q for q in pods if pre_check(q.pod)]
        self._move_pods(pods, event, old, new)

    def _candidates(self, event: ClusterEvent, old: Any, new: Any) -> list[QueuedPodInfo]:
        """The unschedulable pods the event may move, in their order of entry. The others are those
        _move_pods would pass over: gated for another plugin's events, or rejected only by plugins whose
        hints the event does not reach or, by the keys' promise, would answer QueueSkip."""
        out: list[QueuedPodInfo] = []
        memo: dict[Any, tuple[Hashable, ...] | None] = {}
        for group, pods in self._unschedulable.groups():
            plan = self._plan(group, event)
            if plan.reach is _Reach.NONE:
                continue
            found: set[str] | None = None
            if plan.reach is _Reach.KEYED:
                found = set()
                for ewh in plan.keyed:
                    keys = self._event_keys(ewh, memo, old, new)
                    if keys is None:
                        found = None
                        break
                    found |= self._unschedulable.indexed(ewh.pod_keys, keys)
            if found is None:
                out.extend(pods.values())
            else:
                out.extend(pods[k] for k in found if k in pods)
        return self._unschedulable.in_order(out)

    def _plan(self, group: Any, event: ClusterEvent) -> _Plan:
        plan = self._plans.get((group, event))
        if plan is None:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            plan = self._plans[(group, event)] = self._make_plan(group, event)
        return plan

    def _make_plan(self, group: _Group, event: ClusterEvent) -> _Plan:
        """_move_pods' gate check and _worth_requeuing's choice of hints, for a whole group at once."""
        profile, gating_events, unschedulable, pending = group
        if gating_events is not None and not event.is_wildcard and not any(
                event_matches(event, e) for e in gating_events):
            return _NONE
        rejectors = unschedulable | pending
        regs = self._hints.get(profile)
        if not rejectors or event.is_wildcard or regs is None:
            return _ALL
        reached = [ewh for plugin, ewh in regs if plugin in rejectors and event_matches(event, ewh.event)]
        if not reached:
            return _NONE
        if any(ewh.hint is None or ewh.pod_keys is None or ewh.event_keys is None for ewh in reached):
            return _ALL
        return _Plan(_Reach.KEYED, tuple(reached))

    @staticmethod
    def _event_keys(
        ewh: ClusterEventWithHint, memo: dict[Any, tuple[Hashable, ...] | None], old: Any, new: Any
    ) -> tuple[Hashable, ...] | None:
        """The keys of the pods the event concerns for this registration (None: all), asked once an event."""
        fn = ewh.event_keys
        if fn is None:
            return None
        if fn in memo:
            return memo[fn]
        keys: tuple[Hashable, ...] | None
        try:
            found = fn(old, new)
            keys = None if found is None else (*found, _ANY_KEY)
        except Exception:  # as upstream's failed PreQueueingHint: every pod is asked
            log.exception("event keys of %s failed; asking every pod", ewh.event.label or ewh.event)
            keys = None
        memo[fn] = keys
        return keys

    def _classify(self, qpi: QueuedPodInfo) -> Classification:
        """Where unschedulablePods files a pod: its group (_Group) and its keys in each keyed index."""
        pod = qpi.pod
        group: _Group = (pod.scheduler_name, tuple(qpi.gating_plugin_events) if qpi.gated else None,
                         frozenset(qpi.unschedulable_plugins), frozenset(qpi.pending_plugins))
        entries: set[IndexEntry] = set()
        for ewh in self._keyed.get(pod.scheduler_name, ()):
            pod_keys = ewh.pod_keys
            if pod_keys is None:
                continue
            try:
                entries.update((pod_keys, key) for key in pod_keys(pod))
            except Exception:
                log.exception("pod keys failed for pod %s; every keyed event will ask it", pod.key)
                entries.add((pod_keys, _ANY_KEY))
        return group, tuple(entries)

    def _move_pods(self, pods: list[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any) -> None:
        if not self._is_event_of_interest(event):
            return
        activated = False
        wildcard = event.is_wildcard
        for qpi in pods:
            if qpi.gated and not wildcard and not any(event_matches(event, e) for e in qpi.gating_plugin_events):
                continue  # only an event its gating plugin registered (or a flush) can un-gate it
            strategy = self._worth_requeuing(qpi, event, old, new)
            if strategy is Strategy.SKIP:
                continue
            self._unschedulable.delete(qpi.pod.key)
            if self._requeue(qpi, strategy, event.label) in (ACTIVE, BACKOFF):
                activated = True
        self._active.add_event_if_any_in_flight(event, old, new)
        if activated:
            self._wake()

    def _is_event_of_interest(self, event: ClusterEvent) -> bool:
        """Some plugin registered the event. The registrations are fixed, so each answer is remembered
        (every pod watch event asks)."""
        known = self._interest.get(event)
        if known is None:
            known = event.is_wildcard or any(
                event_matches(event, ewh.event) for regs in self._hints.values() for _, ewh in regs)
            self._interest[event] = known
        return known

    def _worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> Strategy:
        """Consult only the hints of the plugins that rejected the pod (upstream isPodWorthRequeuing)."""
        rejectors = qpi.rejector_plugins
        if not rejectors:
            return Strategy.AFTER_BACKOFF
        if event.is_wildcard:
            # A wildcard event carrying a pod (ForceActivate) is meant for that pod only.
            if new is not None and (not isinstance(new, Pod) or new.uid != qpi.pod.uid):
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        regs = self._hints.get(qpi.pod.scheduler_name)
        if regs is None:
            log.error("no queueing hints registered for profile %r", qpi.pod.scheduler_name)
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for plugin, ewh in regs:
            if plugin not in rejectors or not event_matches(event, ewh.event):
                continue
            if self._call_hint(plugin, ewh, qpi.pod, event, old, new) is QueueingHint.QUEUE_SKIP:
                continue
            if plugin in qpi.pending_plugins:
                return Strategy.IMMEDIATELY
            strategy = Strategy.AFTER_BACKOFF
            if not qpi.pending_plugins:
                return strategy
        return strategy

    def _call_hint(
        self, plugin: str, ewh: ClusterEventWithHint, pod: Pod, event: ClusterEvent, old: Any, new: Any
    ) -> QueueingHint:
        """No hint fn, or a hint that raised: Queue (never leave a pod stuck)."""
        if ewh.hint is None:
            return QueueingHint.QUEUE
        start = time.perf_counter()
        try:
            hint = ewh.hint(pod, old, new)
        except Exception:
            log.exception("queueing hint of %s failed for pod %s on %s", plugin, pod.key, event.label)
            self._observe_hint(plugin, event, "Error", start)
            return QueueingHint.QUEUE
        hint = QueueingHint.QUEUE_SKIP if hint is QueueingHint.QUEUE_SKIP else QueueingHint.QUEUE
        self._observe_hint(plugin, event, "QueueSkip" if hint is QueueingHint.QUEUE_SKIP else "Queue", start)
        return hint

    def _observe_hint(self, plugin: str, event: ClusterEvent, hint: str, start: float) -> None:
        if self._hint_metrics is not None:
            self._hint_metrics(plugin, event.label, hint, time.perf_counter() - start)

    def _requeue(self, qpi: QueuedPodInfo, strategy: Strategy, event: str) -> str:
        """Put the pod where the strategy says; returns the queue it ended up in."""
        self._strategy_queue = _STRATEGY_QUEUE[strategy]
        try:
            return self._requeue_by(qpi, strategy, event)
        finally:
            self._strategy_queue = None

    def _requeue_by(self, qpi: QueuedPodInfo, strategy: Strategy, event: str) -> str:
        if strategy is Strategy.SKIP:
            self._unschedulable.add_or_update(qpi, event)
            return UNSCHEDULABLE
        if strategy is Strategy.AFTER_BACKOFF and self._backoff.is_pod_backing_off(qpi):
            return BACKOFF if self._move_to_backoff(qpi, event) else UNSCHEDULABLE
        return ACTIVE if self._move_to_active(qpi, event) else UNSCHEDULABLE

    def _move_to_active(self, qpi: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool:
        """activeQ unless PreEnqueue gates it (then unschedulablePods). PreEnqueue already ran for
        pods coming straight from backoffQ, since they were checked on entry there."""
        if not from_backoff:
            self._run_pre_enqueue(qpi)
        k = qpi.pod.key
        if qpi.gating_plugin is not None:  # qpi.gated, without the property's call
            qpi.was_flushed_from_unschedulable = False  # a gated pod makes no attempt to count
            if k in self._unschedulable:
                self._unschedulable.refresh(k)  # PreEnqueue may have named another gate
                return False
            if k in self._active or k in self._backoff:
                return False
            self._unschedulable.add_or_update(qpi, event)
            return False
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock()
        if k in self._unschedulable_keys:
            self._unschedulable.delete(k)
        self._backoff.delete(k)
        self._active.add_or_update(qpi, k)
        self._record(ACTIVE, event)
        if event in _NOMINATING:
            self.nominator.add_nominated_pod(qpi.pod)
        return True

    def _move_to_backoff(self, qpi: QueuedPodInfo, event: str) -> bool:
        """backoffQ (error heap if no plugin rejected it) unless PreEnqueue now gates it."""
        self._run_pre_enqueue(qpi)
        k = qpi.pod.key
        if qpi.gated:
            qpi.was_flushed_from_unschedulable = False
            if k in self._unschedulable:
                self._unschedulable.refresh(k)  # PreEnqueue may have named another gate
            else:
                self._unschedulable.add_or_update(qpi, event)
            return False
        self._unschedulable.delete(k)
        self._backoff.add(qpi)
        self._record(BACKOFF, event)
        return True

    def _run_pre_enqueue(self, qpi: QueuedPodInfo) -> None:
        """Run the profile's PreEnqueue plugins, the previous gating plugin first; record a new gate.
        Timed as the PreEnqueue extension point (scheduler_framework_extension_point_duration_seconds)."""
        start = time.perf_counter()
        status = self._pre_enqueue_loop(qpi)
        if self._pre_enqueue_metrics is not None:
            self._pre_enqueue_metrics(qpi.pod.scheduler_name, SUCCESS_NAME if status is None else code_name(status),
                                      time.perf_counter() - start)

    def _pre_enqueue_loop(self, qpi: QueuedPodInfo) -> Status | None:
        """The plugins called inline, each in its own try (free when nothing raises), rather than through a helper
        call per plugin, a default list and code_name: this runs for every added pod."""
        pod = qpi.pod
        plugins: Sequence[PreEnqueuePlugin] = self._pre_enqueue.get(pod.scheduler_name, ())
        if qpi.gating_plugin is not None:
            plugins = sorted(plugins, key=lambda p: p.name != qpi.gating_plugin)
        for plugin in plugins:
            try:
                status = plugin.pre_enqueue(pod)
            except Exception as exc:  # an Error status gates the pod, as upstream
                log.exception("PreEnqueue plugin %s failed for pod %s", plugin.name, pod.key)
                status = error(exc)
            if status is not None and not success(status):
                qpi.unschedulable_plugins = {*qpi.unschedulable_plugins, plugin.name}  # a new set: see QueuedPodInfo
                qpi.gating_plugin = plugin.name
                qpi.gating_message = status.message
                qpi.gating_plugin_events = list(self._plugin_events.get(plugin.name, []))
                return status
        if qpi.gating_plugin is not None:  # a new pod was never gated: nothing to clear, no list to allocate
            qpi.gating_plugin = None
            qpi.gating_plugin_events = ()
            qpi.gating_message = ""
        return None

    # ------------------------------------------------------------------------------ backoff

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        """Window-aligned time the pod's backoff ends (-inf: no backoff)."""
        with self._lock:
            return self._backoff.backoff_expiry(qpi)

    def _index_profiles(self, profiles: Mapping[str, QueueProfile]) -> None:
        pre_enqueue: dict[str, list[PreEnqueuePlugin]] = {}
        hints: dict[str, list[tuple[str, ClusterEventWithHint]]] = {}
        plugin_events: dict[str, list[ClusterEvent]] = {}
        keyed: dict[str, list[ClusterEventWithHint]] = {}
        for name, profile in profiles.items():
            pre_enqueue[name] = list(profile.pre_enqueue_plugins)
            regs = [(plugin, ewh) for plugin, evs in profile.hints.items() for ewh in evs]
            hints[name] = regs
            keyed[name] = [ewh for _, ewh in regs if ewh.pod_keys is not None and ewh.event_keys is not None]
            for plugin, ewh in regs:
                plugin_events.setdefault(plugin, []).append(ewh.event)
        self._pre_enqueue, self._hints, self._plugin_events = pre_enqueue, hints, plugin_events
        self._keyed = keyed
        self._plans.clear()

    def set_profiles(self, profiles: Mapping[str, QueueProfile], pod_initial_backoff: float,
                     pod_max_backoff: float) -> None:
        """A reloaded configuration: new PreEnqueue plugins, queueing hints and backoff bounds apply to
        the pods queued from now on and to the events that move queued pods."""
        with self._lock:
            self._index_profiles(profiles)
            self._unschedulable.set_classify(self._classify)  # the pods' keys under the new plugins
            self._backoff.set_bounds(pod_initial_backoff, pod_max_backoff)
