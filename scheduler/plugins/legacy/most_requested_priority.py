"""MostRequestedPriority: the seed-era (v1.16) priority ``MostRequestedPriorityMap``, as a Score plugin.

``k8s.io/kubernetes@v1.16.0/pkg/scheduler/algorithm/priorities/most_requested.go``: per cpu and memory ``requested·MAX
/ capacity``, 0 when capacity is 0 **or requested exceeds capacity** (later versions cap instead of zeroing), averaged
1:1 with integer division; requested = the pod's non-zero request + the node's NonZeroRequest, v1.16 style (regular
containers only, 100m / 200Mi defaults).

Mapping to 0..100: as for LeastRequestedPriority, the integer formula is evaluated with MAX = 100 as
v1.17+ and the v1.18 legacy registry (NodeResourcesMostAllocated) did, not as the 0..10 value x 10.
"""

from __future__ import annotations

from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.plugins.helper.gomath import go_div
from scheduler.plugins.legacy.requested_priority import LegacyRequestedPriority

NAME = "MostRequestedPriority"


def most_requested_score(requested: int, capacity: int) -> int:
    """Used share on 0..100; v1.16 zeroes (does not cap) an over-committed resource."""
    if capacity == 0 or requested > capacity:
        return 0
    return go_div(requested * MAX_NODE_SCORE, capacity)


class MostRequestedPriority(LegacyRequestedPriority):
    """Prefers nodes whose cpu and memory are most requested (v1.16 formula, 0..100)."""

    name = NAME
    resource_score = staticmethod(most_requested_score)
