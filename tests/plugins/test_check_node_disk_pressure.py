"""CheckNodeDiskPressure (v1.16 predicate): every pod is kept off nodes whose DiskPressure condition is True."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import ActionType, EventResource, QueueingHint
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.legacy.check_node_disk_pressure import CheckNodeDiskPressure
from tests.builders import container, make_node, make_pod
from tests.plugins.util import FakeHandle, node_info

PRESSURE = make_node(conditions={"DiskPressure": "True"})


def plugin() -> CheckNodeDiskPressure:
    return CheckNodeDiskPressure({}, FakeHandle())


CASES: list[tuple[str, Pod, Node, bool]] = [
    ("best effort on pressured node", make_pod(), PRESSURE, True),
    (
        "guaranteed pod on pressured node",
        make_pod(containers=[container("1", "1Gi", limits={"cpu": "1", "memory": "1Gi"})]),
        PRESSURE,
        True,
    ),
    ("pressure False", make_pod(), make_node(conditions={"DiskPressure": "False"}), False),
    ("pressure Unknown is not True", make_pod(), make_node(conditions={"DiskPressure": "Unknown"}), False),
    ("no condition", make_pod(), make_node(), False),
]


@pytest.mark.parametrize(("pod", "node", "rejected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_filter(pod: Pod, node: Node, rejected: bool) -> None:
    s = plugin().filter(CycleState(), pod, node_info(node))
    if rejected:
        assert s is not None and (s.code, s.reasons) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ["node(s) had disk pressure"],
        )
    else:
        assert s is None


def test_events_and_hint() -> None:
    [ev] = plugin().events_to_register()
    assert (ev.event.resource, ev.event.action) == (
        EventResource.NODE,
        ActionType.ADD | ActionType.UPDATE_NODE_CONDITION,
    )
    hint = plugin().is_schedulable_after_node_change
    assert hint(make_pod(), PRESSURE, make_node()) == QueueingHint.QUEUE
    assert hint(make_pod(), None, PRESSURE) == QueueingHint.QUEUE_SKIP
