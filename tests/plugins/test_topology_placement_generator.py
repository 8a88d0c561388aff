"""TopologyPlacementGenerator.generate_placements: a placement per domain of the PodGroup's topology key, in node
order, nodes without the key left out, already scheduled members pinning their domain, and upstream's errors."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from scheduler import testing as st
from scheduler.framework.interface import CycleState
from scheduler.framework.podgroup import Placement
from scheduler.framework.status import Code, Status
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.workload import PodGroup
from scheduler.plugins.topology_placement_generator import TopologyPlacementGenerator
from tests.plugins.podgroup_util import (
    EmptyCache,
    group_handle,
    group_info,
    member,
    placement_of,
    pod_group,
    snapshot_of,
)


def node(name: str, **labels: str) -> Node:
    return st.make_node().name(name).labels(labels).allocatable(cpu="4", memory="8Gi", pods="110").obj()


def generate(nodes: Sequence[Node], group: PodGroup, members: Sequence[Pod] = (), parent: Sequence[str] | None = None,
             assumed: Sequence[Pod] = ()) -> tuple[list[Placement], Status | None, Placement]:
    """Run the plugin with the parent placement of the ``parent`` nodes (all nodes when None); ``assumed`` are
    members assumed on the snapshot before (bound copies of unscheduled ``members``). Returns the placements, the
    status and the parent placement."""
    handle, _ = group_handle(nodes, members, group)
    snapshot = snapshot_of(handle)
    for pod in assumed:
        snapshot.assume_pod(pod)
    infos = {n.name: snapshot.get(n.name) for n in nodes}
    chosen = [n.name for n in nodes] if parent is None else parent
    placement = placement_of(handle, "test-placement", chosen)
    placements, status = TopologyPlacementGenerator({}, handle).generate_placements(
        CycleState(), group_info(group), placement)
    for p in placements:  # the snapshot's own NodeInfos, as the snapshot's assume_placement requires
        assert all(info is infos[info.name] for info in p.nodes)
    return placements, status, placement


def names(placements: list[Placement]) -> list[tuple[str, list[str]]]:
    return [(p.name, [info.name for info in p.nodes]) for p in placements]


def test_without_constraint_the_parent_placement_is_the_one_candidate() -> None:
    nodes = [node("node1"), node("node2", foo="bar"), node("node3")]
    placements, status, parent = generate(nodes, pod_group(), parent=["node1", "node2"])
    assert status is None
    assert len(placements) == 1 and placements[0] is parent
    assert names(placements) == [("test-placement", ["node1", "node2"])]


def test_a_placement_per_domain_in_node_order_without_nodes_lacking_the_key() -> None:
    nodes = [node("node0", topology2="d1"), node("node1", topology2="d4"), node("node2", topology1="d2"),
             node("node3", topology1="d1"), node("node4", topology1="d2"), node("node5", topology1="d3")]
    placements, status, _ = generate(nodes, pod_group("topology1"))
    assert status is None
    assert names(placements) == [("d2", ["node2", "node4"]), ("d1", ["node3"]), ("d3", ["node5"])]


def test_only_nodes_of_the_parent_placement_are_split() -> None:
    nodes = [node("a1", rack="a"), node("b1", rack="b"), node("a2", rack="a"), node("b2", rack="b")]
    placements, status, _ = generate(nodes, pod_group("rack"), parent=["b2", "a2"])
    assert status is None
    assert names(placements) == [("b", ["b2"]), ("a", ["a2"])]


def test_an_empty_label_value_is_a_domain_of_its_own() -> None:
    nodes = [node("n1", rack=""), node("n2", rack="a")]
    placements, status, _ = generate(nodes, pod_group("rack"))
    assert status is None
    assert names(placements) == [("", ["n1"]), ("a", ["n2"])]


def test_no_node_with_the_key_gives_no_placement() -> None:
    nodes = [node("node0", topology2="d1"), node("node1", topology1="d1")]
    placements, status, _ = generate(nodes, pod_group("topology3"))
    assert status is None
    assert placements == []


def test_assigned_members_pin_their_domain() -> None:
    nodes = [node("node0", topology="d2"), node("node1", topology="d1"), node("node2", topology="d1"),
             node("node3", topology="d1")]
    members = [member("p0", "node2"), member("p1", "node3"), member("p2")]
    placements, status, _ = generate(nodes, pod_group("topology"), members, parent=["node0", "node1"])
    assert status is None
    assert names(placements) == [("d1", ["node1"])]


def test_an_assumed_member_pins_its_domain_too() -> None:
    nodes = [node("a1", rack="a"), node("b1", rack="b"), node("b2", rack="b")]
    members = [member("p0"), member("p1")]
    placements, status, _ = generate(nodes, pod_group("rack"), members, assumed=[member("p0", "b1")])
    assert status is None
    assert names(placements) == [("b", ["b1", "b2"])]


def test_the_snapshot_is_read_not_the_live_cache() -> None:
    nodes = [node("a1", rack="a"), node("b1", rack="b")]
    handle, _ = group_handle(nodes, [member("p0", "b1"), member("p1")], pod_group("rack"), cache=EmptyCache())
    placements, status = TopologyPlacementGenerator({}, handle).generate_placements(
        CycleState(), group_info(pod_group("rack")), None)
    assert status is None
    assert names(placements) == [("b", ["b1"])]


def test_the_pinned_domain_outside_the_parent_placement_gives_no_placement() -> None:
    nodes = [node("node0", topology="d2"), node("node2", topology="d1"), node("node3", topology="d1")]
    members = [member("p0", "node2"), member("p1", "node3")]
    placements, status, _ = generate(nodes, pod_group("topology"), members, parent=["node0"])
    assert status is None
    assert placements == []


NODES = [node("node0", topology="d2"), node("node1", topology="d1"), node("node2", topology="d0"),
         node("node3", topology="d1"), node("node5", foo="bar")]


@pytest.mark.parametrize(("members", "assumed", "why"), [
    # One assigned, one assumed: the state lists assigned members first, so the message's order is fixed.
    ([member("p0", "node2"), member("p1")], [member("p1", "node3")],
     "more than 1 domain found for pod group: d0, d1"),
    ([member("p0", "node4")], [], 'getting node for pod default/p0: nodeinfo not found for node name "node4"'),
    ([member("p0", "node5")], [], "no topology domain found for pod default/p0"),
], ids=["two domains", "node outside the snapshot", "node without the key"])
def test_members_not_in_one_domain_are_an_error(members: list[Pod], assumed: list[Pod], why: str) -> None:
    placements, status, _ = generate(NODES, pod_group("topology"), members, assumed=assumed)
    assert placements == [] and status is not None and status.code == Code.ERROR
    assert status.message == f"cannot determine domain for already scheduled pods: {why}"


def test_a_group_without_state_is_an_error() -> None:
    nodes = [node("n1", rack="a")]
    handle = st.new_handle(nodes)
    placements, status = TopologyPlacementGenerator({}, handle).generate_placements(
        CycleState(), group_info(pod_group("rack")), None)
    assert placements == [] and status is not None and status.code == Code.ERROR
    assert status.message == "pod group state not found for pod group default/pg"


def test_without_a_parent_placement_every_node_is_split() -> None:
    nodes = [node("a1", rack="a"), node("b1", rack="b"), node("a2", rack="a")]
    handle, _ = group_handle(nodes, [member("p0")], pod_group("rack"))
    placements, status = TopologyPlacementGenerator({}, handle).generate_placements(
        CycleState(), group_info(pod_group("rack")), None)
    assert status is None
    assert names(placements) == [("a", ["a1", "a2"]), ("b", ["b1"])]
