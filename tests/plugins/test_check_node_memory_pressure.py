"""CheckNodeMemoryPressure (v1.16 predicate): only BestEffort pods are kept off memory-pressured nodes."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import QueueingHint
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.legacy.check_node_memory_pressure import CheckNodeMemoryPressure
from tests.builders import container, make_node, make_pod
from tests.plugins.util import FakeHandle, node_info

PRESSURE = make_node(conditions={"Ready": "True", "MemoryPressure": "True"})
CALM = make_node(conditions={"Ready": "True", "MemoryPressure": "False"})
REASON = "node(s) had memory pressure"


def plugin() -> CheckNodeMemoryPressure:
    return CheckNodeMemoryPressure({}, FakeHandle())


CASES: list[tuple[str, Pod, bool]] = [
    ("best effort is rejected", make_pod(), True),
    ("cpu request makes it burstable", make_pod(containers=[container("100m")]), False),
    ("a limit alone is enough", make_pod(containers=[container(limits={"memory": "1Gi"})]), False),
    ("init container request counts", make_pod(init_containers=[container(memory="10Mi")]), False),
    # only positive quantities count: an explicit zero request is still BestEffort
    ("zero request is still best effort", make_pod(containers=[container("0", "0")]), True),
    # extended resources do not change the QoS class
    ("extended resources only", make_pod(containers=[container(extra={"example.com/gpu": "1"})]), True),
]


@pytest.mark.parametrize(("pod", "rejected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_filter_on_pressured_node(pod: Pod, rejected: bool) -> None:
    s = plugin().filter(CycleState(), pod, node_info(PRESSURE))
    if rejected:
        assert s is not None and (s.code, s.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON])
    else:
        assert s is None


@pytest.mark.parametrize("node", [CALM, make_node()], ids=["pressure False", "no condition"])
def test_best_effort_fits_calm_node(node: Node) -> None:
    assert plugin().filter(CycleState(), make_pod(), node_info(node)) is None


def test_bad_limit_quantity_is_named() -> None:
    pod = make_pod(containers=[container(limits={"cpu": "much"})])
    s = plugin().filter(CycleState(), pod, node_info(PRESSURE))
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert "spec.containers[0].resources.limits.cpu" in s.message


def test_hint_queues_only_when_pressure_is_gone() -> None:
    hint = plugin().is_schedulable_after_node_change
    assert hint(make_pod(), PRESSURE, CALM) == QueueingHint.QUEUE
    assert hint(make_pod(), None, PRESSURE) == QueueingHint.QUEUE_SKIP
