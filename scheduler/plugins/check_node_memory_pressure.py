"""CheckNodeMemoryPressure: the seed-era (v1.16) predicate ``CheckNodeMemoryPressurePredicate``.

Reproduces v1.16: only a BestEffort pod (``qos.GetPodQOS``: no container or init container has a
positive cpu or memory request or limit) is rejected, and only by a node whose ``MemoryPressure``
condition is ``True``, with ``node(s) had memory pressure``. Burstable and Guaranteed pods pass.
v1.16 counted node conditions as unresolvable by preemption, hence UnschedulableAndUnresolvable.
A pod whose resource quantities do not parse is rejected by a node under memory pressure with the
parse error as the reason (its QoS class cannot be known).
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
from scheduler.model.errors import InvalidObjectError
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.helper import legacy_pod_view

NAME = "CheckNodeMemoryPressure"
ERR_REASON = "node(s) had memory pressure"


def under_memory_pressure(node: Node) -> bool:
    """Only an explicit True counts (Unknown does not), as NodeInfo.MemoryPressureCondition was compared."""
    return node.conditions.get("MemoryPressure") == "True"


class CheckNodeMemoryPressure:
    """Keeps BestEffort pods off nodes reporting memory pressure (v1.16 semantics)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node is None or not under_memory_pressure(node_info.node):
            return None
        try:
            best_effort = legacy_pod_view(pod).best_effort
        except InvalidObjectError as exc:  # the QoS class cannot be known: do not guess
            return unresolvable(str(exc))
        return unresolvable(ERR_REASON) if best_effort else None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_CONDITION),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue only if the added or updated node is free of memory pressure."""
        if new is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP if under_memory_pressure(new) else QueueingHint.QUEUE
