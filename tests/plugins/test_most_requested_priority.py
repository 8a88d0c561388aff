"""MostRequestedPriority (v1.16 priority at 0..100): over-capacity scores 0, as in v1.16."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.legacy.most_requested_priority import MostRequestedPriority
from tests.builders import container, make_node, make_pod
from tests.plugins.util import FakeHandle, node_info

CASES: list[tuple[str, Pod, Node, list[Pod], int]] = [
    # 2000m of 4000m -> 50; 3Gi of 8Gi -> 37 (37.5); (50+37)/2 = 43
    (
        "basic",
        make_pod(containers=[container("1", "1Gi")]),
        make_node(),
        [make_pod("e", [container("1", "2Gi")], node="n")],
        43,
    ),
    # v1.16 zeroes an over-capacity resource (later versions cap it): cpu 0; mem 1*100/8 = 12; (0+12)/2 = 6
    ("over capacity scores 0", make_pod(containers=[container("5", "1Gi")]), make_node(), [], 6),
    # no requests: 100m of 1000m -> 10; 200Mi of 1Gi -> 19 (19.53); (10+19)/2 = 14
    ("non-zero defaults", make_pod(), make_node(cpu="1", memory="1Gi"), [], 14),
    # exactly full: 100 and 100
    ("exactly full", make_pod(containers=[container("4", "8Gi")]), make_node(), [], 100),
]


@pytest.mark.parametrize(("pod", "node", "existing", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_score(pod: Pod, node: Node, existing: list[Pod], expected: int) -> None:
    s, status = MostRequestedPriority({}, FakeHandle()).score(CycleState(), pod, node_info(node, existing))
    assert (s, status) == (expected, None)
