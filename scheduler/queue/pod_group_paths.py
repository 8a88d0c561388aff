"""The PriorityQueue's pod-group paths (upstream pkg/scheduler/backend/queue/scheduling_queue.go with GenericWorkload
on: addPodGroupMember, addToPodGroupIfExists, addUnschedulablePodGroupMember, AddAttemptedPodGroupIfNeeded,
deletePodGroupMember, AddPodGroup / UpdatePodGroup / DeletePodGroup, Activate of a member), mixed into
PriorityQueue. Every method here runs with the queue's lock held unless its docstring says it takes it; pods of no
pod group never get here.

Lifecycle of a member, as upstream's invariants: incomplete while its PodGroup is not observed; otherwise in its queued
group entity, or pending while that group is in flight (popped), until the cycle ends
(``add_attempted_pod_group_if_needed``) and the group is requeued with them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scheduler.framework.events import (
    BACKOFF_COMPLETE,
    FORCE_ACTIVATE_LABEL,
    SCHEDULE_ATTEMPT_FAILURE,
    UNSCHEDULED_POD_ADD,
    event_matches,
)
from scheduler.framework.interface import PreEnqueuePlugin
from scheduler.framework.status import CODE_SUCCESS, Status
from scheduler.framework.types import ASSIGNED_POD_ADD, UNSCHEDULABLE_TIMEOUT, ClusterEvent
from scheduler.model.pod import Pod
from scheduler.model.workload import PodGroup
from scheduler.queue.active_queue import ActiveQueue
from scheduler.queue.backoff_queue import BackoffQueue, align_to_window
from scheduler.queue.pod_group_queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    GroupKey,
    PodGroupQueue,
    QueuedPodGroupInfo,
    group_key_of,
)
from scheduler.queue.queued_pod_info import QueuedPodInfo
from scheduler.queue.queueing_strategy import STRATEGY_QUEUE, Strategy

if TYPE_CHECKING:
    from scheduler.queue.nominator import Nominator


_POD_ADD = UNSCHEDULED_POD_ADD.label
UNSCHEDULABLE_LABEL = "unschedulable"  # where upstream's incoming metrics file a gated entity
# The strategy a group's old place stands for (upstream deleteFromAnyQueue's answer).
_STATE_STRATEGY = {ACTIVE: Strategy.IMMEDIATELY, BACKOFF: Strategy.AFTER_BACKOFF, GATED: Strategy.SKIP}


def _as_entity(g: QueuedPodGroupInfo) -> QueuedPodInfo:
    """A group as the QueueSort plugin's less sees an entity: its first member, the group's queue timestamp."""
    return QueuedPodInfo(g.members[0].pod, g.timestamp)


class PodGroupPaths:
    """PriorityQueue's pod-group methods (see the module)."""

    # (queue, event label, members, whether the podgroup entity row counts it): set by the Scheduler.
    group_metrics: Callable[[str, str, int, bool], None] | None = None

    if TYPE_CHECKING:  # PriorityQueue's
        generic_workload: bool
        nominator: Nominator
        _lock: threading.Lock
        _groups: PodGroupQueue
        _active: ActiveQueue
        _backoff: BackoffQueue
        _clock: Callable[[], float]
        _max_in_unschedulable: float
        _cycle: int
        _less: Callable[[QueuedPodInfo, QueuedPodInfo], bool]
        _ranked: bool
        _pre_enqueue: dict[str, list[PreEnqueuePlugin]]

        def _wake(self) -> None: ...
        def _pre_enqueue_loop(self, qpi: QueuedPodInfo) -> Status | None: ...
        def _new_qpi(self, pod: Pod) -> QueuedPodInfo: ...
        def _worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> Strategy: ...

    def is_pod_group_member(self, pod: Pod) -> bool:
        """isPodGroupMember: GenericWorkload on and the pod names a group."""
        return self.generic_workload and bool(pod.pod_group_name)

    # ----- members

    def _add_group_member(self, qpi: QueuedPodInfo) -> None:
        """addPodGroupMember."""
        groups = self._groups
        key = group_key_of(qpi.pod)
        self.nominator.add_nominated_pod(qpi.pod)
        if key not in groups.forest:
            groups.pool_add(groups.incomplete, qpi)
            return
        entity, state = groups.take(key)
        if entity is not None:
            entity.add_pod(qpi)
            if state == GATED:  # queueSkip: it stays gated; the UnscheduledPodAdd event that follows asks the hints
                groups.put(entity, GATED)
            else:
                self._requeue_group(entity, state, _POD_ADD)
            return
        if groups.in_flight == key:
            groups.pool_add(groups.pending, qpi)
            return
        self._group_to_active(groups.new_group(key, qpi), _POD_ADD, None)

    def _requeue_group(self, entity: QueuedPodGroupInfo, state: str | None, event: str) -> None:
        """requeueEntityWithQueueingStrategy for a group taken from where it waited: activeQ again, backoffQ while
        it backs off; a gated one (the leftover flush) runs PreEnqueue again."""
        strategy = _STATE_STRATEGY.get(state or "", Strategy.SKIP)
        if state == BACKOFF and self._group_backing_off(entity):
            self._group_to(entity, BACKOFF, event, strategy)
        else:
            self._group_to_active(entity, event, strategy)

    def _group_to_active(self, entity: QueuedPodGroupInfo, event: str, strategy: Strategy | None) -> None:
        self._group_to(entity, ACTIVE, event, strategy)
        if self._groups.where.get(entity.key) == ACTIVE:
            self._wake()

    def _group_to(self, entity: QueuedPodGroupInfo, state: str, event: str, strategy: Strategy | None) -> None:
        """moveToActiveQ / moveToBackoffQ of a group: every member's PreEnqueue runs; one gated member gates the
        group (upstream's runPreEnqueuePlugins for an entity). ``event`` and ``strategy`` (where the group was,
        None for a new arrival) label the incoming metrics, as upstream's recordIncomingEntitiesMetrics."""
        gated: QueuedPodInfo | None = None
        for m in entity.members:
            self._pre_enqueue_loop(m)
            if m.gating_plugin is not None:
                gated = m
        if gated is not None:
            entity.gating_plugin, entity.gating_message = gated.gating_plugin, gated.gating_message
            self._groups.put(entity, GATED)
            self._record_group(UNSCHEDULABLE_LABEL, event, strategy, len(entity.members))
            return
        entity.gating_plugin, entity.gating_message = None, ""
        if state == ACTIVE and entity.initial_attempt_timestamp is None:
            entity.initial_attempt_timestamp = self._clock()
        self._groups.put(entity, state)
        self._record_group(state, event, strategy, len(entity.members))

    def _record_group(self, queue: str, event: str, strategy: Strategy | None, size: int) -> None:
        """scheduler_queue_incoming_pods_total counts every member; the podgroup row of
        scheduler_queue_incoming_entities_total the group, unless its strategy named that queue already."""
        if self.group_metrics is not None:
            self.group_metrics(queue, event, size, strategy is None or STRATEGY_QUEUE[strategy] != queue)

    def _group_backing_off(self, entity: QueuedPodGroupInfo) -> bool:
        expiry = self._groups.backoff_expiry(entity, self._backoff.initial, self._backoff.maximum)
        return expiry >= align_to_window(self._clock())

    def _update_group_member(self, old: Pod | None, new: Pod, events: Sequence[ClusterEvent]) -> None:
        """Update for a member: updated where it waits, else added. A gated group's members' rejectors' hints
        judge each of the update's (TargetPod) events until one moves the group, as upstream's Update does for
        an entity in unschedulableEntities."""
        groups = self._groups
        if groups.pool_update(groups.incomplete, new) or groups.pool_update(groups.pending, new):
            return
        entity = groups.queued.get(group_key_of(new))
        if entity is not None and entity.update_pod(new):
            if groups.where.get(entity.key) == GATED:
                for event in events:
                    strategy = self._entity_worth_requeuing(entity, event, old, new)
                    if strategy is not Strategy.SKIP:
                        self._requeue_gated(entity, strategy, event.label)
                        break
            return
        if self._active.is_in_flight(new.uid):
            return
        self._add_group_member(self._new_qpi(new))

    def _delete_group_member(self, pod: Pod) -> None:
        """deletePodGroupMember."""
        groups = self._groups
        self.nominator.delete_nominated_pod_if_exists(pod)
        if groups.pool_delete(groups.incomplete, pod) is not None or groups.pool_delete(groups.pending, pod):
            return
        key = group_key_of(pod)
        entity = groups.queued.get(key)
        if entity is None or entity.remove_pod(pod) is None:
            return
        if not entity.members:
            groups.take(key)

    def pod_group_member_assigned(self, pod: Pod) -> None:
        """A member was seen bound (takes the lock): its gang, if gated, runs PreEnqueue again."""
        with self._lock:
            key = group_key_of(pod)
            if self._groups.where.get(key) == GATED:
                self._retry_gated(key, ASSIGNED_POD_ADD.label)

    def _wake_gated_groups(self, event: ClusterEvent, old: Any, new: Any) -> None:
        """moveEntitiesToActiveOrBackoffQueue for gated groups: only an event the gating plugin registered (or a
        wildcard) is looked at; then the members' rejectors' hints decide (isEntityWorthRequeuing: the best
        strategy of any member), and PreEnqueue runs again as the group moves."""
        groups = self._groups
        for key in list(groups.gated):
            entity = groups.queued[key]
            if not event.is_wildcard:
                gating = next((m for m in entity.members if m.gating_plugin is not None), None)
                events = gating.gating_plugin_events if gating is not None else ()
                if not any(event_matches(event, e) for e in events):
                    continue
            strategy = self._entity_worth_requeuing(entity, event, old, new)
            if strategy is not Strategy.SKIP:
                self._requeue_gated(entity, strategy, event.label)

    def _entity_worth_requeuing(self, entity: QueuedPodGroupInfo, event: ClusterEvent, old: Any,
                                new: Any) -> Strategy:
        """isEntityWorthRequeuing: the strongest strategy any member's rejectors' hints give."""
        best = Strategy.SKIP
        for m in entity.members:
            s = self._worth_requeuing(m, event, old, new)
            if s.value > best.value:
                best = s
                if s is Strategy.IMMEDIATELY:
                    break
        return best

    def _requeue_gated(self, entity: QueuedPodGroupInfo, strategy: Strategy, event: str) -> None:
        """requeueEntityWithQueueingStrategy for a gated group a hint moved (PreEnqueue runs again)."""
        self._groups.take(entity.key)
        if strategy is Strategy.AFTER_BACKOFF and self._group_backing_off(entity):
            self._group_to(entity, BACKOFF, event, strategy)
        else:
            self._group_to_active(entity, event, strategy)

    def _retry_gated(self, key: GroupKey, event: str) -> None:
        entity, state = self._groups.take(key)
        if entity is not None:
            self._requeue_group(entity, state, event)

    def _activate_group_of(self, pod: Pod) -> bool:
        """Activate of a member: the whole group goes to activeQ (from backoff or gated)."""
        entity, state = self._groups.take(group_key_of(pod))
        if entity is None:
            return False
        if state == ACTIVE:
            self._groups.put(entity, ACTIVE)
            return False
        self._group_to(entity, ACTIVE, FORCE_ACTIVATE_LABEL, None)
        return self._groups.where.get(entity.key) == ACTIVE

    def _unschedulable_group_member(self, qpi: QueuedPodInfo) -> None:
        """addUnschedulablePodGroupMember: counts as for a pod, then back to its group (pending while in flight)."""
        qpi.was_flushed_from_unschedulable = False
        if qpi.rejector_plugins:
            qpi.unschedulable_count += 1
            qpi.consecutive_errors_count = 0
        else:
            qpi.consecutive_errors_count += 1
        qpi.timestamp = self._clock()
        qpi.backoff_expiration = None
        self._active.done(qpi.pod.uid)
        self._add_group_member(qpi)

    # ----- pop

    def _pop_group_if_first(self) -> QueuedPodGroupInfo | None:
        """The best active group, when the profile's QueueSort puts it before activeQ's head pod (taken from the
        queue). Upstream keeps pods and groups in one heap by the plugin's Less over entities (a group's priority
        and timestamp); here a group is compared as its first member with the group's timestamp. With a ranked
        QueueSort (PrioritySort) the groups keep their own heap in that order; without, the best is searched."""
        groups = self._groups
        best = groups.best_active() if self._ranked else groups.best_active_by(self._less_entity)
        if best is None:
            return None
        head = self._active.peek()
        if head is not None and not self._less(_as_entity(best), head):
            return None
        groups.take(best.key)
        return best

    def _less_entity(self, a: QueuedPodGroupInfo, b: QueuedPodGroupInfo) -> bool:
        return self._less(_as_entity(a), _as_entity(b))

    def _popped_group(self, entity: QueuedPodGroupInfo) -> None:
        entity.inc_attempts()
        self._cycle += 1
        if entity.initial_attempt_timestamp is None:
            entity.initial_attempt_timestamp = self._clock()
        for m in entity.members:
            if m.initial_attempt_timestamp is None:
                m.initial_attempt_timestamp = entity.initial_attempt_timestamp
            self._active.popped(m.pod)
        self._groups.in_flight = entity.key

    # ----- the end of a group's attempt

    def add_attempted_pod_group_if_needed(self, entity: QueuedPodGroupInfo, status: Status | None) -> str | None:
        """AddAttemptedPodGroupIfNeeded (takes the lock): the members that came back (pending) form the group again,
        requeued at once after a success (timestamp kept when some member failed, so its preemption comes next),
        else to backoffQ while it backs off. Returns an error message for a group still queued (a bug)."""
        with self._lock:
            groups = self._groups
            key = entity.key
            if key in groups.queued:
                return f"pod group {key[0]}/{key[1]} is already present in the {groups.where[key]} queue"
            if groups.in_flight == key:
                groups.in_flight = None
            pending = groups.pool_clear(groups.pending, key)
            if not pending:
                return None
            attempted = {m.pod.uid for m in entity.members}
            had_failures = any(p.pod.uid in attempted for p in pending)
            if key not in groups.forest:
                for p in pending:
                    groups.pool_add(groups.incomplete, p)
                return None
            again = groups.new_group(key)
            for p in pending:
                again.add_pod(p)
            for f in ("timestamp", "attempts", "initial_attempt_timestamp", "unschedulable_plugins",
                      "pending_plugins", "unschedulable_count", "consecutive_errors_count"):
                setattr(again, f, getattr(entity, f))
            code = CODE_SUCCESS if status is None else status.code
            without_backoff = False
            if code == CODE_SUCCESS:
                without_backoff = True
                again.consecutive_errors_count = again.unschedulable_count = 0
            elif status is not None and status.is_rejected():
                again.unschedulable_count += 1
                again.consecutive_errors_count = 0
            else:
                again.consecutive_errors_count += 1
            again.backoff_expiration = None
            if not (code == CODE_SUCCESS and had_failures):
                again.timestamp = self._clock()
            if not without_backoff and self._group_backing_off(again):
                self._group_to(again, BACKOFF, SCHEDULE_ATTEMPT_FAILURE, None)
            else:
                self._group_to_active(again, SCHEDULE_ATTEMPT_FAILURE, None)
            return None

    # ----- PodGroup objects (the workload forest)

    def add_pod_group(self, pod_group: PodGroup) -> None:
        """AddPodGroup (takes the lock): the incomplete members join the queue."""
        with self._lock:
            key = (pod_group.namespace, pod_group.name)
            self._groups.forest[key] = pod_group
            entity = self._groups.queued.get(key)
            if entity is not None:
                entity.info.pod_group = pod_group
            for qpi in self._groups.pool_clear(self._groups.incomplete, key):
                self._add_group_member(qpi)

    def update_pod_group(self, pod_group: PodGroup) -> None:
        """UpdatePodGroup (takes the lock). A gated group stays gated: the handler's PodGroupUpdate event asks the
        hints (GangScheduling's: a lower minCount)."""
        with self._lock:
            key = (pod_group.namespace, pod_group.name)
            if key not in self._groups.forest:
                self._groups.forest[key] = pod_group
                for qpi in self._groups.pool_clear(self._groups.incomplete, key):
                    self._add_group_member(qpi)
                return
            self._groups.forest[key] = pod_group
            entity = self._groups.queued.get(key)
            if entity is not None:
                entity.info.pod_group = pod_group

    def delete_pod_group(self, namespace: str, name: str) -> None:
        """DeletePodGroup (takes the lock): queued and pending members go back to incomplete."""
        with self._lock:
            groups = self._groups
            key = (namespace, name)
            groups.forest.pop(key, None)
            for qpi in groups.pool_clear(groups.pending, key):
                groups.pool_add(groups.incomplete, qpi)
            entity, _ = groups.take(key)
            if entity is not None:
                for qpi in entity.members:
                    groups.pool_add(groups.incomplete, qpi)

    # ----- backoff flush, and what the metrics read

    def _flush_group_backoff(self) -> bool:
        moved = False
        for entity in self._groups.backoff_completed(self._backoff.initial, self._backoff.maximum):
            self._groups.take(entity.key)
            self._group_to(entity, ACTIVE, BACKOFF_COMPLETE, None)
            moved = moved or self._groups.where.get(entity.key) == ACTIVE
        return moved

    def _flush_gated_groups(self, now: float) -> None:
        """flushUnschedulableEntitiesLeftover for the gated groups: one gated for longer than
        podMaxInUnschedulablePodsDuration since it was queued, last attempted or last flushed is retried."""
        groups = self._groups
        for key in list(groups.gated):
            g = groups.queued[key]
            if now - max(g.timestamp, g.flush_timestamp or 0.0) > self._max_in_unschedulable:
                g.flush_timestamp = now  # gated again, it waits another full period
                self._retry_gated(key, UNSCHEDULABLE_TIMEOUT.label)

    def pod_group_member_counts(self) -> tuple[int, int]:
        """incompletePodGroupPods and pendingPodGroupPods sizes (takes the lock)."""
        with self._lock:
            return self._groups.member_counts()

    def pod_group_members_by_state(self) -> Mapping[str, int]:
        """The members of the queued groups per state (takes the lock): upstream counts an entity's pods in
        scheduler_pending_pods of the queue holding it."""
        with self._lock:
            return self._groups.member_counts_by_state()

    def pod_group_entities(self) -> Mapping[str, int]:
        """Queued pod groups per state (scheduler_queued_entities' podgroup rows; takes the lock)."""
        with self._lock:
            return {state: self._groups.count(state) for state in (ACTIVE, BACKOFF, GATED)}

    def pod_group_members(self) -> Sequence[Pod]:
        """Every member waiting in the pod-group structures (takes the lock)."""
        with self._lock:
            g = self._groups
            out = [m.pod for m in g.members()]
            for pool in (g.incomplete, g.pending):
                out.extend(q.pod for pods in pool.values() for q in pods.values())
            return out
