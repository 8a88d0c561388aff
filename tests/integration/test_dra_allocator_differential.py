"""A small seeded batch of the DRA allocator differential (e2e/dra_allocator/diff.py): py-scheduler's
allocator and k8s.io/dynamic-resource-allocation v0.37.2's, built from e2e/dra_allocator/main.go with
the Go toolchain the control-plane build uses, must choose the same devices and write the same errors.
``python -m e2e.dra_allocator.diff --seeds 20`` runs a larger batch."""

from __future__ import annotations

import random
from typing import Any

import pytest

from e2e.dra_allocator import diff
from scheduler.model.dra import ResourceClaim, device_class_from_api, resource_claim_from_api, resource_slice_from_api
from scheduler.model.node import Node, node_from_api
from scheduler.plugins.helper.dynamicresources.allocator import AllocatedState, AllocationError, Allocator
from scheduler.plugins.helper.dynamicresources.cel import CelCache
from scheduler.plugins.helper.dynamicresources.pools import SliceIndex

SEEDS = (1, 2)
CASES = 300


@pytest.mark.parametrize("seed", SEEDS)
def test_allocations_agree_with_upstream(seed: int) -> None:
    assert diff.run(seed, CASES) == 0


def test_the_batch_covers_allocations_failures_and_errors() -> None:
    """The generated cases are worth comparing: each seed has all three outcomes on our side."""
    for seed in SEEDS:
        rng = random.Random(seed)
        outcomes = [diff.ours(diff.generate(rng)) for _ in range(CASES)]
        assert any(o[0] for o in outcomes)
        assert any(o[0] is None and o[1] is None for o in outcomes)
        assert any(o[1] for o in outcomes)


def _answer(allocator: Allocator, node: Node, claims: list[ResourceClaim]) -> Any:
    try:
        results = allocator.allocate(node, claims)
    except AllocationError as exc:
        return str(exc)
    return None if results is None else [[(r.request, r.pool, r.device) for r in a.results] for a in results]


def test_remembered_outcomes_agree_with_a_fresh_search() -> None:
    """The outcomes an allocator remembers in a slice index kept across cycles (shared counters included) are
    what a fresh search answers, for the batch's cases under changing taken devices and claims."""
    rng = random.Random(SEEDS[0])
    hits_with_counters = 0
    for _ in range(CASES):
        case = diff.generate(rng)
        slices = [resource_slice_from_api(s) for s in case["slices"]]
        classes = {c["metadata"]["name"]: device_class_from_api(c) for c in case["classes"]}
        node = node_from_api(case["node"])
        index, cel = SliceIndex(slices), CelCache()
        devices = [(s.driver, s.pool_name, d.name) for s in slices for d in s.devices]
        counters = any(d.consumes_counters for s in slices for d in s.devices)
        claim_sets = [[resource_claim_from_api(c) for c in claims]
                      for claims in (case["claims"], diff.generate(rng)["claims"])]
        for _ in range(8):
            taken = {d for d in devices if rng.random() < 0.3}
            claims = rng.choice(claim_sets)
            remembering = Allocator(AllocatedState(set(taken)), classes, index, cel)
            key = remembering._memo_key(node, claims)
            hits_with_counters += counters and key is not None and index.remembered(node, key)[0]
            fresh = Allocator(AllocatedState(set(taken)), classes, slices, CelCache())
            assert _answer(remembering, node, claims) == _answer(fresh, node, claims)
    assert hits_with_counters > 50
