"""Cluster events derived from object changes (upstream pkg/scheduler/framework/events.go), and event matching.

Labels follow upstream ``ClusterEvent.Label()``: resource name + action name, e.g. ``NodeAdd``,
``NodeUpdateNodeTaint``, ``AssignedPodDelete``, ``UnscheduledPodUpdatePodSchedulingGatesEliminated``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.framework.types import ActionType, ClusterEvent, EventResource
from scheduler.model.node import Node
from scheduler.model.pod import Pod

# Special labels of queue-internal moves (scheduler_queue_incoming_pods_total{event}).
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
FORCE_ACTIVATE_LABEL = "ForceActivate"

_ACTION_NAMES: dict[ActionType, str] = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_NODE_PREEMPTION_POLICY: "UpdateNodePreemptionPolicy",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_SCALE_UP: "UpdatePodScaleUp",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.UPDATE_OTHER: "Update",
    ActionType.UPDATE: "Update",
    ActionType.ALL: "All",
}

# Upstream's names where they differ from the kind: its internal names for the two kinds of pod
# events, and the group-qualified storage resources (k8s.io/kube-scheduler/framework/types.go).
_RESOURCE_NAMES: dict[str, str] = {
    EventResource.POD: "AssignedPod",
    EventResource.UNSCHEDULED_POD: "UnscheduledPod",
    EventResource.STORAGE_CLASS: "storage.k8s.io/StorageClass",
    EventResource.CSI_NODE: "storage.k8s.io/CSINode",
    EventResource.CSI_DRIVER: "storage.k8s.io/CSIDriver",
    EventResource.CSI_STORAGE_CAPACITY: "storage.k8s.io/CSIStorageCapacity",
    EventResource.VOLUME_ATTACHMENT: "storage.k8s.io/VolumeAttachment",
    EventResource.RESOURCE_CLAIM: "resource.k8s.io/ResourceClaim",
    EventResource.RESOURCE_SLICE: "resource.k8s.io/ResourceSlice",
    EventResource.DEVICE_CLASS: "resource.k8s.io/DeviceClass",
    EventResource.DEVICE_TAINT_RULE: "resource.k8s.io/DeviceTaintRule",
}


def event_label(resource: str, action: ActionType) -> str:
    """``resource`` is an EventResource or, for kinds no plugin registers for, the object's kind."""
    return _RESOURCE_NAMES.get(resource, resource) + _ACTION_NAMES.get(action, str(int(action)))


def make_event(resource: EventResource, action: ActionType) -> ClusterEvent:
    """The event of that resource and action, labelled; one frozen instance for each pair (every pod update
    names some)."""
    event = _EVENTS.get((resource, action))
    if event is None:
        event = _EVENTS[(resource, action)] = ClusterEvent(resource, action, event_label(resource, action))
    return event


_EVENTS: dict[tuple[EventResource, ActionType], ClusterEvent] = {}


UNSCHEDULED_POD_ADD = make_event(EventResource.UNSCHEDULED_POD, ActionType.ADD)
UNSCHEDULED_POD_UPDATE = make_event(EventResource.UNSCHEDULED_POD, ActionType.UPDATE)
UNSCHEDULED_POD_DELETE = make_event(EventResource.UNSCHEDULED_POD, ActionType.DELETE)
ASSIGNED_POD_UPDATE = make_event(EventResource.POD, ActionType.UPDATE)


def event_matches(incoming: ClusterEvent, registered: ClusterEvent) -> bool:
    """Upstream ``ClusterEvent.Match`` (kept as a name for the queue; the rule lives in ClusterEvent.matches)."""
    return incoming.matches(registered)


def _raw_section(obj: Mapping[str, Any], section: str) -> Mapping[str, Any]:
    value = obj.get(section)
    return value if type(value) is dict or isinstance(value, Mapping) else {}  # decoded JSON: a dict, cheaply


def _annotations(node: Node) -> Mapping[str, Any]:
    return _raw_section(node.raw, "metadata").get("annotations") or {}


def _taints(node: Node) -> list[Any]:
    return list(_raw_section(node.raw, "spec").get("taints") or [])


_NodeExtractor = Callable[[Node, Node], ActionType | None]


def _node_unschedulable_lifted(old: Node, new: Node) -> ActionType | None:
    """spec.unschedulable true→false counts as a taint update (upstream has no separate action)."""
    return ActionType.UPDATE_NODE_TAINT if old.unschedulable and not new.unschedulable else None


def _node_allocatable(old: Node, new: Node) -> ActionType | None:
    return ActionType.UPDATE_NODE_ALLOCATABLE if old.allocatable != new.allocatable else None


def _node_labels(old: Node, new: Node) -> ActionType | None:
    return ActionType.UPDATE_NODE_LABEL if dict(old.labels) != dict(new.labels) else None


def _node_taints(old: Node, new: Node) -> ActionType | None:
    return ActionType.UPDATE_NODE_TAINT if _taints(old) != _taints(new) else None


def _node_conditions(old: Node, new: Node) -> ActionType | None:
    """Only the type→status map counts; heartbeat timestamps change constantly and mean nothing here."""
    return ActionType.UPDATE_NODE_CONDITION if dict(old.conditions) != dict(new.conditions) else None


def _node_annotations(old: Node, new: Node) -> ActionType | None:
    return ActionType.UPDATE_NODE_ANNOTATION if dict(_annotations(old)) != dict(_annotations(new)) else None


def _node_preemption_policy(old: Node, new: Node) -> ActionType | None:
    changed = _raw_section(old.raw, "spec").get("podPreemptionPolicy") != _raw_section(new.raw, "spec").get(
        "podPreemptionPolicy")
    return ActionType.UPDATE_NODE_PREEMPTION_POLICY if changed else None


def _node_declared_features(old: Node, new: Node) -> ActionType | None:
    """status.declaredFeatures (kept sorted by the kubelet, so a list comparison is exact)."""
    changed = list(_raw_section(old.raw, "status").get("declaredFeatures") or []) != list(
        _raw_section(new.raw, "status").get("declaredFeatures") or [])
    return ActionType.UPDATE_NODE_DECLARED_FEATURE if changed else None


# v1.37's order; the declared-features extractor runs with NodeDeclaredFeatures, GA and locked on.
_NODE_EXTRACTORS: tuple[_NodeExtractor, ...] = (
    _node_unschedulable_lifted,
    _node_allocatable,
    _node_labels,
    _node_taints,
    _node_conditions,
    _node_annotations,
    _node_preemption_policy,
    _node_declared_features,
)


def node_scheduling_properties_change(old: Node, new: Node) -> list[ClusterEvent]:
    """One event per changed aspect, in upstream order; empty when nothing relevant changed.

    As upstream, an uncordon that also edits taints yields UpdateNodeTaint twice.
    """
    out = []
    for extract in _NODE_EXTRACTORS:
        action = extract(old, new)
        if action is not None:
            out.append(make_event(EventResource.NODE, action))
    return out


_PodExtractor = Callable[[Pod, Pod], ActionType | None]


def _pod_labels(old: Pod, new: Pod) -> ActionType | None:
    a, b = old.labels, new.labels
    if type(a) is not dict or type(b) is not dict:  # other mappings compare as the dicts of their items
        a, b = dict(a), dict(b)
    return ActionType.UPDATE_POD_LABEL if a != b else None


def _pod_scale_down(old: Pod, new: Pod) -> ActionType | None:
    """Any request reduced (absent counts as zero, so a removed non-zero request is a reduction too)."""
    o, n = old.requests, new.requests
    if o is n:  # a view built from the previous one with the same requests
        return None
    if o.milli_cpu > n.milli_cpu or o.memory > n.memory or o.ephemeral_storage > n.ephemeral_storage:
        return ActionType.UPDATE_POD_SCALE_DOWN
    if o.scalar and any(v > n.scalar.get(k, 0) for k, v in o.scalar.items()):
        return ActionType.UPDATE_POD_SCALE_DOWN
    return None


def _pod_scale_up(old: Pod, new: Pod) -> ActionType | None:
    """Any request added or raised (v1.37; requests compared in milli-units)."""
    o, n = old.requests, new.requests
    if o is n:
        return None
    if n.milli_cpu > o.milli_cpu or n.memory > o.memory or n.ephemeral_storage > o.ephemeral_storage:
        return ActionType.UPDATE_POD_SCALE_UP
    if n.scalar and any(k not in o.scalar or v > o.scalar[k] for k, v in n.scalar.items()):
        return ActionType.UPDATE_POD_SCALE_UP
    return None


def _pod_gates_eliminated(old: Pod, new: Pod) -> ActionType | None:
    if old.scheduling_gates and not new.scheduling_gates:
        return ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    return None


def _tolerations_len(pod: Pod) -> int:
    return len(_raw_section(pod.raw, "spec").get("tolerations") or [])


def _pod_tolerations(old: Pod, new: Pod) -> ActionType | None:
    """Tolerations can only be added (API validation), so a length change is the whole test."""
    return ActionType.UPDATE_POD_TOLERATION if _tolerations_len(old) != _tolerations_len(new) else None


def _claim_status(pod: Pod) -> tuple[Any, Any]:
    status = _raw_section(pod.raw, "status")
    return status.get("resourceClaimStatuses") or [], status.get("extendedResourceClaimStatus")


def _pod_generated_claims(old: Pod, new: Pod) -> ActionType | None:
    changed = _claim_status(old) != _claim_status(new)
    return ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM if changed else None


_POD_EXTRACTORS: tuple[_PodExtractor, ...] = (
    _pod_labels,
    _pod_scale_down,
    _pod_scale_up,
    _pod_gates_eliminated,
    _pod_tolerations,
    _pod_generated_claims,
)


def pod_scheduling_properties_change(old: Pod, new: Pod) -> list[ClusterEvent]:
    """UpdatePodXYZ events for a pod change; the generic Update when no specific aspect changed.

    The resource is Pod (assigned) when the new object has spec.nodeName, else UnscheduledPod.
    """
    resource = EventResource.POD if new.node_name else EventResource.UNSCHEDULED_POD
    out = []
    for extract in _POD_EXTRACTORS:
        action = extract(old, new)
        if action is not None:
            out.append(make_event(resource, action))
    return out or [make_event(resource, ActionType.UPDATE)]


def as_target_pod_events(events: list[ClusterEvent]) -> list[ClusterEvent]:
    """The pending pod's own update as the queue names it (v1.37 PriorityQueue.Update: resource TargetPod,
    e.g. ``TargetPodUpdatePodLabel``, in scheduler_queue_incoming_pods_total and the in-flight events),
    where the event handler's samples say ``UnscheduledPod...``. The resource stays UnscheduledPod, which is
    what plugins here register for the pod's own changes (upstream's TargetPod registrations)."""
    return [ClusterEvent(e.resource, e.action, "TargetPod" + _ACTION_NAMES.get(e.action, str(int(e.action))))
            if e.resource == EventResource.UNSCHEDULED_POD else e for e in events]


TARGET_POD_UPDATE = as_target_pod_events([UNSCHEDULED_POD_UPDATE])[0]


def unscheduled_pod_update_events(old: Pod | None, new: Pod) -> list[ClusterEvent]:
    """The events of an update to a pending pod; none for a resync that carries the same object
    (upstream updatePodInSchedulingQueue compares resourceVersions first)."""
    if old is None:
        return [UNSCHEDULED_POD_UPDATE]
    if old.resource_version and old.resource_version == new.resource_version:
        return []
    return pod_scheduling_properties_change(old, new)


_STATUS_KEPT = ("resourceClaimStatuses", "extendedResourceClaimStatus")
_META_DROPPED = ("resourceVersion", "generation", "managedFields", "finalizers")


def _strip_for_compare(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in raw.items() if k not in ("status", "metadata")}
    meta = _raw_section(raw, "metadata")
    out["metadata"] = {k: v for k, v in meta.items() if k not in _META_DROPPED}
    status = _raw_section(raw, "status")
    out["status"] = {k: status[k] for k in _STATUS_KEPT if k in status}
    return out


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """Did the pod change in a way that may matter for scheduling (upstream isPodUpdated)?

    Status is ignored except the resource-claim fields; so are resourceVersion, generation,
    managedFields and finalizers. Used only when queueing hints are disabled.
    """
    return _strip_for_compare(old.raw) != _strip_for_compare(new.raw)
