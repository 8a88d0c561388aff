"""NodeUnschedulable filter and its queueing hints."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import ActionType, ClusterEvent, EventResource, NodeInfo, QueueingHint
from scheduler.model.node import Node, node_from_api
from scheduler.model.pod import Pod, pod_from_api
from scheduler.plugins.node_unschedulable import NodeUnschedulable

UNSCHED_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}


def pod(uid: str = "u", *tolerations: dict[str, Any]) -> Pod:
    return pod_from_api(
        {"metadata": {"name": "p", "uid": uid}, "spec": {"containers": [], "tolerations": list(tolerations)}}
    )


def node(unschedulable: bool) -> Node:
    return node_from_api({"metadata": {"name": "n"}, "spec": {"unschedulable": unschedulable}})


def info(unschedulable: bool) -> NodeInfo:
    ni = NodeInfo()
    ni.set_node(node(unschedulable))
    return ni


def plugin() -> NodeUnschedulable:
    return NodeUnschedulable({}, None)  # type: ignore[arg-type]


def test_cordoned_node_rejects_pod() -> None:
    s = plugin().filter(CycleState(), pod(), info(True))
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.message == "node(s) were unschedulable"


def test_schedulable_node_accepts_pod() -> None:
    assert plugin().filter(CycleState(), pod(), info(False)) is None


def test_toleration_of_the_unschedulable_taint_allows_cordoned_node() -> None:
    assert plugin().filter(CycleState(), pod("u", UNSCHED_TOLERATION), info(True)) is None
    # A toleration for a different effect does not.
    other = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}
    assert plugin().filter(CycleState(), pod("u", other), info(True)) is not None
    # An empty-key Exists toleration tolerates everything.
    assert plugin().filter(CycleState(), pod("u", {"operator": "Exists"}), info(True)) is None


def test_missing_node_is_unknown_condition() -> None:
    s = plugin().filter(CycleState(), pod(), NodeInfo())
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
    old_obj = None if old is None else node(old)
    assert plugin().is_schedulable_after_node_change(pod(), old_obj, node(new)) == hint


def test_node_change_hint_accepts_api_dicts_and_rejects_garbage() -> None:
    raw = {"metadata": {"name": "n"}, "spec": {"unschedulable": False}}
    assert plugin().is_schedulable_after_node_change(pod(), None, raw) == QueueingHint.QUEUE
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_node_change(pod(), None, "not-a-node")


def test_pod_toleration_hint() -> None:
    pl, waiting = plugin(), pod("u")
    gained = pod("u", UNSCHED_TOLERATION)
    assert pl.is_schedulable_after_pod_toleration_change(waiting, pod("u"), gained) == QueueingHint.QUEUE
    unrelated = pod("u", {"key": "other", "operator": "Exists"})
    assert pl.is_schedulable_after_pod_toleration_change(waiting, pod("u"), unrelated) == QueueingHint.QUEUE_SKIP
    someone_else = pod("x", UNSCHED_TOLERATION)
    assert pl.is_schedulable_after_pod_toleration_change(waiting, pod("x"), someone_else) == QueueingHint.QUEUE_SKIP
