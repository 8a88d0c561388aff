"""A small seeded batch of the DRA allocator differential (e2e/dra_allocator/diff.py): py-scheduler's
allocator and k8s.io/dynamic-resource-allocation v0.37.2's, built from e2e/dra_allocator/main.go with
the Go toolchain the control-plane build uses, must choose the same devices and write the same errors.
``python -m e2e.dra_allocator.diff --seeds 20`` runs a larger batch."""

from __future__ import annotations

import random

import pytest

from e2e.dra_allocator import diff

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
