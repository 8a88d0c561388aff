"""The upstream v1 default profile: plugins per extension point, order, weights, default args."""

from __future__ import annotations

import pytest

from scheduler.config.defaults import (
    DEFAULT_MULTIPOINT,
    DEFAULT_PLUGIN_NAMES,
    EXTENSION_POINTS_BY_PLUGIN,
    expand_default_plugins,
    extension_points_of_class,
)
from scheduler.config.load import load_dict
from scheduler.config.types import EXTENSION_POINTS
from scheduler.plugins.registry import IN_TREE, Registry

from . import sample_plugins
from .helpers import full_registry, names, profile, resolve, scores

# upstream ExpandedPluginsV1 (pkg/scheduler/apis/config/testing/defaults), minus the removed EBS/GCE/Azure
# limits, VolumeBinding without scoring (StorageCapacityScoring off), plus DefaultPreemption's PreEnqueue (1.34).
EXPECTED = {
    "preEnqueue": ["SchedulingGates", "DynamicResources", "DefaultPreemption"],
    "queueSort": ["PrioritySort"],
    "preFilter": [
        "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
        "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
    ],
    "filter": [
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
        "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
        "InterPodAffinity", "DynamicResources",
    ],
    "postFilter": ["DynamicResources", "DefaultPreemption"],
    "preScore": [
        "TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ],
    "score": [
        "TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity",
        "NodeResourcesBalancedAllocation", "ImageLocality",
    ],
    "reserve": ["VolumeBinding", "DynamicResources"],
    "permit": [],
    "preBind": ["VolumeBinding", "DynamicResources"],
    "bind": ["DefaultBinder"],
    "postBind": [],
}  # fmt: skip

EXPECTED_WEIGHTS = [
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
]

CPU_MEM = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXPECTED_ARGS = {
    "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    "InterPodAffinity": {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    "NodeAffinity": {"addedAffinity": None},
    "NodeResourcesFit": {
        "ignoredResources": [],
        "ignoredResourceGroups": [],
        "scoringStrategy": {"type": "LeastAllocated", "resources": CPU_MEM},
    },
    "NodeResourcesBalancedAllocation": {"resources": CPU_MEM},
    "PodTopologySpread": {"defaultConstraints": [], "defaultingType": "System"},
    "VolumeBinding": {"bindTimeoutSeconds": 600},
}


def test_default_multipoint_order_and_weights() -> None:
    assert [n for n, _ in DEFAULT_MULTIPOINT] == [
        "SchedulingGates", "PrioritySort", "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
        "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
        "PodTopologySpread", "InterPodAffinity", "DynamicResources", "DefaultPreemption",
        "NodeResourcesBalancedAllocation", "ImageLocality", "DefaultBinder",
    ]  # fmt: skip
    assert "DynamicResources" in DEFAULT_PLUGIN_NAMES


def test_no_file_gives_one_default_profile_named_py_scheduler() -> None:
    cfg = resolve(None)
    assert [p.scheduler_name for p in cfg.profiles] == ["py-scheduler"]
    p = cfg.profiles[0]
    for point in EXTENSION_POINTS:
        assert names(p, point) == EXPECTED[point], point
    assert scores(p) == EXPECTED_WEIGHTS
    assert all(r.weight == 0 for point in EXTENSION_POINTS if point != "score" for r in p.plugins[point])
    assert cfg.unavailable_default_plugins == []
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


def test_default_args_are_fresh_copies() -> None:
    a = profile(None)
    a.plugin_config["NodeResourcesFit"]["scoringStrategy"]["resources"].append({"name": "x", "weight": 1})
    b = profile(None)
    assert b.plugin_config["NodeResourcesFit"]["scoringStrategy"]["resources"] == CPU_MEM


def test_unimplemented_default_plugins_are_dropped_and_recorded() -> None:
    reg = full_registry(
        missing={
            "ImageLocality": "no_such_module_for_tests_xyz:ImageLocality",  # module missing
            "VolumeZone": f"{sample_plugins.__name__}:VolumeZone",  # module exists, class missing
        }
    )
    cfg = load_dict(None, registry=reg)
    p = cfg.profiles[0]
    assert cfg.unavailable_default_plugins == ["VolumeZone", "ImageLocality"]  # default order
    assert "ImageLocality" not in names(p, "score")
    assert "VolumeZone" not in names(p, "filter") and "VolumeZone" not in names(p, "preFilter")
    assert "ImageLocality" not in p.plugin_config and "VolumeZone" not in p.plugin_config
    assert names(p, "filter") == [n for n in EXPECTED["filter"] if n != "VolumeZone"]


def test_explicitly_configured_default_plugin_that_is_unimplemented_is_still_only_a_warning() -> None:
    reg = full_registry(missing={"ImageLocality": "no_such_module_for_tests_xyz:ImageLocality"})
    d = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 5}]}}}],
    }
    cfg = load_dict(d, registry=reg)
    assert cfg.unavailable_default_plugins == ["ImageLocality"]
    assert "ImageLocality" not in names(cfg.profiles[0], "score")


def test_real_registry_drops_exactly_the_unwritten_default_plugins() -> None:
    reg = Registry()
    cfg = load_dict(None)
    missing = [n for n, _ in DEFAULT_MULTIPOINT if not reg.available(n)]
    assert cfg.unavailable_default_plugins == missing
    p = cfg.profiles[0]
    for point in EXTENSION_POINTS:
        assert names(p, point) == [n for n in EXPECTED[point] if n not in missing]


def test_static_extension_point_table_covers_every_in_tree_plugin() -> None:
    assert set(EXTENSION_POINTS_BY_PLUGIN) == set(IN_TREE)
    assert EXTENSION_POINTS_BY_PLUGIN["SelectorSpread"] == {"preScore", "score"}
    assert EXTENSION_POINTS_BY_PLUGIN["ServiceAffinity"] == {"preFilter", "filter"}
    assert EXTENSION_POINTS_BY_PLUGIN["LeastRequestedPriority"] == {"score"}
    assert EXTENSION_POINTS_BY_PLUGIN["CheckNodePIDPressure"] == {"filter"}


@pytest.mark.parametrize("name", sorted(IN_TREE))
def test_written_in_tree_plugins_implement_their_static_extension_points(name: str) -> None:
    """The static table stands in for reflection; once a plugin exists, its class must agree."""
    reg = Registry()
    if not reg.available(name):
        pytest.skip(f"{name} not implemented yet")
    cls = reg.factory(name)
    assert isinstance(cls, type)
    assert extension_points_of_class(cls) >= EXTENSION_POINTS_BY_PLUGIN[name]


def test_extension_points_of_class_inspects_methods() -> None:
    assert extension_points_of_class(sample_plugins.SampleScorer) == {"preScore", "score"}
    assert extension_points_of_class(sample_plugins.SampleFilter) == {"filter"}
    assert extension_points_of_class(sample_plugins.SampleQueueSort) == {"queueSort"}
