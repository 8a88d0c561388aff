"""The prioritized-list score: earlier subrequests score higher, existing allocations count too."""

from __future__ import annotations

import pytest

from scheduler.model.dra import AllocationResult, DeviceRequestAllocationResult, resource_claim_from_api
from scheduler.plugins.helper.dynamicresources.score import ScoreError, prioritized_list_score
from tests.plugins.dynamicresources.dra_objects import claim, exactly

FIRST_AVAILABLE = [{"name": "req", "firstAvailable": [{"name": "big", "deviceClassName": "gpu"},
                                                      {"name": "small", "deviceClassName": "gpu"}]},
                   {"name": "plain", "exactly": exactly()}]


def _allocation(*requests: str) -> AllocationResult:
    return AllocationResult(tuple(DeviceRequestAllocationResult(r, "d", "p", f"dev-{i}")
                                  for i, r in enumerate(requests)))


@pytest.mark.parametrize(("chosen", "score"), [("req/big", 8), ("req/small", 7)])
def test_earlier_subrequest_scores_higher(chosen: str, score: int) -> None:
    c = claim(requests=FIRST_AVAILABLE)
    assert prioritized_list_score([c], [_allocation(chosen, "plain")]) == score


def test_allocated_claim_counts_and_new_results_go_to_unallocated_claims_in_order() -> None:
    allocated = resource_claim_from_api(claim("done", requests=FIRST_AVAILABLE).raw | {"status": {"allocation": {
        "devices": {"results": [{"request": "req/small", "driver": "d", "pool": "p", "device": "x"}]}}}})
    pending = claim("new", requests=FIRST_AVAILABLE)
    assert prioritized_list_score([allocated, pending], [_allocation("req/big")]) == 7 + 8


def test_missing_new_allocation_is_an_error() -> None:
    with pytest.raises(ScoreError, match="number of allocations 0 is smaller than number of claims needing allocation"):
        prioritized_list_score([claim()], [])
