"""Shared volume helpers for the volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
VolumeZone, NoDiskConflict).

Python counterparts of the upstream helpers those plugins call, read at the pinned versions:

* listers' NotFound errors (``persistentvolumeclaim "x" not found`` ...) as :class:`NotFound`;
* ``component-helpers/storage/volume`` (claim/volume classes, PV node affinity, FindMatchingVolume's
  predicates) and ``storage/ephemeral`` (generic ephemeral volume claim names and ownership);
* ``csi-translation-lib`` v0.34 for the in-tree plugins that can be migrated to CSI: which in-tree
  source a PV or inline volume uses, and the CSI driver / volume handle / topology it translates to;
* ``v1helper.MatchTopologySelectorTerms`` (StorageClass allowedTopologies).

Objects are API dicts as the watch delivers them; nothing here mutates them.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from scheduler.model.labels import Requirement, requirements_match
from scheduler.model.pod import Pod
from scheduler.model.quantity import parse as parse_quantity
from scheduler.plugins.helper.nodeaffinity import NodeSelectorTerm, parse_required_terms

Obj = Mapping[str, Any]

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
BETA_STORAGE_CLASS_ANN = "volume.beta.kubernetes.io/storage-class"
MIGRATED_PLUGINS_ANN = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"

LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
MULTI_ZONE_DELIMITER = "__"


# --- object access --------------------------------------------------------------------------------


class NotFound(LookupError):
    """An object the lister does not have; ``str()`` is the API's NotFound message."""

    def __init__(self, resource: str, name: str) -> None:
        super().__init__(f'{resource} "{name}" not found')


# lister resource names as they appear in NotFound messages (resource.group)
PVC_RESOURCE = "persistentvolumeclaim"
PV_RESOURCE = "persistentvolume"
SC_RESOURCE = "storageclass.storage.k8s.io"


def _get(objects: Any, kind: str, namespace: str, name: str) -> Obj | None:
    if objects is None:
        return None
    return objects.get(kind, namespace, name)


def get_pvc(objects: Any, namespace: str, name: str) -> Obj:
    obj = _get(objects, "PersistentVolumeClaim", namespace, name)
    if obj is None:
        raise NotFound(PVC_RESOURCE, name)
    return obj


def get_pv(objects: Any, name: str) -> Obj:
    obj = _get(objects, "PersistentVolume", "", name)
    if obj is None:
        raise NotFound(PV_RESOURCE, name)
    return obj


def get_storage_class(objects: Any, name: str) -> Obj:
    obj = _get(objects, "StorageClass", "", name)
    if obj is None:
        raise NotFound(SC_RESOURCE, name)
    return obj


def get_csi_node(objects: Any, name: str) -> Obj | None:
    """The node's CSINode, or None (callers treat a missing CSINode as "no information")."""
    return _get(objects, "CSINode", "", name)


def meta(obj: Obj) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def spec(obj: Obj) -> Mapping[str, Any]:
    s = obj.get("spec")
    return s if isinstance(s, Mapping) else {}


def name_of(obj: Obj) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Obj) -> str:
    return str(meta(obj).get("namespace") or "")


def annotations_of(obj: Obj) -> Mapping[str, str]:
    a = meta(obj).get("annotations")
    return a if isinstance(a, Mapping) else {}


def labels_of(obj: Obj) -> Mapping[str, str]:
    lb = meta(obj).get("labels")
    return lb if isinstance(lb, Mapping) else {}


def resource_version(obj: Obj) -> int:
    """metadata.resourceVersion as an integer; ValueError when it is not one (as upstream's versioner)."""
    rv = meta(obj).get("resourceVersion")
    return int(str(rv))


# --- pods' volumes --------------------------------------------------------------------------------


def pod_volumes(pod: Pod) -> list[Mapping[str, Any]]:
    """The pod's volumes (the well-formed ones), read once per pod view: five plugins ask each cycle. Callers
    must not change the list."""
    vols: list[Mapping[str, Any]] | None = pod.memo.get(_VOLUMES_MEMO)
    if vols is None:
        vols = pod.memo[_VOLUMES_MEMO] = [
            v for v in (pod.raw.get("spec") or {}).get("volumes") or [] if isinstance(v, Mapping)]
    return vols


_VOLUMES_MEMO = "volume_util.volumes"
_SCHEDULING_VOLUMES_MEMO = "volume_util.scheduling_volumes"


# Volume sources no scheduling plugin looks at: the pod's own data (the service-account token every
# pod gets is a projected volume), never a claim, a disk or a driver with limits.
POD_LOCAL_VOLUME_SOURCES = frozenset({"name", "projected", "configMap", "secret", "downwardAPI", "emptyDir"})


def has_scheduling_volumes(pod: Pod) -> bool:
    """The pod has a volume the volume plugins check (anything but pod-local sources)."""
    found = pod.memo.get(_SCHEDULING_VOLUMES_MEMO)
    if found is None:
        found = pod.memo[_SCHEDULING_VOLUMES_MEMO] = any(
            not POD_LOCAL_VOLUME_SOURCES.issuperset(v) for v in pod_volumes(pod))
    return bool(found)


def claim_name_of(vol: Mapping[str, Any]) -> str | None:
    """``persistentVolumeClaim.claimName`` of a volume, None when it is not a PVC volume."""
    src = vol.get("persistentVolumeClaim")
    if not isinstance(src, Mapping):
        return None
    return str(src.get("claimName") or "")


def ephemeral_claim_name(pod: Pod, vol: Mapping[str, Any]) -> str:
    """The PVC a generic ephemeral volume uses: ``<pod name>-<volume name>``."""
    return f"{pod.name}-{vol.get('name') or ''}"


def is_ephemeral(vol: Mapping[str, Any]) -> bool:
    return isinstance(vol.get("ephemeral"), Mapping)


def pod_claim_refs(pod: Pod) -> list[tuple[str, bool]]:
    """(claim name, is generic ephemeral) of every volume that uses a PVC, in volume order."""
    out: list[tuple[str, bool]] = []
    for vol in pod_volumes(pod):
        claim = claim_name_of(vol)
        if claim is not None:
            out.append((claim, False))
        elif is_ephemeral(vol):
            out.append((ephemeral_claim_name(pod, vol), True))
    return out


def volume_is_for_pod(pod: Pod, pvc: Obj) -> str | None:
    """ephemeral.VolumeIsForPod: the PVC must be in the pod's namespace and controlled by the pod."""
    ns = namespace_of(pvc)
    controlled = any(
        isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("uid") == pod.uid
        for ref in meta(pvc).get("ownerReferences") or []
    )
    if ns != pod.namespace or not controlled:
        return (
            f"PVC {ns}/{name_of(pvc)} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"
        )
    return None


# --- claims and volumes ---------------------------------------------------------------------------


def pvc_class(pvc: Obj) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation wins over spec.storageClassName."""
    ann = annotations_of(pvc)
    if BETA_STORAGE_CLASS_ANN in ann:
        return str(ann[BETA_STORAGE_CLASS_ANN])
    return str(spec(pvc).get("storageClassName") or "")


def pv_class(pv: Obj) -> str:
    ann = annotations_of(pv)
    if BETA_STORAGE_CLASS_ANN in ann:
        return str(ann[BETA_STORAGE_CLASS_ANN])
    return str(spec(pv).get("storageClassName") or "")


def access_modes(obj: Obj) -> list[str]:
    return [str(m) for m in spec(obj).get("accessModes") or []]


def pvc_volume_name(pvc: Obj) -> str:
    return str(spec(pvc).get("volumeName") or "")


def storage_request(pvc: Obj) -> Decimal | None:
    """spec.resources.requests.storage, None when absent."""
    req = ((spec(pvc).get("resources") or {}).get("requests") or {}).get("storage")
    if req is None:
        return None
    return parse_quantity(req, f"persistentvolumeclaim {namespace_of(pvc)}/{name_of(pvc)}",
                          "spec.resources.requests.storage")


def pv_capacity(pv: Obj) -> Decimal:
    cap = (spec(pv).get("capacity") or {}).get("storage")
    if cap is None:
        return Decimal(0)
    return parse_quantity(cap, f"persistentvolume {name_of(pv)}", "spec.capacity.storage")


def is_pvc_fully_bound(pvc: Obj) -> bool:
    return bool(pvc_volume_name(pvc)) and ANN_BIND_COMPLETED in annotations_of(pvc)


def is_volume_bound_to_claim(pv: Obj, pvc: Obj) -> bool:
    ref = spec(pv).get("claimRef")
    if not isinstance(ref, Mapping):
        return False
    if name_of(pvc) != (ref.get("name") or "") or namespace_of(pvc) != (ref.get("namespace") or ""):
        return False
    ref_uid = ref.get("uid") or ""
    return not (ref_uid and ref_uid != (meta(pvc).get("uid") or ""))


def volume_mode_mismatch(pvc: Obj, pv: Obj) -> bool:
    return (spec(pvc).get("volumeMode") or "Filesystem") != (spec(pv).get("volumeMode") or "Filesystem")


def check_access_modes(pvc: Obj, pv: Obj) -> bool:
    have = set(access_modes(pv))
    return all(m in have for m in access_modes(pvc))


# --- node affinity and topology -------------------------------------------------------------------


def _term_matches_labels(term: NodeSelectorTerm, node_labels: Mapping[str, str]) -> bool:
    """A term evaluated against a node that has labels but no name (CheckNodeAffinity builds such a
    node): matchFields are not checked, as the lazy matcher skips them when the node has no fields."""
    if term.errors or (term.labels is None and term.fields is None):
        return False
    return term.labels is None or requirements_match(term.labels, node_labels)


def node_affinity_terms(pv: Obj) -> tuple[NodeSelectorTerm, ...] | None:
    """The PV's required node selector terms; None when the PV has no required node affinity."""
    na = spec(pv).get("nodeAffinity")
    if not isinstance(na, Mapping) or na.get("required") is None:
        return None
    return parse_required_terms(na["required"], f"persistentvolume {name_of(pv)}", "spec.nodeAffinity.required")


def terms_match(terms: tuple[NodeSelectorTerm, ...] | None, node_labels: Mapping[str, str]) -> bool:
    if terms is None:
        return True
    return any(_term_matches_labels(t, node_labels) for t in terms)


def check_node_affinity(pv: Obj, node_labels: Mapping[str, str]) -> bool:
    """volume.CheckNodeAffinity: no required affinity matches every node; otherwise one term must."""
    return terms_match(node_affinity_terms(pv), node_labels)


def match_topology_selector_terms(terms: object, node_labels: Mapping[str, str]) -> bool:
    """v1helper.MatchTopologySelectorTerms: an empty list matches all; empty terms match nothing."""
    if not isinstance(terms, list) or not terms:
        return True
    for term in terms:
        exprs = term.get("matchLabelExpressions") if isinstance(term, Mapping) else None
        if not exprs:
            continue
        reqs: list[Requirement] = []
        ok = True
        for e in exprs:
            values = e.get("values") if isinstance(e, Mapping) else None
            key = e.get("key") if isinstance(e, Mapping) else None
            if not isinstance(key, str) or not key or not isinstance(values, list) or not values:
                ok = False  # labels.NewRequirement rejects it: the term is skipped
                break
            reqs.append(Requirement(key, "In", frozenset(str(v) for v in values)))
        if ok and requirements_match(reqs, node_labels):
            return True
    return False


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """volumehelpers.LabelZonesToSet: ``a__b`` → {a, b}; None when an element is empty."""
    out = set()
    for z in value.split(MULTI_ZONE_DELIMITER):
        z = z.strip()
        if not z:
            return None
        out.add(z)
    return frozenset(out)


# --- in-tree to CSI translation (csi-translation-lib v0.34) ----------------------------------------


class TranslationError(ValueError):
    pass


_AWS_VOLUME = re.compile(r"^vol-[^/]*$")
_GCE_UNSPECIFIED = "UNSPECIFIED"
_AZURE_MANAGED = "Managed"


def _ebs_volume_id(kubernetes_id: str) -> str:
    """KubernetesVolumeIDToEBSVolumeID: ``aws://<zone>/vol-...`` or a bare ``vol-...`` id."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    try:
        url = urlsplit(kubernetes_id)
    except ValueError as exc:
        raise TranslationError(f"Invalid disk name ({kubernetes_id}): {exc}") from None
    aws_id = url.path.strip("/")
    if not _AWS_VOLUME.match(aws_id):
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _gce_region_from_zones(zones: Sequence[str]) -> str:
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(f"zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}")
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {sorted(regions)}")
    return next(iter(regions))


def _azure_check_kind(src: Mapping[str, Any]) -> None:
    kind = src.get("kind")
    if kind is not None and str(kind).lower() != _AZURE_MANAGED.lower():
        raise TranslationError(f"kind({kind}) is not supported in csi migration")


@dataclass(frozen=True, slots=True)
class InTreePlugin:
    """One migratable in-tree volume plugin (csi-translation-lib's InTreePlugin): its names, the source
    field it reads, its CSI topology key. Not a scheduler plugin: those are ``plugins.names.PluginSpec``."""

    in_tree_name: str
    csi_driver: str
    source: str  # field of PersistentVolumeSpec / Volume holding the in-tree source
    topology_key: str | None  # None: the PV translation leaves node affinity as it is

    def inline_handle(self, src: Mapping[str, Any]) -> str:
        """The CSI volume handle TranslateInTreeInlineVolumeToCSI gives an inline volume."""
        if self.source == "awsElasticBlockStore":
            return _ebs_volume_id(str(src.get("volumeID") or ""))
        if self.source == "gcePersistentDisk":
            return f"projects/{_GCE_UNSPECIFIED}/zones/{_GCE_UNSPECIFIED}/disks/{src.get('pdName') or ''}"
        if self.source == "azureDisk":
            _azure_check_kind(src)
            return str(src.get("diskURI") or "")
        if self.source in ("cinder", "portworxVolume"):
            return str(src.get("volumeID") or "")
        raise TranslationError(f"no inline translation for {self.in_tree_name}")

    def pv_handle(self, pv: Obj, src: Mapping[str, Any]) -> str:
        """The CSI volume handle TranslateInTreePVToCSI gives a PV."""
        if self.source == "gcePersistentDisk":
            lb = labels_of(pv)
            zones_label = lb.get(LABEL_ZONE_BETA) or lb.get(LABEL_ZONE) or ""
            zones = zones_label.split(MULTI_ZONE_DELIMITER)
            pd = src.get("pdName") or ""
            if len(zones) == 1 and zones[0]:
                return f"projects/{_GCE_UNSPECIFIED}/zones/{zones[0]}/disks/{pd}"
            if len(zones) > 1:
                return f"projects/{_GCE_UNSPECIFIED}/regions/{_gce_region_from_zones(zones)}/disks/{pd}"
            return f"projects/{_GCE_UNSPECIFIED}/zones/{_GCE_UNSPECIFIED}/disks/{pd}"
        return self.inline_handle(src)


_MIGRATABLE = (
    InTreePlugin("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "gcePersistentDisk", "topology.gke.io/zone"),
    InTreePlugin("kubernetes.io/aws-ebs", "ebs.csi.aws.com", "awsElasticBlockStore", "topology.ebs.csi.aws.com/zone"),
    InTreePlugin(
        "kubernetes.io/cinder", "cinder.csi.openstack.org", "cinder", "topology.cinder.csi.openstack.org/zone"
    ),
    InTreePlugin("kubernetes.io/azure-disk", "disk.csi.azure.com", "azureDisk", None),
    InTreePlugin("kubernetes.io/azure-file", "file.csi.azure.com", "azureFile", None),
    InTreePlugin("kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com", "vsphereVolume", None),
    InTreePlugin("kubernetes.io/portworx-volume", "pxd.portworx.com", "portworxVolume", None),
)
# In-tree plugins whose translation the scheduler performs (the others are never migrated here:
# both plugins' migration switches are off for azure-file and vsphere-volume).
_TRANSLATED = frozenset(
    {"kubernetes.io/gce-pd", "kubernetes.io/aws-ebs", "kubernetes.io/cinder", "kubernetes.io/azure-disk",
     "kubernetes.io/portworx-volume"}
)
PORTWORX = "kubernetes.io/portworx-volume"
ALWAYS_MIGRATED = frozenset(
    {"kubernetes.io/gce-pd", "kubernetes.io/aws-ebs", "kubernetes.io/cinder", "kubernetes.io/azure-disk"}
)


def in_tree_plugin_of_pv(pv: Obj) -> InTreePlugin | None:
    """IsPVMigratable / GetInTreePluginNameFromSpec(pv, nil)."""
    s = spec(pv)
    for p in _MIGRATABLE:
        if s.get(p.source) is not None:
            return p
    return None


def in_tree_plugin_of_volume(vol: Mapping[str, Any]) -> InTreePlugin | None:
    """IsInlineMigratable / GetInTreePluginNameFromSpec(nil, vol)."""
    for p in _MIGRATABLE:
        if vol.get(p.source) is not None:
            return p
    return None


def plugin_by_in_tree_name(name: str) -> InTreePlugin | None:
    """IsMigratableIntreePluginByName / GetCSINameFromInTreeName."""
    for p in _MIGRATABLE:
        if p.in_tree_name == name:
            return p
    return None


def migrated_plugins(csi_node: Obj | None) -> frozenset[str]:
    """The in-tree plugins a CSINode's annotation says are migrated on that node."""
    if csi_node is None:
        return frozenset()
    value = annotations_of(csi_node).get(MIGRATED_PLUGINS_ANN) or ""
    return frozenset(value.split(",")) if value else frozenset()


def _topology_values(terms: list[dict[str, Any]], key: str) -> list[str]:
    values: set[str] = set()
    for term in terms:
        for r in term.get("matchExpressions") or []:
            if isinstance(r, Mapping) and r.get("key") == key:
                values.update(str(v) for v in r.get("values") or [])
    return sorted(values)


def _replace_topology(terms: list[dict[str, Any]], old: str, new: str) -> None:
    for term in terms:
        for r in term.get("matchExpressions") or []:
            if isinstance(r, dict) and r.get("key") == old:
                r["key"] = new


def _key_in_terms(terms: list[dict[str, Any]], key: str) -> bool:
    return any(
        isinstance(r, Mapping) and r.get("key") == key for t in terms for r in t.get("matchExpressions") or []
    )


def _terms_of(pv: dict[str, Any]) -> list[dict[str, Any]]:
    na = pv.get("spec", {}).get("nodeAffinity")
    required = na.get("required") if isinstance(na, Mapping) else None
    if isinstance(required, Mapping) and isinstance(required.get("nodeSelectorTerms"), list):
        return [t for t in required["nodeSelectorTerms"] if isinstance(t, dict)]
    return []


def _add_topology(pv: dict[str, Any], key: str, zones: list[str]) -> None:
    """addTopology: an ``In`` requirement on `key` appended to every term (one term if none)."""
    s = pv.setdefault("spec", {})
    if not isinstance(s.get("nodeAffinity"), dict):
        s["nodeAffinity"] = {}
    na = s["nodeAffinity"]
    if not isinstance(na.get("required"), dict):
        na["required"] = {}
    req = na["required"]
    if not req.get("nodeSelectorTerms"):
        req["nodeSelectorTerms"] = [{}]
    for term in req["nodeSelectorTerms"]:
        if isinstance(term, dict):
            term.setdefault("matchExpressions", []).append({"key": key, "operator": "In", "values": list(zones)})


def _translate_topology(pv: dict[str, Any], csi_key: str) -> None:
    """translateTopologyFromInTreeToCSI (upstream ignores its errors, so this never fails)."""
    terms = _terms_of(pv)
    lb = labels_of(pv)
    if _key_in_terms(terms, LABEL_ZONE):
        zone_label, region_label = LABEL_ZONE, LABEL_REGION
    elif _key_in_terms(terms, LABEL_ZONE_BETA):
        zone_label, region_label = LABEL_ZONE_BETA, LABEL_REGION_BETA
    elif LABEL_ZONE in lb:
        zone_label, region_label = LABEL_ZONE, LABEL_REGION
    elif LABEL_ZONE_BETA in lb:
        zone_label, region_label = LABEL_ZONE_BETA, LABEL_REGION_BETA
    else:
        zone_label, region_label = LABEL_ZONE, LABEL_REGION
    if _topology_values(terms, zone_label):
        _replace_topology(terms, zone_label, csi_key)
    elif zone_label in lb:
        zones = sorted({z.strip() for z in str(lb[zone_label]).split(MULTI_ZONE_DELIMITER) if z.strip()})
        if zones:
            _add_topology(pv, csi_key, zones)
    if region_label == LABEL_REGION_BETA:
        terms = _terms_of(pv)
        if _topology_values(terms, region_label):
            _replace_topology(terms, region_label, LABEL_REGION)


def translate_pv_to_csi(pv: Obj) -> tuple[dict[str, Any], str, str]:
    """TranslateInTreePVToCSI: a translated deep copy of the PV, its CSI driver and volume handle.

    Raises TranslationError when the PV cannot be translated (as upstream's error return)."""
    plugin = in_tree_plugin_of_pv(pv)
    if plugin is None or plugin.in_tree_name not in _TRANSLATED:
        raise TranslationError(f"could not find in-tree plugin translation logic for {name_of(pv)!r}")
    src = spec(pv).get(plugin.source) or {}
    if not isinstance(src, Mapping):
        raise TranslationError(f"pv {name_of(pv)}: spec.{plugin.source} is not an object")
    handle = plugin.pv_handle(pv, src)
    out = copy.deepcopy(dict(pv))
    s = out.setdefault("spec", {})
    if plugin.topology_key is not None:
        _translate_topology(out, plugin.topology_key)
    s.pop(plugin.source, None)
    s["csi"] = {"driver": plugin.csi_driver, "volumeHandle": handle}
    return out, plugin.csi_driver, handle


def translate_inline_volume(vol: Mapping[str, Any]) -> tuple[str, str]:
    """TranslateInTreeInlineVolumeToCSI: (CSI driver, volume handle) of a migratable inline volume."""
    plugin = in_tree_plugin_of_volume(vol)
    if plugin is None or plugin.in_tree_name not in _TRANSLATED:
        raise TranslationError(f"could not find in-tree plugin translation logic for {vol.get('name')!r}")
    src = vol.get(plugin.source)
    if not isinstance(src, Mapping):
        raise TranslationError(f"volume {vol.get('name')}: {plugin.source} is not an object")
    return plugin.csi_driver, plugin.inline_handle(src)


def csi_source(pv: Obj) -> Mapping[str, Any] | None:
    src = spec(pv).get("csi")
    return src if isinstance(src, Mapping) else None
