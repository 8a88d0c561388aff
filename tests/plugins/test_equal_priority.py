"""EqualPriority: every node scores 1, whatever the pod or node."""

from __future__ import annotations

from scheduler.framework.interface import CycleState
from scheduler.plugins.legacy.equal_priority import EqualPriority
from tests.builders import container, make_node, make_pod
from tests.plugins.util import FakeHandle, node_info


def test_every_node_scores_one() -> None:
    p = EqualPriority({}, FakeHandle())
    nodes = [make_node("small", cpu="1"), make_node("big", cpu="64", labels={"x": "y"})]
    pods = [make_pod(), make_pod(containers=[container("1", "1Gi")])]
    assert {p.score(CycleState(), pod, node_info(n)) for n in nodes for pod in pods} == {(1, None)}
    assert p.events_to_register() == []
