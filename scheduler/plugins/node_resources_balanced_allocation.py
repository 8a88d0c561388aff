"""NodeResourcesBalancedAllocation (kube-scheduler v1.37
``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go``).

Favors nodes whose balance the pod improves. The balance of a set of requests is
b = int((1 - std) · 100) with real requests (no 100m / 200Mi defaults): f_r = min(1, requested_r /
allocatable_r) over the configured resources with allocatable > 0; std = |f1 - f2| / 2 for two
resources, the population standard deviation for more, 0 otherwise. In v1.37 the score is the
change the pod makes: 50 + (50 + b_with_pod - b_without_pod) / 2, Go's truncating division (v1.34
scored b_with_pod alone; no configuration brings that formula back, see docs/kube-scheduler-v1.37.md).

Since v1.33 (issue #129138) PreScore returns Skip for a pod requesting none of the resources, so
best-effort pods are not all packed onto the emptiest, most "balanced" node.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import NodeResourcesBalancedAllocationArgs
from scheduler.framework.batch import SignsByTemplate
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle
from scheduler.framework.status import Status, skip
from scheduler.framework.types import ClusterEventWithHint, NodeInfo
from scheduler.model.pod import Pod
from scheduler.plugins.helper.gomath import go_div
from scheduler.plugins.node_resources_fit import ResourceAllocationScorer, pod_resource_requests, request_memo_key

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


def balanced_resource_score(requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
    """balancedResourceScorer: 50 + (50 + balance with the pod - balance without it) / 2, on 0..100."""
    half = MAX_NODE_SCORE // 2
    return half + go_div(half + balance(requested, allocatable) - balance(allocated, allocatable), 2)


def balance(requested: list[int], allocatable: list[int]) -> int:
    """balancedResourceScore: 100 for equal usage fractions, with upstream's float operations in order."""
    fractions: list[float] = []
    total = 0.0
    for i, alloc in enumerate(allocatable):
        if alloc == 0:
            continue
        fraction = min(float(requested[i]) / float(alloc), 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        sq = 0.0
        for fraction in fractions:
            sq = sq + (fraction - mean) * (fraction - mean)
        std = math.sqrt(sq / float(len(fractions)))
    return int((1 - std) * float(MAX_NODE_SCORE))


class NodeResourcesBalancedAllocation(SignsByTemplate):
    """Scores nodes by how evenly the pod would leave their resources used."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable: verdicts and scores depend on the pod template and the one node only."""
        return ()

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        self.resources = plugin_args(NodeResourcesBalancedAllocationArgs, args).resources
        self.scorer = ResourceAllocationScorer(self.resources, use_requested=True, fn=balanced_resource_score)
        self._request_key = request_memo_key(self.resources, True)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Skip best-effort pods (nothing requested among the configured resources)."""
        reqs = pod_resource_requests(pod, self.resources, True, self._request_key)
        if not any(reqs):
            return skip()
        state.write(PRE_SCORE_STATE_KEY, reqs)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        reqs = state.get(PRE_SCORE_STATE_KEY)
        if reqs is None:  # PreScore disabled: compute here, still giving best-effort pods nothing
            reqs = pod_resource_requests(pod, self.resources, use_requested=True)
            if not any(reqs):
                return 0, None
        return self.scorer.score(node_info, reqs), None

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """``score`` for every node in one call (same values, in order)."""
        reqs = state.get(PRE_SCORE_STATE_KEY)
        if reqs is None:
            reqs = pod_resource_requests(pod, self.resources, use_requested=True)
            if not any(reqs):
                return [0] * len(nodes), None
        return self.scorer.score_nodes(nodes, reqs), None

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A score-only plugin never rejects a pod, so no event can make one schedulable."""
        return []
