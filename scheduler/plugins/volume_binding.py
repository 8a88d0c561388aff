"""VolumeBinding (kube-scheduler v1.34 ``volumebinding/{volume_binding,binder,assume_cache}.go``).

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

Not implemented: Score (only with the alpha StorageCapacityScoring gate, off by default), the
PreBindPreFlight extension point (the framework has none; PreBind itself returns at once when all is
bound) and the scheduler_volume_* metrics.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import structlog

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import VolumeBindingArgs
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
from scheduler.model.labels import parse_label_selector
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.quantity import parse as parse_quantity
from scheduler.plugins.helper.volume_util import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    MIGRATED_PLUGINS_ANN,
    NOT_SUPPORTED_PROVISIONER,
    PORTWORX,
    WAIT_FOR_FIRST_CONSUMER,
    NotFound,
    Obj,
    TranslationError,
    annotations_of,
    check_access_modes,
    check_node_affinity,
    claim_name_of,
    ephemeral_claim_name,
    get_csi_node,
    get_pvc,
    has_scheduling_volumes,
    in_tree_plugin_of_pv,
    is_ephemeral,
    is_pvc_fully_bound,
    is_volume_bound_to_claim,
    labels_of,
    match_topology_selector_terms,
    meta,
    migrated_plugins,
    name_of,
    namespace_of,
    pod_claim_refs,
    pod_volumes,
    pv_capacity,
    pv_class,
    pvc_class,
    pvc_volume_name,
    resource_version,
    spec,
    storage_request,
    translate_pv_to_csi,
    volume_is_for_pod,
    volume_mode_mismatch,
)

log = structlog.get_logger(__name__)

NAME = "VolumeBinding"
STATE_KEY = NAME

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

POLL_INTERVAL_SECONDS = 1.0

# scheduler_volume_scheduling_stage_error_total{operation}: the binder stage that failed.
PREDICATE, ASSUME, BIND = "predicate", "assume", "bind"

_PV = "v1.PersistentVolume"
_PVC = "v1.PersistentVolumeClaim"


class BindingError(Exception):
    """An error that fails the extension point (an Error status upstream)."""


# --- assume caches --------------------------------------------------------------------------------


class AssumeCache:
    """PVs or PVCs as the watch delivered them (the object store), overlaid with assumed versions.

    An assumed object hides the stored one while the stored one is not newer (by resourceVersion);
    once the watch delivers a newer version (e.g. the result of PreBind's write), that version wins and
    the assumption is dropped, as upstream's AssumeCache replaces latestObj on a newer informer event.
    """

    def __init__(self, kind: str, description: str, objects: Callable[[], Any]) -> None:
        self.kind = kind
        self.description = description
        self._objects = objects
        self._assumed: dict[str, Obj] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _split(key: str) -> tuple[str, str]:
        ns, sep, name = key.partition("/")
        return (ns, name) if sep else ("", key)

    @staticmethod
    def key_of(obj: Obj) -> str:
        ns = namespace_of(obj)
        return f"{ns}/{name_of(obj)}" if ns else name_of(obj)

    def _api(self, key: str) -> Obj | None:
        objects = self._objects()
        if objects is None:
            return None
        ns, name = self._split(key)
        obj: Obj | None = objects.get(self.kind, ns, name)
        return obj

    def _not_found(self, key: str) -> BindingError:
        return BindingError(f'could not find {self.description} "{key}"')

    def _latest(self, key: str, api: Obj) -> Obj:
        """Under the lock: the assumed version while the stored one is not newer."""
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        try:
            stale = resource_version(api) > resource_version(assumed)
        except ValueError:
            stale = True
        if stale:
            del self._assumed[key]
            return api
        return assumed

    def get(self, key: str) -> Obj:
        api = self._api(key)
        with self._lock:
            if api is None:
                self._assumed.pop(key, None)
                raise self._not_found(key)
            return self._latest(key, api)

    def get_api(self, key: str) -> Obj:
        api = self._api(key)
        if api is None:
            raise self._not_found(key)
        return api

    def list(self) -> list[Obj]:
        objects = self._objects()
        if objects is None:
            return []
        stored = list(objects.list(self.kind))
        with self._lock:
            return [self._latest(self.key_of(o), o) for o in stored]

    def assume(self, obj: Obj) -> None:
        key = self.key_of(obj)
        api = self._api(key)
        with self._lock:
            if api is None:
                raise self._not_found(key)
            stored = self._latest(key, api)
            try:
                new_v, stored_v = resource_version(obj), resource_version(stored)
            except ValueError as exc:
                raise BindingError(f"error parsing ResourceVersion for {self.description} {key!r}: {exc}") from None
            if new_v < stored_v:
                raise BindingError(
                    f'{self.description} "{key}" is out of sync (stored: {stored_v}, assume: {new_v})'
                )
            self._assumed[key] = obj

    def restore(self, key: str) -> None:
        with self._lock:
            self._assumed.pop(key, None)

    def assumed_count(self) -> int:
        with self._lock:
            return len(self._assumed)


# --- per-cycle data -------------------------------------------------------------------------------


@dataclass(slots=True)
class BindingInfo:
    pvc: Obj
    pv: Obj


@dataclass(slots=True)
class DynamicProvision:
    pvc: Obj
    node_capacity: Obj | None = None


@dataclass(slots=True)
class PodVolumes:
    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[DynamicProvision] = field(default_factory=list)


@dataclass(slots=True)
class PodVolumeClaims:
    bound: list[Obj] = field(default_factory=list)
    unbound_delay_binding: list[Obj] = field(default_factory=list)
    unbound_immediate: list[Obj] = field(default_factory=list)
    unbound_volumes_delay_binding: dict[str, list[Obj]] = field(default_factory=dict)


@dataclass(slots=True)
class StateData:
    """Shared, not cloned, across CycleState clones (upstream's Clone returns the same pointer)."""

    all_bound: bool = False
    pod_volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    claims: PodVolumeClaims | None = None
    has_static_bindings: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


# --- helpers ----------------------------------------------------------------------------------------


def _request(pvc: Obj) -> Decimal:
    r = storage_request(pvc)
    return r if r is not None else Decimal(0)


def _pvc_key(pvc: Obj) -> str:
    return f"{namespace_of(pvc)}/{name_of(pvc)}"


def find_matching_volume(
    claim: Obj, volumes: Sequence[Obj], node: Node | None, excluded: Mapping[str, Obj], delay_binding: bool
) -> Obj | None:
    """volume.FindMatchingVolume with the VolumeAttributesClass gate on (GA in 1.34)."""
    requested = _request(claim)
    requested_class = pvc_class(claim)
    selector = None
    if spec(claim).get("selector") is not None:
        try:
            selector = parse_label_selector(spec(claim)["selector"], f"claim {_pvc_key(claim)}", "spec.selector")
        except InvalidObjectError as exc:
            raise BindingError(f"error creating internal label selector for claim: {_pvc_key(claim)}: {exc}") from None
    smallest: Obj | None = None
    smallest_qty = Decimal(0)
    claim_vac = spec(claim).get("volumeAttributesClassName") or ""
    for volume in volumes:
        if name_of(volume) in excluded:
            continue
        if spec(volume).get("claimRef") is not None and not is_volume_bound_to_claim(volume, claim):
            continue
        qty = pv_capacity(volume)
        if qty < requested:
            continue
        if volume_mode_mismatch(claim, volume):
            continue
        if claim_vac != (spec(volume).get("volumeAttributesClassName") or ""):
            continue
        if meta(volume).get("deletionTimestamp") is not None:
            continue
        affinity_ok = node is None or check_node_affinity(volume, node.labels)
        if is_volume_bound_to_claim(volume, claim):
            return volume if affinity_ok else None
        if node is None and delay_binding:
            continue
        if (volume.get("status") or {}).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(labels_of(volume)):
            continue
        if pv_class(volume) != requested_class:
            continue
        if not affinity_ok:
            continue
        if node is not None and not check_access_modes(claim, volume):
            continue
        if smallest is None or smallest_qty > qty:
            smallest, smallest_qty = volume, qty
    return smallest


def _volume_limit(capacity: Obj) -> Decimal | None:
    """maximumVolumeSize when set (more precise), else capacity."""
    for key in ("maximumVolumeSize", "capacity"):
        v = capacity.get(key)
        if v is not None:
            return parse_quantity(v, f"csistoragecapacity {namespace_of(capacity)}/{name_of(capacity)}", key)
    return None


def _object_reference(pvc: Obj) -> dict[str, Any]:
    """reference.GetReference for a claim: what the PV's spec.claimRef is set to."""
    m = meta(pvc)
    ref = {
        "kind": "PersistentVolumeClaim",
        "namespace": m.get("namespace") or "",
        "name": m.get("name") or "",
        "uid": m.get("uid") or "",
        "apiVersion": "v1",
        "resourceVersion": m.get("resourceVersion") or "",
    }
    return {k: v for k, v in ref.items() if v}


def bind_volume_to_claim(pv: Obj, pvc: Obj) -> tuple[dict[str, Any], bool]:
    """volume.GetBindVolumeToClaim: a copy of the PV pointing at the claim, and whether it changed."""
    dirty = False
    set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    out: dict[str, Any] = {**pv, "metadata": dict(meta(pv)), "spec": dict(spec(pv))}
    ref = spec(pv).get("claimRef")
    ref = ref if isinstance(ref, Mapping) else None
    if (
        ref is None
        or ref.get("name") != name_of(pvc)
        or ref.get("namespace") != namespace_of(pvc)
        or (ref.get("uid") or "") != (meta(pvc).get("uid") or "")
    ):
        out["spec"]["claimRef"] = _object_reference(pvc)
        dirty = True
    if set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in annotations_of(pv):
        out["metadata"]["annotations"] = {**annotations_of(pv), ANN_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    return out, dirty


def _with_selected_node(pvc: Obj, node_name: str) -> dict[str, Any]:
    return {
        **pvc,
        "metadata": {**meta(pvc), "annotations": {**annotations_of(pvc), ANN_SELECTED_NODE: node_name}},
    }


def _is_migration_on_for_plugin(plugin_name: str) -> bool:
    """isCSIMigrationOnForPlugin (CSIMigrationPortworx is locked on in 1.34)."""
    return plugin_name in ("kubernetes.io/aws-ebs", "kubernetes.io/gce-pd", "kubernetes.io/azure-disk",
                           "kubernetes.io/cinder", PORTWORX)


def try_translate_pv_to_csi(pv: Obj, csi_node: Obj | None) -> Obj:
    """The PV translated to CSI when its plugin is migrated on the node (by the CSINode annotation)."""
    plugin = in_tree_plugin_of_pv(pv)
    if plugin is None or not _is_migration_on_for_plugin(plugin.in_tree_name):
        return pv
    if plugin.in_tree_name not in migrated_plugins(csi_node):
        return pv
    try:
        translated, _, _ = translate_pv_to_csi(pv)
    except TranslationError as exc:
        raise BindingError(f"could not translate pv: {exc}") from None
    return translated


# --- the plugin -------------------------------------------------------------------------------------


class VolumeBinding:
    """Binds pods' PVCs to PVs (static or by provisioning) as part of scheduling."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable unless the pod has volumes this plugin looks at (claims, disks: shared objects)."""
        return None if has_scheduling_volumes(pod) else ()

    def __init__(self, args: VolumeBindingArgs | Mapping[str, Any] | None, handle: Handle) -> None:
        self.handle = handle
        self.bind_timeout = float(plugin_args(VolumeBindingArgs, args).bind_timeout_seconds)
        self.poll_interval = POLL_INTERVAL_SECONDS
        self.pv_cache = AssumeCache("PersistentVolume", _PV, self._objects)
        self.pvc_cache = AssumeCache("PersistentVolumeClaim", _PVC, self._objects)
        self.sleep: Callable[[float], None] = time.sleep
        self.clock: Callable[[], float] = time.monotonic

    def _objects(self) -> Any:
        return self.handle.objects()

    # --- PreFilter ---------------------------------------------------------------------------------

    def _pod_has_pvcs(self, pod: Pod) -> tuple[bool, str | None]:
        """podHasPVCs: (has a claim, the first problem found)."""
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

    def _is_delay_binding_mode(self, pvc: Obj) -> bool:
        sc_name = pvc_class(pvc)
        if not sc_name:
            return False
        objects = self._objects()
        sc = objects.get("StorageClass", "", sc_name) if objects is not None else None
        if sc is None:
            return False
        mode = sc.get("volumeBindingMode")
        if mode is None:
            raise BindingError(f'VolumeBindingMode not set for StorageClass "{sc_name}"')
        return bool(mode == WAIT_FOR_FIRST_CONSUMER)

    def _is_volume_bound(self, pod: Pod, vol: Mapping[str, Any]) -> tuple[bool, Obj | None]:
        """isVolumeBound: (fully bound, the claim from the assume cache); None for non-claim volumes."""
        claim = claim_name_of(vol)
        ephemeral = False
        if claim is None and is_ephemeral(vol):
            claim, ephemeral = ephemeral_claim_name(pod, vol), True
        if claim is None:
            return True, None
        key = f"{pod.namespace}/{claim}"
        try:
            pvc = self.pvc_cache.get(key)
        except BindingError as exc:
            raise BindingError(f'error getting PVC "{key}": {exc}') from None
        if ephemeral:
            problem = volume_is_for_pod(pod, pvc)
            if problem is not None:
                raise BindingError(problem)
        return is_pvc_fully_bound(pvc), pvc

    def get_pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        out = PodVolumeClaims()
        for vol in pod_volumes(pod):
            bound, pvc = self._is_volume_bound(pod, vol)
            if pvc is None:
                continue
            if bound:
                out.bound.append(pvc)
            elif self._is_delay_binding_mode(pvc) and not pvc_volume_name(pvc):
                out.unbound_delay_binding.append(pvc)
            else:
                out.unbound_immediate.append(pvc)
        pvs = self.pv_cache.list() if out.unbound_delay_binding else []
        for pvc in out.unbound_delay_binding:
            cls = pvc_class(pvc)
            out.unbound_volumes_delay_binding[cls] = [pv for pv in pvs if pv_class(pv) == cls]
        return out

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
            claims = self.get_pod_volume_claims(pod)
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
            pod_vols, reasons = self.find_pod_volumes(pod, data.claims or PodVolumeClaims(), node)
        except (BindingError, InvalidObjectError) as exc:
            self.handle.volume_scheduling_stage_failed(PREDICATE)
            return error(str(exc))
        if reasons:
            return unresolvable(*reasons)
        with data.lock:
            data.pod_volumes_by_node[node.name] = pod_vols
            data.has_static_bindings = data.has_static_bindings or bool(pod_vols.static_bindings)
        return None

    def find_pod_volumes(self, pod: Pod, claims: PodVolumeClaims, node: Node) -> tuple[PodVolumes, list[str]]:
        """FindPodVolumes: the node's bindings/provisions and the reasons it does not fit."""
        out = PodVolumes()
        bound_ok = unbound_ok = storage_ok = pvs_found = True
        if claims.bound:
            bound_ok, pvs_found = self._check_bound_claims(claims.bound, node)
        if claims.unbound_delay_binding:
            unbound_ok, storage_ok = self._check_unbound_claims(pod, claims, node, out)
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not storage_ok:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return out, reasons

    def _check_bound_claims(self, claims: Sequence[Obj], node: Node) -> tuple[bool, bool]:
        """(node affinity satisfied, all PVs found), stopping at the first problem."""
        csi_node = get_csi_node(self._objects(), node.name)
        for pvc in claims:
            try:
                pv = self.pv_cache.get(pvc_volume_name(pvc))
            except BindingError:
                return True, False
            pv = try_translate_pv_to_csi(pv, csi_node)
            if not check_node_affinity(pv, node.labels):
                return False, True
        return True, True

    def _check_unbound_claims(
        self, pod: Pod, claims: PodVolumeClaims, node: Node, out: PodVolumes
    ) -> tuple[bool, bool]:
        """(unbound claims satisfiable, enough storage); fills `out` with the node's decisions."""
        to_match: list[Obj] = []
        to_provision: list[Obj] = []
        for pvc in claims.unbound_delay_binding:
            selected = annotations_of(pvc).get(ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node.name:
                    return False, True  # fast path: provisioning already started for another node
                to_provision.append(pvc)
            else:
                to_match.append(pvc)
        satisfied = True
        if to_match:
            satisfied, bindings, unmatched = self._find_matching_volumes(to_match, claims, node)
            out.static_bindings = bindings
            to_provision.extend(unmatched)
        storage_ok = True
        if to_provision:
            satisfied, storage_ok, provisions = self._check_volume_provisions(to_provision, node)
            out.dynamic_provisions = provisions
        return satisfied, storage_ok

    def _find_matching_volumes(
        self, to_bind: list[Obj], claims: PodVolumeClaims, node: Node
    ) -> tuple[bool, list[BindingInfo], list[Obj]]:
        chosen: dict[str, Obj] = {}
        bindings: list[BindingInfo] = []
        unmatched: list[Obj] = []
        found = True
        for pvc in sorted(to_bind, key=_request):
            pvs = claims.unbound_volumes_delay_binding.get(pvc_class(pvc), [])
            pv = find_matching_volume(pvc, pvs, node, chosen, True)
            if pv is None:
                unmatched.append(pvc)
                found = False
                continue
            chosen[name_of(pv)] = pv
            bindings.append(BindingInfo(pvc, pv))
        return found, bindings, unmatched

    def _check_volume_provisions(
        self, to_provision: list[Obj], node: Node
    ) -> tuple[bool, bool, list[DynamicProvision]]:
        """checkVolumeProvisions: (provisionable, enough storage, provisions)."""
        objects = self._objects()
        provisions: list[DynamicProvision] = []
        for pvc in to_provision:
            cls = pvc_class(pvc)
            if not cls:
                raise BindingError(f'no class for claim "{_pvc_key(pvc)}"')
            sc = objects.get("StorageClass", "", cls) if objects is not None else None
            if sc is None:
                raise BindingError(f'failed to find storage class "{cls}"')
            provisioner = str(sc.get("provisioner") or "")
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not match_topology_selector_terms(sc.get("allowedTopologies"), node.labels):
                return False, True, []
            sufficient, capacity = self._has_enough_capacity(provisioner, pvc, cls, node)
            if not sufficient:
                return True, False, []
            provisions.append(DynamicProvision(pvc, capacity))
        return True, True, provisions

    def _has_enough_capacity(self, provisioner: str, pvc: Obj, cls: str, node: Node) -> tuple[bool, Obj | None]:
        size = storage_request(pvc)
        if size is None:
            return True, None
        objects = self._objects()
        driver = objects.get("CSIDriver", "", provisioner) if objects is not None else None
        if driver is None or not spec(driver).get("storageCapacity"):
            return True, None
        for cap in objects.list("CSIStorageCapacity"):
            if cap.get("storageClassName") != cls:
                continue
            limit = _volume_limit(cap)
            if limit is None or limit < size:
                continue
            if self._node_has_access(node, cap):
                return True, cap
        return False, None

    @staticmethod
    def _node_has_access(node: Node, capacity: Obj) -> bool:
        topo = capacity.get("nodeTopology")
        if topo is None:
            return False
        try:
            selector = parse_label_selector(topo, f"csistoragecapacity {name_of(capacity)}", "nodeTopology")
        except InvalidObjectError:
            return False
        return selector.matches(node.labels)

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
            data.all_bound = self.assume_pod_volumes(pod, node_name, pod_vols)
        except BindingError as exc:
            self.handle.volume_scheduling_stage_failed(ASSUME)
            return error(str(exc))
        return None

    def _are_pod_volumes_bound(self, pod: Pod) -> bool:
        for vol in pod_volumes(pod):
            try:
                bound, _ = self._is_volume_bound(pod, vol)
            except BindingError:
                return False
            if not bound:
                return False
        return True

    def assume_pod_volumes(self, pod: Pod, node_name: str, pod_vols: PodVolumes) -> bool:
        """AssumePodVolumes: True when everything is bound already; otherwise assume the node's
        bindings and provisions in the caches and keep the assumed objects in `pod_vols`."""
        if self._are_pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for b in pod_vols.static_bindings:
            new_pv, dirty = bind_volume_to_claim(b.pv, b.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv)
                except BindingError:
                    self._revert_pvs(new_bindings)
                    raise
            new_bindings.append(BindingInfo(b.pvc, new_pv))
        new_provisions: list[DynamicProvision] = []
        for p in pod_vols.dynamic_provisions:
            clone = _with_selected_node(p.pvc, node_name)
            try:
                self.pvc_cache.assume(clone)
            except BindingError:
                self._revert_pvs(new_bindings)
                self._revert_pvcs([x.pvc for x in new_provisions])
                raise
            new_provisions.append(DynamicProvision(clone))
        pod_vols.static_bindings = new_bindings
        pod_vols.dynamic_provisions = new_provisions
        return False

    def _revert_pvs(self, bindings: Sequence[BindingInfo]) -> None:
        for b in bindings:
            self.pv_cache.restore(name_of(b.pv))

    def _revert_pvcs(self, claims: Sequence[Obj]) -> None:
        for c in claims:
            self.pvc_cache.restore(_pvc_key(c))

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if not isinstance(data, StateData):
            return
        pod_vols = data.pod_volumes_by_node.get(node_name)
        if pod_vols is None:
            return
        self._revert_pvs(pod_vols.static_bindings)
        self._revert_pvcs([p.pvc for p in pod_vols.dynamic_provisions])

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
            self.bind_pod_volumes(pod, node_name, pod_vols)
        except BindingError as exc:
            self.handle.volume_scheduling_stage_failed(BIND)
            log.info("binding volumes failed", pod=pod.key, node=node_name, error=str(exc))
            return error(str(exc))
        return None

    def bind_pod_volumes(self, pod: Pod, node_name: str, pod_vols: PodVolumes) -> None:
        """BindPodVolumes: write the bindings, then wait until the PV controller completed them."""
        bindings = pod_vols.static_bindings
        claims = [p.pvc for p in pod_vols.dynamic_provisions]
        self._bind_api_update(bindings, claims)
        deadline = self.clock() + self.bind_timeout
        while True:
            # Upstream polls first after one interval; checking at once as well only saves that second
            # when the bindings are already complete (simulate completes them synchronously).
            try:
                if self._check_bindings(pod, node_name, bindings, claims):
                    return
            except BindingError as exc:
                raise BindingError(f"binding volumes: {exc}") from None
            if self.clock() >= deadline:
                raise BindingError("binding volumes: context deadline exceeded")
            self.sleep(min(self.poll_interval, max(deadline - self.clock(), 0.0)))

    def _update(self, kind: str, obj: Obj) -> Obj:
        try:
            result: Obj = self.handle.update_object(kind, obj)
        except Exception as exc:
            raise BindingError(str(exc)) from exc
        return result

    def _bind_api_update(self, bindings: list[BindingInfo], claims: list[Obj]) -> None:
        """bindAPIUpdate: PUT each prebound PV, then each claim to provision; on failure restore the
        assumptions not yet written."""
        done_pvs = done_pvcs = 0
        try:
            for b in bindings:
                b.pv = self._update("PersistentVolume", b.pv)
                done_pvs += 1
            for i, c in enumerate(claims):
                claims[i] = self._update("PersistentVolumeClaim", c)
                done_pvcs += 1
        finally:
            if done_pvs < len(bindings):
                self._revert_pvs(bindings[done_pvs:])
            if done_pvcs < len(claims):
                self._revert_pvcs(claims[done_pvcs:])

    def _pod_deleted(self, pod: Pod) -> bool:
        return not self.handle.pod_exists(pod)

    def _check_bindings(self, pod: Pod, node_name: str, bindings: list[BindingInfo], claims: list[Obj]) -> bool:
        """checkBindings: True when every claim operated on is fully bound; BindingError when binding
        must be retried by scheduling again."""
        snapshot = self.handle.snapshot()
        info = snapshot.get(node_name) if snapshot is not None else None
        if info is None or info.node is None:
            raise BindingError(f'failed to get node "{node_name}": node "{node_name}" not found')
        node = info.node
        csi_node = get_csi_node(self._objects(), node_name)
        if self._pod_deleted(pod):
            raise BindingError(f'pod does not exist any more: pods "{pod.name}" not found')
        for b in bindings:
            try:
                pv = self.pv_cache.get_api(name_of(b.pv))
                pvc = self.pvc_cache.get_api(_pvc_key(b.pvc))
            except BindingError as exc:
                raise BindingError(f"failed to check binding: {exc}") from None
            if _older(pv, b.pv):
                return False
            pv = try_translate_pv_to_csi(pv, csi_node)
            if not check_node_affinity(pv, node.labels):
                raise BindingError(
                    f'pv "{name_of(pv)}" node affinity doesn\'t match node "{node_name}": no matching NodeSelectorTerms'
                )
            ref = spec(pv).get("claimRef")
            if not isinstance(ref, Mapping) or not ref.get("uid"):
                raise BindingError(f'ClaimRef got reset for pv "{name_of(pv)}"')
            if not is_pvc_fully_bound(pvc):
                return False
        for c in claims:
            try:
                pvc = self.pvc_cache.get_api(_pvc_key(c))
            except BindingError as exc:
                raise BindingError(f"failed to check provisioning pvc: {exc}") from None
            if _older(pvc, c):
                return False
            if annotations_of(pvc).get(ANN_SELECTED_NODE) != pod.node_name:
                if not annotations_of(pvc):
                    raise BindingError(f'selectedNode annotation reset for PVC "{name_of(pvc)}"')
                raise BindingError(f'provisioning failed for PVC "{name_of(pvc)}"')
            volume_name = pvc_volume_name(pvc)
            if volume_name:
                try:
                    pv = self.pv_cache.get_api(volume_name)
                except BindingError:
                    return False  # the PV may not have reached the watch yet
                pv = try_translate_pv_to_csi(pv, csi_node)
                if not check_node_affinity(pv, node.labels):
                    raise BindingError(
                        f'pv "{name_of(pv)}" node affinity doesn\'t match node "{node_name}": '
                        "no matching NodeSelectorTerms"
                    )
            if not is_pvc_fully_bound(pvc):
                return False
        return True

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
        old_limit, new_limit = _volume_limit(old), _volume_limit(new)
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


def _older(cached: Obj, written: Obj) -> bool:
    """The cached (watch) object is older than the one we wrote: wait for the watch to catch up."""
    try:
        return resource_version(written) > resource_version(cached)
    except ValueError:
        return False
