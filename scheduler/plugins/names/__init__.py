"""The in-tree plugins by name (upstream ``pkg/scheduler/framework/plugins/names``), with what the config
needs to know of each without importing it: its module, its extension points, its default weight.

A leaf package: it imports nothing, so that the config (which reads this table to expand MultiPoint and
to name the default profile) never imports the plugins, which import the config for their args.

Why a table and not reflection on the classes: every in-tree plugin lives in its own module
(``scheduler/plugins/<snake_case>.py``) and importing all of them up front would make one broken module
break every profile, including profiles that never use it. A profile resolves from this table,
identically on every machine; a test checks that each class agrees with its entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEFAULT_BINDER", "IN_TREE", "IN_TREE_BY_NAME", "IN_TREE_PLUGINS", "PluginSpec", "snake_case"]

# The Bind plugin every default profile binds with (the scheduler batches its Bindings when it binds alone).
DEFAULT_BINDER = "DefaultBinder"


def snake_case(name: str) -> str:
    """``NodeResourcesFit`` -> ``node_resources_fit``: the module naming convention for plugins.

    An acronym stays one word (``CheckNodePIDPressure`` -> ``check_node_pid_pressure``), as people write it.
    """
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


@dataclass(frozen=True, slots=True)
class PluginSpec:
    """One in-tree plugin: where it lives, the extension points it implements (as configs name them:
    ``preFilter``, ``score``, ...) and its place in the default profile.

    ``points`` replaces upstream's reflection (which interfaces a plugin type implements).
    ``default_weight`` is None for plugins outside upstream's default MultiPoint set, else their weight
    there (0: none given, as for a plugin that does not score; a Score plugin then weighs 1). Its args type,
    if any, is the config's (``config.types_pluginargs``)."""

    name: str
    points: frozenset[str]
    default_weight: int | None = None
    legacy: bool = False

    @property
    def import_path(self) -> str:
        """``scheduler.plugins[.legacy].<snake_case name>:<Name>``."""
        package = "scheduler.plugins.legacy" if self.legacy else "scheduler.plugins"
        return f"{package}.{snake_case(self.name)}:{self.name}"


def _points(*points: str) -> frozenset[str]:
    return frozenset(points)


def _legacy(name: str, points: frozenset[str]) -> PluginSpec:
    return PluginSpec(name, points, None, legacy=True)


_FILTER_POINTS = _points("preFilter", "filter")
_SCORE_POINTS = _points("preScore", "score")
_FILTER_SCORE_POINTS = _points("preFilter", "filter", "preScore", "score")

# Upstream's v1 default set first, in its MultiPoint order (kube-scheduler v1.37
# pkg/scheduler/apis/config/v1/default_plugins.go: NodeName before NodeUnschedulable; DynamicResources, weight 2,
# before DefaultPreemption as with the DynamicResourceAllocation gate on, GA: ours rejects pods with resource claims
# but gives every other pod upstream's verdicts and scores; NodeDeclaredFeatures appended, its gate GA and locked on).
# VolumeBinding scores with StorageCapacityScoring (beta, on in 1.37). Then the seed-era plugins.
IN_TREE_PLUGINS: tuple[PluginSpec, ...] = (
    PluginSpec("SchedulingGates", _points("preEnqueue"), 0),
    PluginSpec("PrioritySort", _points("queueSort"), 0),
    PluginSpec("NodeName", _FILTER_POINTS, 0),
    PluginSpec("NodeUnschedulable", _FILTER_POINTS, 0),
    PluginSpec("TaintToleration", _FILTER_SCORE_POINTS, 3),
    PluginSpec("NodeAffinity", _FILTER_SCORE_POINTS, 2),
    PluginSpec("NodePorts", _FILTER_POINTS, 0),
    PluginSpec("NodeResourcesFit", _FILTER_SCORE_POINTS | {"placementScore"}, 1),
    PluginSpec("VolumeRestrictions", _FILTER_POINTS, 0),
    PluginSpec("NodeVolumeLimits", _FILTER_POINTS, 0),
    PluginSpec("VolumeBinding", _points("preFilter", "filter", "preScore", "score", "reserve", "preBind"), 0),
    PluginSpec("VolumeZone", _FILTER_POINTS, 0),
    PluginSpec("PodTopologySpread", _FILTER_SCORE_POINTS, 2),
    PluginSpec("InterPodAffinity", _FILTER_SCORE_POINTS, 2),
    PluginSpec("DynamicResources",
               _points("preEnqueue", "preFilter", "filter", "postFilter", "score", "reserve", "preBind",
                       "podGroupPostFilter"), 2),
    PluginSpec("DefaultPreemption", _points("preEnqueue", "postFilter", "podGroupPostFilter"), 0),
    PluginSpec("NodeResourcesBalancedAllocation", _SCORE_POINTS, 1),
    PluginSpec("ImageLocality", _points("score"), 1),
    PluginSpec("DefaultBinder", _points("bind"), 0),
    PluginSpec("NodeDeclaredFeatures", _FILTER_POINTS, 0),
    # kube-scheduler v1.37's gated plugins: always in its registry, outside the default profile while their
    # gates are off (GenericWorkload, TopologyAwareWorkloadScheduling, InPlacePodVerticalScalingSchedulerPreemption)
    PluginSpec("GangScheduling", _points("preEnqueue", "permit"), None),
    PluginSpec("TopologyPlacementGenerator", _points("placementGenerate"), None),
    PluginSpec("PodGroupPodsCount", _points("placementScore"), None),
    PluginSpec("DeferredPodScheduling", _points("preFilter", "filter", "permit"), None),
    # seed-era plugins (policy-era predicates and priorities, 1.16-1.21 framework plugins): plugins/legacy/
    _legacy("SelectorSpread", _SCORE_POINTS),
    _legacy("ServiceAffinity", _FILTER_POINTS),
    _legacy("ServiceAntiAffinity", _SCORE_POINTS),
    _legacy("CheckNodeCondition", _points("filter")),
    _legacy("CheckNodeMemoryPressure", _points("filter")),
    _legacy("CheckNodeDiskPressure", _points("filter")),
    _legacy("CheckNodePIDPressure", _points("filter")),
    _legacy("EqualPriority", _points("score")),
    _legacy("LeastRequestedPriority", _points("score")),
    _legacy("MostRequestedPriority", _points("score")),
    _legacy("BalancedResourceAllocation", _points("score")),
    _legacy("NoDiskConflict", _points("filter")),
    _legacy("NodeLabel", _points("filter", "score")),
    _legacy("NodePreferAvoidPods", _points("score")),
    # kubernetes-sigs/scheduler-plugins (same names, args and CRDs), outside the default profile
    PluginSpec("Coscheduling", _points("queueSort", "preFilter", "postFilter", "reserve", "permit"), None),
)

IN_TREE_BY_NAME: dict[str, PluginSpec] = {p.name: p for p in IN_TREE_PLUGINS}

# plugin name -> "scheduler.plugins.<module>:<Class>"
IN_TREE: dict[str, str] = {p.name: p.import_path for p in IN_TREE_PLUGINS}
