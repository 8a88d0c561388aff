from __future__ import annotations

from typing import Any

from scheduler.framework.events import (
    event_matches,
    is_pod_updated,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)
from scheduler.framework.types import ActionType, ClusterEvent, EventResource
from scheduler.model.node import Node, node_from_api
from scheduler.model.pod import pod_from_api
from scheduler.testing import make_node, make_pod

# n1 as one update's old side; node_with gives the new side with one field replaced.
N1 = (make_node().name("n1").label("zone", "a").annotation("a", "1").resource_version("1").taint("k", "v")
      .allocatable(cpu="4", memory="8Gi", pods="110").condition("Ready", "True"))


def node_with(**changes: Any) -> Node:
    """N1 with each ``section__key`` field replaced by its value."""
    obj = N1.api()
    for path, value in changes.items():
        section, key = path.split("__")
        obj[section][key] = value
    return node_from_api(obj)


def labels_of(events: list[ClusterEvent]) -> list[str]:
    return [e.label for e in events]


def test_node_nothing_relevant_changed() -> None:
    old, new = ({"type": "Ready", "status": "True", "lastHeartbeatTime": f"2024-0{m}-0{m}T00:00:00Z"} for m in (1, 2))
    assert node_scheduling_properties_change(node_with(status__conditions=[old]),
                                             node_with(status__conditions=[new])) == []


def test_node_each_aspect() -> None:
    old = node_with()
    cases = {
        "NodeUpdateNodeAllocatable": node_with(status__allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"}),
        "NodeUpdateNodeLabel": node_with(metadata__labels={"zone": "b"}),
        "NodeUpdateNodeTaint": node_with(spec__taints=[]),
        "NodeUpdateNodeCondition": node_with(status__conditions=[{"type": "Ready", "status": "False"}]),
        "NodeUpdateNodeAnnotation": node_with(metadata__annotations={}),
        # v1.37's two new node aspects
        "NodeUpdateNodePreemptionPolicy": node_with(spec__podPreemptionPolicy="Never"),
        "NodeUpdateNodeDeclaredFeature": node_with(status__declaredFeatures=["VolumeBindMountOptions"]),
    }
    for label, new in cases.items():
        assert labels_of(node_scheduling_properties_change(old, new)) == [label]


def test_node_allocatable_compared_semantically() -> None:
    same = node_with(status__allocatable={"cpu": "4000m", "memory": "8Gi", "pods": "110"})
    assert node_scheduling_properties_change(node_with(), same) == []


def test_node_uncordon_is_a_taint_update_but_cordon_is_not() -> None:
    cordoned = node_with(spec__unschedulable=True)
    assert labels_of(node_scheduling_properties_change(cordoned, node_with())) == ["NodeUpdateNodeTaint"]
    assert node_scheduling_properties_change(node_with(), cordoned) == []


def test_node_event_actions() -> None:
    events = node_scheduling_properties_change(node_with(), node_with(metadata__labels={}))
    assert events[0].resource == EventResource.NODE
    assert events[0].action == ActionType.UPDATE_NODE_LABEL


def test_pod_specific_events() -> None:
    old = make_pod().name("p").req(cpu="500m").scheduling_gates(*("g",)).labels({"a": "1"}).obj()
    new = make_pod().name("p").req(cpu="250m").tolerations([{"key": "k",
                                                             "operator": "Exists"}]).labels({"a": "2"}).obj()
    assert labels_of(pod_scheduling_properties_change(old, new)) == [
        "UnscheduledPodUpdatePodLabel",
        "UnscheduledPodUpdatePodScaleDown",
        "UnscheduledPodUpdatePodSchedulingGatesEliminated",
        "UnscheduledPodUpdatePodToleration",
    ]


def test_pod_scale_up() -> None:
    """v1.37 names a raised (or added) request: UpdatePodScaleUp, no longer the generic Update."""
    events = pod_scheduling_properties_change(make_pod().name("p").req(cpu="100m").obj(),
                                              make_pod().name("p").req(cpu="200m").obj())
    assert labels_of(events) == ["UnscheduledPodUpdatePodScaleUp"]
    assert events[0].action == ActionType.UPDATE_POD_SCALE_UP


def test_assigned_pod_events_use_pod_resource() -> None:
    old = make_pod().name("p").node("n1").labels({"a": "1"}).obj()
    new = make_pod().name("p").node("n1").labels({"a": "2"}).obj()
    events = pod_scheduling_properties_change(old, new)
    assert labels_of(events) == ["AssignedPodUpdatePodLabel"]
    assert events[0].resource == EventResource.POD


def test_gates_partially_removed_is_not_eliminated() -> None:
    events = pod_scheduling_properties_change(make_pod().name("p").scheduling_gates(*("a", "b")).obj(),
                                              make_pod().name("p").scheduling_gates(*("a",)).obj())
    assert labels_of(events) == ["UnscheduledPodUpdate"]


def test_registered_pod_matches_unscheduled_pod_events() -> None:
    registered = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    incoming = pod_scheduling_properties_change(make_pod().name("p").scheduling_gates(*("g",)).obj(),
                                                make_pod().name("p").obj())[0]
    assert event_matches(incoming, registered)
    assert not event_matches(incoming, ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL))
    assert not event_matches(ClusterEvent(EventResource.NODE, ActionType.ADD), registered)


def test_is_pod_updated_ignores_status_and_bookkeeping() -> None:
    base = {"metadata": {"name": "p", "uid": "u", "resourceVersion": "1"}, "spec": {"containers": []}}
    status_only = {
        "metadata": {"name": "p", "uid": "u", "resourceVersion": "2", "finalizers": ["x"]},
        "spec": {"containers": []},
        "status": {"conditions": [{"type": "PodScheduled", "status": "False"}]},
    }
    spec_change = {"metadata": {"name": "p", "uid": "u"}, "spec": {"containers": [], "nodeSelector": {"a": "b"}}}
    assert not is_pod_updated(pod_from_api(base), pod_from_api(status_only))
    assert is_pod_updated(pod_from_api(base), pod_from_api(spec_change))
