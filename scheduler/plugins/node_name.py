"""NodeName: a pod that names its node fits only there (``pkg/scheduler/framework/plugins/nodename/node_name.go``).

Since v1.37 its PreFilter narrows the nodes to the named one, so the others are not filtered (their
status is "node(s) didn't satisfy plugin(s) [NodeName]", as for any PreFilter narrowing)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from scheduler.framework.batch import SignsByTemplate
from scheduler.framework.interface import CycleState, Handle, PreFilterResult
from scheduler.framework.status import Status, error, unresolvable
from scheduler.framework.types import NODE_ADD, ClusterEventWithHint, NodeInfo
from scheduler.model.pod import Pod

ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """An empty spec.nodeName fits everywhere."""
    return not pod.node_name or pod.node_name == node_info.name


class NodeName(SignsByTemplate):
    name = "NodeName"


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable: verdicts and scores depend on the pod template and the one node only."""
        return ()

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args, handle  # no configuration

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Only the named node, when there is one; never Skip, so Filter always runs."""
        if pod.node_name:
            return PreFilterResult({pod.node_name}), None
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.node is None:
            return error("node not found")
        wanted = pod.node_name
        if wanted and wanted != node_info.name:
            return unresolvable(ERR_REASON)
        return None

    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None] | None:
        """Without spec.nodeName every node with a Node object passes."""
        if not pod.node_name:
            return None
        return lambda node_info: self.filter(state, pod, node_info)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Only a new node (the one named) can help; no hint, as upstream: always queue."""
        return [ClusterEventWithHint(NODE_ADD)]
