"""Hand-made PV / PVC / StorageClass / CSINode dicts and a handle with an object store, for the volume
plugin tests (VolumeRestrictions, NoDiskConflict, NodeVolumeLimits, VolumeBinding, VolumeZone)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scheduler.cache import new_snapshot
from scheduler.cache.objects import ObjectStore
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.whatif.offline import apply_offline_update
from tests.plugins.util import FakeHandle


def claim_vol(claim: str, name: str | None = None, read_only: bool = False) -> dict[str, Any]:
    src: dict[str, Any] = {"claimName": claim}
    if read_only:
        src["readOnly"] = True
    return {"name": name or f"v-{claim}", "persistentVolumeClaim": src}


def ephemeral_vol(name: str) -> dict[str, Any]:
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}}


def gce_vol(pd: str, read_only: bool = False, name: str = "") -> dict[str, Any]:
    return {"name": name or f"gce-{pd}", "gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


def ebs_vol(volume_id: str, name: str = "") -> dict[str, Any]:
    return {"name": name or f"ebs-{volume_id}", "awsElasticBlockStore": {"volumeID": volume_id}}


def iscsi_vol(iqn: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": f"iscsi-{iqn}", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": iqn, "lun": 0,
                                            "readOnly": read_only}}


def rbd_vol(monitors: Sequence[str], image: str, pool: str | None = None, read_only: bool = False) -> dict[str, Any]:
    src: dict[str, Any] = {"monitors": list(monitors), "image": image, "readOnly": read_only}
    if pool is not None:
        src["pool"] = pool
    return {"name": f"rbd-{image}", "rbd": src}


def node_affinity(*terms: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """A PV nodeAffinity whose terms are {key: values} (In requirements, AND-ed within a term)."""
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": k, "operator": "In", "values": list(v)} for k, v in t.items()]}
                for t in terms
            ]
        }
    }


def pv(
    name: str,
    *,
    cls: str = "",
    capacity: str = "1Gi",
    modes: Sequence[str] = ("ReadWriteOnce",),
    claim: tuple[str, str, str] | None = None,
    phase: str = "Available",
    labels: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    csi: tuple[str, str] | None = None,
    source: Mapping[str, Any] | None = None,
    rv: str = "1",
    extra_spec: Mapping[str, Any] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": capacity}, "accessModes": list(modes)}
    if cls:
        spec["storageClassName"] = cls
    if claim is not None:
        ns, cname, uid = claim
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": ns, "name": cname, "uid": uid}
    if affinity is not None:
        spec["nodeAffinity"] = dict(affinity)
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    if source is not None:
        spec.update(source)
    if extra_spec:
        spec.update(extra_spec)
    m: dict[str, Any] = {"name": name, "uid": f"uid-pv-{name}", "resourceVersion": rv, "labels": dict(labels or {})}
    if deleting:
        m["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": m, "spec": spec, "status": {"phase": phase}}


def pvc(
    name: str,
    *,
    namespace: str = "default",
    cls: str | None = None,
    volume: str = "",
    bound: bool | None = None,
    request: str | None = "1Gi",
    modes: Sequence[str] = ("ReadWriteOnce",),
    annotations: Mapping[str, str] | None = None,
    rv: str = "1",
    phase: str | None = None,
    deleting: bool = False,
    owner_uid: str | None = None,
    extra_spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A claim; with `volume` it is fully bound (bind-completed) unless bound=False."""
    spec: dict[str, Any] = {"accessModes": list(modes)}
    if request is not None:
        spec["resources"] = {"requests": {"storage": request}}
    if cls is not None:
        spec["storageClassName"] = cls
    if volume:
        spec["volumeName"] = volume
    if extra_spec:
        spec.update(extra_spec)
    ann = dict(annotations or {})
    if volume and bound is not False:
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    m: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-pvc-{name}", "resourceVersion": rv,
                         "annotations": ann}
    if deleting:
        m["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if owner_uid is not None:
        m["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner_uid,
                                 "controller": True}]
    status = {"phase": phase or ("Bound" if volume and bound is not False else "Pending")}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": m, "spec": spec, "status": status}


def storage_class(
    name: str,
    provisioner: str = "kubernetes.io/no-provisioner",
    mode: str | None = "WaitForFirstConsumer",
    allowed_topologies: Sequence[Mapping[str, Sequence[str]]] | None = None,
) -> dict[str, Any]:
    sc: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": name, "resourceVersion": "1"}, "provisioner": provisioner}
    if mode is not None:
        sc["volumeBindingMode"] = mode
    if allowed_topologies is not None:
        sc["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": k, "values": list(v)} for k, v in t.items()]}
            for t in allowed_topologies
        ]
    return sc


def csi_node(
    name: str, drivers: Mapping[str, int | None], annotations: Mapping[str, str] | None = None, rv: str = "1"
) -> dict[str, Any]:
    ds = []
    for d, count in drivers.items():
        entry: dict[str, Any] = {"name": d, "nodeID": name, "topologyKeys": []}
        if count is not None:
            entry["allocatable"] = {"count": count}
        ds.append(entry)
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": name, "annotations": dict(annotations or {}), "resourceVersion": rv},
            "spec": {"drivers": ds}}


def csi_driver(name: str, storage_capacity: bool | None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if storage_capacity is not None:
        spec["storageCapacity"] = storage_capacity
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


def capacity(
    name: str, cls: str, capacity: str | None, topology: Mapping[str, str] | None, max_size: str | None = None
) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                           "metadata": {"name": name, "namespace": "kube-system"}, "storageClassName": cls}
    if capacity is not None:
        obj["capacity"] = capacity
    if max_size is not None:
        obj["maximumVolumeSize"] = max_size
    if topology is not None:
        obj["nodeTopology"] = {"matchLabels": dict(topology)}
    return obj


KIND_OF = {
    "PersistentVolume": "PersistentVolume",
    "PersistentVolumeClaim": "PersistentVolumeClaim",
    "StorageClass": "StorageClass",
    "CSINode": "CSINode",
    "CSIDriver": "CSIDriver",
    "CSIStorageCapacity": "CSIStorageCapacity",
    "VolumeAttachment": "VolumeAttachment",
}


class VolumeHandle(FakeHandle):
    """A FakeHandle with an object store, and `update_object` applied offline (PV controller emulated
    unless `controller` is False); every write is recorded in `updates`."""

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]] = (),
        nodes: Sequence[Node] = (),
        pods: Sequence[Pod] = (),
        controller: bool = True,
    ) -> None:
        super().__init__(new_snapshot(nodes, pods) if nodes else None)
        self.store = ObjectStore()
        for o in objects:
            self.store.upsert(KIND_OF[o["kind"]], o)
        self.updates: list[tuple[str, Mapping[str, Any]]] = []
        self.controller = controller
        self.deleted_pods: set[str] = set()
        self.fail_updates: str | None = None
        self.stage_errors: list[str] = []  # volume_scheduling_stage_failed operations, in order

    def objects(self) -> ObjectStore:
        return self.store

    def add(self, *objs: Mapping[str, Any]) -> None:
        for o in objs:
            self.store.upsert(KIND_OF[o["kind"]], o)

    def update_object(self, kind: str, obj: Mapping[str, Any], subresource: str = "") -> Mapping[str, Any]:
        if self.fail_updates is not None:
            raise RuntimeError(self.fail_updates)
        self.updates.append((kind, obj))
        if self.controller:
            written = apply_offline_update(self.store, kind, obj)
        else:
            new = copy.deepcopy(dict(obj))
            new["metadata"]["resourceVersion"] = str(int(new["metadata"]["resourceVersion"]) + 1)
            written = [(kind, new)]
        for k, o in written:
            self.store.upsert(k, o)
        return written[0][1]

    def pod_exists(self, pod: Pod) -> bool:
        return pod.uid not in self.deleted_pods

    def volume_scheduling_stage_failed(self, operation: str) -> None:
        self.stage_errors.append(operation)
