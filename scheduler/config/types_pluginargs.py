"""The typed args of the in-tree plugins (upstream ``pkg/scheduler/apis/config/types_pluginargs.go``).

Field defaults are upstream's v1 defaults (``SetDefaults_<Kind>``), ours for the legacy plugins (arg
names as in v1beta1, 1.19-1.21). ``config.args`` decodes and validates a ``pluginConfig[].args``
mapping into one of these once; the plugin imports its type and only reads it. Field names are the
YAML keys in snake_case (``minCandidateNodesPercentage`` -> ``min_candidate_nodes_percentage``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

MAX_CUSTOM_PRIORITY_SCORE = 10  # upstream config.MaxCustomPriorityScore: shape scores are 0..10

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource named in scoring args and its weight."""

    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True, slots=True)
class UtilizationShapePoint:
    """One (utilization %, score 0..10) point of a RequestedToCapacityRatio shape."""

    utilization: int
    score: int


@dataclass(frozen=True, slots=True)
class RequestedToCapacityRatioParam:
    shape: tuple[UtilizationShapePoint, ...]


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


@dataclass(frozen=True, slots=True)
class NodeResourcesFitArgs:
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)


@dataclass(frozen=True, slots=True)
class NodeResourcesBalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs:
    """``added_affinity`` is a validated v1 NodeAffinity object (API dict); the plugin builds its matchers."""

    added_affinity: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class PodTopologySpreadArgs:
    """``default_constraints`` are validated v1 TopologySpreadConstraints (API dicts, no selector)."""

    default_constraints: tuple[Mapping[str, Any], ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING


@dataclass(frozen=True, slots=True)
class VolumeBindingArgs:
    """``shape``: the storage capacity score's shape (StorageCapacityScoring gate, beta and on in v1.37);
    None when the configuration gives none, and the plugin then takes upstream's default shape (with the
    gate on) or scores nothing (off)."""

    bind_timeout_seconds: int = 600
    shape: tuple[UtilizationShapePoint, ...] | None = None


@dataclass(frozen=True, slots=True)
class DynamicResourcesArgs:
    """v1 DynamicResourcesArgs, in seconds: ``filter_timeout`` bounds one node's device allocation in
    Filter (DRASchedulerFilterTimeout, beta and on; 0 turns the limit off); ``binding_timeout`` is how long
    PreBind waits for a device's binding conditions (DRADeviceBindingConditions, beta and on)."""

    filter_timeout: float = 10.0
    binding_timeout: float = 600.0


@dataclass(frozen=True, slots=True)
class SelectorSpreadArgs:
    """SelectorSpread had no args upstream; the type exists so its pluginConfig is checked as empty."""


@dataclass(frozen=True, slots=True)
class ServiceAffinityArgs:
    """v1beta1 ServiceAffinityArgs carried both the filter labels and the anti-affinity scoring labels."""

    affinity_labels: tuple[str, ...] = ()
    anti_affinity_labels_preference: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ServiceAntiAffinityArgs:
    """Our split-out scorer of v1beta1's ServiceAffinityArgs.antiAffinityLabelsPreference."""

    anti_affinity_labels_preference: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeLabelArgs:
    """v1beta1 NodeLabelArgs (a Policy's labelsPresence predicates and labelPreference priorities):
    label keys a node must have / must not have, and ones it is preferred to have / not to have."""

    present_labels: tuple[str, ...] = ()
    absent_labels: tuple[str, ...] = ()
    present_labels_preference: tuple[str, ...] = ()
    absent_labels_preference: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CoschedulingArgs:
    """kubernetes-sigs/scheduler-plugins' CoschedulingArgs (its v1 defaults; its args are registered in the
    kubescheduler.config.k8s.io group): how long members wait at Permit for their group unless the
    PodGroup says, and how long a group that failed is kept back (0: not at all)."""

    permit_waiting_time_seconds: int = 60
    pod_group_backoff_seconds: int = 0


PluginArgs = (
    NodeResourcesFitArgs
    | NodeResourcesBalancedAllocationArgs
    | DefaultPreemptionArgs
    | InterPodAffinityArgs
    | NodeAffinityArgs
    | PodTopologySpreadArgs
    | VolumeBindingArgs
    | DynamicResourcesArgs
    | SelectorSpreadArgs
    | ServiceAffinityArgs
    | ServiceAntiAffinityArgs
    | NodeLabelArgs
    | CoschedulingArgs
)

# Plugin name -> its args type. Upstream registers each as the kind ``<Plugin>Args``
# (pkg/scheduler/apis/config/register.go); the names are the in-tree ones of ``plugins/names``, which a test checks.
ARGS_TYPES: dict[str, type] = {cls.__name__.removesuffix("Args"): cls for cls in get_args(PluginArgs)}
