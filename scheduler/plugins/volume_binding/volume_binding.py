"""VolumeBinding (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go``); its
binder is ``binder.py`` (``pkg/scheduler/framework/plugins/volumebinding/binder.go``), its assume caches
``assume_cache.py``.

PreFilter: every claim the pod uses (PVC volumes and generic ephemeral volumes) must exist, not be lost
or being deleted, and (ephemeral) be controlled by the pod, else UnschedulableAndUnresolvable with
upstream's message (``persistentvolumeclaim "c" not found``, ``waiting for ephemeral volume controller
to create the persistentvolumeclaim "p-v"``, ``persistentvolumeclaim "c" bound to non-existent
persistentvolume "v"``, ``persistentvolumeclaim "c" is being deleted``). Skip when the pod has no claim.
Claims are split into bound ones, unbound ones whose StorageClass binds on first consumer, and unbound
immediate (or prebound) ones; any of the last kind is UnschedulableAndUnresolvable ``pod has unbound
immediate PersistentVolumeClaims``.

Filter (per node), reasons UnschedulableAndUnresolvable in this order:

* bound claims: the PV's required node affinity must match the node's labels (the PV is translated to
  CSI first for in-tree plugins migrated on the node) → ``node(s) didn't match PersistentVolume's node
  affinity``; a claim whose PV does not exist → ``node(s) unavailable due to one or more pvc(s) bound to
  non-existent pv(s)``;
* unbound delayed claims: one already annotated ``volume.kubernetes.io/selected-node`` for another node
  → ``node(s) didn't find available persistent volumes to bind``; the others, smallest request first, get
  the smallest available PV of their class that fits (size, volume mode, attributes class, selector,
  access modes, node affinity, not deleting, not chosen for another claim); the rest must be
  provisionable: the class has a provisioner other than ``kubernetes.io/no-provisioner`` and its
  allowedTopologies match the node (else the bind-conflict reason), and, when the provisioner is a
  CSIDriver with ``storageCapacity: true``, a CSIStorageCapacity of the class whose nodeTopology selects
  the node has ``maximumVolumeSize`` (or ``capacity``) at least the request → else ``node(s) did not have
  enough free storage``.

Reserve assumes the chosen bindings in in-memory assume caches (PVs with the claimRef, claims with the
selected-node annotation), so later pods do not choose the same PV; Unreserve restores them. An assumed
object is replaced by the watch's version as soon as that is newer. PreBind writes the bindings (PUT of
the PV / the claim through the handle's ``update_object``) and waits, polling every second up to
``bindTimeoutSeconds`` (600), until the claims are fully bound (``volumeName`` set and
``pv.kubernetes.io/bind-completed``), failing when the pod is deleted, the PV lost its claimRef, the
selected-node annotation was removed (provisioning failed) or a PV's node affinity does not match.

PreScore / Score: ``volume_binding_score.py`` (StorageCapacityScoring, beta and on in v1.37).
PreBindPreFlight: ``pre_bind_pre_flight`` (framework/expectation.py). Not implemented: the
scheduler_volume_* metrics.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import VolumeBindingArgs
from scheduler.framework.batch import SignsByTemplate
from scheduler.framework.interface import CycleState, Handle, PreFilterResult
from scheduler.framework.status import Status, error, skip, unresolvable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.errors import InvalidObjectError
from scheduler.model.pod import Pod
from scheduler.plugins.helper.volume_util import (
    MIGRATED_PLUGINS_ANN,
    NotFound,
    annotations_of,
    get_pvc,
    has_scheduling_volumes,
    meta,
    name_of,
    namespace_of,
    pod_claim_refs,
    pod_volumes,
    pv_capacity,
    pvc_volume_name,
    spec,
    storage_request,
    volume_is_for_pod,
)
from scheduler.plugins.volume_binding.assume_cache import BindingError
from scheduler.plugins.volume_binding.binder import PodVolumeClaims, PodVolumes, VolumeBinder, volume_limit
from scheduler.plugins.volume_binding_score import capacity_of, class_resources, volume_capacity_scorer

log = structlog.get_logger(__name__)

NAME = "VolumeBinding"
STATE_KEY = NAME

ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

# scheduler_volume_scheduling_stage_error_total{operation}: the binder stage that failed.
PREDICATE, ASSUME, BIND = "predicate", "assume", "bind"


@dataclass(slots=True)
class StateData:
    """Shared, not cloned, across CycleState clones (upstream's Clone returns the same pointer)."""

    all_bound: bool = False
    pod_volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    claims: PodVolumeClaims | None = None
    has_static_bindings: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


# --- the plugin -------------------------------------------------------------------------------------


class VolumeBinding(SignsByTemplate):
    """Binds pods' PVCs to PVs (static or by provisioning) as part of scheduling."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable unless the pod has volumes this plugin looks at (claims, disks: shared objects)."""
        return None if has_scheduling_volumes(pod) else ()

    def __init__(self, args: VolumeBindingArgs | Mapping[str, Any] | None, handle: Handle) -> None:
        self.handle = handle
        typed = plugin_args(VolumeBindingArgs, args)
        self.bind_timeout = float(typed.bind_timeout_seconds)
        self.scorer = volume_capacity_scorer(typed.shape, handle.features().enable_storage_capacity_scoring)
        self.binder = VolumeBinder(handle, self.bind_timeout)

    def _objects(self) -> Any:
        return self.handle.objects()

    # --- PreFilter ---------------------------------------------------------------------------------

    def _pod_has_pvcs(self, pod: Pod) -> tuple[bool, str | None]:
        """podHasPVCs: (has a claim, the first problem found)."""
        if not has_scheduling_volumes(pod):  # pod-local volumes alone (the token's): no claim (remembered per pod)
            return False, None
        objects = self._objects()
        has = False
        for claim, ephemeral in pod_claim_refs(pod):
            has = True
            try:
                pvc = get_pvc(objects, pod.namespace, claim)
            except NotFound as exc:
                if ephemeral:
                    return has, f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{claim}"'
                return has, str(exc)
            if (pvc.get("status") or {}).get("phase") == "Lost":
                return has, (
                    f'persistentvolumeclaim "{name_of(pvc)}" bound to non-existent persistentvolume '
                    f'"{pvc_volume_name(pvc)}"'
                )
            if meta(pvc).get("deletionTimestamp") is not None:
                return has, f'persistentvolumeclaim "{name_of(pvc)}" is being deleted'
            if ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem is not None:
                    return has, problem
        return has, None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        has, problem = self._pod_has_pvcs(pod)
        if problem is not None:
            return None, unresolvable(problem)
        if not has:
            state.write(STATE_KEY, StateData())
            return None, skip()
        try:
            claims = self.binder.get_pod_volume_claims(pod)
        except (BindingError, InvalidObjectError) as exc:
            return None, error(str(exc))
        if claims.unbound_immediate:
            return None, unresolvable(ERR_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, StateData(claims=claims))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    # --- Filter ------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, StateData):
            return error(f"reading {STATE_KEY!r} from cycleState: not found")
        node = node_info.node
        if node is None:
            return error("node not found")
        try:
            pod_vols, reasons = self.binder.find_pod_volumes(pod, data.claims or PodVolumeClaims(), node)
        except (BindingError, InvalidObjectError) as exc:
            self.handle.volume_scheduling_stage_failed(PREDICATE)
            return error(str(exc))
        if reasons:
            return unresolvable(*reasons)
        with data.lock:
            data.pod_volumes_by_node[node.name] = pod_vols
            data.has_static_bindings = data.has_static_bindings or bool(pod_vols.static_bindings)
        return None

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """v1.37's PreBindPreFlight: work to do (None) unless Reserve found every volume bound (Skip)."""
        data = state.get(STATE_KEY)
        if not isinstance(data, StateData):
            return error(f"reading {STATE_KEY!r} from cycleState: not found")
        if data.all_bound:
            return skip()
        if node_name not in data.pod_volumes_by_node:
            return error(f'no pod volume found for node "{node_name}"')
        return None

    # --- PreScore / Score (volume_binding_score.py) ------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Skip only without a scorer (StorageCapacityScoring off): with it every pod is scored."""
        if self.scorer is None:
            return skip()
        if not isinstance(state.get(STATE_KEY), StateData):
            return error(f"reading {STATE_KEY!r} from cycleState: not found")
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        data = state.get(STATE_KEY)
        if self.scorer is None:
            return 0, None
        if not isinstance(data, StateData):
            return 0, error(f"reading {STATE_KEY!r} from cycleState: not found")
        vols = data.pod_volumes_by_node.get(node_info.name)
        if vols is None:
            return 0, None
        classes = class_resources(vols.static_bindings, vols.dynamic_provisions, storage_request, pv_capacity,
                                  capacity_of)
        return self.scorer(classes), None

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """``score`` for every node; a pod without volumes to bind (the common case) scores 0 on each."""
        data = state.get(STATE_KEY)
        if self.scorer is not None and isinstance(data, StateData) and not data.pod_volumes_by_node:
            return [0] * len(nodes), None
        out: list[int] = []
        for ni in nodes:
            value, status = self.score(state, pod, ni)
            if status is not None:
                return out, status
            out.append(value)
        return out, None

    def score_extensions(self) -> None:
        return None

    # --- Reserve / Unreserve -----------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, StateData):
            return error(f"reading {STATE_KEY!r} from cycleState: not found")
        pod_vols = data.pod_volumes_by_node.get(node_name)
        if pod_vols is None:
            data.all_bound = True
            return None
        try:
            data.all_bound = self.binder.assume_pod_volumes(pod, node_name, pod_vols)
        except BindingError as exc:
            self.handle.volume_scheduling_stage_failed(ASSUME)
            return error(str(exc))
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if not isinstance(data, StateData):
            return
        pod_vols = data.pod_volumes_by_node.get(node_name)
        if pod_vols is None:
            return
        self.binder.revert_assumed_pod_volumes(pod_vols)

    # --- PreBind -----------------------------------------------------------------------------------

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, StateData):
            return error(f"reading {STATE_KEY!r} from cycleState: not found")
        if data.all_bound:
            return None
        pod_vols = data.pod_volumes_by_node.get(node_name)
        if pod_vols is None:
            return error(f'no pod volume found for node "{node_name}"')
        try:
            self.binder.bind_pod_volumes(pod, node_name, pod_vols)
        except BindingError as exc:
            self.handle.volume_scheduling_stage_failed(BIND)
            log.info("binding volumes failed", pod=pod.key, node=node_name, error=str(exc))
            return error(str(exc))
        return None

    # --- queueing ----------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As upstream with queueing hints on (node taint updates are not registered)."""
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, add_update), self.is_schedulable_after_storage_class_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, add_update), self.is_schedulable_after_pvc_change
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, add_update)),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, add_update), self.is_schedulable_after_csi_node_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_DRIVER, ActionType.UPDATE), self.is_schedulable_after_csi_driver_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_STORAGE_CAPACITY, add_update),
                self.is_schedulable_after_csi_storage_capacity_change,
            ),
        ]

    def is_schedulable_after_csi_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if old is None:
            return QueueingHint.QUEUE
        if not isinstance(old, Mapping) or not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        if annotations_of(old).get(MIGRATED_PLUGINS_ANN) != annotations_of(new).get(MIGRATED_PLUGINS_ANN):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pvc_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        if namespace_of(new) != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        names = {claim for claim, _ in pod_claim_refs(pod)}
        return QueueingHint.QUEUE if name_of(new) in names else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_storage_class_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if old is None or not isinstance(old, Mapping) or not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        # Semantic.DeepEqual: a missing and an empty list are equal
        if (old.get("allowedTopologies") or []) != (new.get("allowedTopologies") or []):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_storage_capacity_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if old is None or not isinstance(old, Mapping) or not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        old_limit, new_limit = volume_limit(old), volume_limit(new)
        if new_limit is not None and (old_limit is None or new_limit > old_limit):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_driver_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when a driver one of the pod's inline CSI volumes uses stopped tracking capacity."""
        if not isinstance(old, Mapping) or not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        for vol in pod_volumes(pod):
            csi = vol.get("csi")
            if not isinstance(csi, Mapping) or csi.get("driver") != name_of(new):
                continue
            if spec(old).get("storageCapacity") is True and spec(new).get("storageCapacity") is not True:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
