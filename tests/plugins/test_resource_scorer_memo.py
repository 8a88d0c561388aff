"""The resource scorers' memo by a node's four amounts (allocatable and used cpu and memory): a remembered score
is the formula's, and a node that differs in any one of the four amounts is computed afresh."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.types import NodeInfo
from scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from scheduler.plugins.node_resources_fit import NodeResourcesFit, ResourceAllocationScorer, pod_resource_requests
from tests.builders import container, make_node, make_pod
from tests.plugins.util import FakeHandle, node_info

SCORERS: dict[str, Any] = {
    "LeastAllocated": lambda: NodeResourcesFit({}, FakeHandle()).scorer,
    "MostAllocated": lambda: NodeResourcesFit({"scoringStrategy": {"type": "MostAllocated"}}, FakeHandle()).scorer,
    "BalancedAllocation": lambda: NodeResourcesBalancedAllocation({}, FakeHandle()).scorer,
}


def loaded_node(name: str, cpu: str, memory: str, used: list[tuple[str | None, str | None]]) -> NodeInfo:
    """A node of allocatable ``cpu``/``memory`` holding a pod per (cpu, memory) request in ``used`` (None: no
    request, which counts as the non-zero default for LeastAllocated and MostAllocated, as 0 for Balanced)."""
    pods = [make_pod(f"{name}-{i}", [container(c, m)], node=name) for i, (c, m) in enumerate(used)]
    return node_info(make_node(name, cpu=cpu, memory=memory), pods)


def _reference(scorer: ResourceAllocationScorer, nodes: list[NodeInfo], reqs: tuple[int, ...]) -> list[int]:
    """The formula on each node, no memo."""
    plan = scorer._plan(reqs)
    return [scorer._compute(ni, plan) for ni in nodes]


def _requests(scorer: ResourceAllocationScorer) -> tuple[int, ...]:
    pod = make_pod("incoming", [container("500m", "1Gi")])
    return tuple(pod_resource_requests(pod, scorer.resources, use_requested=scorer.use_requested))


@pytest.mark.parametrize("kind", sorted(SCORERS))
def test_a_hit_and_a_miss_give_the_formulas_scores(kind: str) -> None:
    scorer = SCORERS[kind]()
    reqs = _requests(scorer)
    # n1 and its twin share the four amounts (different names, pods and objects): the twin is a hit.
    nodes = [
        loaded_node("n1", "4", "8Gi", [("1", "2Gi")]),
        loaded_node("n2", "8", "16Gi", [("3", "1Gi"), (None, None)]),
        loaded_node("twin", "4", "8Gi", [("500m", "1Gi"), ("500m", "1Gi")]),
        loaded_node("n3", "2", "4Gi", []),
    ]
    expected = _reference(scorer, nodes, reqs)
    first = scorer.compute_nodes(nodes, reqs)
    known = scorer.by_request[reqs][1]
    assert known is not None and len(known) == 3  # the twin hit n1's entry
    assert first == expected
    assert scorer.compute_nodes(list(reversed(nodes)), reqs) == list(reversed(expected))  # every node a hit
    assert len(known) == 3
    assert scorer.score_nodes(nodes, reqs) == expected  # the generation memo's path (above 8 nodes) agrees
    assert scorer.score_nodes(nodes * 3, reqs) == expected * 3


@pytest.mark.parametrize("kind", sorted(SCORERS))
def test_a_node_differing_in_any_one_amount_misses(kind: str) -> None:
    scorer = SCORERS[kind]()
    reqs = _requests(scorer)
    base = loaded_node("base", "4", "8Gi", [("1", "2Gi")])
    variants = [
        loaded_node("alloc-cpu", "6", "8Gi", [("1", "2Gi")]),
        loaded_node("used-cpu", "4", "8Gi", [("2", "2Gi")]),
        loaded_node("alloc-memory", "4", "12Gi", [("1", "2Gi")]),
        loaded_node("used-memory", "4", "8Gi", [("1", "3Gi")]),
    ]
    keys = set()
    for ni in [base, *variants]:
        used = ni.requested if scorer.use_requested else ni.non_zero_requested
        keys.add((ni.allocatable.milli_cpu, used.milli_cpu, ni.allocatable.memory, used.memory))
    assert len(keys) == 5  # each variant moves exactly one of the four amounts
    assert scorer.compute_nodes([base], reqs) == _reference(scorer, [base], reqs)
    for ni in variants:
        assert scorer.compute_nodes([ni], reqs) == _reference(scorer, [ni], reqs)
    known = scorer.by_request[reqs][1]
    assert known is not None and len(known) == 5
    assert len(set(_reference(scorer, [base, *variants], reqs))) > 1  # the amounts matter to the scores
