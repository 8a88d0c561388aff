"""NodeResourcesBalancedAllocation: std-dev score on real requests, best-effort skip, args."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from util import FakeHandle, container, make_node, make_pod, node_info

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation


def plugin(**args: Any) -> NodeResourcesBalancedAllocation:
    return NodeResourcesBalancedAllocation(args, FakeHandle())


def score(p: NodeResourcesBalancedAllocation, pod: Pod, node: Node, existing: Sequence[Pod] = ()) -> int:
    state = CycleState()
    assert p.pre_score(state, pod, []) is None
    s, status = p.score(state, pod, node_info(node, existing))
    assert status is None
    return s


WITH_EPHEMERAL = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "ephemeral-storage"}]}

CASES: list[tuple[str, dict[str, Any], Pod, Node, list[Pod], int]] = [
    # cpu (1+1)/4 = 0.5, memory (2+2)/8 = 0.5: std 0 -> 100
    (
        "perfectly balanced",
        {},
        make_pod(containers=[container("1", "2Gi")]),
        make_node(),
        [make_pod("e", [container("1", "2Gi")], node="n")],
        100,
    ),
    # 0.5 vs 0.125: std = 0.375 / 2 = 0.1875 -> int(81.25) = 81
    ("two resources", {}, make_pod(containers=[container("2", "1Gi")]), make_node(), [], 81),
    # cpu 6/4 capped at 1, memory 0.125: std 0.4375 -> int(56.25) = 56
    ("fraction capped at one", {}, make_pod(containers=[container("6", "1Gi")]), make_node(), [], 56),
    # real requests: no memory request counts 0 (not 200Mi): 0.5 vs 0 -> std 0.25 -> 75
    ("real requests, no defaults", {}, make_pod(containers=[container("2")]), make_node(), [], 75),
    # memory allocatable 0 is skipped: one fraction -> std 0 -> 100
    ("zero allocatable skipped", {}, make_pod(containers=[container("2", "1Gi")]), make_node(memory="0"), [], 100),
    # fractions 0.5, 0.25, 0.5: mean 5/12; squares (1/12)^2 + (1/6)^2 + (1/12)^2 = 6/144;
    # std = sqrt(6/144 / 3) = sqrt(1/72) = 0.11785 -> int(88.21) = 88
    (
        "three resources, population std",
        WITH_EPHEMERAL,
        make_pod(containers=[container("2", "2Gi", ephemeral="5Gi")]),
        make_node(ephemeral="10Gi"),
        [],
        88,
    ),
]


@pytest.mark.parametrize(
    ("args", "pod", "node", "existing", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_score(args: dict[str, Any], pod: Pod, node: Node, existing: list[Pod], expected: int) -> None:
    assert score(plugin(**args), pod, node, existing) == expected


def test_scores_across_nodes_prefer_the_balanced_one() -> None:
    p = plugin()
    pod = make_pod(containers=[container("1", "1Gi")])
    # n1 4 cpu / 8Gi: 0.25 vs 0.125 -> std 0.0625 -> 93; n2 4 cpu / 4Gi: 0.25 vs 0.25 -> 100
    assert [score(p, pod, make_node()), score(p, pod, make_node(memory="4Gi"))] == [93, 100]


@pytest.mark.parametrize(
    "pod",
    [make_pod(), make_pod(containers=[container(ephemeral="1Gi")])],
    ids=["no requests", "requests only a resource not configured"],
)
def test_best_effort_pod_is_skipped(pod: Pod) -> None:
    s = plugin().pre_score(CycleState(), pod, [])
    assert s is not None and s.code == Code.SKIP


def test_score_without_prescore_gives_best_effort_zero() -> None:
    assert plugin().score(CycleState(), make_pod(), node_info(make_node())) == (0, None)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"resources": [{"name": "cpu"}, {"name": "cpu"}]}, "duplicate value"),
        ({"resources": [{"name": "cpu", "weight": 2}]}, "must be 1"),
    ],
    ids=["duplicate resource", "weight other than 1"],
)
def test_invalid_args(args: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        plugin(**args)


def test_registers_no_events() -> None:
    assert plugin().events_to_register() == []
