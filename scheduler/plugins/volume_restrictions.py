"""VolumeRestrictions (kube-scheduler v1.37
``pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go``).

Filter rejects a node where a pod already uses the same disk in a conflicting way, as Unschedulable
``node(s) had no available disk``:

* GCE PD: same ``pdName``, unless both mounts are read-only;
* AWS EBS: same ``volumeID`` (always);
* iSCSI: same ``iqn``, unless both read-only;
* Ceph RBD: at least one common monitor, same pool and image, unless both read-only.

ReadWriteOncePod: PreFilter reads every PVC the pod names (a missing one is UnschedulableAndUnresolvable
``persistentvolumeclaim "<name>" not found``) and counts how many of its ReadWriteOncePod claims are
already used by pods in the snapshot; Filter then rejects every node as Unschedulable (as upstream:
preempting the user can help) with ``node(s) unavailable due to PersistentVolumeClaim with
ReadWriteOncePod access mode already in-use by another pod``. AddPod/RemovePod adjust that count for
nominated pods and preemption victims. PreFilter returns Skip when the pod has no disk to check and no
ReadWriteOncePod claim in use.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.batch import SignsByTemplate
from scheduler.framework.interface import CycleState, Handle, PreFilterResult
from scheduler.framework.status import Status, error, skip, unresolvable, unschedulable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.pod import Pod
from scheduler.plugins.helper.volume_util import (
    READ_WRITE_ONCE_POD,
    NotFound,
    access_modes,
    claim_name_of,
    get_pvc,
    has_scheduling_volumes,
    name_of,
    namespace_of,
    pod_volumes,
)

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)

_CHECKED_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
_RBD_DEFAULT_POOL = "rbd"  # the API server defaults RBDVolumeSource.pool to "rbd"


def _src(vol: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    s = vol.get(key)
    return s if isinstance(s, Mapping) else None


def needs_restrictions_check(vol: Mapping[str, Any]) -> bool:
    """The volume is one of the four kinds whose sharing is restricted."""
    return any(_src(vol, k) is not None for k in _CHECKED_SOURCES)


def _ro(src: Mapping[str, Any]) -> bool:
    return bool(src.get("readOnly"))


def _rbd_key(src: Mapping[str, Any]) -> tuple[set[str], str, str]:
    return (
        {str(m) for m in src.get("monitors") or []},
        str(src.get("pool") or _RBD_DEFAULT_POOL),
        str(src.get("image") or ""),
    )


def is_volume_conflict(vol: Mapping[str, Any], existing_pod: Pod) -> bool:
    """Does `vol` conflict with any volume of `existing_pod` (upstream isVolumeConflict)?"""
    gce, ebs = _src(vol, "gcePersistentDisk"), _src(vol, "awsElasticBlockStore")
    iscsi, rbd = _src(vol, "iscsi"), _src(vol, "rbd")
    for ev in pod_volumes(existing_pod):
        egce = _src(ev, "gcePersistentDisk")
        if (
            gce is not None
            and egce is not None
            and gce.get("pdName") == egce.get("pdName")
            and not (_ro(gce) and _ro(egce))
        ):
            return True
        eebs = _src(ev, "awsElasticBlockStore")
        if ebs is not None and eebs is not None and ebs.get("volumeID") == eebs.get("volumeID"):
            return True
        eiscsi = _src(ev, "iscsi")
        if (
            iscsi is not None
            and eiscsi is not None
            and iscsi.get("iqn") == eiscsi.get("iqn")
            and not (_ro(iscsi) and _ro(eiscsi))
        ):
            return True
        erbd = _src(ev, "rbd")
        if rbd is not None and erbd is not None:
            mon, pool, image = _rbd_key(rbd)
            emon, epool, eimage = _rbd_key(erbd)
            if mon & emon and pool == epool and image == eimage and not (_ro(rbd) and _ro(erbd)):
                return True
    return False


def satisfy_volume_conflicts(pod: Pod, pods_on_node: Sequence[Pod]) -> bool:
    """No restricted volume of `pod` conflicts with a volume of a pod on the node."""
    for vol in pod_volumes(pod):
        if not needs_restrictions_check(vol):
            continue
        for existing in pods_on_node:
            if is_volume_conflict(vol, existing):
                return False
    return True


@dataclass(slots=True)
class _PreFilterState:
    """The pod's ReadWriteOncePod claim names and how many scheduled pods reference them."""

    rwop_claims: frozenset[str]
    conflicting_ref_count: int

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.rwop_claims, self.conflicting_ref_count)

    def update_with_pod(self, other: Pod, multiplier: int) -> None:
        n = sum(1 for v in pod_volumes(other) if claim_name_of(v) in self.rwop_claims)
        self.conflicting_ref_count += multiplier * n


class VolumeRestrictions(SignsByTemplate):
    """Disk conflicts (GCE PD, AWS EBS, iSCSI, RBD) and ReadWriteOncePod claims already in use."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable unless the pod has volumes this plugin looks at (claims, disks: shared objects)."""
        return None if has_scheduling_volumes(pod) else ()

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    # --- PreFilter ---------------------------------------------------------------------------------

    def _rwop_claims(self, pod: Pod) -> frozenset[str]:
        """Names of the pod's PVCs with the ReadWriteOncePod access mode; NotFound if one is missing."""
        out = set()
        objects = self.handle.objects()
        for vol in pod_volumes(pod):
            claim = claim_name_of(vol)
            if claim is None:
                continue
            pvc = get_pvc(objects, pod.namespace, claim)
            if READ_WRITE_ONCE_POD in access_modes(pvc):
                out.add(name_of(pvc))
        return frozenset(out)

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        volumes = pod_volumes(pod)
        if not volumes:  # most pods: nothing to check, no claim to look up (what the general path finds)
            return None, skip()
        needs_check = any(needs_restrictions_check(v) for v in volumes)
        try:
            claims = self._rwop_claims(pod)
        except NotFound as exc:
            return None, unresolvable(str(exc))
        snapshot = self.handle.snapshot()
        conflicts = sum(1 for c in claims if snapshot.is_pvc_used_by_pods(f"{pod.namespace}/{c}"))
        if not needs_check and conflicts == 0:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(claims, conflicts))
        return None, None

    def pre_filter_extensions(self) -> VolumeRestrictions:
        return self

    def _state(self, state: CycleState) -> _PreFilterState | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        return s if isinstance(s, _PreFilterState) else None

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        s = self._state(state)
        if s is None:
            return error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_add, 1)
        return None

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo) -> Status | None:
        s = self._state(state)
        if s is None:
            return error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_remove, -1)
        return None

    # --- Filter ------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not satisfy_volume_conflicts(pod, list(node_info.pods.values())):
            return unschedulable(ERR_REASON_DISK_CONFLICT)
        s = self._state(state)
        if s is None:
            return error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        if s.conflicting_ref_count > 0:
            return unschedulable(ERR_REASON_RWOP_CONFLICT)
        return None

    # --- queueing ----------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod deletions (hint), node additions (always queue), PVC creations (hint). Queueing hints
        are on, so node updates are not registered (upstream registers them only without hints)."""
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_pvc_added,
            ),
        ]

    def is_schedulable_after_pvc_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when the created claim is one the pod names (PreFilter needs it to exist)."""
        if not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        if namespace_of(new) != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        names = {claim_name_of(v) for v in pod_volumes(pod)}
        return QueueingHint.QUEUE if name_of(new) in names else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """Queue when the deleted pod (same namespace) held a conflicting disk or shares a PVC."""
        if old is None:
            return QueueingHint.QUEUE
        if old.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if not satisfy_volume_conflicts(pod, [old]):
            return QueueingHint.QUEUE
        claims = {c for c in (claim_name_of(v) for v in pod_volumes(pod)) if c is not None}
        for vol in pod_volumes(old):
            c = claim_name_of(vol)
            if c is not None and c in claims:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
