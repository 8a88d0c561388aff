"""The volume binder VolumeBinding drives (upstream ``pkg/scheduler/framework/plugins/volumebinding/binder.go``,
SchedulerVolumeBinder): which PVs a pod's unbound claims can take on a node or whether they can be provisioned there
(Filter), assuming those choices in the assume caches (Reserve), reverting them (Unreserve), and writing them and
waiting for the PV controller to complete them (PreBind).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from scheduler.framework.interface import Handle
from scheduler.model.errors import InvalidObjectError
from scheduler.model.labels import parse_label_selector
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.quantity import parse as parse_quantity
from scheduler.plugins.helper.volume_util import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    PORTWORX,
    WAIT_FOR_FIRST_CONSUMER,
    Obj,
    TranslationError,
    annotations_of,
    check_access_modes,
    check_node_affinity,
    claim_name_of,
    ephemeral_claim_name,
    get_csi_node,
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
from scheduler.plugins.volume_binding.assume_cache import AssumeCache, BindingError, pv_cache, pvc_cache

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

POLL_INTERVAL_SECONDS = 1.0


# --- per-pod decisions -------------------------------------------------------------------------------


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


# --- helpers ----------------------------------------------------------------------------------------


def _request(pvc: Obj) -> Decimal:
    r = storage_request(pvc)
    return r if r is not None else Decimal(0)


def _pvc_key(pvc: Obj) -> str:
    return f"{namespace_of(pvc)}/{name_of(pvc)}"


def find_matching_volume(
    claim: Obj, volumes: Sequence[Obj], node: Node | None, excluded: Mapping[str, Obj], delay_binding: bool
) -> Obj | None:
    """volume.FindMatchingVolume with the VolumeAttributesClass gate on (GA, locked on in 1.37)."""
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


def volume_limit(capacity: Obj) -> Decimal | None:
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
    """isCSIMigrationOnForPlugin (v1.37: every in-tree plugin with a CSI driver is migrated, Portworx included)."""
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


# --- the binder -------------------------------------------------------------------------------------


class VolumeBinder:
    """Finds, assumes, reverts and binds a pod's volumes (upstream volumeBinder). Reads objects and writes
    bindings through the plugin handle; ``clock``, ``sleep`` and ``poll_interval`` pace PreBind's wait."""

    def __init__(self, handle: Handle, bind_timeout: float) -> None:
        self.handle = handle
        self.bind_timeout = bind_timeout
        self.poll_interval = POLL_INTERVAL_SECONDS
        self.pv_cache: AssumeCache = pv_cache(self._objects)
        self.pvc_cache: AssumeCache = pvc_cache(self._objects)
        self.sleep: Callable[[float], None] = time.sleep
        self.clock: Callable[[], float] = time.monotonic

    def _objects(self) -> Any:
        return self.handle.objects()

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
            limit = volume_limit(cap)
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

    def revert_assumed_pod_volumes(self, pod_vols: PodVolumes) -> None:
        """RevertAssumedPodVolumes: drop the assumptions Reserve made for the node."""
        self._revert_pvs(pod_vols.static_bindings)
        self._revert_pvcs([p.pvc for p in pod_vols.dynamic_provisions])


def _older(cached: Obj, written: Obj) -> bool:
    """The cached (watch) object is older than the one we wrote: wait for the watch to catch up."""
    try:
        return resource_version(written) > resource_version(cached)
    except ValueError:
        return False
