"""Swapping in a new configuration between scheduling cycles (reload without restart), and building
what a configuration's profiles need: their frameworks and the queue's view of them.

Upstream has no reload; the rules here keep its invariants: a pod's cycle runs under one framework from
start to end (in-flight binding cycles hold the framework they started with), the queue and the cache
are not rebuilt, and the queue sort never changes under queued pods.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import structlog

from scheduler.cache.objects import ObjectStore
from scheduler.config.types import SchedulerConfiguration
from scheduler.edge import ScheduleObserver
from scheduler.eventhandlers import MODIFIED
from scheduler.extender import build_extenders
from scheduler.framework.batch import plugins_without_sign_pod
from scheduler.framework.extender import EXTENDER_NAME
from scheduler.framework.interface import CycleObserver
from scheduler.framework.runtime import Framework
from scheduler.framework.types import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from scheduler.metrics import Metrics
from scheduler.model.pod import Pod, pod_from_api
from scheduler.queue.scheduling_queue import PriorityQueue, QueueProfile
from scheduler.schedule_one import SchedulingAlgorithm

log = structlog.get_logger(__name__)


class Reconfigure:
    """The reload methods of the Scheduler (which sets the attributes declared here)."""

    config: SchedulerConfiguration
    frameworks: dict[str, Framework]
    queue: PriorityQueue
    algorithm: SchedulingAlgorithm
    handle: Any
    objects: ObjectStore
    observer: ScheduleObserver | None
    cycle_observer: CycleObserver | None
    _pending: dict[str, Pod]
    _pod_seen: dict[str, tuple[float, Mapping[str, Any]]]
    _next_config: tuple[SchedulerConfiguration, dict[str, Framework]] | None
    _next_config_lock: threading.Lock
    metrics: Metrics | None

    if TYPE_CHECKING:  # EventHandlers' (the Scheduler has both)

        def responsible_for(self, pod: Pod) -> bool: ...
        def on_pod_event(self, type_: str, obj: Mapping[str, Any]) -> tuple[str, ...]: ...

    def build_frameworks(self, config: SchedulerConfiguration, registry: Any) -> dict[str, Framework]:
        """One framework per profile, with its metrics; raises ValueError when a plugin refuses its args."""
        out: dict[str, Framework] = {}
        for p in config.profiles:
            prof = self.metrics.profile(p.scheduler_name) if self.metrics is not None else None
            hook = prof.extension_point if prof is not None else None
            out[p.scheduler_name] = Framework(p, registry, self.handle, metrics=hook, plugin_metrics=prof,
                                              observer=self.cycle_observer)
            unsigned = plugins_without_sign_pod(out[p.scheduler_name].list_plugins(), out[p.scheduler_name].plugins)
            if config.opportunistic_batching and unsigned:  # visible, not only documented: it costs throughput
                log.info("opportunistic batching off for this profile: plugins without sign_pod",
                         profile=p.scheduler_name, plugins=unsigned)
        return out

    def reconfigure(self, config: SchedulerConfiguration, registry: Any) -> None:
        """Accept a new configuration: its profiles are built now (a ValueError leaves everything as it
        is) and swapped in between two scheduling cycles (``apply_next_config``). The queue sort cannot
        change while pods are queued under the old one."""
        frameworks = self.build_frameworks(config, registry)
        old_sort = next(iter(self.frameworks.values())).list_plugins().get("queueSort")
        new_sort = next(iter(frameworks.values())).list_plugins().get("queueSort")
        if old_sort != new_sort:
            raise ValueError(f"profiles[0].plugins.queueSort: {new_sort} instead of {old_sort} needs a restart")
        with self._next_config_lock:
            self._next_config = (config, frameworks)

    def apply_next_config(self) -> None:
        """Swap in the configuration given to ``reconfigure``, on the scheduling thread between cycles:
        pods in flight finish under the frameworks they started with, queue and cache stay. Pods of a
        removed profile leave the queue (left alone, as any other scheduler's); pending pods of a new
        profile, as last seen, enter it."""
        with self._next_config_lock:
            pending, self._next_config = self._next_config, None
        if pending is None:
            return
        config, frameworks = pending
        added = set(frameworks) - set(self.frameworks)
        for name, fwk in frameworks.items():
            if name in self.frameworks:  # pods waiting at Permit stay visible to the new plugins
                fwk.share_waiting_pods(self.frameworks[name])
        self.config, self.frameworks = config, frameworks
        self.algorithm.configure(config.percentage_of_nodes_to_score, build_extenders(config.extenders),
                                 config.opportunistic_batching)
        self.queue.set_profiles(queue_profiles(frameworks, bool(config.extenders)),
                                config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds)
        self._replay_to_observers(frameworks)
        for pod in [p for p in self._pending.values() if not self.responsible_for(p)]:
            self._pending.pop(pod.uid, None)
            self.queue.delete(pod)
        for _, obj in list(self._pod_seen.values()):
            spec = obj.get("spec") or {}
            if not spec.get("nodeName") and spec.get("schedulerName", "default-scheduler") in added:
                self.on_pod_event(MODIFIED, obj)
        log.info("configuration reloaded", profiles=list(frameworks))


    def _replay_to_observers(self, frameworks: Mapping[str, Framework]) -> None:
        """Plugins that keep state from watch events (Coscheduling's groups) are new objects: they start
        from what the scheduler knows, the stored objects and the pods last seen."""
        observing = [f for f in frameworks.values() if f.has_observers()]
        if not observing:
            return
        pods = [pod_from_api(obj) for _, obj in list(self._pod_seen.values())]
        for fwk in observing:
            for kind in self.objects.kinds():
                for obj in self.objects.list(kind):
                    fwk.notify_object_event(kind, False, obj)
            for pod in pods:
                fwk.notify_pod_event(False, pod)


def queue_profiles(frameworks: Mapping[str, Framework], extenders: bool) -> dict[str, QueueProfile]:
    """Each profile's PreEnqueue plugins and queueing hints. Extenders register no events, so a pod they
    rejected (rejector "Extender") is requeued by any cluster event, as upstream's defaultEnqueueExtension."""
    extra = {EXTENDER_NAME: [ClusterEventWithHint(ClusterEvent(EventResource.WILDCARD, ActionType.ALL))]}
    return {name: QueueProfile(pre_enqueue_plugins=f.pre_enqueue_plugins(),
                               hints={**f.events_to_register(), **(extra if extenders else {})})
            for name, f in frameworks.items()}
