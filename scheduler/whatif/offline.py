"""Offline stand-ins for the API server and the controllers, injected by `simulate` (and tests).

The scheduler core is the live one; only what it is given differs: bindings and events are recorded
(RecordingBinder, RecordingEventSink), and OfflineWriter answers the writes the core makes (preemption,
VolumeBinding) by delivering at once the watch events the API server, the PV controller and a
provisioner would cause.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.edge import RelatedObject
from scheduler.eventhandlers import ADDED, DELETED, MODIFIED
from scheduler.framework.fit_error import truncate_message as truncate_note
from scheduler.framework.interface import ObjectLister
from scheduler.model.apierrors import NotFoundError
from scheduler.model.pod import Pod
from scheduler.plugins.helper.volume_util import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    Obj,
    access_modes,
    annotations_of,
    meta,
    name_of,
    namespace_of,
    pvc_class,
    pvc_volume_name,
    spec,
)
from scheduler.scheduler import Scheduler


@dataclass(slots=True)
class RecordingBinder:
    """Records bindings instead of posting them; `simulate` confirms them into the cache itself."""

    bindings: list[tuple[str, str]] = field(default_factory=list)

    def bind(self, pod: Pod, node_name: str) -> None:
        self.bindings.append((pod.key, node_name))


class RecordingEventSink:
    """The EventRecorder of simulate and tests: keeps events and conditions in memory."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []  # (pod key, type, reason, note)
        self.conditions: dict[str, tuple[str, str]] = {}
        self.nominated: dict[str, str] = {}  # pod key -> nominatedNodeName written ("" = cleared)

    def event(
        self, pod: Pod, type_: str, reason: str, action: str, note: str, controller: str,
        related: Pod | RelatedObject | None = None,
    ) -> None:
        self.events.append((pod.key, type_, reason, truncate_note(note)))

    def pod_condition(self, pod: Pod, reason: str, message: str, nominated_node: str | None) -> None:
        self.conditions[pod.key] = (reason, message)
        if nominated_node is not None:
            self.nominated[pod.key] = nominated_node


class OfflineWriter:
    """The APIWriter of simulate: each write is applied and its watch events are delivered to the
    scheduler at once. A deleted pod goes away; a status patch merges into the pod (conditions by
    type, a null field removed); a PV or PVC update is followed by what the PV controller and a
    provisioner would write (``apply_offline_update``). Call ``connect`` with the scheduler first."""

    def __init__(self) -> None:
        self._sched: Scheduler | None = None
        self._created = 0

    def connect(self, sched: Scheduler) -> None:
        self._sched = sched

    def _scheduler(self) -> Scheduler:
        if self._sched is None:
            raise RuntimeError("OfflineWriter.connect was not called")
        return self._sched

    def _pod(self, namespace: str, name: str) -> Mapping[str, Any]:
        obj = self._scheduler().last_seen_pod(namespace, name)
        if obj is None:
            raise NotFoundError(f'pods "{name}" not found')
        return obj

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        obj = self._pod(namespace, name)
        self._scheduler().on_pod_event(MODIFIED, {**_bumped(obj), "status": merged_status(obj, patch)})

    def delete_pod(self, namespace: str, name: str) -> None:
        self._scheduler().on_pod_event(DELETED, self._pod(namespace, name))

    def update_object(self, kind: str, obj: Mapping[str, Any], subresource: str = "") -> Mapping[str, Any]:
        """The write as the API server would store it (a status update carries the whole object here,
        so ``subresource`` changes nothing), then what controllers would write in reply."""
        del subresource
        sched = self._scheduler()
        written = apply_offline_update(sched.objects, kind, obj)
        for k, o in written:
            sched.on_object_event(k, MODIFIED, o)
        return written[0][1]

    def get_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any]:
        obj = self._scheduler().objects.get(kind, namespace, name)
        if obj is None:
            raise NotFoundError(f'{kind.lower()}s "{name}" not found')
        return obj

    def create_object(self, kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """The object as the API server would create it: named from ``generateName`` (a counter
        stands in for the random suffix), a uid, resourceVersion 1."""
        self._created += 1
        out = copy.deepcopy(dict(obj))
        m = out.setdefault("metadata", {})
        if not m.get("name"):
            m["name"] = f"{m.get('generateName', '')}{self._created:05d}"
        m["uid"] = f"sim-{kind.lower()}-{self._created}"
        m["resourceVersion"] = "1"
        self._scheduler().on_object_event(kind, ADDED, out)
        return out

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        self._scheduler().on_object_event(kind, DELETED, self.get_object(kind, namespace, name))

    def patch_object_status(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """The one status patch plugins make: ``reservedFor`` entries deleted by uid (``$patch: delete``)."""
        obj = self.get_object(kind, namespace, name)
        gone = {str(e.get("uid")) for e in (patch.get("status") or {}).get("reservedFor") or []
                if isinstance(e, Mapping) and e.get("$patch") == "delete"}
        written = _bumped(obj)
        status = written.setdefault("status", {})
        status["reservedFor"] = [r for r in status.get("reservedFor") or [] if str(r.get("uid")) not in gone]
        if not status["reservedFor"]:
            del status["reservedFor"]
        self._scheduler().on_object_event(kind, MODIFIED, written)


def merged_status(obj: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``obj``'s status after a strategic-merge status patch as the API server applies it to pods and
    PodGroups: conditions merged by type, a null field removed, any other field replaced."""
    status = dict(obj.get("status") or {})
    for key, value in (patch.get("status") or {}).items():
        if key == "conditions":
            status[key] = _merge_conditions(status.get(key) or [], value)
        elif value is None:
            status.pop(key, None)
        else:
            status[key] = value
    return status


def _merge_conditions(current: list[Mapping[str, Any]], patch: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Strategic merge of conditions: by type, a patched one replaces the fields it names."""
    out = [dict(c) for c in current]
    for p in patch:
        for c in out:
            if c.get("type") == p.get("type"):
                c.update(p)
                break
        else:
            out.append(dict(p))
    return out


def _bumped(obj: Obj) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    m = out.setdefault("metadata", {})
    try:
        m["resourceVersion"] = str(int(str(m.get("resourceVersion") or 0)) + 1)
    except ValueError:
        m["resourceVersion"] = "1"
    return out


def apply_offline_update(objects: ObjectLister, kind: str, obj: Obj) -> list[tuple[str, dict[str, Any]]]:
    """What an update of a PV or PVC leads to when no API server, PV controller or provisioner runs
    (``simulate``): the written object (resourceVersion + 1) followed by the objects the PV controller
    and an external provisioner would write to finish the binding. Returns (kind, object) pairs in the
    order a watch would deliver them; the caller stores them.

    * A PV prebound to a claim (spec.claimRef set by PreBind) becomes Bound and the claim gets
      volumeName, the bind-completed annotation and phase Bound.
    * A claim annotated with selected-node gets a new PV ``pvc-<claim uid>`` of the claim's class and
      requested size, bound to it (a provisioner that always succeeds, with no topology).
    """
    written = _bumped(obj)
    out: list[tuple[str, dict[str, Any]]] = [(kind, written)]
    if kind == "PersistentVolume":
        ref = spec(written).get("claimRef")
        if not isinstance(ref, Mapping):
            return out
        pvc = objects.get("PersistentVolumeClaim", str(ref.get("namespace") or ""), str(ref.get("name") or ""))
        if pvc is None:
            return out
        pv = copy.deepcopy(written)
        pv["metadata"]["resourceVersion"] = str(int(pv["metadata"]["resourceVersion"]) + 1)
        pv.setdefault("status", {})["phase"] = "Bound"
        out[0] = (kind, pv)
        out.append(("PersistentVolumeClaim", _bound_claim(pvc, name_of(pv))))
        return out
    selected = annotations_of(written).get(ANN_SELECTED_NODE)
    if kind == "PersistentVolumeClaim" and selected and not pvc_volume_name(written):
        uid = meta(written).get("uid") or f"{namespace_of(written)}-{name_of(written)}"
        pv_name = f"pvc-{uid}"
        size = ((spec(written).get("resources") or {}).get("requests") or {}).get("storage") or "0"
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "uid": f"sim-pv-{uid}", "resourceVersion": "1",
                         "annotations": {"pv.kubernetes.io/provisioned-by": "py-scheduler-simulate"}},
            "spec": {
                "capacity": {"storage": size},
                "accessModes": access_modes(written),
                "storageClassName": pvc_class(written),
                "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": namespace_of(written),
                             "name": name_of(written), "uid": meta(written).get("uid") or ""},
                "persistentVolumeReclaimPolicy": "Delete",
            },
            "status": {"phase": "Bound"},
        }
        out.append(("PersistentVolume", pv))
        out.append(("PersistentVolumeClaim", _bound_claim(written, pv_name)))
    return out


def _bound_claim(pvc: Obj, pv_name: str) -> dict[str, Any]:
    out = _bumped(pvc)
    out.setdefault("spec", {})["volumeName"] = pv_name
    ann = out["metadata"].setdefault("annotations", {})
    ann[ANN_BIND_COMPLETED] = "yes"
    ann.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
    out.setdefault("status", {})["phase"] = "Bound"
    return out
