"""`make chaos`'s gang scenario in short (issue 48): Workload API gangs bound by py-scheduler on a control plane
with the Workload gates on, while py-scheduler and kube-apiserver are killed with SIGKILL twice at moments a
gang is seen half bound. Once settled every member is bound (so no gang is left below minCount), no pod is lost,
no node overcommitted, no pod bound to a missing node (docs/robustness.md#gangs-under-faults)."""

from __future__ import annotations

from pathlib import Path

from e2e.chaos.gangs import run_gang_scenario
from e2e.cluster.cluster import WORKLOAD_GATES, LocalCluster


def test_gangs_survive_scheduler_and_apiserver_kills(workdir: Path) -> None:
    cluster = LocalCluster(workdir / "gang-chaos-cluster", feature_gates=WORKLOAD_GATES)
    cluster.up()
    try:
        f = run_gang_scenario(cluster, workdir / "gang-chaos", "gang-both-kill9", members=60, seed=7, faults=2)
    finally:
        cluster.down()
    assert f.faults == 2
    assert (f.below_min_count, f.incomplete, f.lost) == (0, 0, 0), f.notes
    assert (f.overcommitted_nodes, f.bound_to_missing_nodes, f.false_unschedulable) == (0, 0, 0)
    assert f.error_lines_after_convergence == 0
    assert f.converge_s is not None and f.clean
