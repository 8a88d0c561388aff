"""Swapping in a new configuration between scheduling cycles (reload without restart), and the queue's
view of a configuration's profiles (their frameworks are built by ``Scheduler.build_frameworks``).

Upstream has no reload; the rules here keep its invariants: a pod's cycle runs under one framework from
start to end (in-flight binding cycles hold the framework they started with), the queue and the cache
are not rebuilt, and the queue sort never changes under queued pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import structlog

from scheduler.config.types import SchedulerConfiguration
from scheduler.eventhandlers import MODIFIED
from scheduler.extender import build_extenders
from scheduler.framework.extender import EXTENDER_NAME
from scheduler.framework.runtime import Framework, Plugins
from scheduler.framework.types import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from scheduler.model.pod import Pod, pod_from_api
from scheduler.queue.scheduling_queue import QueueProfile
from scheduler.schedule_one import SchedulerState

log = structlog.get_logger(__name__)


class Reconfigure(SchedulerState):
    """The reload methods of the Scheduler."""

    if TYPE_CHECKING:  # EventHandlers' and the Scheduler's own (the Scheduler has them all)

        def responsible_for(self, pod: Pod) -> bool: ...
        def on_pod_event(self, type_: str, obj: Mapping[str, Any]) -> tuple[str, ...]: ...
        def build_frameworks(self, config: SchedulerConfiguration, registry: Plugins) -> dict[str, Framework]: ...

    def reconfigure(self, config: SchedulerConfiguration, registry: Plugins) -> None:
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
        if self._next_config is None:  # nearly every cycle: no lock (reconfigure's write is seen once it is made)
            return
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
