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
from tests.queue.qhelpers import make_pod


def make_node(**changes: Any) -> Node:
    obj: dict[str, Any] = {
        "metadata": {"name": "n1", "labels": {"zone": "a"}, "annotations": {"a": "1"}, "resourceVersion": "1"},
        "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2024-01-01T00:00:00Z"}],
        },
    }
    for path, value in changes.items():
        section, key = path.split("__")
        obj[section][key] = value
    return node_from_api(obj)


def labels_of(events: list[ClusterEvent]) -> list[str]:
    return [e.label for e in events]


def test_node_nothing_relevant_changed() -> None:
    heartbeat = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2024-02-02T00:00:00Z"}]
    assert node_scheduling_properties_change(make_node(), make_node(status__conditions=heartbeat)) == []


def test_node_each_aspect() -> None:
    old = make_node()
    cases = {
        "NodeUpdateNodeAllocatable": make_node(status__allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"}),
        "NodeUpdateNodeLabel": make_node(metadata__labels={"zone": "b"}),
        "NodeUpdateNodeTaint": make_node(spec__taints=[]),
        "NodeUpdateNodeCondition": make_node(status__conditions=[{"type": "Ready", "status": "False"}]),
        "NodeUpdateNodeAnnotation": make_node(metadata__annotations={}),
        # v1.37's two new node aspects
        "NodeUpdateNodePreemptionPolicy": make_node(spec__podPreemptionPolicy="Never"),
        "NodeUpdateNodeDeclaredFeature": make_node(status__declaredFeatures=["VolumeBindMountOptions"]),
    }
    for label, new in cases.items():
        assert labels_of(node_scheduling_properties_change(old, new)) == [label]


def test_node_allocatable_compared_semantically() -> None:
    same = make_node(status__allocatable={"cpu": "4000m", "memory": "8Gi", "pods": "110"})
    assert node_scheduling_properties_change(make_node(), same) == []


def test_node_uncordon_is_a_taint_update_but_cordon_is_not() -> None:
    cordoned = make_node(spec__unschedulable=True)
    assert labels_of(node_scheduling_properties_change(cordoned, make_node())) == ["NodeUpdateNodeTaint"]
    assert node_scheduling_properties_change(make_node(), cordoned) == []


def test_node_event_actions() -> None:
    events = node_scheduling_properties_change(make_node(), make_node(metadata__labels={}))
    assert events[0].resource == EventResource.NODE
    assert events[0].action == ActionType.UPDATE_NODE_LABEL


def test_pod_specific_events() -> None:
    old = make_pod("p", labels={"a": "1"}, gates=("g",), cpu="500m")
    new = make_pod("p", labels={"a": "2"}, cpu="250m", tolerations=[{"key": "k", "operator": "Exists"}])
    assert labels_of(pod_scheduling_properties_change(old, new)) == [
        "UnscheduledPodUpdatePodLabel",
        "UnscheduledPodUpdatePodScaleDown",
        "UnscheduledPodUpdatePodSchedulingGatesEliminated",
        "UnscheduledPodUpdatePodToleration",
    ]


def test_pod_scale_up() -> None:
    """v1.37 names a raised (or added) request: UpdatePodScaleUp, no longer the generic Update."""
    events = pod_scheduling_properties_change(make_pod("p", cpu="100m"), make_pod("p", cpu="200m"))
    assert labels_of(events) == ["UnscheduledPodUpdatePodScaleUp"]
    assert events[0].action == ActionType.UPDATE_POD_SCALE_UP


def test_assigned_pod_events_use_pod_resource() -> None:
    old = make_pod("p", node_name="n1", labels={"a": "1"})
    new = make_pod("p", node_name="n1", labels={"a": "2"})
    events = pod_scheduling_properties_change(old, new)
    assert labels_of(events) == ["AssignedPodUpdatePodLabel"]
    assert events[0].resource == EventResource.POD


def test_gates_partially_removed_is_not_eliminated() -> None:
    events = pod_scheduling_properties_change(make_pod("p", gates=("a", "b")), make_pod("p", gates=("a",)))
    assert labels_of(events) == ["UnscheduledPodUpdate"]


def test_registered_pod_matches_unscheduled_pod_events() -> None:
    registered = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    incoming = pod_scheduling_properties_change(make_pod("p", gates=("g",)), make_pod("p"))[0]
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
