"""The Framework's placement runners with the in-tree placement plugins: PlacementGenerate runs the first plugin
(TopologyPlacementGenerator) within the given nodes; PlacementScore scores each feasible placement with every
plugin, normalizes PodGroupPodsCount only (NodeResourcesFit has no NormalizePlacementScore), checks [0, 100] and
weights. Totals are worked out by hand (comments)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler import testing as st
from scheduler.config.types import PluginRef, Profile
from scheduler.framework.interface import CycleState, Handle
from scheduler.framework.podgroup import PodGroupAssignments, PodGroupInfo, ProposedAssignment
from scheduler.framework.runtime.framework import Framework, FrameworkOptions
from scheduler.framework.status import Code, Status
from scheduler.plugins.node_resources_fit import NodeResourcesFit
from scheduler.plugins.pod_group_pods_count import PodGroupPodsCount
from scheduler.plugins.topology_placement_generator import TopologyPlacementGenerator
from tests.plugins.podgroup_util import GROUP, NS, group_info, member, placement_of, pod_group

NODES = [st.make_node().name(f"{r}{i}").label("rack", r).allocatable(cpu="4", memory="8Gi", pods="110").obj()
         for r in "ab" for i in (1, 2)]


class TooHigh:
    """A PlacementScore plugin whose score is out of range (no normalization)."""

    name = "TooHigh"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        pass

    def score_placement(self, state: CycleState, pod_group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Status | None]:
        return 101, None


REGISTRY = {"TopologyPlacementGenerator": TopologyPlacementGenerator, "NodeResourcesFit": NodeResourcesFit,
            "PodGroupPodsCount": PodGroupPodsCount, "TooHigh": TooHigh}


def framework(score: Sequence[PluginRef], generate: bool = True) -> Framework:
    """A framework over NODES (2 cpu already used on a1) whose snapshot knows the group with w0, w1 pending."""
    snapshot = st.make_snapshot(NODES, [st.make_pod().name("busy").uid("busy").node("a1").req(cpu="2").obj()])
    state = snapshot.pod_group_states().state((NS, GROUP))
    state.set_pod_group(pod_group("rack"))
    for name in ("w0", "w1"):
        state.add_pod(member(name))
    plugins = {"placementScore": list(score)}
    if generate:
        plugins["placementGenerate"] = [PluginRef("TopologyPlacementGenerator")]
    return Framework(Profile("default-scheduler", plugins), REGISTRY, FrameworkOptions(
        scheduler=st.TestActions(), snapshot=snapshot, objects=st.make_object_store()))


def test_placement_generate_runs_the_generator_within_the_nodes() -> None:
    fwk = framework([])
    nodes = list(fwk.snapshot().list())
    placements, status = fwk.run_placement_generate_plugins(CycleState(), group_info(pod_group("rack")), nodes)
    assert status is None
    assert [(p.name, [n.name for n in p.nodes]) for p in placements] == [("a", ["a1", "a2"]), ("b", ["b1", "b2"])]
    # a parent narrower than the cluster is split, not the cluster
    placements, status = fwk.run_placement_generate_plugins(CycleState(), group_info(pod_group("rack")), nodes[2:])
    assert status is None and [p.name for p in placements] == ["b"]


def test_no_domain_is_unschedulable_from_the_generator() -> None:
    fwk = framework([])
    placements, status = fwk.run_placement_generate_plugins(CycleState(), group_info(pod_group("zone")),
                                                            list(fwk.snapshot().list()))
    assert placements == [] and status is not None
    assert (status.code, status.message, status.plugin) == (Code.UNSCHEDULABLE, "no feasible placements found",
                                                            "TopologyPlacementGenerator")


def test_without_a_generator_the_nodes_are_the_one_placement() -> None:
    fwk = framework([], generate=False)
    nodes = list(fwk.snapshot().list())
    placements, status = fwk.run_placement_generate_plugins(CycleState(), group_info(pod_group("rack")), nodes)
    assert status is None and len(placements) == 1
    assert placements[0].name == "" and list(placements[0].nodes) == nodes


def assignments(fwk: Framework) -> list[PodGroupAssignments]:
    """Rack a places both members (one cpu each, no memory request: 200Mi counted), rack b one."""
    a = placement_of(fwk, "a", ["a1", "a2"])
    b = placement_of(fwk, "b", ["b1", "b2"])
    w0, w1 = member("w0", cpu="1"), member("w1", cpu="1")
    return [PodGroupAssignments(a, [ProposedAssignment(w0, "a1", CycleState()),
                                    ProposedAssignment(w1, "a2", CycleState())]),
            PodGroupAssignments(b, [ProposedAssignment(w0, "b1", CycleState())])]


def test_placement_scores_normalized_checked_and_weighted() -> None:
    fwk = framework([PluginRef("NodeResourcesFit", 1), PluginRef("PodGroupPodsCount", 2)])
    pgas = assignments(fwk)
    scores, status = fwk.run_placement_score_plugins(CycleState(), group_info(pod_group("rack")), pgas,
                                                     [CycleState(), CycleState()])
    assert status is None
    # rack a: cpu (2000 + 2000) / 8000 -> 50, memory 3 * 200Mi / 16Gi -> 3: 26; count 2 of 2 -> 100, weight 2
    # rack b: cpu 1000 / 8000 -> 12, memory 200Mi / 16Gi -> 1: 6; count 1 of 2 -> 50, weight 2
    assert [(s.placement, s.scores, s.total_score) for s in scores] == [
        (pgas[0].placement, [("NodeResourcesFit", 26), ("PodGroupPodsCount", 200)], 226),
        (pgas[1].placement, [("NodeResourcesFit", 6), ("PodGroupPodsCount", 100)], 106),
    ]


def test_a_score_out_of_range_is_an_error() -> None:
    fwk = framework([PluginRef("NodeResourcesFit", 1), PluginRef("TooHigh", 1)])
    scores, status = fwk.run_placement_score_plugins(CycleState(), group_info(pod_group("rack")), assignments(fwk),
                                                     [CycleState(), CycleState()])
    assert scores == [] and status is not None and status.code == Code.ERROR
    assert status.message == ('applying score defaultWeights on PlacementScore plugins: plugin "TooHigh" returns an '
                              "invalid score 101, it should in the range of [0, 100] after normalizing")


def test_a_normalization_failure_is_an_error() -> None:
    fwk = framework([PluginRef("PodGroupPodsCount", 1)])
    empty = [PodGroupAssignments(p.placement, []) for p in assignments(fwk)]
    scores, status = fwk.run_placement_score_plugins(CycleState(), group_info(pod_group("rack")), empty,
                                                     [CycleState(), CycleState()])
    assert scores == [] and status is not None and status.code == Code.ERROR
    assert status.message == ('running NormalizePlacementScore on PlacementScore plugins: plugin "PodGroupPodsCount" '
                              "failed with: no pods from pod group are assigned to any of the candidate placements")
