"""The kinds the scheduler lists and watches, and where they live on the API server.

Shared by the kopf wiring, the initial sync and `simulate` (which accepts the same kinds offline).
"""

from __future__ import annotations

# The field selector of the pod list-watch: finished pods hold no resources and are never scheduled.
NON_TERMINAL_PODS = "status.phase!=Succeeded,status.phase!=Failed"

# kind -> (group, version, plural) of the objects plugins read; watched in addition to pods and nodes.
OBJECT_KINDS: dict[str, tuple[str, str, str]] = {
    "Service": ("", "v1", "services"),
    "ReplicaSet": ("apps", "v1", "replicasets"),
    "StatefulSet": ("apps", "v1", "statefulsets"),
    "ReplicationController": ("", "v1", "replicationcontrollers"),
    "Namespace": ("", "v1", "namespaces"),
    "PersistentVolume": ("", "v1", "persistentvolumes"),
    "PersistentVolumeClaim": ("", "v1", "persistentvolumeclaims"),
    "StorageClass": ("storage.k8s.io", "v1", "storageclasses"),
    "CSINode": ("storage.k8s.io", "v1", "csinodes"),
    "CSIDriver": ("storage.k8s.io", "v1", "csidrivers"),
    "CSIStorageCapacity": ("storage.k8s.io", "v1", "csistoragecapacities"),
    "PodDisruptionBudget": ("policy", "v1", "poddisruptionbudgets"),
}


def collection_path(group: str, version: str, plural: str) -> str:
    """The cluster-wide collection URL path of a resource (core group under /api, others under /apis)."""
    return f"/api/{version}/{plural}" if not group else f"/apis/{group}/{version}/{plural}"
