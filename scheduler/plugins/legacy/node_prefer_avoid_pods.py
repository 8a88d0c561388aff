"""NodePreferAvoidPods: the policy-era priority NodePreferAvoidPodsPriority as a Score plugin
(framework plugin of v1.18-v1.21, weight 10000 in the default provider; removed in v1.24).

A node's ``scheduler.alpha.kubernetes.io/preferAvoidPods`` annotation lists controllers (kind and
uid) whose pods should avoid it. A pod controlled by a ReplicationController or ReplicaSet listed
there scores 0 on that node; every other pod, and every node whose annotation is missing or does not
parse, scores MaxNodeScore.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle
from scheduler.framework.status import Status
from scheduler.framework.types import ClusterEventWithHint, NodeInfo
from scheduler.model.pod import Pod

NAME = "NodePreferAvoidPods"
PREFER_AVOID_PODS_ANNOTATION = "scheduler.alpha.kubernetes.io/preferAvoidPods"
_AVOIDABLE_CONTROLLERS = ("ReplicationController", "ReplicaSet")


def controller_of(pod: Pod) -> tuple[str, str] | None:
    """(kind, uid) of the pod's controller when it is a ReplicationController or ReplicaSet."""
    for ref in (pod.raw.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") in _AVOIDABLE_CONTROLLERS:
            return str(ref["kind"]), str(ref.get("uid") or "")
    return None


def avoided_controllers(annotations: Mapping[str, str]) -> set[tuple[str, str]]:
    """The (kind, uid) pairs a node's annotation asks to avoid; empty when absent or malformed."""
    raw = annotations.get(PREFER_AVOID_PODS_ANNOTATION)
    if not raw:
        return set()
    try:
        entries = json.loads(raw).get("preferAvoidPods") or []
        return {(str(c.get("kind")), str(c.get("uid"))) for e in entries
                if (c := (e.get("podSignature") or {}).get("podController"))}
    except (ValueError, AttributeError, TypeError):
        return set()


class NodePreferAvoidPods:
    """0 on nodes that ask to avoid the pod's RC/RS, MaxNodeScore elsewhere."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        controller = controller_of(pod)
        if controller is None or node_info.node is None:
            return MAX_NODE_SCORE, None
        annotations = (node_info.node.raw.get("metadata") or {}).get("annotations") or {}
        return (0 if controller in avoided_controllers(annotations) else MAX_NODE_SCORE), None

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A score-only plugin never rejects a pod."""
        return []
