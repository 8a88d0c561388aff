"""BalancedResourceAllocation (v1.16 priority at 0..100): 1 - |f_cpu - f_mem|, 0 when a fraction reaches 1."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.legacy.balanced_resource_allocation import BalancedResourceAllocation
from tests.builders import container, make_node, make_pod
from tests.plugins.util import FakeHandle, node_info

CASES: list[tuple[str, Pod, Node, int]] = [
    # 0.5 vs 0.125: int((1 - 0.375) * 100) = 62 (the current plugin would give 81 with std = diff / 2)
    ("difference, not std", make_pod(containers=[container("2", "1Gi")]), make_node(), 62),
    ("balanced", make_pod(containers=[container("2", "4Gi")]), make_node(), 100),
    # a fraction reaching 1 zeroes the score
    ("cpu full", make_pod(containers=[container("4", "1Gi")]), make_node(), 0),
    ("zero capacity counts as full", make_pod(containers=[container("1", "1Gi")]), make_node(memory="0"), 0),
    # best-effort pods are scored on non-zero defaults: 100/1000 = 0.1 vs 200/1024 = 0.1953125;
    # int((1 - 0.0953125) * 100) = int(90.46875) = 90
    ("best effort scored with defaults", make_pod(), make_node(cpu="1", memory="1Gi"), 90),
]


@pytest.mark.parametrize(("pod", "node", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_score(pod: Pod, node: Node, expected: int) -> None:
    s, status = BalancedResourceAllocation({}, FakeHandle()).score(CycleState(), pod, node_info(node))
    assert (s, status) == (expected, None)
