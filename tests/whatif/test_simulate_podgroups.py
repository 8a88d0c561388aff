"""`simulate` with PodGroups: a group is placed all or nothing, and the output says why not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scheduler.plugins.helper.podgroup import POD_GROUP_LABEL
from scheduler.whatif.simulate import Simulation, format_table, run_simulation
from tests.builders import sched_node, sched_pod

CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{
        "schedulerName": "py-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
    }],
}  # fmt: skip


def podgroup(name: str, min_member: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": min_member}}


def simulate(tmp_path: Path, cluster: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for name, docs in (("cluster", cluster), ("pods", pods), ("config", [CONFIG])):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump_all(docs))
    return run_simulation(str(tmp_path / "cluster.yaml"), str(tmp_path / "pods.yaml"),
                          str(tmp_path / "config.yaml"), tie_break="name").results


def test_a_group_that_fits_is_placed_whole(tmp_path: Path) -> None:
    results = simulate(tmp_path, [sched_node("n1", "4").api(), podgroup("g", 3)],
                       [sched_pod(f"g-{i}", cpu="1").label(POD_GROUP_LABEL, "g").api() for i in range(3)])
    assert [r["node"] for r in results] == ["n1", "n1", "n1"]


def test_a_group_that_does_not_fit_is_not_placed_and_says_why(tmp_path: Path) -> None:
    cluster = [sched_node("n1", "2").api(), podgroup("big", 3), podgroup("small", 2)]
    pods = [sched_pod(f"big-{i}", cpu="1").label(POD_GROUP_LABEL, "big")
            .api() for i in range(3)] + [sched_pod(f"small-{i}", cpu="1").label(POD_GROUP_LABEL, "small")
                                         .api() for i in range(2)]
    results = simulate(tmp_path, cluster, pods)
    by_pod = {r["pod"]: r for r in results}
    assert [by_pod[f"default/big-{i}"]["node"] for i in range(3)] == [None, None, None]
    msg = by_pod["default/big-2"]["message"]
    assert 'PodGroup "default/big" gets rejected due to Pod big-2 is unschedulable' in msg
    assert 'rejected with PodGroup "default/big"' in by_pod["default/big-0"]["message"]
    # The room the rejected group held is free again for the next group.
    assert [by_pod[f"default/small-{i}"]["node"] for i in range(2)] == ["n1", "n1"]
    assert "rejected with PodGroup" in format_table(Simulation(results))


def test_an_incomplete_group_is_not_placed(tmp_path: Path) -> None:
    results = simulate(tmp_path, [sched_node("n1", "4").api(), podgroup("g", 3)],
                       [sched_pod(f"g-{i}", cpu="1").label(POD_GROUP_LABEL, "g").api() for i in range(2)])
    assert [r["node"] for r in results] == [None, None]
    assert all('PodGroup "default/g"' in r["message"] for r in results)
    assert "current pods number: 2, minMember of group: 3" in results[0]["message"]


def test_members_still_waiting_at_the_end_are_rejected_with_the_group(tmp_path: Path) -> None:
    # 9 of 10 fit; a group missing only 10 % is not rejected at PostFilter, so 9 wait at Permit.
    pods = [sched_pod(f"g-{i}", cpu="100m").label(POD_GROUP_LABEL, "g")
            .api() for i in range(9)] + [sched_pod("g-9", cpu="64").label(POD_GROUP_LABEL, "g").api()]
    results = simulate(tmp_path, [sched_node("n1", "4").api(), podgroup("g", 10)], pods)
    assert all(r["node"] is None for r in results)
    assert 'PodGroup "default/g" was not placed: only 9 of its members could be placed' in results[0]["message"]
    assert "Insufficient cpu" in results[9]["message"]
