"""The Scheduler: its construction, what it does for plugins (SchedulerActions), and Run.

As upstream pkg/scheduler/scheduler.go; the per-pod cycles are in schedule_one.py (ScheduleOne, the scheduling
cycle) and binding_cycle.py (BindingCycle), the routing of watch events into the cache and queue in
eventhandlers.py (EventHandlers), and the fields they share are declared once, in schedule_one.py's
SchedulerState. Plugins get their profile's
Framework as their Handle; it answers from the FrameworkOptions built here and calls back into the
Scheduler for what only the scheduler can do. Everything that talks to the world outside is injected
(scheduler.edge): the Binder, the EventRecorder, the APIWriter and, for simulate, a ScheduleObserver.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import structlog

from scheduler.binding_cycle import BindingCycle
from scheduler.cache.cache import Cache
from scheduler.cache.objects import ObjectStore
from scheduler.cache.snapshot import Snapshot
from scheduler.config.types import SchedulerConfiguration
from scheduler.edge import APIWriter, BatchBinder, Binder, EventRecorder, RelatedObject, ScheduleObserver
from scheduler.eventhandlers import EventHandlers
from scheduler.extender import build_extenders
from scheduler.framework.batch import plugins_without_sign_pod
from scheduler.framework.extender import Extender
from scheduler.framework.features import Features
from scheduler.framework.interface import CycleObserver, PodGroupWriter
from scheduler.framework.podgroup import PodGroupStatusWriter
from scheduler.framework.preemption import DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER
from scheduler.framework.preemptor import GroupPreemptor
from scheduler.framework.runtime import Framework, FrameworkOptions, Plugins
from scheduler.framework.runtime.permit_timer import PermitTimer
from scheduler.framework.status import Status
from scheduler.framework.status import error as error_status
from scheduler.metrics import Metrics
from scheduler.model.apierrors import NotFoundError
from scheduler.model.conditions import pod_condition
from scheduler.model.pod import Pod
from scheduler.model.workload import API_VERSION, KIND_POD_GROUP
from scheduler.queue.scheduling_queue import PriorityQueue
from scheduler.reconfigure import Reconfigure, queue_profiles
from scheduler.schedule_one import ScheduleOne, SchedulingAlgorithm
from scheduler.schedule_one_podgroup import SchedulePodGroup
from scheduler.workerpool import BatchWorker, Slots, WorkerPool

log = structlog.get_logger(__name__)


class NoAPIWriterError(RuntimeError):
    """A write was needed but the scheduler was built without an APIWriter."""


# The most Bindings one batch posts at once, each on a connection of its own: within the HTTP client's 64 idle
# connections beside the event writers' few, and at a few ms an answer still thousands of Bindings a second.
BIND_BATCH_MOST = 32


class Scheduler(EventHandlers, ScheduleOne, SchedulePodGroup, BindingCycle, Reconfigure):
    def __init__(
        self,
        config: SchedulerConfiguration,
        registry: Plugins,
        binder: Binder,
        recorder: EventRecorder,
        metrics: Metrics | None = None,
        *,
        writer: APIWriter | None = None,
        observer: ScheduleObserver | None = None,
        cycle_observer: CycleObserver | None = None,
        bind_workers: int = 16,
        synchronous_binding: bool = False,
        leading: Callable[[], bool] | None = None,
        rng: random.Random | None = None,
        tie_break: Literal["heap", "name"] = "heap",
        clock: Callable[[], float] = time.monotonic,
        podgroup_writer: PodGroupWriter | None = None,
        features: Features | None = None,
        pod_group_status_writer: PodGroupStatusWriter | None = None,
    ) -> None:
        """``writer`` makes preemption's and VolumeBinding's API writes; without one they fail with an
        error status. ``observer`` sees every attempt's outcome (simulate, --record-results);
        ``cycle_observer`` every plugin's result in it (framework/results.py's recorder). ``podgroup_writer``
        keeps PodGroup status and events current (Coscheduling); without one they are not written.
        ``features``: the feature gates, v1.37's defaults if None. ``pod_group_status_writer`` writes the Workload
        API's PodGroup conditions (GenericWorkload); without one they are not written."""
        self.features = features if features is not None else Features()
        self.config = config
        self.podgroup_writer = podgroup_writer
        self.pod_group_status_writer = pod_group_status_writer
        self.binder = binder
        self.writer = writer
        # Plugin state shared by all profiles and kept across reloads (shared_plugin_state).
        self._shared_plugin_state: dict[str, Any] = {}
        self._shared_plugin_state_lock = threading.Lock()
        self.recorder = recorder
        self.observer = observer
        self.cycle_observer = cycle_observer
        self.rng = rng if rng is not None else random.Random()
        self.metrics = metrics
        self.clock = clock
        self.cache = Cache(ttl=config.assumed_pod_ttl_seconds, clock=clock)
        self.cache.generic_workload = self.features.enable_generic_workload
        if metrics is not None and self.features.enable_generic_workload:
            metrics.enable_pod_groups(self.features.enable_topology_aware_workload_scheduling)
            metrics.enable_workload_preemption()
        self.objects = ObjectStore()
        self.snapshot = Snapshot()
        self.frameworks = self.build_frameworks(config, registry)
        first = next(iter(self.frameworks.values()))
        self.queue = PriorityQueue(
            less=first.queue_sort_less,
            rank=first.queue_sort_rank(),
            profiles=queue_profiles(self.frameworks, bool(config.extenders)),
            pod_initial_backoff=config.pod_initial_backoff_seconds,
            pod_max_backoff=config.pod_max_backoff_seconds,
            pod_max_in_unschedulable=config.pod_max_in_unschedulable_pods_seconds,
            clock=clock,
            metrics=metrics.pod_incoming if metrics is not None else None,
            hint_metrics=metrics.hint_executed if metrics is not None else None,
            pre_enqueue_metrics=metrics.pre_enqueue_ran if metrics is not None else None,
        )
        self.queue.generic_workload = self.features.enable_generic_workload
        if metrics is not None and self.features.enable_generic_workload:
            self.queue.group_metrics = metrics.group_incoming
        self.algorithm = SchedulingAlgorithm(
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
            rng=self.rng,
            tie_break=tie_break,
            extenders=build_extenders(config.extenders),
            batching=config.opportunistic_batching,
        )
        # Observers read every rejected node's status, a pod that fits too (simulate, explain, results).
        self.algorithm.list_rejections_on_success = observer is not None or cycle_observer is not None
        self._next_config = None
        self._next_config_lock = threading.Lock()
        self._pending = {}
        self._pod_seen = {}
        self._node_seen = {}
        self._bind_pool = None if synchronous_binding else WorkerPool(bind_workers, "binding")
        self._bind_slots = Slots(bind_workers * 4)
        self._bind_batch = None
        if self._bind_pool is not None and isinstance(binder, BatchBinder):
            self._bind_batch = BatchWorker("binding-batch", self.binding_batch, BIND_BATCH_MOST)
        self._posted = {}
        self.parked = []
        self.leading = leading  # leader election: extenders bind only while this replica leads
        self.permit_timer = PermitTimer(clock)  # the timeouts of pods waiting at Permit (no thread per pod)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def build_frameworks(self, config: SchedulerConfiguration, registry: Plugins) -> dict[str, Framework]:
        """One framework per profile, with its metrics; raises ValueError when a plugin refuses its args."""
        options = FrameworkOptions(
            scheduler=self, snapshot=self.snapshot, objects=self.objects, parallelism=config.parallelism,
            rng=self.rng, features=self.features, podgroup_writer=self.podgroup_writer,
            pod_group_manager=self.cache if self.features.enable_generic_workload else None,
        )
        out: dict[str, Framework] = {}
        for p in config.profiles:
            prof = self.metrics.profile(p.scheduler_name) if self.metrics is not None else None
            hook = prof.extension_point if prof is not None else None
            out[p.scheduler_name] = Framework(p, registry, options, metrics=hook, plugin_metrics=prof,
                                              observer=self.cycle_observer,
                                              success_values=prof.extension_point_values if prof is not None else None)
            unsigned = plugins_without_sign_pod(out[p.scheduler_name].list_plugins(),
                                                out[p.scheduler_name].plugins_by_name)
            if config.opportunistic_batching and unsigned:  # visible, not only documented: it costs throughput
                log.info("opportunistic batching off for this profile: plugins without sign_pod",
                         profile=p.scheduler_name, plugins=unsigned)
        return out

    # ----- Run -----

    def start(self) -> None:
        """Run: the queue's flush loops and the scheduling thread."""
        self.queue.run()
        self._thread = threading.Thread(target=self._loop, name="scheduling", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.queue.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.permit_timer.stop()
        if self._bind_batch is not None:  # before the pool: a batch hands pods on to it
            self._bind_batch.shutdown(wait=True)
        if self._bind_pool is not None:
            self._bind_pool.shutdown(wait=True)

    def _loop(self) -> None:
        last_housekeeping = 0.0
        while not self._stop.is_set():
            try:
                self.schedule_one(timeout=0.5)
                self.apply_next_config()
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
            self.metrics.refresh(self.cache, self.queue)

    # ----- SchedulerActions: what the scheduler does for plugins (through their Framework) -----

    def nominated_pods_for(self, node_name: str) -> list[Pod]:
        return self.queue.nominator.nominated_pods_for_node(node_name)  # a fresh list, taken under its lock

    def extenders(self) -> Sequence[Extender]:
        return self.algorithm.extenders

    def latest_pod(self, pod: Pod) -> Pod | None:
        """The pending pod as last seen; None once it is gone or bound."""
        return self._pending.get(pod.uid)

    def pod_exists(self, pod: Pod) -> bool:
        """The pod has not been deleted (as far as the watch told)."""
        return pod.uid in self._pod_seen

    def activate_pods(self, pods: list[Pod]) -> None:
        self.queue.activate(pods)

    def shared_plugin_state(self, key: str, factory: Callable[[], Any]) -> Any:
        """The one object under ``key`` for every profile's plugins, made by ``factory`` the first time."""
        with self._shared_plugin_state_lock:
            if key not in self._shared_plugin_state:
                self._shared_plugin_state[key] = factory()
            return self._shared_plugin_state[key]

    def victims_selected(self, count: int) -> None:
        if self.metrics is not None:
            self.metrics.victims_selected(count)

    def workload_preemption_attempted(self, result: str) -> None:
        if self.metrics is not None:
            self.metrics.workload_preemption_attempted(result)

    def workload_victims_selected(self, victims: int, disruptions: int) -> None:
        if self.metrics is not None:
            self.metrics.workload_victims_selected(victims, disruptions)

    def async_preemption_done(self, ok: bool, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.preemption_goroutine_done(ok, seconds)

    def preemption_evaluated(self, preemptor: str, result: str, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.preemption_evaluated(preemptor, result, seconds)

    def preemption_executed(self, preemptor: str, ok: bool, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.preemption_executed(preemptor, ok, seconds)

    def pdb_violations_caused(self, preemptor: str, count: int) -> None:
        if self.metrics is not None:
            self.metrics.pdb_violations_caused(preemptor, count)

    def update_object(self, kind: str, obj: Mapping[str, Any], subresource: str = "") -> Mapping[str, Any]:
        """PUT a PersistentVolume, PersistentVolumeClaim or ResourceClaim (or its status) through the
        APIWriter; returns the stored object."""
        return self.api_writer().update_object(kind, obj, subresource)

    def get_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any]:
        return self.api_writer().get_object(kind, namespace, name)

    def patch_object_status(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.api_writer().patch_object_status(kind, namespace, name, patch)

    def create_object(self, kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.api_writer().create_object(kind, obj)

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        self.api_writer().delete_object(kind, namespace, name)

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.api_writer().patch_pod_status(namespace, name, patch)

    def api_writer(self) -> APIWriter:
        if self.writer is None:
            raise NoAPIWriterError("this scheduler has no API writer")
        return self.writer

    def preempt(
        self, victim: Pod, preemptor: Pod, node_name: str, plugin: str, *, group: GroupPreemptor | None = None
    ) -> Status | None:
        """Evict one preemption victim (upstream Executor.PreemptPod): a pod waiting at Permit in the
        preemptor's profile is rejected; any other gets DisruptionTarget=True (reason
        PreemptionByScheduler) and is deleted. A victim already deleted counts as preempted, with no
        event; otherwise the victim gets a Preempted event. ``group``: a pod group preempts (``preemptor``
        is its first member, whose profile is the group's); the condition and the event name the group."""
        fwk = self.frameworks.get(preemptor.scheduler_name)
        waiting = fwk.get_waiting_pod(victim.uid) if fwk is not None else None
        if waiting is not None:
            waiting.reject(plugin, "preempted")
            log.info("preemptor rejected a waiting pod", preemptor=preemptor.key, victim=victim.key, node=node_name)
        else:
            condition = disruption_target_condition(victim, preemptor, "pod" if group is None else group.type)
            try:
                if condition is not None:
                    self.api_writer().patch_pod_status(victim.namespace, victim.name,
                                                       {"status": {"conditions": [condition]}})
            except Exception as exc:
                log.error("could not add the DisruptionTarget condition", victim=victim.key, error=str(exc))
                return error_status(exc)
            try:
                self.api_writer().delete_pod(victim.namespace, victim.name)
            except NotFoundError:
                log.info("victim already deleted", preemptor=preemptor.key, victim=victim.key, node=node_name)
                return None
            except Exception as exc:
                log.error("could not delete the victim", victim=victim.key, error=str(exc))
                return error_status(exc)
            log.info("preempted", preemptor=preemptor.key, victim=victim.key, node=node_name)
        if self.observer is not None:
            self.observer.preempted(victim, preemptor, node_name)
        controller = fwk.profile_name if fwk is not None else preemptor.scheduler_name
        if group is None:
            self.recorder.event(victim, "Normal", "Preempted", "Preempting",
                                f"Preempted by pod {preemptor.uid} on node {node_name}", controller, related=preemptor)
        else:
            self.recorder.event(victim, "Normal", "Preempted", "Preempting",
                                f"Preempted by {group.type} {group.uid} on node {node_name}", controller,
                                related=_pod_group_ref(group))
        return None

    def nominate_for_expectation(self, pod: Pod, node_name: str) -> None:
        """status.nominatedNodeName = the node the binding cycle is about to bind to (upstream's updatePod
        with ModeOverride: written only when it differs; a failure is logged and binding goes on)."""
        if self.writer is None or pod.nominated_node_name == node_name:
            return
        try:
            self.writer.patch_pod_status(pod.namespace, pod.name, {"status": {"nominatedNodeName": node_name}})
        except Exception as exc:
            log.warning("could not write the nominated node name in the binding cycle", pod=pod.key,
                        node=node_name, error=str(exc))

    def clear_nominated_node(self, pod: Pod) -> Status | None:
        """Remove a pod's status.nominatedNodeName (if its object has one); the nominator follows
        when the update comes back through the watch."""
        if not pod.nominated_node_name:
            return None
        try:
            self.api_writer().patch_pod_status(pod.namespace, pod.name, {"status": {"nominatedNodeName": None}})
        except Exception as exc:
            return error_status(exc)
        return None

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        """DefaultBinder's Bind through the injected Binder; for a batched binding cycle, the outcome of the
        POST its batch made (binding_batch), followed up by the binder when it failed."""
        posted, first_error = self.take_posted(pod, node_name)
        try:
            if not posted:
                self.binder.bind(pod, node_name)
            elif first_error is not None:
                assert isinstance(self.binder, BatchBinder)
                self.binder.bind_after(pod, node_name, first_error)
        except Exception as exc:
            return error_status(exc)
        return None


def _pod_group_ref(group: GroupPreemptor) -> RelatedObject:
    pg = group.pod_group
    return RelatedObject(pg.namespace, pg.name, pg.uid, pg.resource_version, KIND_POD_GROUP, API_VERSION)


def disruption_target_condition(victim: Pod, preemptor: Pod, preemptor_type: str = "pod") -> dict[str, Any] | None:
    """The DisruptionTarget condition preemption puts on a victim; None when it already has it. ``preemptor_type``
    is "podgroup" when a pod group preempts (``preemptor`` then its first member, whose scheduler it names)."""
    message = f"{preemptor.scheduler_name}: preempting to accommodate a higher priority {preemptor_type}"
    for c in (victim.raw.get("status") or {}).get("conditions") or []:
        if c.get("type") == DISRUPTION_TARGET and c.get("status") == "True" and (
                c.get("reason") == REASON_PREEMPTION_BY_SCHEDULER and c.get("message") == message):
            return None
    return pod_condition(victim, DISRUPTION_TARGET, "True", REASON_PREEMPTION_BY_SCHEDULER, message)
