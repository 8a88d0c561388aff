"""The upstream v1 default profile: plugins per extension point, order, weights, default args."""

from __future__ import annotations

import dataclasses

import pytest

from scheduler.config.defaults import DEFAULT_MULTIPOINT, expand_default_plugins, extension_points_of_class
from scheduler.config.errors import ConfigError
from scheduler.config.load import load_dict
from scheduler.config.registry import Registry
from scheduler.config.types import EXTENSION_POINT_METHODS, EXTENSION_POINTS, WEIGHTED_POINTS
from scheduler.config.types_pluginargs import (
    ARGS_TYPES,
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    VolumeBindingArgs,
)
from scheduler.framework.interface import EXTENSION_POINT_PROTOCOLS
from scheduler.plugins.names import IN_TREE, IN_TREE_BY_NAME

from . import sample_plugins
from .helpers import full_registry, names, profile, resolve, scores

# upstream ExpandedPluginsV1 (v1.37 pkg/scheduler/apis/config/testing/defaults), the pod-group points included
# (their plugins only run with GenericWorkload, beta and off).
EXPECTED = {
    "preEnqueue": ["SchedulingGates", "DynamicResources", "DefaultPreemption"],
    "queueSort": ["PrioritySort"],
    "preFilter": [
        "NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
        "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
        "InterPodAffinity", "DynamicResources", "NodeDeclaredFeatures",
    ],
    "filter": [
        "NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
        "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
        "InterPodAffinity", "DynamicResources", "NodeDeclaredFeatures",
    ],
    "postFilter": ["DynamicResources", "DefaultPreemption"],
    "preScore": [
        "TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
        "InterPodAffinity", "NodeResourcesBalancedAllocation",
    ],
    "score": [
        "TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
        "InterPodAffinity", "DynamicResources", "NodeResourcesBalancedAllocation", "ImageLocality",
    ],
    "reserve": ["VolumeBinding", "DynamicResources"],
    "permit": [],
    "preBind": ["VolumeBinding", "DynamicResources"],
    "bind": ["DefaultBinder"],
    "postBind": [],
    "placementGenerate": [],
    "placementScore": ["NodeResourcesFit"],
    "podGroupPostFilter": ["DynamicResources", "DefaultPreemption"],
}  # fmt: skip

EXPECTED_WEIGHTS = [
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("VolumeBinding", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
]

CPU_MEM = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
EXPECTED_ARGS = {
    "DefaultPreemption": DefaultPreemptionArgs(min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100),
    "InterPodAffinity": InterPodAffinityArgs(hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=False),
    "NodeAffinity": NodeAffinityArgs(added_affinity=None),
    "NodeResourcesFit": NodeResourcesFitArgs(
        ignored_resources=(),
        ignored_resource_groups=(),
        scoring_strategy=ScoringStrategy(type="LeastAllocated", resources=CPU_MEM),
    ),
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs(resources=CPU_MEM),
    "PodTopologySpread": PodTopologySpreadArgs(default_constraints=(), defaulting_type="System"),
    "VolumeBinding": VolumeBindingArgs(bind_timeout_seconds=600),
}


def test_default_multipoint_order_and_weights() -> None:
    assert [p.name for p in DEFAULT_MULTIPOINT] == [
        "SchedulingGates", "PrioritySort", "NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity",
        "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
        "PodTopologySpread", "InterPodAffinity", "DynamicResources", "DefaultPreemption",
        "NodeResourcesBalancedAllocation", "ImageLocality", "DefaultBinder", "NodeDeclaredFeatures",
    ]  # fmt: skip
    assert "DynamicResources" in {p.name for p in DEFAULT_MULTIPOINT}


def test_no_file_gives_one_default_profile_named_py_scheduler() -> None:
    cfg = resolve(None)
    assert [p.scheduler_name for p in cfg.profiles] == ["py-scheduler"]
    p = cfg.profiles[0]
    for point in EXTENSION_POINTS:
        assert names(p, point) == EXPECTED[point], point
    assert scores(p) == EXPECTED_WEIGHTS
    assert all(r.weight == 0 for point in EXTENSION_POINTS if point not in WEIGHTED_POINTS for r in p.plugins[point])
    assert [(r.name, r.weight) for r in p.plugins["placementScore"]] == [("NodeResourcesFit", 1)]
    assert p.percentage_of_nodes_to_score is None


def test_expand_default_plugins_matches_the_loader() -> None:
    expanded = expand_default_plugins()
    for point in EXTENSION_POINTS:
        assert [n for n, _ in expanded[point]] == EXPECTED[point]
    assert expanded["score"] == EXPECTED_WEIGHTS


def test_no_file_with_several_scheduler_names_gives_one_profile_each() -> None:
    cfg = load_dict(None, ["a", "b"], registry=full_registry())
    assert [p.scheduler_name for p in cfg.profiles] == ["a", "b"]
    assert names(cfg.profiles[1], "filter") == EXPECTED["filter"]


def test_global_defaults() -> None:
    cfg = resolve(None)
    assert cfg.parallelism == 16
    assert cfg.percentage_of_nodes_to_score == 0
    assert cfg.pod_initial_backoff_seconds == 1.0
    assert cfg.pod_max_backoff_seconds == 10.0
    assert cfg.pod_max_in_unschedulable_pods_seconds == 300.0
    assert cfg.assumed_pod_ttl_seconds == 0.0
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration_seconds, le.renew_deadline_seconds, le.retry_period_seconds) == (
        True,
        15.0,
        10.0,
        2.0,
    )
    assert le.resource_namespace == "kube-system"
    assert (cfg.client_connection.qps, cfg.client_connection.burst) == (50.0, 100)
    assert cfg.extenders == []
    assert cfg.plugin_registry == {}


def test_default_plugin_args() -> None:
    p = profile(None)
    for name, args in EXPECTED_ARGS.items():
        assert p.plugin_config[name] == args, name
    # every enabled plugin has an entry; plugins without an args type get {}
    enabled = {r.name for refs in p.plugins.values() for r in refs}
    assert set(p.plugin_config) == enabled
    assert p.plugin_config["TaintToleration"] == {}


def test_default_args_cannot_be_changed_through_a_profile() -> None:
    a = profile(None)
    fit = a.plugin_config["NodeResourcesFit"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.ignored_resources = ("x",)
    assert isinstance(fit.scoring_strategy.resources, tuple)
    b = profile(None)
    assert b.plugin_config["NodeResourcesFit"].scoring_strategy.resources == CPU_MEM


def test_unavailable_default_plugin_is_an_error_naming_it() -> None:
    reg = full_registry(
        missing={
            "ImageLocality": "no_such_module_for_tests_xyz:ImageLocality",  # module missing
            "VolumeZone": f"{sample_plugins.__name__}:VolumeZone",  # module exists, class missing
        }
    )
    with pytest.raises(ConfigError) as exc:
        load_dict(None, registry=reg)
    message = str(exc.value)
    assert "plugin 'ImageLocality' is not available" in message
    assert "plugin 'VolumeZone' is not available" in message


def test_real_registry_provides_every_default_plugin() -> None:
    reg = Registry()
    assert [p.name for p in DEFAULT_MULTIPOINT if not reg.available(p.name)] == []
    p = load_dict(None).profiles[0]
    for point in EXTENSION_POINTS:
        assert names(p, point) == EXPECTED[point]


def test_static_extension_point_table_covers_every_in_tree_plugin() -> None:
    assert set(IN_TREE_BY_NAME) == set(IN_TREE)
    assert IN_TREE_BY_NAME["SelectorSpread"].points == {"preScore", "score"}
    assert IN_TREE_BY_NAME["ServiceAffinity"].points == {"preFilter", "filter"}
    assert IN_TREE_BY_NAME["LeastRequestedPriority"].points == {"score"}
    assert IN_TREE_BY_NAME["CheckNodePIDPressure"].points == {"filter"}


@pytest.mark.parametrize("name", sorted(IN_TREE))
def test_in_tree_plugins_implement_their_static_extension_points(name: str) -> None:
    """The static table stands in for reflection; each plugin's class must agree with it."""
    cls = Registry().factory(name)
    assert isinstance(cls, type)
    assert extension_points_of_class(cls) >= IN_TREE_BY_NAME[name].points


def test_extension_points_of_class_inspects_methods() -> None:
    assert extension_points_of_class(sample_plugins.SampleScorer) == {"preScore", "score"}
    assert extension_points_of_class(sample_plugins.SampleFilter) == {"filter"}
    assert extension_points_of_class(sample_plugins.SampleQueueSort) == {"queueSort"}


def test_every_extension_point_has_its_method_and_protocol() -> None:
    assert tuple(EXTENSION_POINT_PROTOCOLS) == EXTENSION_POINTS
    assert tuple(EXTENSION_POINT_METHODS) == EXTENSION_POINTS
    assert {p: m for p, (m, _) in EXTENSION_POINT_PROTOCOLS.items()} == EXTENSION_POINT_METHODS


def test_the_leaf_names_table_names_only_known_extension_points() -> None:
    """``plugins/names`` imports nothing, so it cannot check its points against the config's list itself."""
    unknown = {(p.name, point) for p in IN_TREE_BY_NAME.values() for point in p.points if point not in EXTENSION_POINTS}
    assert unknown == set()


def test_every_args_type_belongs_to_an_in_tree_plugin() -> None:
    assert set(ARGS_TYPES) <= set(IN_TREE_BY_NAME)
    assert ARGS_TYPES["NodeResourcesFit"] is NodeResourcesFitArgs
    assert ARGS_TYPES["Coscheduling"].__name__ == "CoschedulingArgs"
    assert len(ARGS_TYPES) == 13
