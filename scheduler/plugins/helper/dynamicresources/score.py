"""DynamicResources' Score: nodes where earlier ``firstAvailable`` subrequests fit score higher.

Follows ``computeScore`` in ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go``
: for every claim of the pod (its existing allocation, or the next of the node's
new allocation results for an unallocated claim), each allocated subrequest ``request/sub`` at
position i of its request's ``firstAvailable`` adds ``8 - i`` (FirstAvailableDeviceRequestMaxSize).
The plugin normalises the scores to 0-100 (``helper.DefaultNormalizeScore``) and weighs them 2.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.model.dra import AllocationResult, ResourceClaim

FIRST_AVAILABLE_MAX_SIZE = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize


class ScoreError(ValueError):
    """Fewer new allocation results than unallocated claims (an internal error upstream)."""


def prioritized_list_score(claims: Sequence[ResourceClaim], new_allocations: Sequence[AllocationResult]) -> int:
    """The node's raw score for the pod's claims, given the allocations Filter computed on it."""
    score = 0
    next_new = 0
    for claim in claims:
        allocation = claim.allocation
        if allocation is None:
            if next_new >= len(new_allocations):
                raise ScoreError(f"number of allocations {len(new_allocations)} is smaller than number of claims "
                                 "needing allocation")
            allocation = new_allocations[next_new]
            next_new += 1
        chosen = {r.request for r in allocation.results if len(r.request.split("/")) == 2}
        for request in claim.requests:
            if request.exactly is not None:
                continue
            for i, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in chosen:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score
