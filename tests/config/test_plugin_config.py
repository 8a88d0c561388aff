"""pluginConfig: user args merged over defaults, nested defaults, pass-through for unknown args types."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from scheduler.config.args import plugin_args
from scheduler.config.errors import ConfigError
from scheduler.config.types_pluginargs import (
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    SelectorSpreadArgs,
    ServiceAffinityArgs,
    ServiceAntiAffinityArgs,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from scheduler.plugins.inter_pod_affinity import InterPodAffinity

from .helpers import one_profile, profile
from .test_defaults import CPU_MEM


def args_of(plugin: str, args: object, plugins: dict[str, object] | None = None) -> Any:
    p = profile(one_profile(plugins, [{"name": plugin, "args": args}]))
    return p.plugin_config[plugin]


def test_user_keys_override_and_other_defaults_stay() -> None:
    assert args_of("InterPodAffinity", {"hardPodAffinityWeight": 5}) == InterPodAffinityArgs(
        hard_pod_affinity_weight=5, ignore_preferred_terms_of_existing_pods=False
    )
    assert args_of("DefaultPreemption", {"minCandidateNodesAbsolute": 0}) == DefaultPreemptionArgs(
        min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=0
    )


def test_scoring_strategy_without_resources_gets_cpu_and_memory() -> None:
    got = args_of("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated"}})
    assert got == NodeResourcesFitArgs(
        ignored_resources=(),
        ignored_resource_groups=(),
        scoring_strategy=ScoringStrategy(type="MostAllocated", resources=CPU_MEM),
    )


def test_scoring_strategy_resource_weight_absent_or_zero_is_one() -> None:
    got = args_of(
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu"}, {"name": "nvidia.com/gpu", "weight": 0}],
            }
        },
    )
    assert got.scoring_strategy == ScoringStrategy(
        type="LeastAllocated", resources=(ResourceSpec("cpu", 1), ResourceSpec("nvidia.com/gpu", 1))
    )


def test_requested_to_capacity_ratio() -> None:
    shape = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
    got = args_of(
        "NodeResourcesFit",
        {
            "ignoredResources": ["example.com/foo"],
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": 3}],
                "requestedToCapacityRatio": {"shape": shape},
            },
        },
    )
    assert got.ignored_resources == ("example.com/foo",)
    assert got.scoring_strategy == ScoringStrategy(
        type="RequestedToCapacityRatio",
        resources=(ResourceSpec("cpu", 3),),
        requested_to_capacity_ratio=RequestedToCapacityRatioParam(
            (UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0))
        ),
    )


def test_balanced_allocation_resources() -> None:
    assert args_of("NodeResourcesBalancedAllocation", {"resources": []}) == NodeResourcesBalancedAllocationArgs(CPU_MEM)
    got = args_of("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu"}, {"name": "example.com/x"}]})
    assert got == NodeResourcesBalancedAllocationArgs((ResourceSpec("cpu", 1), ResourceSpec("example.com/x", 1)))


def test_pod_topology_spread_list_defaulting() -> None:
    c = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}
    assert args_of("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [c]}) == PodTopologySpreadArgs(
        defaulting_type="List", default_constraints=(c,)
    )
    assert args_of("PodTopologySpread", {"defaultingType": "List"}) == PodTopologySpreadArgs(
        defaulting_type="List", default_constraints=()
    )


def test_apiversion_and_kind_in_args_are_accepted_and_stripped() -> None:
    got = args_of(
        "VolumeBinding",
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "VolumeBindingArgs", "bindTimeoutSeconds": 30},
    )
    assert got == VolumeBindingArgs(bind_timeout_seconds=30)


def test_null_values_keep_defaults() -> None:
    assert args_of("NodeResourcesFit", {"scoringStrategy": None}).scoring_strategy == ScoringStrategy(
        type="LeastAllocated", resources=CPU_MEM
    )
    assert args_of("InterPodAffinity", None) == InterPodAffinityArgs(
        hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=False
    )


def test_node_affinity_added_affinity() -> None:
    added = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}
        ],
    }
    assert args_of("NodeAffinity", {"addedAffinity": added}) == NodeAffinityArgs(added_affinity=added)


def test_legacy_args_defaults_and_override() -> None:
    plugins = {
        "filter": {"enabled": [{"name": "ServiceAffinity"}]},
        "preFilter": {"enabled": [{"name": "ServiceAffinity"}]},
        "score": {"enabled": [{"name": "ServiceAntiAffinity", "weight": 1}, {"name": "SelectorSpread", "weight": 1}]},
    }
    p = profile(one_profile(plugins, [{"name": "ServiceAffinity", "args": {"affinityLabels": ["region"]}}]))
    assert p.plugin_config["ServiceAffinity"] == ServiceAffinityArgs(
        affinity_labels=("region",), anti_affinity_labels_preference=()
    )
    assert p.plugin_config["ServiceAntiAffinity"] == ServiceAntiAffinityArgs(anti_affinity_labels_preference=())
    assert p.plugin_config["SelectorSpread"] == SelectorSpreadArgs()
    got = args_of(
        "ServiceAntiAffinity",
        {"antiAffinityLabelsPreference": ["zone", "rack"]},
        {"score": {"enabled": [{"name": "ServiceAntiAffinity"}]}},
    )
    assert got == ServiceAntiAffinityArgs(anti_affinity_labels_preference=("zone", "rack"))


def test_args_of_plugins_without_an_args_type_pass_through() -> None:
    assert args_of("TaintToleration", {"anything": [1, 2]}) == {"anything": [1, 2]}


def test_plugin_config_for_a_disabled_plugin_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        p = profile(
            one_profile(
                {"multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}},
                [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 3}}],
            )
        )
    assert "InterPodAffinity" not in p.plugin_config
    assert "InterPodAffinity" in caplog.text


def test_plugin_config_for_a_disabled_plugin_is_still_validated() -> None:
    with pytest.raises(ConfigError) as ei:
        profile(
            one_profile(
                {"multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}},
                [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 300}}],
            )
        )
    assert ei.value.paths == ["profiles[0].pluginConfig[0].args.hardPodAffinityWeight"]


def test_plugin_args_passes_typed_args_through_and_decodes_a_mapping_as_the_loader() -> None:
    typed = InterPodAffinityArgs(hard_pod_affinity_weight=7)
    assert plugin_args(InterPodAffinityArgs, typed) is typed
    assert plugin_args(InterPodAffinityArgs, {"hardPodAffinityWeight": 7}) == typed
    assert plugin_args(InterPodAffinityArgs, None) == args_of("InterPodAffinity", None)
    with pytest.raises(ValueError, match=r"InterPodAffinityArgs\.hardPodAffinityWeight: invalid value 101"):
        plugin_args(InterPodAffinityArgs, {"hardPodAffinityWeight": 101})


def test_in_tree_plugins_are_built_from_their_typed_args() -> None:
    p = profile(one_profile(None, [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 9}}]))
    args = p.plugin_config["InterPodAffinity"]
    assert isinstance(args, InterPodAffinityArgs)
    assert InterPodAffinity(args, handle=None).hard_pod_affinity_weight == 9
