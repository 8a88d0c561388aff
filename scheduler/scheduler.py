"""The scheduler: routes cluster events into the cache and queue, and runs the scheduling loop.

One scheduling thread pops pods and runs the scheduling cycle (snapshot, filter, score, assume,
reserve, permit); the binding cycle (wait on permit, pre-bind, bind, post-bind) runs on a bounded
pool of binding workers so the next pod is scheduled while earlier ones are being bound. The same
class serves `simulate` with an in-memory binder and synchronous binding.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import structlog

from scheduler.cache.cache import Cache, SnapshotInconsistentError
from scheduler.cache.objects import ObjectStore
from scheduler.cache.snapshot import Snapshot
from scheduler.config.types import SchedulerConfiguration
from scheduler.framework.events import node_scheduling_properties_change, pod_scheduling_properties_change
from scheduler.framework.fit_error import FitError, FrameworkError, NoNodesAvailableError
from scheduler.framework.interface import CycleObserver, CycleState, NodeToStatus
from scheduler.framework.preemption import DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status, unresolvable
from scheduler.framework.status import error as error_status
from scheduler.framework.types import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    ActionType,
    ClusterEvent,
    EventResource,
)
from scheduler.kube.recorder import EventSink, pod_condition
from scheduler.metrics import Metrics
from scheduler.model.node import node_from_api
from scheduler.model.pod import Pod, pod_from_api
from scheduler.queue.queued_pod_info import QueuedPodInfo
from scheduler.queue.scheduling_queue import PriorityQueue, QueueProfile
from scheduler.schedule_one import SchedulingAlgorithm, handle_schedule_error

log = structlog.get_logger(__name__)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


class Binder(Protocol):
    """Posts a Binding; raises on failure (the scheduler maps exceptions to a Status)."""

    def bind(self, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PodWriter(Protocol):
    """The API writes preemption makes (ApiWriter); they raise on failure (``status`` 404: gone)."""

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None: ...
    def delete_pod(self, namespace: str, name: str) -> None: ...


@dataclass(slots=True)
class Outcome:
    """What happened to one pod in one attempt (used by simulate and tests)."""

    pod: Pod
    node: str | None
    message: str
    statuses: NodeToStatus | None = None


class _Handle:
    """The framework handle of one profile: plugins reach the cluster only through this."""

    def __init__(self, sched: Scheduler) -> None:
        self._s = sched

    def snapshot(self) -> Snapshot:
        return self._s.snapshot

    def objects(self) -> ObjectStore:
        return self._s.objects

    def nominated_pods_for(self, node_name: str) -> list[Pod]:
        return list(self._s.queue.nominator.nominated_pods_for_node(node_name))

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return self._s.bind_via_binder(pod, node_name)

    def parallelism(self) -> int:
        return self._s.config.parallelism

    # preemption (PreemptionHandle)

    def rng(self) -> random.Random:
        return self._s.rng

    def latest_pod(self, pod: Pod) -> Pod | None:
        return self._s._pending.get(pod.uid)

    def preempt(self, victim: Pod, preemptor: Pod, node_name: str, plugin: str) -> Status | None:
        return self._s.preempt_victim(victim, preemptor, node_name, plugin)

    def clear_nominated_node(self, pod: Pod) -> Status | None:
        return self._s.clear_nominated_node(pod)

    # volume binding (VolumeBinding's PreBind)

    def update_object(self, kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """PUT a PersistentVolume or PersistentVolumeClaim and return the stored object. Without an API
        writer (simulate) the write, and what the PV controller or a provisioner would do next, are
        applied to the object store as their watch events would be."""
        writer = getattr(self._s.binder, "writer", None)
        if writer is not None:
            result: Mapping[str, Any] = writer.update_object(kind, obj)
            return result
        from scheduler.plugins.volume_util import apply_offline_update

        written = apply_offline_update(self._s.objects, kind, obj)
        for k, o in written:
            self._s.on_object_event(k, MODIFIED, o)
        return written[0][1]

    def pod_exists(self, pod: Pod) -> bool:
        """The pod has not been deleted (as far as the watch told)."""
        return pod.uid in self._s._pod_seen


class Scheduler:
    def __init__(
        self,
        config: SchedulerConfiguration,
        registry: Any,
        binder: Binder,
        sink: EventSink,
        metrics: Metrics | None = None,
        *,
        bind_workers: int = 16,
        synchronous_binding: bool = False,
        rng: random.Random | None = None,
        tie_break: Literal["random", "name"] = "random",
        clock: Callable[[], float] = time.monotonic,
        pod_writer: PodWriter | None = None,
        observer: CycleObserver | None = None,
    ) -> None:
        self.config = config
        self.binder = binder
        # Preemption's API writes: given, or the API binder's writer. Without one (simulate, tests)
        # a preempted victim is removed at once, as its deletion event would remove it.
        writer = pod_writer if pod_writer is not None else getattr(binder, "writer", None)
        self.pod_writer: PodWriter | None = writer if isinstance(writer, PodWriter) else None
        self.rng = rng if rng is not None else random.Random()
        # (victim key, preemptor key, node) of every preemption, in order (read by simulate).
        self.preemptions: list[tuple[str, str, str]] = []
        self.sink = sink
        self.metrics = metrics
        self.clock = clock
        self.cache = Cache(ttl=config.assumed_pod_ttl_seconds, clock=clock)
        self.objects = ObjectStore()
        self.snapshot = Snapshot()
        self.handle = _Handle(self)
        self.frameworks: dict[str, Framework] = {}
        for p in config.profiles:
            hook = self._metrics_hook(p.scheduler_name)
            self.frameworks[p.scheduler_name] = Framework(p, registry, self.handle, metrics=hook, observer=observer)
        self.observer = observer
        first = next(iter(self.frameworks.values()))
        self.queue = PriorityQueue(
            less=first.queue_sort_less,
            profiles={
                name: QueueProfile(pre_enqueue_plugins=f.pre_enqueue_plugins(), hints=f.events_to_register())
                for name, f in self.frameworks.items()
            },
            pod_initial_backoff=config.pod_initial_backoff_seconds,
            pod_max_backoff=config.pod_max_backoff_seconds,
            pod_max_in_unschedulable=config.pod_max_in_unschedulable_pods_seconds,
            clock=clock,
        )
        self.algorithm = SchedulingAlgorithm(
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
            rng=self.rng,
            tie_break=tie_break,
        )
        # Unassigned pods this scheduler is responsible for, as last seen (the podLister re-read on failure).
        self._pending: dict[str, Pod] = {}
        self._synchronous = synchronous_binding
        self._bind_pool = None if synchronous_binding else ThreadPoolExecutor(bind_workers, "binding")
        self._bind_slots = threading.BoundedSemaphore(bind_workers * 4)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.outcomes: list[Outcome] | None = None  # set to a list to record outcomes (simulate)
        # When each pod (by uid) and node (by name) was last heard of, for the periodic resync.
        self._pod_seen: dict[str, tuple[float, Mapping[str, Any]]] = {}
        self._node_seen: dict[str, tuple[float, Mapping[str, Any]]] = {}

    def record_outcomes(self) -> None:
        """Keep every attempt's decision and filter verdicts (simulate, explain; scores: the observer)."""
        self.outcomes = []

    def _metrics_hook(self, profile: str) -> Callable[[str, str, float], None] | None:
        m = self.metrics
        if m is None:
            return None
        return lambda point, status, seconds: m.observe_extension_point(profile, point, status, seconds)

    # ----- cluster events (called from the watch side) -----

    def responsible_for(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.frameworks

    def on_pod_event(self, type_: str, obj: Mapping[str, Any]) -> None:
        """Route a pod watch event as upstream's eventhandlers.go: assigned pods go to the cache,
        unassigned pods of our profiles to the queue."""
        pod = pod_from_api(obj)
        if type_ == DELETED:
            self._pod_seen.pop(pod.uid, None)
            self._pod_deleted(pod)
            return
        self._pod_seen[pod.uid] = (self.clock(), obj)
        old_assigned = self.cache.get_pod(pod.uid)
        if pod.node_name:
            if pod.uid in self._pending:
                # Bound (by us or someone else): it leaves the queue.
                del self._pending[pod.uid]
                self.queue.delete(pod)
            if old_assigned is None:
                self.cache.add_pod(pod)
                self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, None, pod)
            else:
                self.cache.update_pod(old_assigned, pod)
                for ev in pod_scheduling_properties_change(old_assigned, pod):
                    self.queue.move_all_to_active_or_backoff(ev, old_assigned, pod)
            return
        if not self.responsible_for(pod):
            return
        if self.cache.is_assumed(pod.uid):
            return  # our own bind is in flight; this is a stale view of the pod
        old = self._pending.get(pod.uid)
        self._pending[pod.uid] = pod
        if old is None:
            self.queue.add(pod)
        else:
            self.queue.update(old, pod)

    def _pod_deleted(self, pod: Pod) -> None:
        old = self._pending.pop(pod.uid, None)
        if old is not None:
            self.queue.delete(old)
            for fwk in self.frameworks.values():
                fwk.reject_waiting_pod(pod.uid)
        cached = self.cache.get_pod(pod.uid)
        if cached is not None and not self.cache.is_assumed(pod.uid):
            self.cache.remove_pod(cached)
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, cached, None)

    def on_node_event(self, type_: str, obj: Mapping[str, Any]) -> None:
        node = node_from_api(obj)
        old = self.cache.get_node(node.name)
        if type_ == DELETED:
            self._node_seen.pop(node.name, None)
            if old is not None:
                self.cache.remove_node(node.name)
                self.queue.move_all_to_active_or_backoff(NODE_DELETE, old, None)
            return
        self._node_seen[node.name] = (self.clock(), obj)
        if old is None:
            self.cache.add_node(node)
            self.queue.move_all_to_active_or_backoff(NODE_ADD, None, node)
            return
        if old.resource_version and old.resource_version == node.resource_version:
            return
        self.cache.update_node(old, node)
        for ev in node_scheduling_properties_change(old, node):
            self.queue.move_all_to_active_or_backoff(ev, old, node)

    def on_object_event(self, kind: str, type_: str, obj: Mapping[str, Any]) -> None:
        """Services, ReplicaSets, PVCs, Namespaces, ...: stored for plugins; may wake pods."""
        if type_ == DELETED:
            old = self.objects.delete(kind, obj)
            action = ActionType.DELETE
        else:
            old = self.objects.upsert(kind, obj)
            action = ActionType.ADD if old is None else ActionType.UPDATE_OTHER
        try:
            resource = EventResource(kind)
        except ValueError:
            return
        self.queue.move_all_to_active_or_backoff(ClusterEvent(resource, action, f"{kind}{action.name}"), old, obj)

    def event_clock(self) -> float:
        return self.clock()

    def known_pods_not_in(self, uids: set[str], before: float) -> list[tuple[str, Mapping[str, Any]]]:
        """Pods heard of before `before` that a fresh LIST no longer returns (missed deletions)."""
        return [(u, o) for u, (t, o) in list(self._pod_seen.items()) if u not in uids and t < before]

    def known_nodes_not_in(self, names: set[str], before: float) -> list[tuple[str, Mapping[str, Any]]]:
        return [(n, o) for n, (t, o) in list(self._node_seen.items()) if n not in names and t < before]

    # ----- the scheduling loop -----

    def start(self) -> None:
        self.queue.run()
        self._thread = threading.Thread(target=self._loop, name="scheduling", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.queue.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._bind_pool is not None:
            self._bind_pool.shutdown(wait=True, cancel_futures=False)

    def _loop(self) -> None:
        last_housekeeping = 0.0
        while not self._stop.is_set():
            try:
                self.schedule_one(timeout=0.5)
            except Exception:  # the loop must survive any bug in one attempt
                log.exception("scheduling attempt crashed")
            now = self.clock()
            if now - last_housekeeping >= 1.0:
                last_housekeeping = now
                self.housekeeping()

    def housekeeping(self) -> None:
        """Once a second: expire assumed pods (only with a TTL, the seed-era setting) and refresh gauges."""
        if self.config.assumed_pod_ttl_seconds > 0:
            for pod in self.cache.cleanup_expired_assumed():
                log.warning("assumed pod expired before its binding was confirmed", pod=pod.key)
        if self.metrics is not None:
            self.metrics.cache_size.labels("nodes").set(self.cache.node_count())
            self.metrics.cache_size.labels("pods").set(self.cache.pod_count())
            self.metrics.cache_size.labels("assumed_pods").set(self.cache.assumed_count())
            for queue_name, n in self.queue.lengths().items():
                self.metrics.pending_pods.labels(queue_name).set(n)

    def schedule_one(self, timeout: float | None = None) -> bool:
        """Pop one pod and run its scheduling cycle. False when nothing was popped."""
        qpi = self.queue.pop(timeout)
        if qpi is None:
            return False
        pod = qpi.pod
        fwk = self.frameworks.get(pod.scheduler_name)
        if fwk is None:
            log.error("no profile for pod", pod=pod.key, scheduler_name=pod.scheduler_name)
            self.queue.done(pod.uid)
            return True
        if pod.terminating or self.cache.is_assumed(pod.uid):
            self.queue.done(pod.uid)
            return True
        self._scheduling_cycle(fwk, qpi, self.queue.scheduling_cycle)
        return True

    def _scheduling_cycle(self, fwk: Framework, qpi: QueuedPodInfo, cycle: int) -> None:
        pod = qpi.pod
        start = self.clock()
        state = CycleState()
        try:
            self.cache.update_snapshot(self.snapshot)
        except SnapshotInconsistentError as exc:
            self._failure(fwk, qpi, error_status(exc), cycle, start, message=str(exc), plugins=set())
            return
        if pod.parse_error is not None:
            st = unresolvable(str(pod.parse_error))
            self._failure(fwk, qpi, st, cycle, start, message=f"0/{self.snapshot.num_nodes()} nodes are "
                          f"available: {pod.parse_error}.", plugins=set())
            return
        try:
            result = self.algorithm.schedule_pod(fwk, state, pod, self.snapshot, self.queue.nominator)
        except Exception as exc:
            self._schedule_error(fwk, state, qpi, exc, cycle, start)
            return
        if self.metrics is not None:
            self.metrics.algorithm_duration.observe(self.clock() - start)
        host = result.suggested_host
        assumed = pod.with_node(host)
        self.queue.nominator.delete_nominated_pod_if_exists(pod)
        try:
            self.cache.assume_pod(assumed)
        except Exception as exc:
            self._failure(fwk, qpi, error_status(exc), cycle, start, message=str(exc), plugins=set())
            return
        reserve = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if reserve is not None and reserve.code != Code.SUCCESS:
            self._undo(fwk, state, assumed, host)
            self._failure(fwk, qpi, reserve, cycle, start, message=reserve.message, plugins={reserve.plugin} - {""})
            return
        permit = fwk.run_permit_plugins(state, assumed, host)
        if permit is not None and permit.code not in (Code.SUCCESS, Code.WAIT):
            self._undo(fwk, state, assumed, host)
            self._failure(fwk, qpi, permit, cycle, start, message=permit.message, plugins={permit.plugin} - {""})
            return
        if self.outcomes is not None:
            self.outcomes.append(Outcome(pod, host, "", result.diagnosis.node_to_status))
        if self._synchronous or self._bind_pool is None:
            self._binding_cycle(fwk, state, qpi, assumed, host, cycle, start)
        else:
            self._bind_slots.acquire()
            self._bind_pool.submit(self._binding_cycle_guarded, fwk, state, qpi, assumed, host, cycle, start)

    def _binding_cycle_guarded(self, *args: Any) -> None:
        try:
            self._binding_cycle(*args)
        except Exception:
            log.exception("binding cycle crashed")
        finally:
            self._bind_slots.release()

    def _binding_cycle(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, assumed: Pod, host: str, cycle: int,
        start: float,
    ) -> None:
        st = fwk.wait_on_permit(assumed)
        self.queue.done(assumed.uid)
        if st is None or st.code == Code.SUCCESS:
            st = fwk.run_pre_bind_plugins(state, assumed, host)
        if st is None or st.code == Code.SUCCESS:
            st = fwk.run_bind_plugins(state, assumed, host)
        if st is not None and st.code != Code.SUCCESS:
            self._undo(fwk, state, assumed, host)
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)
            if st.code == Code.ERROR and getattr(st.error, "status", None) == 404:
                log.info("pod deleted before it could be bound", pod=assumed.key)
                return
            self._failure(fwk, qpi, st, cycle, start, message=st.message, plugins=set(), requeue=True,
                          clear_nominated=True)
            return
        self.cache.finish_binding(assumed)
        elapsed = self.clock() - start
        if self.metrics is not None:
            self.metrics.schedule_attempts.labels("scheduled", fwk.profile_name).inc()
            self.metrics.attempt_duration.labels("scheduled", fwk.profile_name).observe(elapsed)
            self.metrics.pod_attempts.observe(qpi.attempts)
            if qpi.initial_attempt_timestamp is not None:
                attempts = str(qpi.attempts) if qpi.attempts < 15 else "15+"
                self.metrics.sli_duration.labels(attempts).observe(self.clock() - qpi.initial_attempt_timestamp)
        log.info("bound", pod=assumed.key, node=host, latency_ms=round(elapsed * 1000, 1))
        if self.observer is not None:
            self.observer.attempt_done(assumed, host)
        self.sink.event(assumed, "Normal", "Scheduled", "Binding",
                        f"Successfully assigned {assumed.key} to {host}", fwk.profile_name)
        fwk.run_post_bind_plugins(state, assumed, host)

    def _undo(self, fwk: Framework, state: CycleState, assumed: Pod, host: str) -> None:
        fwk.run_reserve_plugins_unreserve(state, assumed, host)
        try:
            self.cache.forget_pod(assumed)
        except Exception as exc:
            log.warning("forget failed", pod=assumed.key, error=str(exc))

    def _schedule_error(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, exc: Exception, cycle: int, start: float
    ) -> None:
        """The failure branch of the scheduling cycle: PostFilter (preemption) for a FitError, then
        handleSchedulingFailure."""
        if not isinstance(exc, FitError | NoNodesAvailableError | FrameworkError):
            log.exception("scheduling algorithm failed", pod=qpi.pod.key)
        failure = handle_schedule_error(fwk, state, qpi.pod, exc)
        latest = self._pending.get(qpi.pod.uid)
        if failure.nominated_node_name is not None and latest is not None:
            # Set (preemption) or clear ("") the nomination now, not when the status patch comes back.
            self.queue.nominator.add_nominated_pod(latest, failure.nominated_node_name)
        diagnosis = exc.diagnosis if isinstance(exc, FitError) else None
        self._failure(
            fwk, qpi, failure.status, cycle, start,
            message=failure.status.message,
            plugins=set(diagnosis.unschedulable_plugins) if diagnosis else set(),
            pending_plugins=set(diagnosis.pending_plugins) if diagnosis else set(),
            nominated=failure.nominated_node_name,
            statuses=diagnosis.node_to_status if diagnosis else None,
        )

    def _failure(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        st: Status,
        cycle: int,
        start: float,
        *,
        message: str,
        plugins: set[str],
        pending_plugins: set[str] | None = None,
        nominated: str | None = None,
        requeue: bool = True,
        clear_nominated: bool = False,
        statuses: NodeToStatus | None = None,
    ) -> None:
        """handleSchedulingFailure: event, PodScheduled=False, and back to the queue unless gone or bound."""
        pod = qpi.pod
        if self.outcomes is not None:
            self.outcomes.append(Outcome(pod, None, message, statuses))
        if self.observer is not None:
            self.observer.attempt_done(pod, None)
        rejected = st.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)
        reason = "Unschedulable" if rejected else "SchedulerError"
        if self.metrics is not None:
            result = "unschedulable" if rejected else "error"
            self.metrics.schedule_attempts.labels(result, fwk.profile_name).inc()
            self.metrics.attempt_duration.labels(result, fwk.profile_name).observe(self.clock() - start)
        latest = self._pending.get(pod.uid)
        if latest is None or latest.node_name:
            self.queue.done(pod.uid)
            return
        qpi.pod = latest
        qpi.unschedulable_plugins = set(plugins)
        qpi.pending_plugins = set(pending_plugins or ())
        if requeue:
            self.queue.add_unschedulable_if_not_present(qpi, cycle)
        else:
            self.queue.done(pod.uid)
        log.info("unschedulable" if rejected else "scheduling error", pod=pod.key, message=message)
        self.sink.event(latest, "Warning", "FailedScheduling", "Scheduling", message, fwk.profile_name)
        self.sink.pod_condition(latest, reason, message, "" if clear_nominated else nominated)

    # ----- preemption (the handle's API edge) -----

    def preempt_victim(self, victim: Pod, preemptor: Pod, node_name: str, plugin: str) -> Status | None:
        """Evict one preemption victim (upstream Evaluator.PreemptPod): a pod waiting at Permit in the
        preemptor's profile is rejected; any other gets DisruptionTarget=True (reason
        PreemptionByScheduler) and is deleted. A victim already deleted counts as preempted, with no
        event; otherwise the victim gets a Preempted event."""
        fwk = self.frameworks.get(preemptor.scheduler_name)
        waiting = fwk.get_waiting_pod(victim.uid) if fwk is not None else None
        if waiting is not None:
            waiting.reject(plugin, "preempted")
            log.info("preemptor rejected a waiting pod", preemptor=preemptor.key, victim=victim.key, node=node_name)
        elif self.pod_writer is None:
            self.on_pod_event(DELETED, victim.raw)
        else:
            condition = disruption_target_condition(victim, preemptor)
            try:
                if condition is not None:
                    self.pod_writer.patch_pod_status(victim.namespace, victim.name,
                                                     {"status": {"conditions": [condition]}})
            except Exception as exc:
                log.error("could not add the DisruptionTarget condition", victim=victim.key, error=str(exc))
                return error_status(exc)
            try:
                self.pod_writer.delete_pod(victim.namespace, victim.name)
            except Exception as exc:
                if getattr(exc, "status", None) == 404:
                    log.info("victim already deleted", preemptor=preemptor.key, victim=victim.key, node=node_name)
                    return None
                log.error("could not delete the victim", victim=victim.key, error=str(exc))
                return error_status(exc)
            log.info("preempted", preemptor=preemptor.key, victim=victim.key, node=node_name)
        self.preemptions.append((victim.key, preemptor.key, node_name))
        controller = fwk.profile_name if fwk is not None else preemptor.scheduler_name
        self.sink.event(victim, "Normal", "Preempted", "Preempting",
                        f"Preempted by pod {preemptor.uid} on node {node_name}", controller, related=preemptor)
        return None

    def clear_nominated_node(self, pod: Pod) -> Status | None:
        """Remove a pod's status.nominatedNodeName (if its object has one); without an API server
        the in-memory nomination is dropped directly."""
        if self.pod_writer is None:
            self.queue.nominator.delete_nominated_pod_if_exists(pod)
            return None
        if not pod.nominated_node_name:
            return None
        try:
            self.pod_writer.patch_pod_status(pod.namespace, pod.name, {"status": {"nominatedNodeName": None}})
        except Exception as exc:
            return error_status(exc)
        return None

    def bind_via_binder(self, pod: Pod, node_name: str) -> Status | None:
        """DefaultBinder's Bind: the API POST (live) or the recording binder (simulate)."""
        try:
            self.binder.bind(pod, node_name)
        except Exception as exc:
            return error_status(exc)
        return None


def disruption_target_condition(victim: Pod, preemptor: Pod) -> dict[str, Any] | None:
    """The DisruptionTarget condition preemption puts on a victim; None when it already has it."""
    message = f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod"
    for c in (victim.raw.get("status") or {}).get("conditions") or []:
        if c.get("type") == DISRUPTION_TARGET and c.get("status") == "True" and (
                c.get("reason") == REASON_PREEMPTION_BY_SCHEDULER and c.get("message") == message):
            return None
    return pod_condition(victim, DISRUPTION_TARGET, "True", REASON_PREEMPTION_BY_SCHEDULER, message)
