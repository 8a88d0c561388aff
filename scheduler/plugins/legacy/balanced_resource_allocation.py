"""BalancedResourceAllocation: the seed-era (v1.16) priority ``BalancedResourceAllocationMap``.

``k8s.io/kubernetes@v1.16.0/pkg/scheduler/algorithm/priorities/balanced_resource_allocation.go``: with
f_cpu = requested_cpu / capacity_cpu and f_mem likewise (a capacity of 0 gives the fraction 1),
the score is 0 when either fraction is ≥ 1, else ``int((1 - |f_cpu - f_mem|) · MAX)``. Unlike the
current NodeResourcesBalancedAllocation, requested uses v1.16 *non-zero* requests (pod + node
NonZeroRequest, regular containers only, 100m / 200Mi defaults), and best-effort pods are scored.
The volume variant (gate BalanceAttachedNodeVolumes, alpha and off) is not reproduced.

Mapping to 0..100: v1.16 used MAX = 10; v1.17+ and the v1.18 legacy registry evaluate the same
expression with MAX = 100 (``int((1 - diff) · 100)``, not the 0..10 value x 10). This plugin does that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle
from scheduler.framework.status import Status, error
from scheduler.framework.types import ClusterEventWithHint, NodeInfo
from scheduler.model.errors import InvalidObjectError
from scheduler.model.pod import Pod
from scheduler.plugins.legacy.non_zero_requests import legacy_requested

NAME = "BalancedResourceAllocation"


def fraction_of_capacity(requested: int, capacity: int) -> float:
    """A node without the resource counts as full, so it never looks balanced."""
    if capacity == 0:
        return 1.0
    return float(requested) / float(capacity)


def balanced_score(cpu_requested: int, cpu_capacity: int, mem_requested: int, mem_capacity: int) -> int:
    """1 - |f_cpu - f_mem| on 0..100; a full (or over-full) resource scores 0."""
    cpu = fraction_of_capacity(cpu_requested, cpu_capacity)
    mem = fraction_of_capacity(mem_requested, mem_capacity)
    if cpu >= 1 or mem >= 1:
        return 0
    return int((1 - abs(cpu - mem)) * float(MAX_NODE_SCORE))


class BalancedResourceAllocation:
    """Prefers nodes whose cpu and memory fractions stay close (v1.16 formula, 0..100)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            cpu, mem = legacy_requested(pod, node_info)
        except InvalidObjectError as exc:
            return 0, error(exc)
        alloc = node_info.allocatable
        return balanced_score(cpu, alloc.milli_cpu, mem, alloc.memory), None

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A score-only plugin never rejects a pod, so no event can make one schedulable."""
        return []
