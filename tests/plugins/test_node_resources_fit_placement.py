"""NodeResourcesFit.score_placement: MostAllocated over a placement's nodes taken together, the proposed members'
requests added to what the nodes already hold, whatever strategy scores nodes. Expected scores are worked out by
hand from upstream's integer formula (each case's comment)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from scheduler import testing as st
from scheduler.framework.interface import CycleState
from scheduler.framework.podgroup import PodGroupAssignments, ProposedAssignment
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.node_resources_fit import NodeResourcesFit
from tests.plugins.podgroup_util import group_info, placement_of, pod_group

GPU = "nvidia.com/gpu"
CPU_MEM = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
CPU4_MEM = [{"name": "cpu", "weight": 4}, {"name": "memory", "weight": 1}]
CPU_MEM_GPU = [*CPU_MEM, {"name": GPU, "weight": 1}]


def node(name: str, gpu: str | None = None) -> Node:
    alloc = {"cpu": "5000m", "memory": "5000", "pods": "110"}
    if gpu is not None:
        alloc[GPU] = gpu
    return st.make_node().name(name).allocatable(alloc).obj()


def pod(name: str, requests: Mapping[str, str], node_name: str = "") -> Pod:
    w = st.make_pod().name(name).uid(name).container(st.make_container().image("pause").req(requests))
    return (w.node(node_name) if node_name else w).obj()


def score(resources: Sequence[Mapping[str, object]], nodes: Sequence[Node], placement: Sequence[str] | None,
          assignments: Sequence[tuple[Pod, str]], existing: Sequence[Pod] = (),
          strategy: str = "LeastAllocated") -> int:
    handle = st.new_handle(nodes, existing)
    plugin = NodeResourcesFit({"scoringStrategy": {"type": strategy, "resources": list(resources)}}, handle)
    where = None if placement is None else placement_of(handle, "p", placement)
    proposed = [ProposedAssignment(p, n, CycleState()) for p, n in assignments]
    value, status = plugin.score_placement(CycleState(), group_info(pod_group()), PodGroupAssignments(where, proposed))
    assert status is None
    return value


FOO = pod("foo", {"cpu": "1000m", "memory": "0"})
BAR = pod("bar", {"cpu": "2000m", "memory": "2000"})
TWO = [node("node1"), node("node2")]


@pytest.mark.parametrize(("resources", "assignments", "want"), [
    # cpu 3000/10000 -> 30, memory 2000/10000 -> 20: (30 + 20) / 2
    (CPU_MEM, [(FOO, "node1"), (BAR, "node2")], 25),
    # (4*30 + 20) / 5
    (CPU4_MEM, [(FOO, "node1"), (BAR, "node2")], 28),
    # which node of the placement a member is on does not matter
    (CPU4_MEM, [(FOO, "node1"), (BAR, "node1")], 28),
])
def test_the_members_requests_over_the_placements_allocatable(
        resources: Sequence[Mapping[str, object]], assignments: list[tuple[Pod, str]], want: int) -> None:
    assert score(resources, TWO, ["node1", "node2"], assignments) == want


def test_nodes_outside_the_placement_are_not_counted() -> None:
    three = [*TWO, node("node3")]
    assert score(CPU_MEM, three, ["node1", "node2"], [(FOO, "node1"), (BAR, "node2")]) == 25
    # the whole cluster when the assignments carry no placement: cpu 3000/15000 -> 20, memory 2000/15000 -> 13
    assert score(CPU_MEM, three, None, [(FOO, "node1"), (BAR, "node2")]) == 16


def test_pods_already_on_the_nodes_count() -> None:
    baz = pod("baz", {"cpu": "1000m", "memory": "0"}, "node1")
    # cpu (3000 + 1000) / 10000 -> 40, memory 20: 30
    assert score(CPU_MEM, TWO, ["node1", "node2"], [(FOO, "node1"), (BAR, "node2")], [baz]) == 30


@pytest.mark.parametrize(("gpus", "want"), [
    # cpu 3000/10000 -> 30, memory 20, gpu 1/10 -> 10: 20
    (("0", "1", "0"), 20),
    # no member requests a gpu: left out though baz uses one, (30 + 20) / 2
    (("0", "0", "1"), 25),
], ids=["requested by a member", "requested by none"])
def test_a_scalar_counts_only_when_a_member_requests_it(gpus: tuple[str, str, str], want: int) -> None:
    nodes = [node("node1", gpu="5"), node("node2", gpu="5")]
    foo = pod("foo", {"cpu": "1000m", "memory": "0", GPU: gpus[0]})
    bar = pod("bar", {"cpu": "1000m", "memory": "2000", GPU: gpus[1]})
    baz = pod("baz", {"cpu": "1000m", "memory": "0", GPU: gpus[2]}, "node1")
    assert score(CPU_MEM_GPU, nodes, ["node1", "node2"], [(foo, "node1"), (bar, "node2")], [baz]) == want


def test_a_node_without_the_scalar_adds_nothing_for_it() -> None:
    nodes = [node("node1", gpu="4"), node("node2")]
    bar = pod("bar", {"cpu": "1000m", "memory": "2000", GPU: "2"})
    # cpu 1000/10000 -> 10, memory 20, gpu 2/4 (node2 has none) -> 50: 80 / 3
    assert score(CPU_MEM_GPU, nodes, ["node1", "node2"], [(bar, "node1")]) == 26


def test_members_without_requests_count_the_non_zero_defaults() -> None:
    nodes = [st.make_node().name(f"n{i}").allocatable(cpu="1", memory="1Gi", pods="110").obj() for i in (1, 2)]
    empty = st.make_pod().name("e").uid("e").container(st.make_container().image("pause")).obj()
    # cpu 2*100m / 2000m -> 10, memory 2*200Mi / 2Gi -> 19 (19.53): 14
    assert score(CPU_MEM, nodes, ["n1", "n2"], [(empty, "n1"), (empty, "n2")]) == 14


def test_most_allocated_whatever_the_node_strategy() -> None:
    for strategy in ("LeastAllocated", "MostAllocated"):
        assert score(CPU_MEM, TWO, ["node1", "node2"], [(FOO, "node1"), (BAR, "node2")], strategy=strategy) == 25


def test_over_committed_resources_score_at_most_full() -> None:
    big = pod("big", {"cpu": "20000m", "memory": "5000"})
    # cpu capped at 100, memory 5000/10000 -> 50: 75
    assert score(CPU_MEM, TWO, ["node1", "node2"], [(big, "node1")]) == 75
