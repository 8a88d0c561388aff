"""PodGroupPodsCount: a placement's score is the group's scheduled members (assigned and assumed) plus the ones it
places; NormalizePlacementScore scales by the best candidate, and fails when no candidate places any pod."""

from __future__ import annotations

from scheduler import testing as st
from scheduler.framework.interface import CycleState
from scheduler.framework.podgroup import (
    Placement,
    PlacementScore,
    PodGroupAssignments,
    ProposedAssignment,
)
from scheduler.framework.status import Code
from scheduler.plugins.pod_group_pods_count import PodGroupPodsCount
from tests.plugins.podgroup_util import EmptyCache, group_handle, group_info, member, pod_group, snapshot_of

NODES = [st.make_node().name(f"node{i}").allocatable(cpu="4", memory="8Gi", pods="110").obj() for i in (1, 2, 3)]


def proposed(*pairs: tuple[str, str]) -> PodGroupAssignments:
    return PodGroupAssignments(None, [ProposedAssignment(member(name), node, CycleState()) for name, node in pairs])


TWO_PROPOSED = proposed(("proposed-1", "node1"), ("proposed-2", "node2"))


def test_assigned_assumed_and_proposed_members_all_count() -> None:
    members = [member("a1", "node2"), member("a2", "node3"), member("s1")]
    handle, _ = group_handle(NODES, members, pod_group())
    snapshot_of(handle).assume_pod(member("s1", "node1"))
    score, status = PodGroupPodsCount({}, handle).score_placement(CycleState(), group_info(pod_group()), TWO_PROPOSED)
    assert (score, status) == (5, None)  # 2 assigned + 1 assumed + 2 proposed


def test_only_proposed_members() -> None:
    handle, _ = group_handle(NODES, [member("proposed-1"), member("proposed-2")], pod_group())
    score, status = PodGroupPodsCount({}, handle).score_placement(CycleState(), group_info(pod_group()), TWO_PROPOSED)
    assert (score, status) == (2, None)


def test_the_snapshot_is_read_not_the_live_cache() -> None:
    handle, _ = group_handle(NODES, [member("a1", "node2"), member("proposed-1"), member("proposed-2")], pod_group(),
                             cache=EmptyCache())
    score, status = PodGroupPodsCount({}, handle).score_placement(CycleState(), group_info(pod_group()), TWO_PROPOSED)
    assert (score, status) == (3, None)


def test_a_group_without_state_is_an_error() -> None:
    score, status = PodGroupPodsCount({}, st.new_handle(NODES)).score_placement(
        CycleState(), group_info(pod_group()), TWO_PROPOSED)
    assert score == 0 and status is not None and status.code == Code.ERROR
    assert status.message == "pod group state not found for pod group default/pg"


def scores(*values: int) -> list[PlacementScore]:
    return [PlacementScore(Placement(f"p{i}", []), v) for i, v in enumerate(values)]


def test_normalize_scales_by_the_highest_count_with_integer_division() -> None:
    got = scores(3, 2, 0, 3)
    status = PodGroupPodsCount({}, st.new_handle()).normalize_placement_score(CycleState(), group_info(None), got)
    assert status is None
    assert [s.score for s in got] == [100, 66, 0, 100]  # ties stay tied; 2*100/3 truncates


def test_normalize_keeps_near_counts_near() -> None:
    got = scores(10, 9)
    assert PodGroupPodsCount({}, st.new_handle()).normalize_placement_score(CycleState(), group_info(None), got) is None
    assert [s.score for s in got] == [100, 90]


def test_normalize_fails_when_no_candidate_places_a_pod() -> None:
    got = scores(0, 0)
    status = PodGroupPodsCount({}, st.new_handle()).normalize_placement_score(CycleState(), group_info(None), got)
    assert status is not None and status.code == Code.ERROR
    assert status.message == "no pods from pod group are assigned to any of the candidate placements"
    assert [s.score for s in got] == [0, 0]
