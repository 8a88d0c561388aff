"""The pod-group differential's verdict rules (e2e/differential_workload.compare_group) on hand-made results:
members compared in name order, a tie with kube's node accepted (and the later members then compared on their
verdict only), messages left out where kube lists placements in Go map order, and the simulate runs tried
with the members, or the bound pods, in another order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from e2e.cluster.cluster import WORKLOAD_GATES
from e2e.differential_workload import GroupVerdict, compare_group, reordered, victim_ordered
from e2e.process import gate_flag
from scheduler.framework.features import parse_feature_gates
from scheduler.whatif.simulate import run_simulation

FAILED = "0/2 nodes are available: 2 Insufficient cpu."
SCHEDULED = ("True", "Scheduled", "")


def verdict(kube: dict[str, Any], py: dict[str, Any], kube_victims: list[str] | None = None,
            py_victims: list[str] | None = None, py_condition: tuple[str, str, str] | None = SCHEDULED) -> GroupVerdict:
    return GroupVerdict(1, "g0", kube, py, SCHEDULED, py_condition, kube_victims or [], py_victims or [])


def test_the_same_nodes_messages_condition_and_victims_agree() -> None:
    v = verdict({"g0-0": ("n1", ""), "g0-1": (None, FAILED)}, {"g0-0": ("n1", ""), "g0-1": (None, FAILED)})
    compare_group(v, {})
    assert v.problems == []


def test_a_tie_for_one_member_excuses_the_later_members_nodes_but_not_their_verdicts() -> None:
    scores = {"g0-0": {"n1": {"total": 300}, "n2": {"total": 300}}}
    v = verdict({"g0-0": ("n2", ""), "g0-1": ("n1", "")}, {"g0-0": ("n1", ""), "g0-1": ("n2", "")})
    compare_group(v, scores)
    assert v.problems == []
    unplaced = verdict({"g0-0": ("n2", ""), "g0-1": ("n1", "")}, {"g0-0": ("n1", ""), "g0-1": (None, FAILED)})
    compare_group(unplaced, scores)
    assert len(unplaced.problems) == 1 and "g0-1: kube n1" in unplaced.problems[0]


def test_a_worse_node_is_a_difference() -> None:
    v = verdict({"g0-0": ("n2", "")}, {"g0-0": ("n1", "")})
    compare_group(v, {"g0-0": {"n1": {"total": 300}, "n2": {"total": 200}}})
    assert v.problems == ["g0-0: kube chose n2, py n1 (py totals {'n1': 300, 'n2': 200})"]


def test_messages_condition_and_victims_are_compared_unless_told_otherwise() -> None:
    failed = ("False", "Unschedulable", "first placement status: a")
    v = verdict({"g0-0": (None, FAILED)}, {"g0-0": (None, "0/1 nodes are available: 1 Insufficient cpu.")},
                kube_victims=["ns/b0"], py_condition=("False", "Unschedulable", "first placement status: b"))
    v.kube_condition = failed
    compare_group(v, {})
    assert [p.split(":")[0] for p in v.problems] == ["g0-0", "PodGroup condition differs", "victims differ"]
    quiet = verdict({"g0-0": (None, FAILED)}, {"g0-0": (None, "other")},
                    py_condition=("False", "Unschedulable", "first placement status: b"))
    quiet.kube_condition = failed
    compare_group(quiet, {}, messages=False)
    assert quiet.problems == []


def test_reordering_moves_the_pods_and_keeps_the_podgroup_in_place() -> None:
    created = [{"kind": "Pod", "n": i} for i in range(4)] + [{"kind": "PodGroup"}]
    assert reordered(created, 0) is created
    moved = reordered(created, 3)
    assert moved[-1] == {"kind": "PodGroup"} and sorted(o["n"] for o in moved[:4]) == [0, 1, 2, 3]
    assert any(reordered(created, k)[:4] != created[:4] for k in range(1, 4))


def test_victims_alike_in_group_node_priority_requests_and_start_are_interchangeable() -> None:
    v = verdict({"g0-0": ("n1", "")}, {"g0-0": ("n1", "")}, kube_victims=["ns/a"], py_victims=["ns/b"])
    v.alike = {"ns/a": "same", "ns/b": "same", "ns/c": "other"}
    compare_group(v, {})
    assert v.problems == []
    v.py_victims = ["ns/c"]
    compare_group(v, {})
    assert v.problems == ["victims differ: kube ['ns/a'], py ['ns/c']"]


def test_victim_orders_move_only_the_bound_pods() -> None:
    before = [{"kind": "Node", "n": -1}, *({"kind": "Pod", "n": i} for i in range(3)), {"kind": "PodGroup"}]
    assert victim_ordered(before, 0) is before
    assert [o.get("n") for o in victim_ordered(before, 1)] == [-1, 2, 1, 0, None]
    assert all(sorted(o["n"] for o in victim_ordered(before, k)[1:4]) == [0, 1, 2] for k in range(2, 5))


def _pod(name: str, spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {**spec, "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]},
            "status": status or {}}


def test_simulate_reprieves_equal_victims_in_the_cluster_files_order(tmp_path: Path) -> None:
    """Why victim_ordered is tried: of two equal victims on a node, simulate keeps the one its cluster file lists
    first (the node's pod order), as kube-scheduler keeps the one its cache lists first."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
            "value": 1000}
    started = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    bound = [_pod(n, {"nodeName": "n1"}, started) for n in ("b0", "b1")]
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g0", "namespace": "default"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}, "priorityClassName": "high"}}
    member = _pod("g0-0", {"priorityClassName": "high", "schedulingGroup": {"podGroupName": "g0"}})
    features = parse_feature_gates(gate_flag(WORKLOAD_GATES))
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump_all([group, member]))
    victims = []
    for order in (0, 1):
        cluster = tmp_path / f"cluster-{order}.yaml"
        cluster.write_text(yaml.safe_dump_all(victim_ordered([node, high, *bound], order)))
        sim = run_simulation(str(cluster), str(pods), seed=0, tie_break="name", features=features)
        victims.append(sorted({v for r in sim.results for v in r.get("victims") or []}))
    assert victims == [["default/b1"], ["default/b0"]]
