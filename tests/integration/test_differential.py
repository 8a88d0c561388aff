"""A small seeded batch of the differential test (e2e/differential.py): kube-scheduler v1.37.2 and
`simulate` on the same random scenarios must agree on the node, the message and the per-plugin scores.
`make differential N=200` runs a larger batch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.cluster.cluster import LocalCluster
from e2e.differential import Differential, generate

SEEDS = range(1, 13)


@pytest.fixture(scope="module")
def differential(cluster: LocalCluster, workdir: Path) -> Iterator[Differential]:
    d = Differential(cluster.kubeconfig, workdir)
    try:
        yield d
    finally:
        d.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_kube_scheduler_and_simulate_agree(differential: Differential, seed: int) -> None:
    v = differential.run(generate(seed))
    assert not v.problems, "\n".join(v.problems)


def test_the_batch_covers_both_verdicts_and_scoring() -> None:
    """The seeds are worth running: some pods fit several nodes (scores compared), some fit none."""
    scenarios = [generate(s) for s in SEEDS]
    assert any(len(sc.nodes) > 2 for sc in scenarios)
    assert any("resources" in sc.pod["spec"] for sc in scenarios)
    assert any("topologySpreadConstraints" in sc.pod["spec"] for sc in scenarios)
    assert any("affinity" in sc.pod["spec"] for sc in scenarios)
