"""LeastRequestedPriority: the seed-era (v1.16) priority ``LeastRequestedPriorityMap``, as a Score plugin.

``k8s.io/kubernetes@v1.16.0/pkg/scheduler/algorithm/priorities/least_requested.go``: per cpu and memory
``(capacity - requested)·MAX / capacity`` (0 when capacity is 0 or requested exceeds it), averaged
1:1 with integer division, where requested = the pod's non-zero request + the node's NonZeroRequest.
v1.16 non-zero requests count regular containers only (no init containers, no overhead), 100m / 200Mi
for a container without a cpu / memory request; they are recomputed here from the pod specs.

Mapping to 0..100: v1.16 used MAX = 10. From v1.17 on, and in the v1.18 legacy registry that maps
this name to NodeResourcesLeastAllocated, the same integer formula is evaluated with MAX = 100 (not the
0..10 result times 10), so e.g. 63 % free gives 63, not 60. This plugin reproduces that 0..100 form.
"""

from __future__ import annotations

from scheduler.plugins.legacy.requested_priority import LegacyRequestedPriority
from scheduler.plugins.node_resources_fit import least_requested_score

NAME = "LeastRequestedPriority"


class LeastRequestedPriority(LegacyRequestedPriority):
    """Prefers nodes with the most unrequested cpu and memory (v1.16 formula, 0..100)."""

    name = NAME
    resource_score = staticmethod(least_requested_score)
