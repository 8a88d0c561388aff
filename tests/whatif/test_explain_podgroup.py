"""`explain` for the Workload API's pod groups (GenericWorkload on) on hand-made clusters: the PodGroup missing,
too few members, a gang that cannot fit (which member failed where, the condition the cycle would write), one
that fits, one that would preempt, a bound member, and the gate off."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.features import Features
from scheduler.whatif.explain import explain, format_explain
from scheduler.whatif.explain_podgroup import (
    NO_POD_GROUP,
    SCHEDULED,
    TOO_FEW_MEMBERS,
    UNSCHEDULABLE,
    WAITING_ON_PREEMPTION,
    explain_pod_group,
)
from scheduler.whatif.simulate import SimulationError
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
