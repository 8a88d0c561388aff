"""A small seeded batch of the differential test with pod groups (e2e/differential_workload.py): kube-scheduler
v1.37.2 and `simulate`, both with the Workload API's gates on, must agree per group on every member's node or
message, the PodGroup's condition and the victims. `make differential-workload N=50` runs a larger batch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.cluster.cluster import WORKLOAD_GATES, LocalCluster
from e2e.differential_workload import PRIORITIES, RACK, WorkloadDifferential, generate

SEEDS = (2, 3, 7, 13, 15, 19)  # unschedulable gangs, topology, pods before their PodGroup, preemption


@pytest.fixture(scope="module")
def differential(workdir: Path) -> Iterator[WorkloadDifferential]:
    """A control plane of its own: the Workload API is served only with its gates on."""
    cluster = LocalCluster(workdir / "cluster-workload", feature_gates=WORKLOAD_GATES)
    cluster.up()
    try:
        d = WorkloadDifferential(cluster.kubeconfig, workdir)
        try:
            yield d
        finally:
            d.close()
    finally:
        cluster.down()


@pytest.mark.parametrize("seed", SEEDS)
def test_kube_scheduler_and_simulate_agree_on_pod_groups(differential: WorkloadDifferential, seed: int) -> None:
    problems = [f"{v.group}: {p}" for v in differential.run(generate(seed)) for p in v.problems]
    assert not problems, "\n".join(problems)


def test_the_batch_covers_gangs_topology_arrival_order_and_priorities() -> None:
    """The seeds are worth running: basic and gang groups, gangs smaller than the group, topology constraints,
    pods that arrive before their PodGroup, groups that outrank bound pods (preemption can help)."""
    groups = [g for s in SEEDS for g in generate(s).groups]
    policies = [g.podgroup["spec"]["schedulingPolicy"] for g in groups]
    assert any("basic" in p for p in policies)
    assert any("gang" in p and p["gang"]["minCount"] < len(g.pods) for p, g in zip(policies, groups, strict=True))
    assert any(t["key"] == RACK for g in groups for t in g.podgroup["spec"].get("schedulingConstraints", {})
               .get("topology", []))
    assert any(g.pods_first for g in groups)

    def priority(o: dict[str, Any]) -> int:
        return PRIORITIES.get(o["spec"].get("priorityClassName", ""), 0)

    outranks = [sc for sc in map(generate, SEEDS)
                if sc.bound and any(priority(g.podgroup) > min(map(priority, sc.bound)) for g in sc.groups)]
    assert len(outranks) >= 3
