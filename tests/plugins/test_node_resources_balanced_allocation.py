"""NodeResourcesBalancedAllocation: the change in std-dev balance on real requests (v1.37's
50 + (50 + with - without) / 2), best-effort skip, args."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from tests.builders import container, make_node, make_pod
from tests.plugins.util import FakeHandle, node_info


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
    # cpu (1+1)/4 = 0.5, memory (2+2)/8 = 0.5: with 100; without 0.25 vs 0.25: 100 -> 50 + 50/2 = 75
    (
        "balanced before and after",
        {},
        make_pod(containers=[container("1", "2Gi")]),
        make_node(),
        [make_pod("e", [container("1", "2Gi")], node="n")],
        75,
    ),
    # without: cpu 2/4 = 0.5, memory 0 -> std 0.25 -> 75; with 4Gi: 0.5 vs 0.5 -> 100;
    # 50 + (50 + 100 - 75) / 2 = 50 + 37 (integer division)
    (
        "the pod evens out an unbalanced node",
        {},
        make_pod(containers=[container(memory="4Gi")]),
        make_node(),
        [make_pod("e", [container("2")], node="n")],
        87,
    ),
    # An empty node balances 100 without the pod, so these score 50 + (50 + with - 100) / 2.
    # 0.5 vs 0.125: std = 0.375 / 2 = 0.1875 -> with int(81.25) = 81 -> 50 + 31 / 2 = 65
    ("two resources", {}, make_pod(containers=[container("2", "1Gi")]), make_node(), [], 65),
    # cpu 6/4 capped at 1, memory 0.125: std 0.4375 -> with int(56.25) = 56 -> 53
    ("fraction capped at one", {}, make_pod(containers=[container("6", "1Gi")]), make_node(), [], 53),
    # real requests: no memory request counts 0 (not 200Mi): 0.5 vs 0 -> std 0.25 -> with 75 -> 62
    ("real requests, no defaults", {}, make_pod(containers=[container("2")]), make_node(), [], 62),
    # memory allocatable 0 is skipped: one fraction -> std 0 -> 100 with and without -> 75
    ("zero allocatable skipped", {}, make_pod(containers=[container("2", "1Gi")]), make_node(memory="0"), [], 75),
    # fractions 0.5, 0.25, 0.5: mean 5/12; squares (1/12)^2 + (1/6)^2 + (1/12)^2 = 6/144;
    # std = sqrt(6/144 / 3) = sqrt(1/72) = 0.11785 -> with int(88.21) = 88 -> 50 + 38 / 2 = 69
    (
        "three resources, population std",
        WITH_EPHEMERAL,
        make_pod(containers=[container("2", "2Gi", ephemeral="5Gi")]),
        make_node(ephemeral="10Gi"),
        [],
        69,
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
    # n1 4 cpu / 8Gi: 0.25 vs 0.125 -> std 0.0625 -> 93 -> 50 + 43 / 2 = 71; n2 4 cpu / 4Gi: 100 -> 75
    assert [score(p, pod, make_node()), score(p, pod, make_node(memory="4Gi"))] == [71, 75]


def test_the_score_follows_the_change_in_balance() -> None:
    """The score is the change in balance: a node left as unbalanced as before scores 75, one made more
    balanced above it, one made less balanced below, whatever the absolute balance."""
    p = plugin()
    pod = make_pod(containers=[container("1")])
    # before 3/4 cpu, 0 memory: std 0.375 -> 62; after 4/4, 0: capped 1 vs 0 -> std 0.5 -> 50: 50 + 38/2 = 69
    worse = score(p, pod, make_node(), [make_pod("e", [container("3")], node="n")])
    # before 0 cpu, 4Gi of 8: std 0.25 -> 75; after 1/4 cpu vs 0.5: std 0.125 -> 87: 50 + 62/2 = 81
    better = score(p, pod, make_node(), [make_pod("e", [container(memory="4Gi")], node="n")])
    assert (worse, better) == (69, 81)


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
