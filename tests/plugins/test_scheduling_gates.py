"""SchedulingGates: PreEnqueue verdict and its queueing hint."""

from __future__ import annotations

import pytest

from scheduler.framework.status import Code
from scheduler.framework.types import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.plugins.scheduling_gates import SchedulingGates
from scheduler.testing import make_pod


def plugin() -> SchedulingGates:
    return SchedulingGates({}, None)  # type: ignore[arg-type]


def test_ungated_pod_passes() -> None:
    assert plugin().pre_enqueue(make_pod().uid("u").obj()) is None


def test_gated_pod_waits_with_gate_list() -> None:
    s = plugin().pre_enqueue(make_pod().uid("u").scheduling_gates("example.com/a", "b").obj())
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.message == "waiting for scheduling gates: [example.com/a b]"


def test_registers_gates_eliminated_on_the_pending_pod() -> None:
    [reg] = plugin().events_to_register()
    assert reg.event.resource == EventResource.POD
    assert reg.event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    for resource in (EventResource.POD, EventResource.UNSCHEDULED_POD):
        assert ClusterEvent(resource, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED).matches(reg.event)


def test_hint_queues_only_the_updated_pod_itself() -> None:
    pl = plugin()
    waiting = make_pod().uid("u").scheduling_gates("g").obj()
    assert pl.is_schedulable_after_gates_eliminated(waiting, make_pod().uid("u").scheduling_gates("g").obj(),
                                                    make_pod().uid("u").obj()) == QueueingHint.QUEUE
    assert pl.is_schedulable_after_gates_eliminated(waiting, make_pod().uid("x").scheduling_gates("g").obj(),
                                                    make_pod().uid("x").obj()) == QueueingHint.QUEUE_SKIP
    raw = {"metadata": {"name": "p", "uid": "u"}, "spec": {"containers": []}}
    assert pl.is_schedulable_after_gates_eliminated(waiting, None, raw) == QueueingHint.QUEUE
    with pytest.raises(TypeError):
        pl.is_schedulable_after_gates_eliminated(waiting, None, "not-a-pod")
