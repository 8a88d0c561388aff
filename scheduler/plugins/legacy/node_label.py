"""NodeLabel: the policy-era predicate CheckNodeLabelPresence and priority NodeLabelPriority as one
plugin (framework plugin ``nodelabel`` of v1.18-v1.22, removed in v1.23).

A Policy's ``labelsPresence`` predicates become ``presentLabels`` / ``absentLabels`` and its
``labelPreference`` priorities ``presentLabelsPreference`` / ``absentLabelsPreference``. Filter: the
node must carry every present label and none of the absent ones, whatever their values; otherwise
UnschedulableAndUnresolvable, ``node(s) didn't have the requested labels`` (a label never appears by
evicting pods). Score: MaxNodeScore for each preference the node satisfies, averaged over the
preferences (0 when there are none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import NodeLabelArgs
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, NodeInfo
from scheduler.model.pod import Pod

NAME = "NodeLabel"
ERR_REASON_PRESENCE_VIOLATED = "node(s) didn't have the requested labels"


class NodeLabel:
    """Filter on required present/absent label keys; Score on preferred ones."""

    name = NAME

    def __init__(self, args: NodeLabelArgs | Mapping[str, Any], handle: Handle) -> None:
        a = plugin_args(NodeLabelArgs, args)
        self.present, self.absent = a.present_labels, a.absent_labels
        self.present_preference, self.absent_preference = a.present_labels_preference, a.absent_labels_preference
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        labels = node_info.node.labels if node_info.node is not None else {}
        if all(k in labels for k in self.present) and not any(k in labels for k in self.absent):
            return None
        return unresolvable(ERR_REASON_PRESENCE_VIOLATED)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        size = len(self.present_preference) + len(self.absent_preference)
        if size == 0 or node_info.node is None:
            return 0, None
        labels = node_info.node.labels
        met = sum(k in labels for k in self.present_preference) + sum(k not in labels for k in self.absent_preference)
        return met * MAX_NODE_SCORE // size, None

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Only a node's labels decide the filter."""
        return [ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL))]
