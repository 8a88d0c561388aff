"""CheckNodeCondition (v1.16 predicate): Ready / NetworkUnavailable / unschedulable reasons, all reported."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import ActionType, EventResource, NodeInfo, QueueingHint
from scheduler.model.node import Node
from scheduler.plugins.legacy.check_node_condition import CheckNodeCondition
from tests.builders import make_node, make_pod
from tests.plugins.util import FakeHandle, node_info

NOT_READY = "node(s) were not ready"
NO_NETWORK = "node(s) had unavailable network"
CORDONED = "node(s) were unschedulable"


def plugin() -> CheckNodeCondition:
    return CheckNodeCondition({}, FakeHandle())


CASES: list[tuple[str, Node, list[str]]] = [
    ("ready", make_node(conditions={"Ready": "True"}), []),
    ("not ready", make_node(conditions={"Ready": "False"}), [NOT_READY]),
    ("ready unknown", make_node(conditions={"Ready": "Unknown"}), [NOT_READY]),
    ("network unavailable", make_node(conditions={"Ready": "True", "NetworkUnavailable": "True"}), [NO_NETWORK]),
    ("network unknown counts as unavailable", make_node(conditions={"NetworkUnavailable": "Unknown"}), [NO_NETWORK]),
    ("network available", make_node(conditions={"Ready": "True", "NetworkUnavailable": "False"}), []),
    # v1.16 only walks the listed conditions: no Ready condition at all passes
    ("no conditions listed", make_node(conditions={}), []),
    ("pressure conditions are not this predicate's business", make_node(conditions={"MemoryPressure": "True"}), []),
    ("cordoned", make_node(conditions={"Ready": "True"}, unschedulable=True), [CORDONED]),
    (
        "all reasons, condition order then cordon",
        make_node(conditions={"NetworkUnavailable": "True", "Ready": "False"}, unschedulable=True),
        [NO_NETWORK, NOT_READY, CORDONED],
    ),
]


@pytest.mark.parametrize(("node", "reasons"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_filter(node: Node, reasons: list[str]) -> None:
    s = plugin().filter(CycleState(), make_pod(), node_info(node))
    if not reasons:
        assert s is None
    else:
        assert s is not None and (s.code, s.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


def test_missing_node_has_unknown_conditions() -> None:
    s = plugin().filter(CycleState(), make_pod(), NodeInfo())
    assert s is not None and s.reasons == ["node(s) had unknown conditions"]


def test_events_and_hint() -> None:
    [ev] = plugin().events_to_register()
    assert ev.event.resource == EventResource.NODE
    assert ev.event.action == ActionType.ADD | ActionType.UPDATE_NODE_CONDITION | ActionType.UPDATE_NODE_TAINT
    hint = plugin().is_schedulable_after_node_change
    ready, down = make_node(conditions={"Ready": "True"}), make_node(conditions={"Ready": "False"})
    assert hint(make_pod(), down, ready) == QueueingHint.QUEUE
    assert hint(make_pod(), None, down) == QueueingHint.QUEUE_SKIP
