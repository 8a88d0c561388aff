"""CheckNodeDiskPressure: the seed-era (v1.16) predicate ``CheckNodeDiskPressurePredicate``.

Reproduces v1.16: every pod is rejected by a node whose ``DiskPressure`` condition is ``True``, with
``node(s) had disk pressure``. v1.16 counted node conditions as unresolvable by preemption, hence
UnschedulableAndUnresolvable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import CycleState, Handle
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.node import Node
from scheduler.model.pod import Pod

NAME = "CheckNodeDiskPressure"
ERR_REASON = "node(s) had disk pressure"


def under_disk_pressure(node: Node) -> bool:
    """Only an explicit True counts (Unknown does not), as v1.16 compared it."""
    return node.conditions.get("DiskPressure") == "True"


class CheckNodeDiskPressure:
    """Keeps all pods off nodes reporting disk pressure (v1.16 semantics)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node is None or not under_disk_pressure(node_info.node):
            return None
        return unresolvable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_CONDITION),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue only if the added or updated node is free of disk pressure."""
        if new is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP if under_disk_pressure(new) else QueueingHint.QUEUE
