"""NodeUnschedulable filter and its queueing hints."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import ActionType, ClusterEvent, EventResource, NodeInfo, QueueingHint
from scheduler.plugins.node_unschedulable import NodeUnschedulable
from scheduler.testing import make_node, make_pod

UNSCHED_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}


def info(unschedulable: bool) -> NodeInfo:
    ni = NodeInfo()
    ni.set_node(make_node().name("n").unschedulable(unschedulable).obj())
    return ni


def plugin() -> NodeUnschedulable:
    return NodeUnschedulable({}, None)  # type: ignore[arg-type]


def test_cordoned_node_rejects_pod() -> None:
    s = plugin().filter(CycleState(), make_pod().uid("u").obj(), info(True))
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.message == "node(s) were unschedulable"


def test_schedulable_node_accepts_pod() -> None:
    assert plugin().filter(CycleState(), make_pod().uid("u").obj(), info(False)) is None


def test_toleration_of_the_unschedulable_taint_allows_cordoned_node() -> None:
    assert plugin().filter(CycleState(), make_pod().uid("u").tolerations([UNSCHED_TOLERATION]).obj(),
                           info(True)) is None
    # A toleration for a different effect does not.
    other = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}
    assert plugin().filter(CycleState(), make_pod().uid("u").tolerations([other]).obj(), info(True)) is not None
    # An empty-key Exists toleration tolerates everything.
    assert plugin().filter(CycleState(), make_pod().uid("u").tolerations([{"operator": "Exists"}]).obj(),
                           info(True)) is None


def test_missing_node_is_unknown_condition() -> None:
    s = plugin().filter(CycleState(), make_pod().uid("u").obj(), NodeInfo())
    assert s is not None and s.message == "node(s) had unknown conditions"


def test_events() -> None:
    node_reg, pod_reg = plugin().events_to_register()
    assert node_reg.event.resource == EventResource.NODE
    assert node_reg.event.action == ActionType.ADD | ActionType.UPDATE_NODE_TAINT
    assert pod_reg.event.resource == EventResource.POD
    assert pod_reg.event.action == ActionType.UPDATE_POD_TOLERATION
    # Registered on Pod as upstream: both an assigned pod's and the pending pod's update match it.
    for resource in (EventResource.POD, EventResource.UNSCHEDULED_POD):
        assert ClusterEvent(resource, ActionType.UPDATE_POD_TOLERATION).matches(pod_reg.event)


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, False, QueueingHint.QUEUE),  # schedulable node added
        (None, True, QueueingHint.QUEUE_SKIP),  # cordoned node added
        (True, False, QueueingHint.QUEUE),  # uncordoned
        (True, True, QueueingHint.QUEUE_SKIP),
        (False, False, QueueingHint.QUEUE_SKIP),  # unrelated change
        (False, True, QueueingHint.QUEUE_SKIP),  # cordoned
    ],
)
def test_node_change_hint(old: bool | None, new: bool, hint: QueueingHint) -> None:
    old_obj = None if old is None else make_node().name("n").unschedulable(old).obj()
    assert plugin().is_schedulable_after_node_change(make_pod().uid("u").obj(), old_obj,
                                                     make_node().name("n").unschedulable(new).obj()) == hint


def test_node_change_hint_accepts_api_dicts_and_rejects_garbage() -> None:
    raw = {"metadata": {"name": "n"}, "spec": {"unschedulable": False}}
    assert plugin().is_schedulable_after_node_change(make_pod().uid("u").obj(), None, raw) == QueueingHint.QUEUE
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_node_change(make_pod().uid("u").obj(), None, "not-a-node")


def test_pod_toleration_hint() -> None:
    pl, waiting = plugin(), make_pod().uid("u").obj()
    gained = make_pod().uid("u").tolerations([UNSCHED_TOLERATION]).obj()
    assert pl.is_schedulable_after_pod_toleration_change(waiting, make_pod().uid("u").obj(),
                                                         gained) == QueueingHint.QUEUE
    unrelated = make_pod().uid("u").tolerations([{"key": "other", "operator": "Exists"}]).obj()
    assert pl.is_schedulable_after_pod_toleration_change(waiting, make_pod().uid("u").obj(),
                                                         unrelated) == QueueingHint.QUEUE_SKIP
    someone_else = make_pod().uid("x").tolerations([UNSCHED_TOLERATION]).obj()
    assert pl.is_schedulable_after_pod_toleration_change(waiting, make_pod().uid("x").obj(),
                                                         someone_else) == QueueingHint.QUEUE_SKIP
