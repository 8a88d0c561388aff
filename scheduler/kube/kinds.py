"""The kinds the scheduler lists and watches: one table from which each kind's informer (where it lives
on the API server), its cluster events (the EventResource that queueing hints register for) and its
ClusterRole rule (manifests/clusterrole.yaml, checked against this table by tests/integration/test_manifests.py)
all follow. Adding a watched kind is one row here plus, when plugins react to it, its EventResource.

Shared by the kopf wiring, the initial sync, the resync, the read-only snapshot and `simulate` (which
accepts the same kinds offline). Upstream spreads this over the informer factory, the framework's
EventResource list and the system:kube-scheduler ClusterRole.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.framework.features import Features
from scheduler.framework.types import EventResource

# The object-store key of the Workload API's PodGroups: upstream's EventResource name ("PodGroup" is Coscheduling's).
WORKLOAD_POD_GROUP_KIND = EventResource.WORKLOAD_POD_GROUP.value

# The field selector of the pod list-watch: finished pods hold no resources and are never scheduled.
NON_TERMINAL_PODS = "status.phase!=Succeeded,status.phase!=Failed"

LIST_WATCH = ("list", "watch")


@dataclass(frozen=True, slots=True)
class WatchedKind:
    """One watched kind: its API resource, the EventResource of its changes, and the verbs the
    scheduler's ClusterRole grants on it (list and watch, plus what the scheduler writes or gets)."""

    kind: str
    group: str
    version: str
    plural: str
    event: EventResource
    verbs: tuple[str, ...] = LIST_WATCH
    # Served only where its CustomResourceDefinition is installed: watched when discovery lists it.
    crd: bool = False
    # Watched only with this feature gate on (Features field name), as upstream adds the informer: the API server
    # serves the kind only with the same gate, and a scheduler with the gate off must not list it.
    gate: str = ""

    @property
    def gvr(self) -> tuple[str, str, str]:
        return self.group, self.version, self.plural

    @property
    def api_kind(self) -> str:
        """The kind as the API server names it (the object-store key may carry the group: the Workload API's
        PodGroup is "scheduling.k8s.io/PodGroup" there, to tell it from Coscheduling's)."""
        return self.kind.rpartition("/")[2]


WATCHED_KINDS: tuple[WatchedKind, ...] = (
    # Pods and nodes have their own watches (kube/podstream.py, kube/operator.py); pods' events are
    # Pod (assigned) or UnscheduledPod, derived per change in framework/events.py.
    WatchedKind("Pod", "", "v1", "pods", EventResource.POD, ("get", "list", "watch", "delete")),  # delete: preemption
    WatchedKind("Node", "", "v1", "nodes", EventResource.NODE, ("get", "list", "watch")),
    WatchedKind("Service", "", "v1", "services", EventResource.SERVICE),
    WatchedKind("ReplicaSet", "apps", "v1", "replicasets", EventResource.REPLICA_SET),
    WatchedKind("StatefulSet", "apps", "v1", "statefulsets", EventResource.STATEFUL_SET),
    WatchedKind("ReplicationController", "", "v1", "replicationcontrollers", EventResource.REPLICATION_CONTROLLER),
    WatchedKind("Namespace", "", "v1", "namespaces", EventResource.NAMESPACE),
    # update: VolumeBinding's PreBind writes claimRefs and the selected-node annotation.
    WatchedKind("PersistentVolume", "", "v1", "persistentvolumes", EventResource.PERSISTENT_VOLUME,
                ("list", "watch", "update")),
    WatchedKind("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", EventResource.PERSISTENT_VOLUME_CLAIM,
                ("list", "watch", "update")),
    WatchedKind("StorageClass", "storage.k8s.io", "v1", "storageclasses", EventResource.STORAGE_CLASS),
    WatchedKind("CSINode", "storage.k8s.io", "v1", "csinodes", EventResource.CSI_NODE),
    WatchedKind("CSIDriver", "storage.k8s.io", "v1", "csidrivers", EventResource.CSI_DRIVER),
    WatchedKind("CSIStorageCapacity", "storage.k8s.io", "v1", "csistoragecapacities",
                EventResource.CSI_STORAGE_CAPACITY),
    # NodeVolumeLimits counts CSI volumes attached to a node (upstream's CSILimits VolumeAttachment informer).
    WatchedKind("VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments", EventResource.VOLUME_ATTACHMENT),
    # DynamicResources: claims are read again on a write conflict (get) and get the finalizer (update);
    # their status subresources are written by PreBind, PostFilter and Unreserve (see the extra rules
    # in manifests/clusterrole.yaml). A pod's extended-resource claim is created at PreBind and deleted
    # by Unreserve / PostFilter (create, delete).
    WatchedKind("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", EventResource.RESOURCE_CLAIM,
                ("get", "list", "watch", "update", "create", "delete")),
    WatchedKind("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", EventResource.RESOURCE_SLICE),
    WatchedKind("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", EventResource.DEVICE_CLASS),
    WatchedKind("DeviceTaintRule", "resource.k8s.io", "v1", "devicetaintrules", EventResource.DEVICE_TAINT_RULE),
    WatchedKind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", EventResource.POD_DISRUPTION_BUDGET),
    # Coscheduling's PodGroup (scheduler-plugins' CRD; plugins/podgroup.py), read as scheduler-plugins' role does.
    WatchedKind("PodGroup", "scheduling.x-k8s.io", "v1alpha1", "podgroups", EventResource.POD_GROUP,
                ("get", "list", "watch"), crd=True),
    # The Workload API's PodGroup (GenericWorkload); its status gets the PodGroupInitiallyScheduled condition.
    # Workloads are not watched: kube-scheduler v1.37 has no Workload informer and its role grants none.
    WatchedKind(WORKLOAD_POD_GROUP_KIND, "scheduling.k8s.io", "v1beta1", "podgroups", EventResource.WORKLOAD_POD_GROUP,
                ("get", "list", "watch"), gate="enable_generic_workload"),
)


# kind -> (group, version, plural) of the objects plugins read; watched in addition to pods and nodes
# (the CRD kinds are added when served).
OBJECT_KINDS: dict[str, tuple[str, str, str]] = {
    k.kind: k.gvr for k in WATCHED_KINDS if k.kind not in ("Pod", "Node") and not k.crd and not k.gate
}


def gated_kinds(features: Features) -> dict[str, tuple[str, str, str]]:
    """The kinds watched besides OBJECT_KINDS because their feature gate is on in ``features``."""
    return {k.kind: k.gvr for k in WATCHED_KINDS if k.gate and getattr(features, k.gate)}


def watched_kind(kind: str) -> WatchedKind:
    """The table's row of ``kind`` (KeyError for a kind the scheduler does not watch)."""
    for k in WATCHED_KINDS:
        if k.kind == kind:
            return k
    raise KeyError(kind)


def collection_path(group: str, version: str, plural: str) -> str:
    """The cluster-wide collection URL path of a resource (core group under /api, others under /apis)."""
    return f"/api/{version}/{plural}" if not group else f"/apis/{group}/{version}/{plural}"
