"""Registry: in-tree import paths, lazy import, PluginNotAvailable, third-party import paths."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.config.registry import PLUGIN_MODULES, PluginModules, PluginNotAvailable, Registry, is_import_path
from scheduler.plugins.names import IN_TREE, snake_case

from . import sample_plugins

EXPECTED_NAMES = {
    "PrioritySort", "SchedulingGates", "DefaultBinder", "NodeName", "NodeUnschedulable", "NodeResourcesFit",
    "NodeResourcesBalancedAllocation", "ImageLocality", "TaintToleration", "NodeAffinity", "NodePorts",
    "InterPodAffinity", "PodTopologySpread", "DynamicResources", "DefaultPreemption", "VolumeRestrictions",
    "NodeVolumeLimits", "NodeDeclaredFeatures",
    "VolumeBinding", "VolumeZone", "SelectorSpread", "ServiceAffinity", "ServiceAntiAffinity",
    "CheckNodeCondition", "CheckNodeMemoryPressure", "CheckNodeDiskPressure", "CheckNodePIDPressure",
    "EqualPriority", "LeastRequestedPriority", "MostRequestedPriority", "BalancedResourceAllocation",
    "NoDiskConflict", "NodeLabel", "NodePreferAvoidPods", "Coscheduling",
    "GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount", "DeferredPodScheduling",
}  # fmt: skip


def test_in_tree_covers_every_plugin_with_snake_case_modules() -> None:
    assert set(IN_TREE) == EXPECTED_NAMES
    assert IN_TREE["PrioritySort"] == "scheduler.plugins.priority_sort:PrioritySort"
    assert IN_TREE["NodeResourcesBalancedAllocation"] == (
        "scheduler.plugins.node_resources_balanced_allocation:NodeResourcesBalancedAllocation"
    )
    assert IN_TREE["CheckNodePIDPressure"] == "scheduler.plugins.legacy.check_node_pid_pressure:CheckNodePIDPressure"
    for name, path in IN_TREE.items():
        module, _, cls = path.partition(":")
        assert cls == name
        assert module.removeprefix("scheduler.plugins.").removeprefix("legacy.") == snake_case(name)


def test_snake_case() -> None:
    assert snake_case("NodeResourcesFit") == "node_resources_fit"
    assert snake_case("CheckNodePIDPressure") == "check_node_pid_pressure"
    assert snake_case("ImageLocality") == "image_locality"


def test_missing_module_is_plugin_not_available_naming_the_plugin() -> None:
    reg = Registry(in_tree={"Ghost": "no_such_module_for_tests_xyz:Ghost"})
    assert reg.known("Ghost")
    assert not reg.available("Ghost")
    with pytest.raises(PluginNotAvailable) as ei:
        reg.factory("Ghost")
    assert ei.value.plugin == "Ghost"
    assert "Ghost" in str(ei.value) and "no_such_module_for_tests_xyz" in str(ei.value)


def test_missing_class_is_plugin_not_available() -> None:
    reg = Registry(in_tree={"Ghost": f"{sample_plugins.__name__}:Ghost"})
    with pytest.raises(PluginNotAvailable, match="has no attribute 'Ghost'"):
        reg.factory("Ghost")


def test_unknown_name_is_plugin_not_available() -> None:
    reg = Registry(in_tree={})
    assert not reg.known("Nope")
    with pytest.raises(PluginNotAvailable, match="'Nope'"):
        reg.factory("Nope")


def test_non_callable_target_is_not_available() -> None:
    reg = Registry(in_tree={})
    with pytest.raises(PluginNotAvailable, match="not a plugin class"):
        reg.factory(f"{sample_plugins.__name__}:NOT_A_CLASS")


@pytest.mark.parametrize("path", ["os:system", "builtins:eval", "subprocess:Popen", "json:loads"])
def test_callables_that_are_not_plugins_are_refused(path: str) -> None:
    """Even from a module that may be imported: a class needs its string ``name``, a function its
    declared extension points."""
    with pytest.raises(PluginNotAvailable, match="not a plugin class"):
        Registry(in_tree={}).factory(path)


@pytest.fixture
def policy() -> Iterator[PluginModules]:
    yield PLUGIN_MODULES
    PLUGIN_MODULES.allow_all()


def test_a_module_that_is_not_allowed_is_refused_without_being_imported(
    policy: PluginModules, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "marker_plugin.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass P:\n    name = 'P'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    policy.allow_only([sample_plugins.__name__])
    with pytest.raises(PluginNotAvailable, match="'marker_plugin' is not an allowed plugin module"):
        Registry(in_tree={}).factory("marker_plugin:P")
    assert not marker.exists()
    assert Registry(in_tree={}).factory(f"{sample_plugins.__name__}:SampleScorer") is sample_plugins.SampleScorer
    assert Registry().factory("PrioritySort").__name__ == "PrioritySort"  # in-tree plugins always load
    policy.allow_only(["marker_plugin"])
    assert Registry(in_tree={}).factory("marker_plugin:P").__name__ == "P" and marker.exists()


def test_once_sealed_only_the_modules_already_used_load(policy: PluginModules) -> None:
    policy.allow_only([sample_plugins.__name__, "tests.config"])
    Registry(in_tree={}).factory(f"{sample_plugins.__name__}:SampleScorer")
    policy.seal("hint: --some-flag")
    assert Registry(in_tree={}).factory(f"{sample_plugins.__name__}:SampleFilter") is sample_plugins.SampleFilter
    with pytest.raises(PluginNotAvailable, match=r"not used by the start-up configuration \(hint: --some-flag\)"):
        Registry(in_tree={}).factory("tests.config.test_load:write")


def test_import_error_inside_an_existing_module_propagates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken plugin module must not be mistaken for an unwritten one."""
    (tmp_path / "broken_plugin_mod_for_tests.py").write_text("import dependency_that_does_not_exist_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry(in_tree={"Broken": "broken_plugin_mod_for_tests:Broken"})
    with pytest.raises(ModuleNotFoundError, match="dependency_that_does_not_exist_xyz"):
        reg.factory("Broken")
    sys.modules.pop("broken_plugin_mod_for_tests", None)


def test_import_path_names_resolve_without_registration() -> None:
    reg = Registry(in_tree={})
    path = f"{sample_plugins.__name__}:SampleScorer"
    assert is_import_path(path)
    assert not is_import_path("SampleScorer")
    assert not is_import_path("a.b:")
    assert reg.known(path)
    assert reg.factory(path) is sample_plugins.SampleScorer


def test_register_by_path_and_by_factory() -> None:
    reg = Registry(in_tree={})
    reg.register("ByPath", f"{sample_plugins.__name__}:SampleFilter")
    reg.register("ByFactory", sample_plugins.SampleQueueSort)
    assert reg.factory("ByPath") is sample_plugins.SampleFilter
    assert reg.factory("ByFactory") is sample_plugins.SampleQueueSort
    assert reg.available("ByPath") and reg.available("ByFactory")
    assert set(reg.names()) == {"ByPath", "ByFactory"}


def test_register_rejects_duplicates_and_bad_paths() -> None:
    reg = Registry()
    with pytest.raises(ValueError, match="already registered"):
        reg.register("NodeName", sample_plugins.SampleFilter)
    with pytest.raises(ValueError, match="not an import path"):
        reg.register("X", "not a path")
    with pytest.raises(ValueError, match="callable"):
        reg.register("Y", 42)  # type: ignore[arg-type]


def test_copy_is_independent() -> None:
    reg = Registry(in_tree={})
    dup = reg.copy()
    dup.register("Extra", sample_plugins.SampleFilter)
    assert dup.known("Extra") and not reg.known("Extra")


def test_real_registry_reports_in_tree_availability_consistently() -> None:
    reg = Registry()
    for name in IN_TREE:
        if reg.available(name):
            assert getattr(reg.factory(name), "__name__", None) == name
        else:
            with pytest.raises(PluginNotAvailable):
                reg.factory(name)
