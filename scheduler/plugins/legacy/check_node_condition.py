"""CheckNodeCondition: the seed-era (v1.16) predicate ``CheckNodeConditionPredicate``, as a Filter plugin.

Reproduces ``k8s.io/kubernetes@v1.16.0/pkg/scheduler/algorithm/predicates/predicates.go``: walking the node's status
conditions, a ``Ready`` condition whose status is not ``True`` adds ``node(s) were not ready`` and a
``NetworkUnavailable`` condition whose status is not ``False`` adds ``node(s) had unavailable network``;
``spec.unschedulable`` adds ``node(s) were unschedulable``. All reasons are reported together. A node that reports no
Ready condition at all passes (only listed conditions are checked), as in v1.16; a missing node object gives ``node(s)
had unknown conditions``.

v1.16 listed all these reasons as unresolvable by preemption (``unresolvablePredicateFailureErrors``),
so the status is UnschedulableAndUnresolvable. The predicate was replaced by taint-based eviction
(TaintNodesByCondition) and is gone from current kube-scheduler; it is reachable here by configuration.
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

NAME = "CheckNodeCondition"

ERR_NODE_NOT_READY = "node(s) were not ready"
ERR_NODE_NETWORK_UNAVAILABLE = "node(s) had unavailable network"
ERR_NODE_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_NODE_UNKNOWN_CONDITION = "node(s) had unknown conditions"


def node_condition_reasons(node: Node) -> list[str]:
    """The v1.16 failure reasons for this node, in condition order, unschedulable last."""
    reasons = []
    for kind, status in node.conditions.items():
        if kind == "Ready" and status != "True":
            reasons.append(ERR_NODE_NOT_READY)
        elif kind == "NetworkUnavailable" and status != "False":
            reasons.append(ERR_NODE_NETWORK_UNAVAILABLE)
    if node.unschedulable:
        reasons.append(ERR_NODE_UNSCHEDULABLE)
    return reasons


class CheckNodeCondition:
    """Rejects nodes that are not ready, have no network, or are cordoned (v1.16 semantics)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node is None:
            return unresolvable(ERR_NODE_UNKNOWN_CONDITION)
        reasons = node_condition_reasons(node_info.node)
        return unresolvable(*reasons) if reasons else None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Condition changes and uncordoning (reported as a taint update) can make a node usable."""
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE,
                    ActionType.ADD | ActionType.UPDATE_NODE_CONDITION | ActionType.UPDATE_NODE_TAINT,
                ),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue only if the added or updated node now passes."""
        if new is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP if node_condition_reasons(new) else QueueingHint.QUEUE
