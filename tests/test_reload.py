"""Configuration reload without restart: ConfigReloader on a real file, Scheduler.reconfigure /
apply_next_config between scheduling cycles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scheduler.app.offline import RecordingBinder, RecordingEventSink
from scheduler.app.reload import ConfigReloader, file_reader
from scheduler.config.load import build_registry, load
from scheduler.eventhandlers import ADDED
from scheduler.metrics import Metrics
from scheduler.scheduler import Scheduler


def config(*profiles: str, **extra: Any) -> str:
    return yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           "profiles": [{"schedulerName": p} for p in profiles], **extra})


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "resourceVersion": "1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(name: str, scheduler_name: str, cpu: str = "100m") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "1"},
            "spec": {"schedulerName": scheduler_name,
                     "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}


class Events:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def create_event(self, namespace: str, body: dict[str, Any]) -> str:
        self.bodies.append(body)
        return "e1"


def setup(tmp_path: Path, text: str) -> tuple[Scheduler, ConfigReloader, Path, Metrics, Events, RecordingBinder]:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    cfg = load(str(path))
    binder = RecordingBinder()
    metrics = Metrics()
    sched = Scheduler(cfg, build_registry(cfg), binder, RecordingEventSink(), metrics, synchronous_binding=True)
    sched.on_node_event(ADDED, NODE)
    events = Events()
    read = file_reader(str(path))
    reloader = ConfigReloader(sched, read, str(path), None, initial_version=read()[1], metrics=metrics,
                              events=events, regarding={"apiVersion": "v1", "kind": "Pod", "namespace": "ns",
                                                        "name": "sched-0"})
    return sched, reloader, path, metrics, events, binder


def reloads(metrics: Metrics, result: str) -> float:
    return metrics.registry.get_sample_value("py_scheduler_config_reloads_total", {"result": result}) or 0.0


def test_new_profile_starts_scheduling_its_pending_pods(tmp_path: Path) -> None:
    sched, reloader, path, metrics, events, binder = setup(tmp_path, config("a"))
    sched.on_pod_event(ADDED, pod("pb", "b"))  # not ours yet: ignored, but remembered as seen
    assert not sched.schedule_one(timeout=0)
    assert reloader.check_once() is None  # unchanged
    path.write_text(config("a", "b"))
    assert reloader.check_once() == "success"
    assert list(sched.frameworks) == ["a"]  # swapped only between cycles
    sched.apply_next_config()
    assert list(sched.frameworks) == ["a", "b"]
    assert sched.schedule_one(timeout=0)
    assert binder.bindings == [("default/pb", "n1")]
    assert reloads(metrics, "success") == 1
    assert events.bodies[-1]["reason"] == "ConfigurationReloaded"


def test_invalid_configuration_is_refused_naming_the_field(tmp_path: Path) -> None:
    sched, reloader, path, metrics, events, _ = setup(tmp_path, config("a"))
    path.write_text(config("a", percentageOfNodesToScore=150))
    assert reloader.check_once() == "failure"
    assert reloader.check_once() is None  # the same bad content is refused once
    sched.apply_next_config()
    assert sched.config.percentage_of_nodes_to_score == 0
    assert reloads(metrics, "failure") == 1
    [event] = events.bodies
    assert event["type"] == "Warning" and event["reason"] == "ConfigurationRefused"
    assert "percentageOfNodesToScore" in event["note"] and "[0-100]" in event["note"]
    assert event["regarding"]["name"] == "sched-0"


def test_a_file_read_between_its_truncation_and_its_write_keeps_the_profiles(tmp_path: Path) -> None:
    """An editor (or write_text) truncates the file before writing it: a poll in between reads nothing.
    That read used to load as "all defaults", swapping the profiles for default-scheduler; it is refused
    and the complete content that follows is loaded."""
    sched, reloader, path, metrics, _, _ = setup(tmp_path, config("a"))
    path.write_text("")
    assert reloader.check_once() == "failure"
    sched.apply_next_config()
    assert list(sched.frameworks) == ["a"]
    path.write_text(config("a", "b"))
    assert reloader.check_once() == "success"
    sched.apply_next_config()
    assert list(sched.frameworks) == ["a", "b"]
    assert reloads(metrics, "failure") == 1 and reloads(metrics, "success") == 1


def test_removed_profile_leaves_its_pods_alone(tmp_path: Path) -> None:
    sched, reloader, path, _, _, binder = setup(tmp_path, config("a", "b"))
    sched.on_pod_event(ADDED, pod("pa", "a", cpu="64"))  # fits nowhere: stays queued
    assert sched.schedule_one(timeout=0)
    path.write_text(config("b"))
    assert reloader.check_once() == "success"
    assert sum(sched.queue.lengths().values()) == 1
    sched.apply_next_config()
    assert sum(sched.queue.lengths().values()) == 0  # out of the queue, no event, no condition
    assert not sched.schedule_one(timeout=0)
    assert binder.bindings == []


def test_queue_sort_change_needs_a_restart(tmp_path: Path) -> None:
    sched, reloader, path, metrics, events, _ = setup(tmp_path, config("a"))
    changed = {"queueSort": {"enabled": [{"name": "tests.config.sample_plugins:SampleQueueSort"}],
                             "disabled": [{"name": "*"}]}}
    path.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                    "kind": "KubeSchedulerConfiguration",
                                    "profiles": [{"schedulerName": "a", "plugins": changed}]}))
    assert reloader.check_once() == "failure"
    sched.apply_next_config()
    assert sched.frameworks["a"].list_plugins()["queueSort"] == ["PrioritySort"]
    assert "queueSort" in events.bodies[-1]["note"]
    assert reloads(metrics, "failure") == 1
