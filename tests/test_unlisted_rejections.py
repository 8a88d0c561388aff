"""Diagnosis.unlisted_rejections: without an observer, a batched walk that found the pod nodes only counts the
nodes it rejected (nothing reads their statuses when the pod fits). Everything a user sees must be what the
listing walk gives: bindings, the Scheduled and FailedScheduling events with their messages, the pod's
condition, and the number of nodes each attempt evaluated."""

from __future__ import annotations

import random
from typing import Any

from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED
from scheduler.framework.features import Features
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import OfflineWriter, RecordingBinder, RecordingEventSink
from tests.test_opportunistic_batching import run_confirming

NAME = "py-scheduler"
TS = "2026-01-01T00:00:00Z"


class Observer:
    """A ScheduleObserver that keeps nothing: its presence makes the walk list every rejection."""

    def scheduled(self, pod: Any, node: str, statuses: Any) -> None:
        pass

    def failed(self, pod: Any, message: str, statuses: Any) -> None:
        pass

    def bound(self, pod: Any, node: str) -> None:
        pass

    def preempted(self, victim: Any, preemptor: Any, node: str) -> None:
        pass


def node_obj(i: int) -> dict[str, Any]:
    """One cpu each; a third tainted, so that every walk rejects nodes on its way."""
    spec = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]} if i % 3 == 0 else {}
    alloc = {"cpu": "1", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "spec": spec, "metadata": {
        "name": f"n{i}", "uid": f"node-{i}", "resourceVersion": "1", "creationTimestamp": TS,
        "labels": {"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": f"z{i % 3}"}},
        "status": {"allocatable": alloc, "capacity": alloc, "conditions": [{"type": "Ready", "status": "True"}]}}


def pod_obj(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"p{i}", "namespace": "default", "uid": f"pod-{i}", "resourceVersion": "1", "creationTimestamp": TS,
        "labels": {"app": "x"}}, "spec": {"schedulerName": NAME, "containers": [
            {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "400m"}}}]}}


class World:
    """A scheduler over 120 nodes that records what each attempt's algorithm returned."""

    def __init__(self, observed: bool) -> None:
        cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}, [NAME])
        self.sink = RecordingEventSink()
        writer = OfflineWriter()
        self.sched = Scheduler(cfg, build_registry(cfg), RecordingBinder(), self.sink, None, writer=writer,
                               observer=Observer() if observed else None, synchronous_binding=True,
                               rng=random.Random(7), features=Features(enable_async_preemption=False))
        writer.connect(self.sched)
        self.results: list[tuple[str, int, int]] = []
        self.unlisted = 0
        algorithm = self.sched.algorithm
        schedule_pod = algorithm.schedule_pod

        def recorded(*args: Any, **kwargs: Any) -> Any:
            result = schedule_pod(*args, **kwargs)
            self.results.append((result.suggested_host, result.evaluated_nodes, result.feasible_nodes))
            self.unlisted += result.diagnosis.unlisted_rejections
            return result

        algorithm.schedule_pod = recorded  # type: ignore[method-assign]
        for i in range(120):
            self.sched.on_node_event(ADDED, node_obj(i))
        self.bindings: list[tuple[str, str]] = []

    def run(self, count: int) -> None:
        objs = {f"default/p{i}": pod_obj(i) for i in range(count)}
        for obj in objs.values():
            self.sched.on_pod_event(ADDED, obj)
        run_confirming(self.sched, objs, self.bindings)


def test_counted_rejections_give_what_listed_ones_give() -> None:
    # 80 untainted nodes hold two 400m pods each: 160 fit, the last 10 fit nowhere (FailedScheduling).
    listed, counted = World(observed=True), World(observed=False)
    for world in (listed, counted):
        world.run(170)
    assert counted.unlisted > 0 and listed.unlisted == 0  # the walks counted, and the observed ones listed
    assert len(counted.bindings) == 160
    assert counted.bindings == listed.bindings
    assert counted.results == listed.results
    failed = [e for e in counted.sink.events if e[2] == "FailedScheduling"]
    assert len(failed) == 10 and "Insufficient cpu" in failed[0][3] and "untolerated taint" in failed[0][3]
    assert counted.sink.events == listed.sink.events
    assert counted.sink.conditions == listed.sink.conditions
