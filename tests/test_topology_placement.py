"""Topology-constrained placement end to end through the pod-group cycle (GenericWorkload and
TopologyAwareWorkloadScheduling on): a gang whose PodGroup names a topology key lands in one domain, the one it fits
in, the fuller one when several fit (NodeResourcesFit's ScorePlacement, PodGroupPodsCount equal), the one its bound
members are in; with no domain that holds it, nothing binds."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED, MODIFIED
from scheduler.framework.features import Features
from scheduler.model.workload import API_VERSION, KIND_POD_GROUP
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import OfflineWriter, RecordingBinder, RecordingEventSink

NAME = "py-scheduler"
TS = "2026-01-01T00:00:00Z"
RACK = "example.com/rack"
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "profiles": [{"schedulerName": NAME, "plugins": {"multiPoint": {"enabled": [
              {"name": "GangScheduling"}, {"name": "TopologyPlacementGenerator"},
              {"name": "PodGroupPodsCount", "weight": 1}]}}}]}


def node_obj(name: str, rack: str | None, cpu: str) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    if rack is not None:
        labels[RACK] = rack
    alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "spec": {}, "metadata": {
        "name": name, "uid": f"node-{name}", "resourceVersion": "1", "creationTimestamp": TS, "labels": labels},
        "status": {"allocatable": alloc, "capacity": alloc, "conditions": [{"type": "Ready", "status": "True"}]}}


def pod_obj(name: str, cpu: str, group: str | None = None, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": NAME, "containers": [
        {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": "default", "uid": f"pod-{name}", "resourceVersion": "1",
        "creationTimestamp": TS}, "spec": spec, "status": {"phase": "Running"} if node else {}}


def pod_group_obj(name: str, min_count: int, key: str | None = RACK) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if key is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    return {"apiVersion": API_VERSION, "kind": KIND_POD_GROUP, "metadata": {
        "name": name, "namespace": "default", "uid": f"pg-{name}", "resourceVersion": "1", "generation": 1,
        "creationTimestamp": TS}, "spec": spec}


class World:
    """A scheduler with the gates on over the given nodes, bound pods and one group."""

    def __init__(self, nodes: Sequence[dict[str, Any]], bound: Sequence[dict[str, Any]] = ()) -> None:
        cfg = load_dict(CONFIG, [NAME])
        self.sink = RecordingEventSink()
        writer = OfflineWriter()
        self.sched = Scheduler(cfg, build_registry(cfg), RecordingBinder(), self.sink, None, writer=writer,
                               synchronous_binding=True, rng=random.Random(7),
                               features=Features(enable_async_preemption=False, enable_generic_workload=True,
                                                 enable_topology_aware_workload_scheduling=True))
        writer.connect(self.sched)
        for obj in nodes:
            self.sched.on_node_event(ADDED, obj)
        for obj in bound:
            self.sched.on_pod_event(ADDED, obj)
        self.pods: dict[str, dict[str, Any]] = {}
        self.bindings: dict[str, str] = {}

    def group(self, name: str, min_count: int, members: list[dict[str, Any]], key: str | None = RACK) -> None:
        self.sched.on_pod_group_event(ADDED, pod_group_obj(name, min_count, key))
        for obj in members:
            self.pods[f"default/{obj['metadata']['name']}"] = obj
            self.sched.on_pod_event(ADDED, obj)

    def run(self) -> dict[str, str]:
        """Cycles until the queue is empty, each binding confirmed by the watch's MODIFIED event."""
        binder = self.sched.binder
        assert isinstance(binder, RecordingBinder)
        while self.sched.schedule_one(timeout=0):
            while binder.bindings:
                key, node = binder.bindings.pop(0)
                self.bindings[key] = node
                obj = self.pods[key]
                self.sched.on_pod_event(MODIFIED, {**obj, "spec": {**obj["spec"], "nodeName": node}})
        return self.bindings


def rack_of(node: str) -> str:
    return node.split("-")[0]


def test_a_gang_that_fits_only_in_one_rack_lands_there() -> None:
    # Rack a: 2 nodes of 1 cpu; rack b: 2 nodes of 2 cpu. Three 1-cpu members need rack b, though spreading
    # alone (the members' own scores) would put some on rack a's empty nodes.
    nodes = [node_obj("a-1", "a", "1"), node_obj("a-2", "a", "1"), node_obj("b-1", "b", "2"), node_obj("b-2", "b", "2")]
    world = World(nodes)
    world.group("train", 3, [pod_obj(f"w{i}", "1", "train") for i in range(3)])
    bindings = world.run()
    assert sorted(bindings) == ["default/w0", "default/w1", "default/w2"]
    assert {rack_of(n) for n in bindings.values()} == {"b"}


def test_the_fuller_rack_wins_when_both_hold_the_gang() -> None:
    # Both racks hold the two members; rack a already runs 2 cpu of 8, so MostAllocated over the placement scores
    # it higher, and PodGroupPodsCount is equal (2 and 2).
    nodes = [node_obj(f"{r}-{i}", r, "4") for r in "ab" for i in (1, 2)]
    world = World(nodes, [pod_obj("busy", "2", node="a-2")])
    world.group("train", 2, [pod_obj(f"w{i}", "1", "train") for i in range(2)])
    bindings = world.run()
    assert len(bindings) == 2 and {rack_of(n) for n in bindings.values()} == {"a"}


@pytest.mark.parametrize("bound_first", [True, False], ids=["bound member seen first", "bound member seen last"])
def test_bound_members_pin_the_rest_to_their_rack(bound_first: bool) -> None:
    # One member already runs in rack b; rack a is fuller and would win the score, but only rack b is offered.
    # Seen last, the bound member is what completes the gang (GangScheduling's AssignedPod/Add hint wakes it).
    nodes = [node_obj(f"{r}-{i}", r, "4") for r in "ab" for i in (1, 2)]
    bound = pod_obj("w0", "1", "train", node="b-1")
    world = World(nodes, [pod_obj("busy", "2", node="a-1")] + ([bound] if bound_first else []))
    world.group("train", 3, [pod_obj(f"w{i}", "1", "train") for i in (1, 2)])
    if not bound_first:
        world.sched.on_pod_event(ADDED, bound)
    bindings = world.run()
    assert sorted(bindings) == ["default/w1", "default/w2"]
    assert {rack_of(n) for n in bindings.values()} == {"b"}


def test_no_rack_holds_the_gang_and_nothing_binds() -> None:
    nodes = [node_obj("a-1", "a", "2"), node_obj("b-1", "b", "2"), node_obj("c-1", None, "8")]
    world = World(nodes)
    world.group("train", 3, [pod_obj(f"w{i}", "1", "train") for i in range(3)])
    assert world.run() == {}
    failed = [e for e in world.sink.events if e[2] == "FailedScheduling"]
    assert {e[0] for e in failed} == {"default/w0", "default/w1", "default/w2"}
