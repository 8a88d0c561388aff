"""LeastRequestedPriority (v1.16 priority at 0..100): non-zero requests of regular containers only."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.legacy.least_requested_priority import LeastRequestedPriority
from tests.builders import container, make_node, make_pod
from tests.plugins.util import FakeHandle, node_info


def score(pod: Pod, node: Node, existing: list[Pod]) -> int:
    s, status = LeastRequestedPriority({}, FakeHandle()).score(CycleState(), pod, node_info(node, existing))
    assert status is None
    return s


def on_node(*containers: dict[str, object], init: tuple[dict[str, object], ...] = ()) -> Pod:
    return make_pod("e", list(containers), init_containers=init, node="n")


CASES: list[tuple[str, Pod, Node, list[Pod], int]] = [
    # requested 2000m / 3Gi of 4000m / 8Gi: cpu 2000*100/4000 = 50, mem 5*100/8 = 62; (50+62)/2 = 56
    ("basic", make_pod(containers=[container("1", "1Gi")]), make_node(), [on_node(container("1", "2Gi"))], 56),
    # existing pod without requests counts 100m / 200Mi; incoming 1 cpu / 1Gi:
    # cpu (4000-1100)*100/4000 = 72 (72.5); mem (8192-1224)*100/8192 = 85 (85.06); (72+85)/2 = 78
    (
        "existing best-effort pod counts defaults",
        make_pod(containers=[container("1", "1Gi")]),
        make_node(),
        [on_node(container())],
        78,
    ),
    # v1.16 ignores init containers: cpu 100m (not the 2 cpu init): (4000-100)*100/4000 = 97 (97.5);
    # mem 100Mi: (8192-100)*100/8192 = 98 (98.78); (97+98)/2 = 97
    (
        "init containers ignored",
        make_pod(containers=[container("100m", "100Mi")], init_containers=[container("2", "100Mi")]),
        make_node(),
        [],
        97,
    ),
    # existing pod's init container is ignored too: node holds 100m, incoming 1 cpu / 1Gi ->
    # cpu (4000-1100)*100/4000 = 72; mem (8192-1124)*100/8192 = 86 (86.28); (72+86)/2 = 79
    (
        "existing pod's init container ignored",
        make_pod(containers=[container("1", "1Gi")]),
        make_node(),
        [on_node(container("100m", "100Mi"), init=(container("3", "100Mi"),))],
        79,
    ),
    # zero memory capacity scores 0 but still averages: cpu (4000-1000)*100/4000 = 75; (75+0)/2 = 37
    ("zero capacity still averaged", make_pod(containers=[container("1", "1Gi")]), make_node(memory="0"), [], 37),
    # cpu over capacity -> 0; mem (8-1)*100/8 = 87; (0+87)/2 = 43
    ("over capacity scores 0", make_pod(containers=[container("5", "1Gi")]), make_node(), [], 43),
]


@pytest.mark.parametrize(("pod", "node", "existing", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_score(pod: Pod, node: Node, existing: list[Pod], expected: int) -> None:
    assert score(pod, node, existing) == expected


def test_node_sum_follows_node_changes() -> None:
    node = make_node()
    info = node_info(node)
    p = LeastRequestedPriority({}, FakeHandle())
    pod = make_pod(containers=[container("1", "1Gi")])
    before, _ = p.score(CycleState(), pod, info)
    info.add_pod(on_node(container("1", "2Gi")))
    after, _ = p.score(CycleState(), pod, info)
    # empty: cpu 75, mem 87 -> 81; after adding 1 cpu / 2Gi: 56 (the cached sum must be refreshed)
    assert (before, after) == (81, 56)


def test_bad_quantity_is_an_error() -> None:
    _, status = LeastRequestedPriority({}, FakeHandle()).score(
        CycleState(), make_pod(containers=[container("x")]), node_info(make_node())
    )
    assert status is not None and status.code == Code.ERROR and "requests.cpu" in status.message
