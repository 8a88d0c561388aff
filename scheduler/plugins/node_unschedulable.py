"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint
(``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from scheduler.framework.batch import SignsByTemplate
from scheduler.framework.interface import CycleState, Handle, PreFilterResult
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.pod import Pod
from scheduler.model.taints import NO_SCHEDULE, Taint, tolerated
from scheduler.plugins.helper.hint_objects import require_node, require_pod

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE)

NODE_ADD_OR_TAINT = ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT, "NodeAddOrTaint")
# Registered on Pod, as upstream (Pod covers both assigned and unscheduled pods' events).
POD_TOLERATION = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION, "PodUpdatePodToleration")


def tolerates_unschedulable(pod: Pod) -> bool:
    """A pod tolerating node.kubernetes.io/unschedulable:NoSchedule also tolerates spec.unschedulable."""
    return tolerated(UNSCHEDULABLE_TAINT, pod.tolerations)


class NodeUnschedulable(SignsByTemplate):
    name = "NodeUnschedulable"


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable: verdicts and scores depend on the pod template and the one node only."""
        return ()

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args, handle  # no configuration

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """v1.37's PreFilter: nothing to do (it skips only for a deferred resize, an alpha gate's case)."""
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return unresolvable(ERR_REASON_UNKNOWN_CONDITION)
        if node.unschedulable and not tolerates_unschedulable(pod):
            return unresolvable(ERR_REASON_UNSCHEDULABLE)
        return None

    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None] | None:
        """A pod tolerating the unschedulable taint passes every node; else only cordoned nodes fail."""
        if tolerates_unschedulable(pod):
            return None

        def check(node_info: NodeInfo) -> Status | None:
            node = node_info.node
            return None if node is not None and not node.unschedulable else self.filter(state, pod, node_info)

        return check

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(NODE_ADD_OR_TAINT, self.is_schedulable_after_node_change),
            ClusterEventWithHint(POD_TOLERATION, self.is_schedulable_after_pod_toleration_change),
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue only when the node turns schedulable (added schedulable, or uncordoned)."""
        modified = require_node(new)
        was_schedulable = old is not None and not require_node(old).unschedulable
        if not was_schedulable and not modified.unschedulable:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Queue when the pending pod itself now tolerates the unschedulable taint."""
        modified = require_pod(new)
        if old is not None:
            require_pod(old)  # type check only, as upstream
        if modified.uid == pod.uid and tolerates_unschedulable(modified):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
