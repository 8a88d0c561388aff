"""The shared shape of the seed-era (v1.16) node-condition predicates: a node whose condition
(MemoryPressure, DiskPressure, PIDPressure) is exactly "True" rejects the pods the predicate applies
to, as UnschedulableAndUnresolvable (v1.16 counted node conditions as unresolvable by preemption).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

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


def condition_true(node: Node, condition: str) -> bool:
    """Only an explicit True counts (Unknown does not), as v1.16 compared it."""
    return node.conditions.get(condition) == "True"


class NodeConditionPredicate:
    """Subclasses set ``name``, ``condition`` and ``reason``; ``reject`` decides per pod."""

    name: ClassVar[str]
    condition: ClassVar[str]
    reason: ClassVar[str]

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def reject(self, pod: Pod) -> Status | None:
        """The status for a pod on a node with the condition; every pod by default."""
        return unresolvable(self.reason)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node is None or not condition_true(node_info.node, self.condition):
            return None
        return self.reject(pod)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_CONDITION),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue only if the added or updated node is free of the condition."""
        if new is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP if condition_true(new, self.condition) else QueueingHint.QUEUE
