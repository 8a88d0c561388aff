"""NodeInfo, cluster events and queueing hints: the data the cache, queue and plugins share."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from enum import Enum, IntFlag, StrEnum
from typing import Any

from scheduler.model.node import Node
from scheduler.model.pod import HostPort, Pod
from scheduler.model.resources import Resource

_generation = itertools.count(1)


def next_generation() -> int:
    """One global counter (never reused), so a deleted and recreated node is still seen as new."""
    return next(_generation)


@dataclass(slots=True)
class ImageStateSummary:
    """Size of an image and on how many nodes it is; shared by every NodeInfo holding it."""

    size: int
    num_nodes: int = 0


_new = object.__new__


@dataclass(slots=True, eq=False)
class NodeInfo:
    """Aggregated state of one node, as upstream's framework.NodeInfo."""

    node: Node | None = None
    pods: dict[str, Pod] = field(default_factory=dict)  # by pod uid
    pods_with_affinity: dict[str, Pod] = field(default_factory=dict)
    pods_with_required_anti_affinity: dict[str, Pod] = field(default_factory=dict)
    used_ports: dict[str, set[tuple[str, int]]] = field(default_factory=dict)  # host ip -> {(proto, port)}
    requested: Resource = field(default_factory=Resource)
    non_zero_requested: Resource = field(default_factory=Resource)
    allocatable: Resource = field(default_factory=Resource)
    image_states: dict[str, ImageStateSummary] = field(default_factory=dict)
    pvc_ref_counts: dict[str, int] = field(default_factory=dict)  # "ns/claim" -> pods using it
    generation: int = field(default_factory=next_generation)
    # The node's name ("" without a node): a plain attribute, read hundreds of times per cycle.
    name: str = field(default="", init=False)

    def __post_init__(self) -> None:
        self.name = self.node.name if self.node is not None else ""

    def set_node(self, node: Node) -> None:
        self.node = node
        self.name = node.name
        self.allocatable = node.allocatable
        self.generation = next_generation()

    def remove_node(self) -> None:
        self.node = None
        self.name = ""
        self.generation = next_generation()

    def add_pod(self, pod: Pod) -> None:
        """Account a pod: requests, non-zero requests, ports, affinity lists, PVC references."""
        self.pods[pod.uid] = pod
        if pod.has_affinity:
            self.pods_with_affinity[pod.uid] = pod
        if pod.has_required_anti_affinity:
            self.pods_with_required_anti_affinity[pod.uid] = pod
        self.requested.add(pod.requests)
        self.non_zero_requested.milli_cpu += pod.non_zero_milli_cpu
        self.non_zero_requested.memory += pod.non_zero_memory
        for hp in pod.host_ports:
            self.used_ports.setdefault(hp.ip, set()).add((hp.protocol, hp.port))
        for claim in pod.pvc_names:
            k = f"{pod.namespace}/{claim}"
            self.pvc_ref_counts[k] = self.pvc_ref_counts.get(k, 0) + 1
        self.generation = next_generation()

    def remove_pod(self, pod: Pod) -> bool:
        """Undo add_pod for the pod with this uid; False if it was not here."""
        old = self.pods.pop(pod.uid, None)
        if old is None:
            return False
        self.pods_with_affinity.pop(old.uid, None)
        self.pods_with_required_anti_affinity.pop(old.uid, None)
        self.requested.sub(old.requests)
        self.non_zero_requested.milli_cpu -= old.non_zero_milli_cpu
        self.non_zero_requested.memory -= old.non_zero_memory
        for hp in old.host_ports:
            ports = self.used_ports.get(hp.ip)
            if ports is not None:
                ports.discard((hp.protocol, hp.port))
                if not ports:
                    del self.used_ports[hp.ip]
        for claim in old.pvc_names:
            k = f"{old.namespace}/{claim}"
            n = self.pvc_ref_counts.get(k, 0) - 1
            if n > 0:
                self.pvc_ref_counts[k] = n
            else:
                self.pvc_ref_counts.pop(k, None)
        self.generation = next_generation()
        return True

    def replace_pod(self, pod: Pod) -> bool:
        """remove_pod then add_pod of the same pod's new version, where the aggregates cannot change: the
        version held shares the new one's requests (a view built from the previous one) and neither holds
        host ports or PVCs (whose maps remove-then-add would reorder). The pod dicts keep remove-then-add's
        order (the pod moves last). False, with nothing changed, where that does not hold."""
        uid = pod.uid
        held = self.pods.get(uid)
        if (held is None or held.requests is not pod.requests or held.host_ports or pod.host_ports
                or held.pvc_names or pod.pvc_names or held.non_zero_milli_cpu != pod.non_zero_milli_cpu
                or held.non_zero_memory != pod.non_zero_memory):
            return False
        del self.pods[uid]
        self.pods[uid] = pod
        self.pods_with_affinity.pop(uid, None)
        if pod.has_affinity:
            self.pods_with_affinity[uid] = pod
        self.pods_with_required_anti_affinity.pop(uid, None)
        if pod.has_required_anti_affinity:
            self.pods_with_required_anti_affinity[uid] = pod
        self.generation = next_generation()
        return True

    def port_conflict(self, want: HostPort) -> bool:
        """HostPortInfo.CheckConflict: 0.0.0.0 conflicts with every IP for that protocol/port."""
        key = (want.protocol, want.port)
        if want.ip == "0.0.0.0":
            return any(key in ports for ports in self.used_ports.values())
        return key in self.used_ports.get(want.ip, ()) or key in self.used_ports.get("0.0.0.0", ())

    def clone(self) -> NodeInfo:
        """A copy safe to mutate (two-pass nominated filtering, preemption dry runs, and the snapshot's copy
        of every changed node, ~3 a cycle). Filled slot by slot: the dataclass __init__ with keywords and its
        __post_init__ cost twice as much; tests/framework/test_types.py checks that every field is copied."""
        c = _new(NodeInfo)
        c.node = self.node
        c.pods = self.pods.copy()
        c.pods_with_affinity = self.pods_with_affinity.copy()
        c.pods_with_required_anti_affinity = self.pods_with_required_anti_affinity.copy()
        c.used_ports = {ip: set(p) for ip, p in self.used_ports.items()}
        c.requested = self.requested.copy()
        c.non_zero_requested = self.non_zero_requested.copy()
        c.allocatable = self.allocatable
        c.image_states = self.image_states
        c.pvc_ref_counts = self.pvc_ref_counts.copy()
        c.generation = self.generation
        c.name = self.name
        return c


class EventResource(StrEnum):
    POD = "Pod"  # an assigned (bound or assumed) pod
    UNSCHEDULED_POD = "UnscheduledPod"  # the pending pod itself
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    VOLUME_ATTACHMENT = "VolumeAttachment"
    SERVICE = "Service"
    REPLICA_SET = "ReplicaSet"
    STATEFUL_SET = "StatefulSet"
    REPLICATION_CONTROLLER = "ReplicationController"
    NAMESPACE = "Namespace"
    POD_DISRUPTION_BUDGET = "PodDisruptionBudget"
    POD_GROUP = "PodGroup"  # scheduling.x-k8s.io PodGroup (Coscheduling)
    WORKLOAD_POD_GROUP = "scheduling.k8s.io/PodGroup"  # the Workload API's PodGroup (GenericWorkload)
    RESOURCE_CLAIM = "ResourceClaim"  # resource.k8s.io (DynamicResources)
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    DEVICE_TAINT_RULE = "DeviceTaintRule"
    WILDCARD = "*"


class ActionType(IntFlag):
    # In upstream's (v1.37) order: matching compares values, so a more specific update has a lower one.
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_NODE_DECLARED_FEATURE = 128
    UPDATE_NODE_PREEMPTION_POLICY = 256
    UPDATE_POD_LABEL = 512
    UPDATE_POD_SCALE_DOWN = 1024
    UPDATE_POD_SCALE_UP = 2048
    UPDATE_POD_TOLERATION = 4096
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 8192
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 16384
    UPDATE_OTHER = 32768  # any other update (generic "Update" for non-pod, non-node kinds)
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION | UPDATE_NODE_DECLARED_FEATURE | UPDATE_NODE_PREEMPTION_POLICY
        | UPDATE_POD_LABEL | UPDATE_POD_SCALE_DOWN | UPDATE_POD_SCALE_UP | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED | UPDATE_POD_GENERATED_RESOURCE_CLAIM | UPDATE_OTHER
    )
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A kind of change in the cluster; `label` names it in metrics and logs (e.g. NodeAdd)."""

    resource: EventResource
    action: ActionType
    label: str = ""

    def matches(self, registered: ClusterEvent) -> bool:
        """Does this (received) event fall under a plugin's registered event?"""
        if registered.resource == EventResource.WILDCARD and registered.action == ActionType.ALL:
            return True
        if registered.resource not in (EventResource.WILDCARD, self.resource) and not (
            # Upstream's Pod resource covers assigned pods and the pending pod's own updates.
            registered.resource == EventResource.POD and self.resource == EventResource.UNSCHEDULED_POD
        ):
            return False
        # The incoming event must be as specific as the registered one or more (a generic Update does
        # not match a plugin registered only for UpdatePodLabel); bit values follow upstream's order.
        return bool(registered.action & self.action) and self.action <= registered.action

    @property
    def is_wildcard(self) -> bool:
        return self.resource == EventResource.WILDCARD


class QueueingHint(Enum):
    QUEUE_SKIP = 0
    QUEUE = 1


# (pending pod, old object, new object) -> QueueingHint; an exception counts as QUEUE.
QueueingHintFn = Any


# (pending pod) -> the keys the queue indexes it under, e.g. the namespace/name of each claim it names.
PodKeysFn = Any
# (old object, new object) -> the keys of the pods the event may concern; None: any pod.
EventKeysFn = Any


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A registered event and its queueing hint.

    ``pod_keys`` and ``event_keys`` (both or neither) let the queue ask the hint only for the pods that
    can get Queue (upstream's PreQueueingHint with its pod index): the hint must return QueueSkip for
    a pod none of whose ``pod_keys`` is among the event's ``event_keys``, unless those are None. That
    is a promise about the hint, so decisions stay the hint's own.
    """

    event: ClusterEvent
    hint: QueueingHintFn | None = None  # None: always queue
    pod_keys: PodKeysFn | None = None
    event_keys: EventKeysFn | None = None


# Well-known events (labels as upstream's metrics name them).
NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(EventResource.NODE, ActionType.DELETE, "NodeDelete")
ASSIGNED_POD_ADD = ClusterEvent(EventResource.POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_DELETE = ClusterEvent(EventResource.POD, ActionType.DELETE, "AssignedPodDelete")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "ForceActivate")
