"""NodeVolumeLimits (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go``, upstream type
``CSILimits``).

For each CSI driver, the unique volumes (``<driver>/<volume handle>``) the node would have attached if
the pod ran there must not exceed the driver's ``CSINode.spec.drivers[].allocatable.count`` (a driver
without a count, or a node without CSINode, is unlimited), else Unschedulable ``node(s) exceed max
volume count``; before counting, a driver whose CSIDriver sets ``preventPodSchedulingIfMissing`` must be on
the node's CSINode (VolumeLimitScaling, beta and on in v1.37), else Unschedulable ``<driver> CSI driver is
not installed on the node``. Counted:

* PVC volumes and generic ephemeral volumes (claim ``<pod>-<volume>``, which must be controlled by the
  pod) of the pod and of the pods on the node: the bound PV's CSI driver and handle. A PV of a migrated
  in-tree plugin (AWS EBS, GCE PD, Azure Disk, Cinder whenever the node has a CSINode; Portworx when the
  CSINode's ``storage.alpha.kubernetes.io/migrated-plugins`` annotation lists it) is translated to its
  CSI driver and handle as csi-translation-lib does. An unbound claim counts against its StorageClass's
  provisioner (translated likewise) with a per-claim placeholder handle;
* inline in-tree volumes of those migrated plugins;
* VolumeAttachments to the node whose PV is a CSI volume and is not already used by a pod there
  (watched as upstream's CSILimits informer; a deleted one requeues pods it may help).

The new pod's missing PVC is UnschedulableAndUnresolvable (``looking up PVC <ns>/<c>: persistentvolumeclaim
"<c>" not found``); an existing pod's missing PVC is not counted. PreFilter returns Skip when the pod
has no PVC, ephemeral or migratable inline volume.
"""

from __future__ import annotations

import random
import string
from collections.abc import Hashable, Mapping, Sequence
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
    ALWAYS_MIGRATED,
    PORTWORX,
    NotFound,
    Obj,
    TranslationError,
    claim_name_of,
    csi_source,
    ephemeral_claim_name,
    get_csi_node,
    get_pvc,
    has_scheduling_volumes,
    in_tree_plugin_of_pv,
    in_tree_plugin_of_volume,
    is_ephemeral,
    migrated_plugins,
    name_of,
    namespace_of,
    plugin_by_in_tree_name,
    pod_volumes,
    pvc_class,
    pvc_volume_name,
    spec,
    translate_inline_volume,
    translate_pv_to_csi,
    volume_is_for_pod,
)

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"


class _FilterError(Exception):
    """An error that makes Filter fail; `not_found` ones are UnschedulableAndUnresolvable."""

    def __init__(self, message: str, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


def is_csi_migration_on(csi_node: Obj | None, plugin_name: str) -> bool:
    """isCSIMigrationOn: the four cloud plugins are migrated wherever a CSINode exists; Portworx
    (gate locked on in 1.34) only where the CSINode annotation lists it; the others never."""
    if csi_node is None or not plugin_name:
        return False
    if plugin_name in ALWAYS_MIGRATED:
        return True
    if plugin_name != PORTWORX:
        return False
    return plugin_name in migrated_plugins(csi_node)


def volume_limits(csi_node: Obj | None) -> dict[str, int]:
    """Driver name → allocatable.count, for drivers that declare one."""
    out: dict[str, int] = {}
    if csi_node is None:
        return out
    for d in spec(csi_node).get("drivers") or []:
        if not isinstance(d, Mapping):
            continue
        count = (d.get("allocatable") or {}).get("count")
        if isinstance(count, int) and not isinstance(count, bool):
            out[str(d.get("name") or "")] = count
    return out


def _unique_name(driver: str, handle: str) -> str:
    return f"{driver}/{handle}"


class NodeVolumeLimits(SignsByTemplate):
    """Per-driver CSI attach limits from CSINode."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable unless the pod has volumes this plugin looks at (claims, disks: shared objects)."""
        return None if has_scheduling_volumes(pod) else ()

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        # Placeholder handles of unbound claims carry a random prefix so they never equal a real handle.
        self.random_volume_id_prefix = "".join(random.choices(string.ascii_lowercase + string.digits, k=32))

    # --- PreFilter ---------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        for vol in pod_volumes(pod):
            if claim_name_of(vol) is not None or is_ephemeral(vol) or in_tree_plugin_of_volume(vol) is not None:
                return None, None
        return None, skip()

    def pre_filter_extensions(self) -> None:
        return None

    # --- Filter ------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod_volumes(pod):
            return None
        node = node_info.node
        node_name = node.name if node is not None else ""
        objects = self.handle.objects()
        csi_node = get_csi_node(objects, node_name)
        new_volumes: dict[str, str] = {}
        try:
            self._attachable_volumes(objects, pod, csi_node, True, new_volumes)
        except _FilterError as exc:
            return unresolvable(str(exc)) if exc.not_found else error(str(exc))
        if not new_volumes:
            return None
        missing = self._driver_not_installed(objects, list(dict.fromkeys(new_volumes.values())), csi_node)
        if missing:
            return unschedulable(f"{missing} CSI driver is not installed on the node")
        limits = volume_limits(csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        try:
            for existing in node_info.pods.values():
                self._attachable_volumes(objects, existing, csi_node, False, attached)
        except _FilterError as exc:
            return error(str(exc))
        attached_count: dict[str, int] = {}
        for unique, driver in attached.items():
            new_volumes.pop(unique, None)  # a volume already used on the node is not attached twice
            attached_count[driver] = attached_count.get(driver, 0) + 1
        for unique, driver in self._volume_attachments(objects, node_name).items():
            if unique not in attached:
                attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return unschedulable(ERR_REASON_MAX_VOLUME_COUNT)
        return None

    @staticmethod
    def _driver_not_installed(objects: Any, drivers: list[str], csi_node: Obj | None) -> str:
        """VolumeLimitScaling (beta, on in v1.37): the first of the pod's new volumes' drivers, in the pod's
        order, whose CSIDriver asks for ``preventPodSchedulingIfMissing`` and that the node's CSINode does
        not list ("" when none). A driver without a CSIDriver object is taken to be no CSI driver."""
        installed = {str(d.get("name")) for d in (spec(csi_node).get("drivers") or []) if isinstance(d, Mapping)} \
            if csi_node is not None else set()
        for driver in drivers:
            csi_driver = objects.get("CSIDriver", "", driver) if objects is not None else None
            if csi_driver is not None and spec(csi_driver).get("preventPodSchedulingIfMissing") is True \
                    and driver not in installed:
                return driver
        return ""

    def _attachable_volumes(
        self, objects: Any, pod: Pod, csi_node: Obj | None, new_pod: bool, result: dict[str, str]
    ) -> None:
        """filterAttachableVolumes: add ``driver/handle`` → driver for each CSI volume of `pod`."""
        for vol in pod_volumes(pod):
            claim = claim_name_of(vol)
            ephemeral = False
            if claim is None and is_ephemeral(vol):
                claim, ephemeral = ephemeral_claim_name(pod, vol), True
            if claim is None:
                self._inline_volume(vol, csi_node, result)
                continue
            if not claim:
                raise _FilterError("PersistentVolumeClaim had no name")
            try:
                pvc = get_pvc(objects, pod.namespace, claim)
            except NotFound as exc:
                if new_pod:
                    raise _FilterError(f"looking up PVC {pod.namespace}/{claim}: {exc}", not_found=True) from None
                continue
            if ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem is not None:
                    raise _FilterError(problem)
            driver, handle = self._csi_driver_info(objects, csi_node, pvc)
            if driver and handle:
                result[_unique_name(driver, handle)] = driver

    def _inline_volume(self, vol: Mapping[str, Any], csi_node: Obj | None, result: dict[str, str]) -> None:
        """checkAttachableInlineVolume: count a migratable inline volume if its migration is on."""
        plugin = in_tree_plugin_of_volume(vol)
        if plugin is None or not is_csi_migration_on(csi_node, plugin.in_tree_name):
            return
        try:
            driver, handle = translate_inline_volume(vol)
        except TranslationError as exc:
            raise _FilterError(f"converting volume({vol.get('name') or ''}) from inline to csi: {exc}") from None
        result[_unique_name(driver, handle)] = driver

    def _csi_driver_info(self, objects: Any, csi_node: Obj | None, pvc: Obj) -> tuple[str, str]:
        """getCSIDriverInfo: the claim's PV's CSI driver and handle (translated for migrated plugins);
        the StorageClass's when the claim has no PV (yet)."""
        pv_name = pvc_volume_name(pvc)
        pv = objects.get("PersistentVolume", "", pv_name) if pv_name and objects is not None else None
        if pv is None:
            return self._csi_driver_info_from_sc(objects, csi_node, pvc)
        src = csi_source(pv)
        if src is not None:
            return str(src.get("driver") or ""), str(src.get("volumeHandle") or "")
        plugin = in_tree_plugin_of_pv(pv)
        if plugin is None or not is_csi_migration_on(csi_node, plugin.in_tree_name):
            return "", ""
        try:
            _, driver, handle = translate_pv_to_csi(pv)
        except TranslationError:
            return "", ""
        return driver, handle

    def _csi_driver_info_from_sc(self, objects: Any, csi_node: Obj | None, pvc: Obj) -> tuple[str, str]:
        sc_name = pvc_class(pvc)
        if not sc_name:
            return "", ""
        sc = objects.get("StorageClass", "", sc_name) if objects is not None else None
        if sc is None:
            return "", ""
        handle = f"{self.random_volume_id_prefix}-{namespace_of(pvc)}/{name_of(pvc)}"
        provisioner = str(sc.get("provisioner") or "")
        plugin = plugin_by_in_tree_name(provisioner)
        if plugin is not None:
            if not is_csi_migration_on(csi_node, provisioner):
                return "", ""
            return plugin.csi_driver, handle
        return provisioner, handle

    def _volume_attachments(self, objects: Any, node_name: str) -> dict[str, str]:
        """getNodeVolumeAttachmentInfo: ``attacher/handle`` → attacher of CSI volumes attached to the node."""
        out: dict[str, str] = {}
        if objects is None:
            return out
        for va in objects.list("VolumeAttachment"):
            s = spec(va)
            if s.get("nodeName") != node_name:
                continue
            attacher = str(s.get("attacher") or "")
            pv_name = (s.get("source") or {}).get("persistentVolumeName")
            if not attacher or not pv_name:
                continue
            pv = objects.get("PersistentVolume", "", str(pv_name))
            src = csi_source(pv) if pv is not None else None
            if src is None:
                continue
            out[_unique_name(attacher, str(src.get("volumeHandle") or ""))] = attacher
        return out

    # --- queueing ----------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As upstream's CSILimits.EventsToRegister."""
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE), self.is_schedulable_after_csi_node_updated
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), self.is_schedulable_after_pvc_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE),
                self.is_schedulable_after_volume_attachment_deleted,
            ),
        ]

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        if old is None:
            return QueueingHint.QUEUE
        vols = pod_volumes(old)
        if not vols:
            return QueueingHint.QUEUE_SKIP
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        for vol in vols:
            if claim_name_of(vol) is not None or is_ephemeral(vol) or in_tree_plugin_of_volume(vol) is not None:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pvc_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        if namespace_of(new) != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        for vol in pod_volumes(pod):
            claim = claim_name_of(vol)
            if claim is None and is_ephemeral(vol):
                claim = ephemeral_claim_name(pod, vol)
            if claim is not None and claim == name_of(new):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_volume_attachment_deleted(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A detached volume frees a slot: queue a pod with a claim, or with a migratable inline volume
        of the detached volume's driver (a volume that cannot be translated queues, as upstream's error)."""
        if not isinstance(old, Mapping):
            return QueueingHint.QUEUE
        attacher = spec(old).get("attacher")
        for vol in pod_volumes(pod):
            if claim_name_of(vol) is not None:
                return QueueingHint.QUEUE
            if in_tree_plugin_of_volume(vol) is None:
                continue
            try:
                driver, _ = translate_inline_volume(vol)
            except TranslationError:
                return QueueingHint.QUEUE
            if driver == attacher:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_node_updated(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when some driver's attach limit went up (a driver new to the CSINode had limit 0)."""
        if not isinstance(old, Mapping) or not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        old_limits = _limits_or_zero(old)
        for driver, limit in _limits_or_zero(new).items():
            if limit > old_limits.get(driver, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def _limits_or_zero(csi_node: Obj) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in spec(csi_node).get("drivers") or []:
        if isinstance(d, Mapping):
            count = (d.get("allocatable") or {}).get("count")
            out[str(d.get("name") or "")] = count if isinstance(count, int) and not isinstance(count, bool) else 0
    return out
