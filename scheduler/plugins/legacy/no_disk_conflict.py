"""NoDiskConflict: the seed-era (v1.16) predicate of that name, as a legacy Filter plugin.

v1.16's ``NoDiskConflict`` compared every volume of the pod with the volumes of every pod on the node
and failed with ``node(s) had no available disk`` when the same disk would be used in a conflicting way:
GCE PD (same ``pdName`` unless both read-only), AWS EBS (same ``volumeID``), iSCSI (same ``iqn`` unless
both read-only) and Ceph RBD (a common monitor, same pool and image, unless both read-only). It knew
nothing of ReadWriteOncePod claims (added in 1.22), has no PreFilter, and reads no PVCs. The failure was
not among v1.16's unresolvable predicate failures, so it is Unschedulable (preemption may free the disk).

The conflict rules are the ones VolumeRestrictions still uses; they are shared with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import CycleState, Handle
from scheduler.framework.status import Status, unschedulable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.pod import Pod
from scheduler.plugins.volume_restrictions import ERR_REASON_DISK_CONFLICT, satisfy_volume_conflicts

NAME = "NoDiskConflict"
ERR_REASON = ERR_REASON_DISK_CONFLICT


class NoDiskConflict:
    """Keeps a pod off nodes where one of its GCE PD / EBS / iSCSI / RBD disks is used conflictingly."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if satisfy_volume_conflicts(pod, list(node_info.pods.values())):
            return None
        return unschedulable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """Queue only if the deleted pod used one of this pod's disks in a conflicting way."""
        if old is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP if satisfy_volume_conflicts(pod, [old]) else QueueingHint.QUEUE
