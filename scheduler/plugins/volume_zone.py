"""VolumeZone (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/volumezone/volume_zone.go``).

PreFilter collects, for every PVC volume of the pod, the zone/region labels of its bound PV (beta
``failure-domain.beta.kubernetes.io/{zone,region}`` and GA ``topology.kubernetes.io/{zone,region}``; a
value may list several zones separated by ``__``; an unparsable value is ignored). A claim without a
volume is skipped when its StorageClass binds on first consumer (VolumeBinding handles it); otherwise
PreFilter fails UnschedulableAndUnresolvable with upstream's reasons:

* ``persistentvolumeclaim "<c>" not found`` / ``persistentvolume "<v>" not found`` /
  ``storageclass.storage.k8s.io "<sc>" not found``;
* ``PersistentVolumeClaim had no name``, ``PersistentVolumeClaim had no pv name and storageClass name``,
  ``VolumeBindingMode not set for StorageClass "<sc>"``, ``PersistentVolume had no name``.

Skip when no bound PV carries such a label. Filter accepts nodes with no topology label at all
(single-zone clusters); otherwise every PV label must be present on the node (a beta PV key may be
matched by the node's GA key) with one of the PV's values, else UnschedulableAndUnresolvable
``node(s) had no available volume zone``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.batch import SignsByTemplate
from scheduler.framework.interface import CycleState, Handle, PreFilterResult
from scheduler.framework.status import Status, skip, unresolvable
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
    LABEL_REGION,
    LABEL_REGION_BETA,
    LABEL_ZONE,
    LABEL_ZONE_BETA,
    WAIT_FOR_FIRST_CONSUMER,
    NotFound,
    claim_name_of,
    get_pv,
    get_pvc,
    get_storage_class,
    has_scheduling_volumes,
    label_zones_to_set,
    labels_of,
    name_of,
    namespace_of,
    pod_volumes,
    pvc_class,
    pvc_volume_name,
)

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

TOPOLOGY_LABELS = (LABEL_ZONE_BETA, LABEL_REGION_BETA, LABEL_ZONE, LABEL_REGION)
_TO_GA = {LABEL_REGION_BETA: LABEL_REGION, LABEL_ZONE_BETA: LABEL_ZONE}


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


def pv_topologies(pv: Mapping[str, Any]) -> list[PVTopology]:
    out = []
    labels = labels_of(pv)
    for key in TOPOLOGY_LABELS:
        if key in labels:
            values = label_zones_to_set(str(labels[key]))
            if values is None:
                continue  # upstream logs and ignores an unparsable label
            out.append(PVTopology(name_of(pv), key, values))
    return out


class _Rejected(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


class VolumeZone(SignsByTemplate):
    """Bound PVs' zone/region labels must match the node's."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable unless the pod has volumes this plugin looks at (claims, disks: shared objects)."""
        return None if has_scheduling_volumes(pod) else ()

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def _topologies_of_pod(self, pod: Pod) -> list[PVTopology]:
        """getPVbyPod; raises _Rejected with upstream's status."""
        objects = self.handle.objects()
        out: list[PVTopology] = []
        for vol in pod_volumes(pod):
            claim = claim_name_of(vol)
            if claim is None:
                continue
            if not claim:
                raise _Rejected(unresolvable("PersistentVolumeClaim had no name"))
            try:
                pvc = get_pvc(objects, pod.namespace, claim)
                pv_name = pvc_volume_name(pvc)
                if not pv_name:
                    sc_name = pvc_class(pvc)
                    if not sc_name:
                        raise _Rejected(unresolvable("PersistentVolumeClaim had no pv name and storageClass name"))
                    sc = get_storage_class(objects, sc_name)
                    mode = sc.get("volumeBindingMode")
                    if mode is None:
                        raise _Rejected(unresolvable(f'VolumeBindingMode not set for StorageClass "{sc_name}"'))
                    if mode == WAIT_FOR_FIRST_CONSUMER:
                        continue
                    raise _Rejected(unresolvable("PersistentVolume had no name"))
                pv = get_pv(objects, pv_name)
            except NotFound as exc:
                raise _Rejected(unresolvable(str(exc))) from None
            out.extend(pv_topologies(pv))
        return out

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            topologies = self._topologies_of_pod(pod)
        except _Rejected as r:
            return None, r.status
        if not topologies:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, topologies)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod_volumes(pod):
            return None
        topologies = state.get(PRE_FILTER_STATE_KEY)
        if topologies is None:
            try:
                topologies = self._topologies_of_pod(pod)
            except _Rejected as r:
                return r.status
        node = node_info.node
        labels = node.labels if node is not None else {}
        if not any(k in labels for k in TOPOLOGY_LABELS):
            return None
        for t in topologies:
            v = labels.get(t.key)
            if v is None:
                v = labels.get(_TO_GA.get(t.key, t.key))
            if v is None or v not in t.values:
                return unresolvable(ERR_REASON_CONFLICT)
        return None

    # --- queueing ----------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD), self.is_schedulable_after_storage_class_added
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_pv_change,
            ),
        ]

    def is_schedulable_after_pvc_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Mapping) or namespace_of(new) != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        names = {claim_name_of(v) for v in pod_volumes(pod)} - {None}
        return QueueingHint.QUEUE if name_of(new) in names else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_storage_class_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        wffc = new.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER
        return QueueingHint.QUEUE if wffc else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pv_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if old is None:
            return QueueingHint.QUEUE
        if not isinstance(new, Mapping) or not isinstance(old, Mapping):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if pv_topologies(old) != pv_topologies(new) else QueueingHint.QUEUE_SKIP
