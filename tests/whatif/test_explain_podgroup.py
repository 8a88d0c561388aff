"""`explain` for the Workload API's pod groups (GenericWorkload on) on hand-made clusters: the PodGroup missing,
too few members, a gang that cannot fit (which member failed where, the condition the cycle would write), one
that fits, one that would preempt, a bound member, the gate off; and the example of docs/gang-scheduling.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.app.cli import dispatch, parser
from scheduler.framework.features import Features
from scheduler.model.pod import pod_from_api
from scheduler.model.validation import validate
from scheduler.model.workload import parse_pod_group
from scheduler.whatif.explain import explain, format_explain
from scheduler.whatif.explain_podgroup import (
    NO_POD_GROUP,
    SCHEDULED,
    TOO_FEW_MEMBERS,
    UNSCHEDULABLE,
    WAITING_ON_PREEMPTION,
    explain_pod_group,
)
from scheduler.whatif.simulate import SimulationError, run_simulation
from tests.builders import sched_node, sched_pod

GATES = Features(enable_generic_workload=True)
NODES = [sched_node("n1", cpu="2").api(), sched_node("n2", cpu="2").api()]


def podgroup(name: str, min_count: int | None = None, priority: int = 0, **status: Any) -> dict[str, Any]:
    policy = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"pg-{name}", "generation": 1},
            "spec": {"schedulingPolicy": policy, "priority": priority}, "status": status}


def member(name: str, group: str, cpu: str = "1", priority: int = 0, node: str = "") -> dict[str, Any]:
    pod = sched_pod(name, cpu=cpu, scheduler="default-scheduler").api()
    pod["spec"]["priority"] = priority
    if group:
        pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    if node:
        pod["spec"]["nodeName"] = node
    return pod


def test_a_member_whose_podgroup_does_not_exist_waits_for_it() -> None:
    r = explain_pod_group("default", "g", [*NODES, member("w0", "g"), member("w1", "g")], None, GATES)
    assert (r["exists"], r["verdict"]) == (False, NO_POD_GROUP)
    assert r["message"].startswith("PodGroup default/g does not exist")
    assert [m["gatedBy"] for m in r["members"]] == ["GangScheduling", "GangScheduling"]
    assert r["members"][0]["message"] == 'waiting for pods\'s pod group "g" to appear in scheduling queue'
    assert "Waiting for its PodGroup: PodGroup default/g does not exist" in format_explain(r)


def test_a_gang_with_fewer_members_than_min_count_is_held_at_pre_enqueue() -> None:
    r = explain_pod_group("default", "g", [*NODES, podgroup("g", 3), member("w0", "g"), member("w1", "g")], None,
                          GATES)
    assert r["verdict"] == TOO_FEW_MEMBERS and r["condition"] is None
    assert "2 pod(s) name this gang and its minCount is 3" in r["message"]
    assert r["members"][1]["message"] == "waiting for minCount pods from a gang to appear in scheduling queue"


def test_a_gang_that_cannot_fit_names_the_member_that_failed_and_the_condition() -> None:
    cluster = [*NODES, podgroup("g", 3), *(member(f"w{i}", "g", cpu="2") for i in range(3))]
    r = explain_pod_group("default", "g", cluster, None, GATES)
    assert r["verdict"] == UNSCHEDULABLE and r["liveCondition"] is None
    cond = r["condition"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodGroupInitiallyScheduled", "False", "Unschedulable")
    assert cond["message"].startswith("minCount (3) cannot be satisfied: 2 scheduled, 0 remaining")
    assert r["message"] == cond["message"]
    w0, _, w2 = r["members"]
    assert w0["message"].startswith("pod group is unschedulable, minCount (3) cannot be satisfied")
    assert w2["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert w2["filtered"] == {n: {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu"} for n in ("n1", "n2")}
    table = format_explain(r)
    assert "A cycle now would write: PodGroupInitiallyScheduled=False Unschedulable: minCount (3)" in table
    assert "  default/w2: 0/2 nodes are available: 2 Insufficient cpu.\n    NodeResourcesFit: Insufficient cpu (2)" \
        in table
    live = {**cond, "lastTransitionTime": "2026-01-01T00:00:00Z"}  # the live scheduler decided the same before
    again = explain_pod_group("default", "g", [*NODES, podgroup("g", 3, conditions=[live]), *cluster[3:]], None, GATES)
    table = format_explain(again)
    assert f"Last cycle (live): PodGroupInitiallyScheduled=False Unschedulable: {cond['message']}\n" in table
    assert "A cycle now would write" not in table


def test_a_gang_that_fits_is_placed_whole_and_a_member_shows_its_group() -> None:
    live = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
                            "message": "an earlier failure", "observedGeneration": 1}]}
    cluster = [*NODES, podgroup("g", 3, **live), *(member(f"w{i}", "g") for i in range(3))]
    r = explain(member("w1", "g"), cluster, None, GATES)
    group = r["podGroup"]
    assert group["verdict"] == SCHEDULED and r["node"] in ("n1", "n2")
    placed = [m["node"] for m in group["members"]]
    assert all(placed) and max(placed.count("n1"), placed.count("n2")) == 2  # 2 cpu a node, 1 a member
    assert group["liveCondition"]["message"] == "an earlier failure"
    assert (group["condition"]["status"], group["condition"]["reason"]) == ("True", "Scheduled")
    table = format_explain(r)
    assert "Last cycle (live): PodGroupInitiallyScheduled=False Unschedulable: an earlier failure" in table
    assert "This member, default/w1:\nChosen node: " in table


def test_a_gang_that_would_preempt_lists_its_victims_and_nominations() -> None:
    low = [member(f"low{i}", "", cpu="2", node=f"n{i}") for i in (1, 2)]
    cluster = [*NODES, *low, podgroup("g", 2, priority=100),
               member("w0", "g", cpu="2", priority=100), member("w1", "g", cpu="2", priority=100)]
    r = explain_pod_group("default", "g", cluster, None, GATES)
    assert r["verdict"] == WAITING_ON_PREEMPTION
    assert r["victims"] == ["default/low1", "default/low2"]
    assert sorted(m["nominatedNode"] for m in r["members"]) == ["n1", "n2"]
    assert "pod group preemption: found a placement for podgroup, preempting 2 victims" in r["condition"]["message"]
    assert "Would preempt: default/low1, default/low2" in format_explain(r)


def test_a_bound_group_is_explained_as_if_pending_and_the_gate_off_explains_a_pod() -> None:
    cluster = [*NODES, podgroup("g", 2), member("w0", "g", node="n1"), member("w1", "g", node="n2")]
    r = explain_pod_group("default", "g", cluster, None, GATES)
    assert r["verdict"] == SCHEDULED
    assert [m["boundTo"] for m in r["members"]] == ["n1", "n2"]
    alone = explain(member("w0", "g"), [*NODES, member("w1", "g")], None)
    assert alone["node"] in ("n1", "n2") and "ignored with GenericWorkload off" in alone["note"]
    with pytest.raises(SimulationError, match="GenericWorkload=true"):
        explain_pod_group("default", "g", cluster, None, Features())


EXAMPLE = Path(__file__).resolve().parents[2] / "manifests" / "examples" / "workload-gang.yaml"


def test_the_docs_example_gang_parses_and_is_placed_whole_only_where_four_fit(tmp_path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    (pg,) = [parse_pod_group(d) for d in docs if d["kind"] == "PodGroup"]
    pods = [pod_from_api(d) for d in docs if d["kind"] == "Pod"]
    assert (pg.policy.is_gang, pg.policy.min_count) == (True, 4)
    assert {p.pod_group_name for p in pods} == {pg.name} and len(pods) == pg.policy.min_count
    assert [e for d in docs if d["kind"] == "Pod" for e in validate(d)] == []
    for cpus, placed in (("2", 4), ("1", 0)):  # two nodes: 4 cpu in all hold the gang, 2 cpu hold none of it
        cluster = tmp_path / f"cluster-{cpus}.yaml"
        cluster.write_text(yaml.safe_dump_all([sched_node(f"n{i}", cpu=cpus).api() for i in (1, 2)]))
        sim = run_simulation(str(cluster), str(EXAMPLE), features=GATES)
        assert sum(1 for r in sim.results if r["node"]) == placed
        (group,) = sim.pod_groups
        assert group["conditions"][0]["reason"] == ("Scheduled" if placed else "Unschedulable")


def test_explain_podgroup_without_the_gate_is_one_line_and_exit_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch(parser().parse_args(["explain", "podgroup/g", "--kubeconfig", "/nonexistent"])) == 2
    assert capsys.readouterr().err == ("py-scheduler explain: pod groups need --feature-gates GenericWorkload=true "
                                       "(as the scheduler runs)\n")


def test_a_topology_constrained_gang_names_its_rack_or_the_placements_that_failed() -> None:
    rack = "example.com/rack"
    nodes = [sched_node(n, cpu=cpu).label(rack, n[0]).api() for n, cpu in
             (("a1", "1"), ("a2", "1"), ("b1", "2"), ("b2", "2"))]
    topology = Features(enable_generic_workload=True, enable_topology_aware_workload_scheduling=True)
    group = podgroup("g", 3)
    group["spec"]["schedulingConstraints"] = {"topology": [{"key": rack}]}
    r = explain_pod_group("default", "g", [*nodes, group, *(member(f"w{i}", "g") for i in range(3))], None, topology)
    assert (r["verdict"], r["placement"], r["topologyKeys"]) == (SCHEDULED, {rack: "b"}, [rack])
    assert {m["node"] for m in r["members"]} <= {"b1", "b2"}
    assert f"Placement: {rack}=b" in format_explain(r)
    big = explain_pod_group("default", "g", [*nodes, group, *(member(f"w{i}", "g", cpu="2") for i in range(3))],
                            None, topology)
    assert big["verdict"] == UNSCHEDULABLE and big["placement"] == {}
    assert "0/2 placements are available, first placement status: minCount (3)" in big["condition"]["message"]
    assert big["message"] == big["condition"]["message"]
