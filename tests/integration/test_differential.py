"""A small seeded batch of the differential test (e2e/differential.py): kube-scheduler v1.37.2 and
`simulate` on the same random scenarios must agree on the node, the message and the per-plugin scores;
with devices (e2e/differential_dra.py) also on the devices allocated. `make differential N=200` runs a
larger batch, `python -m e2e.differential_dra --scenarios 20` one with devices."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.cluster.cluster import LocalCluster
from e2e.differential import Differential, generate
from e2e.differential_dra import DraDifferential, generate_dra

SEEDS = range(1, 13)
DRA_SEEDS = range(1, 5)


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


@pytest.mark.parametrize("seed", DRA_SEEDS)
def test_kube_scheduler_and_simulate_agree_on_devices(differential: Differential, seed: int) -> None:
    verdicts = DraDifferential(differential).run(generate_dra(seed))
    problems = [f"{d.pod}: {p}" for d in verdicts for p in d.verdict.problems]
    assert not problems, "\n".join(problems)


def test_the_dra_batch_covers_templates_shared_claims_and_constraints() -> None:
    scenarios = [generate_dra(s) for s in DRA_SEEDS]
    kinds = {b["kind"] for sc in scenarios for _, b in sc.namespaced}
    assert kinds == {"ResourceClaim", "ResourceClaimTemplate"}
    specs = [json.dumps(b["spec"]) for sc in scenarios for _, b in sc.namespaced]
    assert any("matchAttribute" in s for s in specs) and any("cel" in s for s in specs)
    assert any("firstAvailable" in s for s in specs)
    slices = [b["spec"] for sc in scenarios for plural, b in sc.cluster_objects if plural == "resourceslices"]
    assert any("allNodes" in s or "nodeSelector" in s for s in slices)
    refs = [ref for sc in scenarios for p in sc.pods for ref in p["spec"]["resourceClaims"]]
    named = [ref["resourceClaimName"] for ref in refs if "resourceClaimName" in ref]
    assert len(named) > len(set(named)), "a claim shared by two pods"
