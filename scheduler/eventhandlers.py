"""Watch events into the cache and the queue (upstream pkg/scheduler/eventhandlers.go).

Assigned pods go to the cache, unassigned pods of this scheduler's profiles to the queue; node
events update the cache; the other kinds plugins read go to the object store. Every change may wake
pods through the cluster event it stands for. The watch side (kube.operator, kube.podstream,
kube.sync) and simulate call these handlers; they are thread-safe through the cache's and the queue's
locks. Each handler returns the labels of its scheduler_event_handling_duration_seconds samples and is
timed here (``_handled``), so every caller (watches, resync, simulate, a reload) is measured.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import structlog

from scheduler.cache.cache import CacheError
from scheduler.cache.objects import object_key
from scheduler.framework.events import (
    ASSIGNED_POD_UPDATE,
    UNSCHEDULED_POD_ADD,
    UNSCHEDULED_POD_DELETE,
    UNSCHEDULED_POD_UPDATE,
    event_label,
    make_event,
    unscheduled_pod_update_events,
)
from scheduler.framework.types import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    ActionType,
    ClusterEvent,
    EventResource,
)
from scheduler.model.errors import InvalidObjectError
from scheduler.model.node import node_from_api
from scheduler.model.pod import DEFAULT_SCHEDULER_NAME, Pod, pod_from_api, pod_uid
from scheduler.model.workload import API_VERSION, KIND_POD_GROUP, KIND_WORKLOAD, parse_pod_group, pod_group_name_of
from scheduler.schedule_one import SchedulerState

log = structlog.get_logger(__name__)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"

# The object store's kinds of the Workload API's objects: group-qualified, as Coscheduling's "PodGroup" is taken.
WORKLOAD_POD_GROUP_KIND = f"{API_VERSION.split('/')[0]}/{KIND_POD_GROUP}"
WORKLOAD_KIND = f"{API_VERSION.split('/')[0]}/{KIND_WORKLOAD}"

# What a handler returns: the labels of its scheduler_event_handling_duration_seconds samples.
Labels = tuple[str, ...]
_UNSCHEDULED_POD_ADD: Labels = (UNSCHEDULED_POD_ADD.label,)
_UNSCHEDULED_POD_DELETE: Labels = (UNSCHEDULED_POD_DELETE.label,)
_ASSIGNED_POD_ADD: Labels = (ASSIGNED_POD_ADD.label,)
_ASSIGNED_POD_UPDATE: Labels = (ASSIGNED_POD_UPDATE.label,)
_ASSIGNED_POD_DELETE: Labels = (ASSIGNED_POD_DELETE.label,)
_NODE_ADD: Labels = (NODE_ADD.label,)
_NODE_DELETE: Labels = (NODE_DELETE.label,)


def _unscheduled_update_labels(events: list[ClusterEvent]) -> Labels:
    """updatePodInSchedulingQueue: one UnscheduledPodUpdate sample, plus one per derived event with
    another label; none for a resync."""
    if not events:
        return ()
    update = UNSCHEDULED_POD_UPDATE.label
    return (update, *(e.label for e in events if e.label != update))


class EventHandlers(SchedulerState):
    """The event-handling methods of the Scheduler."""

    def responsible_for(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.frameworks

    def _serves(self, spec: Mapping[str, Any]) -> bool:
        """responsible_for, read from a pod's raw spec (before any view is built)."""
        return (spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME) in self.frameworks

    def _handled(self, labels: Labels, start: float) -> Labels:
        """Record one scheduler_event_handling_duration_seconds sample per label of a handler that began
        at ``start`` (perf_counter), as upstream's handlers each record theirs."""
        if self.metrics is not None and labels:
            self.metrics.event_handled(labels, time.perf_counter() - start)
        return labels

    def on_pod_event(self, type_: str, obj: Mapping[str, Any]) -> Labels:
        """addPodToCache / updatePodInCache / addPodToSchedulingQueue / ...: assigned pods go to the
        cache, unassigned pods of our profiles to the queue. Returns the labels of upstream's
        scheduler_event_handling_duration_seconds samples for this watch event (the handlers it runs)."""
        start = time.perf_counter()
        return self._handled(self._pod_event(type_, obj), start)

    def _pod_event(self, type_: str, obj: Mapping[str, Any]) -> Labels:
        spec = obj.get("spec")
        if (type(spec) is dict or isinstance(spec, Mapping)) and not spec.get("nodeName") and not self._serves(spec):
            # Another scheduler's pending pod: it matters (as usage) only once bound, so it is not built;
            # it is remembered as seen, for the resync and for a reload that adds its profile.
            uid = pod_uid(obj)
            if type_ == DELETED:
                self._pod_seen.pop(uid, None)
            else:
                self._pod_seen[uid] = (self.clock(), obj)
            return ()  # upstream's informer filter hands it to no handler
        if type_ == DELETED:
            return self._pod_deletion(obj)
        pod = pod_from_api(obj, self._last_view(pod_uid(obj)))
        self._pod_seen[pod.uid] = (self.clock(), obj)
        if pod.node_name:
            return self._assigned_pod_seen(pod)
        if not self.responsible_for(pod):
            return ()
        old = self._pending.get(pod.uid)
        if self.cache.is_assumed(pod.uid):
            # Our own bind is in flight; this is a stale view of the pod (upstream still counts it),
            # unless its deletion has just started: then it stops holding its node's capacity.
            if pod.terminating and (old is None or not old.terminating):
                self._assumed_pod_deleted(pod)
            return _unscheduled_update_labels(unscheduled_pod_update_events(old, pod))
        self._pending[pod.uid] = pod
        if self.cache.generic_workload:  # AddPodGroupMember / UpdatePodGroupMember
            self.cache.pod_group_member_seen(pod)
        if old is None:
            self.queue.add(pod)
            if self.cache.generic_workload:  # a member may complete a gated gang (GangScheduling's hint)
                self.queue.move_all_to_active_or_backoff(UNSCHEDULED_POD_ADD, None, pod)
            return _UNSCHEDULED_POD_ADD
        return _unscheduled_update_labels(self.queue.update(old, pod))

    def _last_view(self, uid: str) -> Pod | None:
        """The pod's view the handlers hold, for pod_from_api to reuse what an unchanged spec gave: the cached
        one first (an assumed pod's spec has the nodeName its binding's watch event brings)."""
        cached = self.cache.get_pod(uid)
        return cached if cached is not None else self._pending.get(uid)

    def _assigned_pod_seen(self, pod: Pod) -> Labels:
        """A bound pod: leaving the queue is the queue handler's delete, and a pod the watch shows
        bound for the first time (ours was only assumed) is the cache handler's add, as upstream's
        filtered informer handlers see the transition."""
        labels: Labels = ()
        if self.cache.generic_workload and pod.pod_group_name:
            self.cache.pod_group_member_seen(pod)
            # GangScheduling's AssignedPod/Add hint: a bound member may complete a gang that waits at PreEnqueue.
            self.queue.pod_group_member_assigned(pod)
        if pod.uid in self._pending:
            del self._pending[pod.uid]
            self.queue.delete(pod)
            labels = _UNSCHEDULED_POD_DELETE
        old_assigned = self.cache.add_bound_pod(pod)  # None: added, or an assumed copy confirmed
        if old_assigned is None:
            self.queue.assigned_pod_added(pod)
            return labels + _ASSIGNED_POD_ADD
        events = self.queue.assigned_pod_updated(old_assigned, pod)
        # updatePodInCache: one sample for the handler, one per derived event.
        return labels + _ASSIGNED_POD_UPDATE + tuple(e.label for e in events)

    def _pod_deletion(self, obj: Mapping[str, Any]) -> Labels:
        """A DELETED event of one of our pods or of a bound one. Only a pending pod's deletion reads the
        deleted object's view (its nominated node, priority, terminating state); a bound pod's reads the
        cached copy alone, so no view is built for it."""
        uid = pod_uid(obj)
        self._pod_seen.pop(uid, None)
        if self.cache.generic_workload:  # RemovePodGroupMember
            meta = obj.get("metadata") or {}
            self.cache.remove_pod_group_member(meta.get("namespace") or "default",
                                               pod_group_name_of(obj.get("spec") or {}), uid)
        if uid in self._pending:
            pod = pod_from_api(obj, self._last_view(uid))
            self._pending_pod_deleted(pod)
            node_name, responsible = pod.node_name, self.responsible_for(pod)
        else:
            spec = obj.get("spec") or {}
            node_name = spec.get("nodeName") or ""
            responsible = self._serves(spec)
        self._cached_pod_deleted(uid)
        if node_name:
            return _ASSIGNED_POD_DELETE
        return _UNSCHEDULED_POD_DELETE if responsible else ()

    def _pending_pod_deleted(self, pod: Pod) -> None:
        """deletePodFromSchedulingQueue."""
        old = self._pending.pop(pod.uid)
        self.queue.delete(old)
        if self.cache.is_assumed(pod.uid):
            self._assumed_pod_deleted(pod)
        elif pod.nominated_node_name:
            # Lower or equal priority pods counted the nominated pod as if assigned to its node.
            self.queue.move_all_to_active_or_backoff(
                ASSIGNED_POD_DELETE, pod, None, lambda p: p.priority <= pod.priority)

    def _cached_pod_deleted(self, uid: str) -> None:
        """deletePodFromCache: the cached copy (not an assumed one) leaves its node."""
        cached = self.cache.get_pod(uid)
        if cached is not None and not self.cache.is_assumed(uid):
            self.cache.remove_pod(cached)
            self.queue.assigned_pod_deleted(cached)

    def _assumed_pod_deleted(self, pod: Pod) -> None:
        """handleAssumedPodDeletion (v1.37): a pod deleted while its binding cycle runs stops holding its
        node's capacity now, not when its bind fails. A pod waiting at Permit is rejected (its cycle
        forgets it); one already in PreBind or Bind is forgotten here. Either way the pods it may have
        kept out are told, as by an assigned pod's deletion."""
        cached = self.cache.get_pod(pod.uid)
        if cached is None:
            return  # its binding cycle has already ended
        fwk = self.frameworks.get(cached.scheduler_name)
        if fwk is None or not fwk.reject_waiting_pod(pod.uid):
            try:
                self.cache.forget_pod(cached)
            except CacheError as exc:  # bound meanwhile: the watch's delete removes it
                log.info("deleted pod was no longer assumed", pod=pod.key, reason=str(exc))
                return
        self.queue.assigned_pod_deleted(cached)

    def on_node_event(self, type_: str, obj: Mapping[str, Any]) -> Labels:
        """addNodeToCache / updateNodeInCache / deleteNodeFromCache. Returns the metric labels: an
        update is one sample per derived change event (none when nothing relevant changed)."""
        start = time.perf_counter()
        return self._handled(self._node_event(type_, obj), start)

    def _node_event(self, type_: str, obj: Mapping[str, Any]) -> Labels:
        node = node_from_api(obj)
        old = self.cache.get_node(node.name)
        if type_ == DELETED:
            self._node_seen.pop(node.name, None)
            if old is not None:
                self.cache.remove_node(node.name)
                self.queue.node_deleted(old)
            return _NODE_DELETE
        if old is not None and old.resource_version and old.resource_version == node.resource_version:
            # The same version again (a relist): keep the object the cache holds, not a second copy of it.
            self._node_seen[node.name] = (self.clock(), old.raw)
            return ()
        self._node_seen[node.name] = (self.clock(), obj)
        if old is None:
            self.cache.add_node(node)
            self.queue.node_added(node)
            return _NODE_ADD
        self.cache.update_node(old, node)
        return tuple(e.label for e in self.queue.node_updated(old, node))

    def on_object_event(self, kind: str, type_: str, obj: Mapping[str, Any]) -> Labels:
        """Services, ReplicaSets, PVCs, Namespaces, PodGroups ...: stored for plugins; may wake pods.
        Returns the metric label (upstream's label of the resource's Add, Update or Delete event)."""
        start = time.perf_counter()
        return self._handled(self._object_event(kind, type_, obj), start)

    def _object_event(self, kind: str, type_: str, obj: Mapping[str, Any]) -> Labels:
        if kind == WORKLOAD_POD_GROUP_KIND:  # the edge delivers every watched kind through here
            return self._pod_group_event(type_, obj)
        if type_ != DELETED and self._replayed(kind, obj):
            return ()
        for fwk in self.frameworks.values():
            fwk.notify_object_event(kind, type_ == DELETED, obj)
        if type_ == DELETED:
            old = self.objects.delete(kind, obj)
            action = ActionType.DELETE
        else:
            old = self.objects.upsert(kind, obj)
            action = ActionType.ADD if old is None else ActionType.UPDATE_OTHER
        try:
            resource = EventResource(kind)
        except ValueError:
            return (event_label(kind, action),)
        event = make_event(resource, action)
        if action == ActionType.DELETE:
            # As upstream's informers deliver a deletion to hints: the last known object, no new one.
            self.queue.move_all_to_active_or_backoff(event, old if old is not None else obj, None)
        else:
            self.queue.move_all_to_active_or_backoff(event, old, obj)
        return (event.label,)

    def _replayed(self, kind: str, obj: Mapping[str, Any]) -> bool:
        """The version the store holds again: a relist (kopf lists again after a broken watch) replaying
        it. As for nodes, nothing changed: no plugin, store or queue work (upstream's informer resumes
        its watch and sees no such event, so a replay must not requeue the pods waiting on the kind)."""
        meta = obj.get("metadata") or {}
        rv = meta.get("resourceVersion")
        if not rv:
            return False
        held = self.objects.get(kind, *object_key(obj))
        return held is not None and (held.get("metadata") or {}).get("resourceVersion") == rv

    def on_pod_group_event(self, type_: str, obj: Mapping[str, Any]) -> Labels:
        """addPodGroup / updatePodGroup / deletePodGroup: a scheduling.k8s.io/v1beta1 PodGroup (GenericWorkload), to
        the cache and the queue's forest, and to the object store under its own kind (not Coscheduling's)."""
        start = time.perf_counter()
        return self._handled(self._pod_group_event(type_, obj), start)

    def _pod_group_event(self, type_: str, obj: Mapping[str, Any]) -> Labels:
        if not self.cache.generic_workload:
            return ()
        if type_ != DELETED and self._replayed(WORKLOAD_POD_GROUP_KIND, obj):
            return ()
        try:
            pg = parse_pod_group(obj)
        except InvalidObjectError as exc:
            log.error("PodGroup not understood; ignored", error=str(exc))
            return ()
        if type_ == DELETED:
            self.objects.delete(WORKLOAD_POD_GROUP_KIND, obj)
            self.cache.remove_pod_group(pg.namespace, pg.name)
            self.queue.delete_pod_group(pg.namespace, pg.name)
            return (make_event(EventResource.WORKLOAD_POD_GROUP, ActionType.DELETE).label,)
        old = self.objects.upsert(WORKLOAD_POD_GROUP_KIND, obj)
        self.cache.set_pod_group(pg)
        if old is None:
            self.queue.add_pod_group(pg)
            event = make_event(EventResource.WORKLOAD_POD_GROUP, ActionType.ADD)
            self.queue.move_all_to_active_or_backoff(event, None, pg)
            return (event.label,)
        self.queue.update_pod_group(pg)
        event = make_event(EventResource.WORKLOAD_POD_GROUP, ActionType.UPDATE_OTHER)
        self.queue.move_all_to_active_or_backoff(event, parse_pod_group(old), pg)  # GangScheduling: minCount down
        return (event.label,)

    def on_workload_event(self, type_: str, obj: Mapping[str, Any]) -> Labels:
        """A scheduling.k8s.io/v1beta1 Workload: kept in the object store for plugins (the scheduler places
        PodGroups; a Workload is their template)."""
        if not self.cache.generic_workload:
            return ()
        if type_ == DELETED:
            self.objects.delete(WORKLOAD_KIND, obj)
        else:
            self.objects.upsert(WORKLOAD_KIND, obj)
        return ()

    def on_group_pod_event(self, type_: str, obj: Mapping[str, Any]) -> None:
        """A pod of a pod group, from a watch that also sees terminal pods (Coscheduling's members)."""
        pod = pod_from_api(obj)
        for fwk in self.frameworks.values():
            fwk.notify_pod_event(type_ == DELETED, pod)

    # ----- what the resync and simulate read back -----

    def event_clock(self) -> float:
        return self.clock()

    def known_pods_not_in(self, uids: set[str], before: float) -> list[tuple[str, Mapping[str, Any]]]:
        """Pods heard of before `before` that a fresh LIST no longer returns (missed deletions)."""
        return [(u, o) for u, (t, o) in list(self._pod_seen.items()) if u not in uids and t < before]

    def known_nodes_not_in(self, names: set[str], before: float) -> list[tuple[str, Mapping[str, Any]]]:
        return [(n, o) for n, (t, o) in list(self._node_seen.items()) if n not in names and t < before]

    def last_seen_pod(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The pod object last heard of under this name (simulate's offline API server looks the
        targets of its writes up here)."""
        for _, obj in list(self._pod_seen.values()):
            # The name fields as pod_from_api reads them, without building a view of every pod.
            meta = obj.get("metadata") or {}
            if (meta.get("name") or "") == name and (meta.get("namespace") or "default") == namespace:
                return obj
        return None
