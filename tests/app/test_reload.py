"""Configuration reload without restart: ConfigReloader on a real file, Scheduler.reconfigure /
apply_next_config between scheduling cycles."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.app.reload import ConfigReloader, file_reader
from scheduler.config.load import build_registry, load
from scheduler.config.registry import PLUGIN_MODULES, PluginModules
from scheduler.eventhandlers import ADDED
from scheduler.metrics import Metrics
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import RecordingBinder, RecordingEventSink
from tests.builders import sched_pod


def config(*profiles: str, profiles_plugins: dict[str, Any] | None = None, **extra: Any) -> str:
    """A configuration with these profiles (each with ``profiles_plugins`` as its plugins, if given)."""
    plugins = {"plugins": profiles_plugins} if profiles_plugins else {}
    return yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           "profiles": [{"schedulerName": p, **plugins} for p in profiles], **extra})


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "resourceVersion": "1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


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
    # not ours yet: ignored, but remembered as seen
    sched.on_pod_event(ADDED, sched_pod("pb", cpu="100m", scheduler="b").api())
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
    assert reloader.check_once() == "refused"
    assert reloader.check_once() is None  # the same bad content is refused once
    sched.apply_next_config()
    assert sched.config.percentage_of_nodes_to_score == 0
    assert reloads(metrics, "refused") == 1
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
    assert reloader.check_once() == "refused"
    sched.apply_next_config()
    assert list(sched.frameworks) == ["a"]
    path.write_text(config("a", "b"))
    assert reloader.check_once() == "success"
    sched.apply_next_config()
    assert list(sched.frameworks) == ["a", "b"]
    assert reloads(metrics, "refused") == 1 and reloads(metrics, "success") == 1


def test_removed_profile_leaves_its_pods_alone(tmp_path: Path) -> None:
    sched, reloader, path, _, _, binder = setup(tmp_path, config("a", "b"))
    sched.on_pod_event(ADDED, sched_pod("pa", cpu="64", scheduler="a").api())  # fits nowhere: stays queued
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
    assert reloader.check_once() == "refused"
    sched.apply_next_config()
    assert sched.frameworks["a"].list_plugins()["queueSort"] == ["PrioritySort"]
    assert "queueSort" in events.bodies[-1]["note"]
    assert reloads(metrics, "refused") == 1


@pytest.fixture
def plugin_policy() -> Iterator[PluginModules]:
    """The process's plugin module policy, as `run` sets it; open again afterwards."""
    PLUGIN_MODULES.allow_only(["tests.config.sample_plugins"])
    yield PLUGIN_MODULES
    PLUGIN_MODULES.allow_all()


def marker_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str = "") -> Path:
    """A module on sys.path that creates a marker file when imported; returns the marker's path."""
    marker = tmp_path / f"{name}.imported"
    (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').close()\n{body}\nclass P:\n    name = 'P'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return marker


def test_a_reload_naming_a_module_that_is_not_allowed_is_refused_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plugin_policy: PluginModules
) -> None:
    sched, reloader, path, metrics, events, _ = setup(tmp_path, config("a"))
    marker = marker_module(tmp_path, monkeypatch, "evil_plugin")
    path.write_text(config("a", pyScheduler={"registry": {"Evil": "evil_plugin:P"}}))
    assert reloader.check_once() == "refused"
    assert not marker.exists()
    [event] = events.bodies
    assert event["type"] == "Warning" and event["reason"] == "ConfigurationRefused"
    assert "pyScheduler.registry.Evil" in event["note"] and "not an allowed plugin module" in event["note"]
    assert reloads(metrics, "refused") == 1
    path.write_text(config("a", "b", profiles_plugins={"score": {"enabled": [{"name": "evil_plugin:P"}]}}))
    assert reloader.check_once() == "refused" and not marker.exists()
    sched.apply_next_config()
    assert list(sched.frameworks) == ["a"]


def test_a_plugin_that_exits_while_importing_is_a_refusal_not_a_dead_reloader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plugin_policy: PluginModules
) -> None:
    _, reloader, path, metrics, events, _ = setup(tmp_path, config("a"))
    marker = marker_module(tmp_path, monkeypatch, "exiting_plugin", "raise SystemExit(3)")
    plugin_policy.allow_only(["exiting_plugin"])
    path.write_text(config("a", pyScheduler={"registry": {"Exiting": "exiting_plugin:P"}}))
    assert reloader.check_once() == "refused"
    assert marker.exists()  # allowed, so imported: and its SystemExit refused the configuration
    assert "SystemExit" in events.bodies[-1]["note"] and reloads(metrics, "refused") == 1
    path.write_text(config("a", "b"))
    assert reloader.check_once() == "success"


def test_after_start_a_reload_may_use_only_the_plugin_modules_start_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plugin_policy: PluginModules
) -> None:
    marker = marker_module(tmp_path, monkeypatch, "later_plugin")
    plugin_policy.allow_only(["tests.config.sample_plugins", "later_plugin"])
    _, reloader, path, _, events, _ = setup(
        tmp_path, config("a", pyScheduler={"registry": {"SampleScorer": "tests.config.sample_plugins:SampleScorer"}}))
    plugin_policy.seal("a reload may add plugin modules only with --allow-reload-plugin-modules")
    path.write_text(config("a", pyScheduler={"registry": {
        "SampleScorer": "tests.config.sample_plugins:SampleScorer", "Later": "later_plugin:P"}}))
    assert reloader.check_once() == "refused" and not marker.exists()
    assert "pyScheduler.registry.Later" in events.bodies[-1]["note"]
    assert "--allow-reload-plugin-modules" in events.bodies[-1]["note"]


def test_a_reload_with_args_an_out_of_tree_plugin_refuses_keeps_the_running_configuration(
    tmp_path: Path, plugin_policy: PluginModules
) -> None:
    registry = {"SampleScorer": "tests.config.sample_plugins:SampleScorer"}
    plugins = {"multiPoint": {"enabled": [{"name": "SampleScorer"}]}}
    sched, reloader, path, metrics, events, _ = setup(
        tmp_path, config("a", profiles_plugins=plugins, pyScheduler={"registry": registry}))
    bad = yaml.safe_load(config("a", "b", profiles_plugins=plugins, pyScheduler={"registry": registry}))
    bad["profiles"][1]["pluginConfig"] = [{"name": "SampleScorer", "args": {"colour": "red"}}]
    path.write_text(yaml.safe_dump(bad))
    assert reloader.check_once() == "refused"
    [event] = events.bodies
    assert event["type"] == "Warning" and event["reason"] == "ConfigurationRefused"
    assert "profile 'b': initializing plugin 'SampleScorer': SampleScorer args: unknown field(s) ['colour']" in (
        event["note"])
    assert reloads(metrics, "refused") == 1
    sched.apply_next_config()
    assert list(sched.frameworks) == ["a"]


def test_a_reload_cannot_add_an_extender_unless_allowed(tmp_path: Path) -> None:
    sched, _, path, metrics, events, _ = setup(tmp_path, config("a"))
    read = file_reader(str(path))
    strict = ConfigReloader(sched, read, str(path), None, initial_version=read()[1], metrics=metrics, events=events,
                            regarding={"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "s"},
                            allow_new_extenders=False)
    path.write_text(config("a", extenders=[{"urlPrefix": "http://collector.example:8080", "filterVerb": "filter"}]))
    assert strict.check_once() == "refused"
    assert "extenders[0].urlPrefix" in events.bodies[-1]["note"]
    sched.apply_next_config()
    assert sched.config.extenders == []
    lenient = ConfigReloader(sched, read, str(path), None, metrics=metrics, events=events,
                             regarding={"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "s"})
    assert lenient.check_once() == "success"


def test_a_pod_that_arrives_after_the_reloaded_event_is_scheduled_under_the_new_configuration(
    tmp_path: Path,
) -> None:
    """The scheduling loop may be waiting in its pop when a reload is accepted. A pod created after the
    ConfigurationReloaded Event (as e2e-node's probe is) ends that wait, and its cycle must already run under
    the new configuration: a weight that flips the placement shows which one ran."""
    prefer_n2 = [{"name": "NodeAffinity", "weight": 10}]
    sched, reloader, path, _, events, binder = setup(tmp_path, config("a"))
    sched.on_node_event(ADDED, {**NODE, "metadata": {"name": "n2", "resourceVersion": "1", "labels": {"pick": "me"}},
                                "spec": {"taints": [{"key": "avoid", "value": "x", "effect": "PreferNoSchedule"}]}})
    path.write_text(config("a", profiles_plugins={"score": {"enabled": prefer_n2}}))
    assert reloader.check_once() == "success"
    assert events.bodies[-1]["reason"] == "ConfigurationReloaded"
    probe = sched_pod("probe", cpu="100m", scheduler="a").api()
    term = {"matchExpressions": [{"key": "pick", "operator": "In", "values": ["me"]}]}
    probe["spec"]["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": term}]}}  # fmt: skip
    sched.on_pod_event(ADDED, probe)
    assert sched.schedule_one(timeout=0)
    # TaintToleration 3 x 100 for n1 against NodeAffinity 10 x 100 for n2 (2 x 100 would lose).
    assert binder.bindings == [("default/probe", "n2")]
