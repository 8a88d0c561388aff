"""Upstream's v1 default plugin set, which extension points each plugin implements, and default args.

Source: kube-scheduler v1.34 ``pkg/scheduler/apis/config/v1/default_plugins.go`` and ``defaults.go``.

* ``DEFAULT_MULTIPOINT`` is upstream's MultiPoint list in order, with score weights. Upstream inserts
  ``DynamicResources`` before ``DefaultPreemption`` when the DynamicResourceAllocation gate is on (GA,
  default on, in 1.34), and so do we: our DynamicResources does not allocate devices (it rejects pods
  with resource claims) but gives every other pod upstream's verdicts and PostFilter message.
* ``EXTENSION_POINTS_BY_PLUGIN`` replaces upstream's reflection (which interfaces a plugin type
  implements) for in-tree plugins: MultiPoint must expand the same way whether or not a plugin module
  has been written yet, and a profile must resolve identically on every machine. Third-party plugins
  are inspected instead (``extension_points_of_class``).

  One deliberate difference: upstream's VolumeBinding implements PreScore/Score but only scores with
  the alpha ``StorageCapacityScoring`` gate (otherwise PreScore returns Skip, so it never scores). We
  run with that gate off and list VolumeBinding without preScore/score; the outcome is the same and the
  plugin need not carry a dead Score method.
* ``DEFAULT_ARGS`` are the defaulted ``<Plugin>Args`` objects (camelCase keys as in YAML), upstream's
  for the v1 args types, ours for the legacy plugins (arg names as in v1beta1, 1.19-1.21).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

from scheduler.config.types import EXTENSION_POINTS

# (name, score weight); weight 0 = none given (plugins without a Score extension).
DEFAULT_MULTIPOINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 0),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)

DEFAULT_PLUGIN_NAMES: frozenset[str] = frozenset(n for n, _ in DEFAULT_MULTIPOINT)

# Plugins upstream removed from v1 configs: naming them is an error there ("was invalid in version").
INVALID_IN_V1: frozenset[str] = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})


def _points(*points: str) -> frozenset[str]:
    for p in points:
        assert p in EXTENSION_POINTS, p
    return frozenset(points)


EXTENSION_POINTS_BY_PLUGIN: dict[str, frozenset[str]] = {
    # upstream v1.34 default plugins
    "SchedulingGates": _points("preEnqueue"),
    "PrioritySort": _points("queueSort"),
    "NodeUnschedulable": _points("filter"),
    "NodeName": _points("filter"),
    "TaintToleration": _points("filter", "preScore", "score"),
    "NodeAffinity": _points("preFilter", "filter", "preScore", "score"),
    "NodePorts": _points("preFilter", "filter"),
    "NodeResourcesFit": _points("preFilter", "filter", "preScore", "score"),
    "VolumeRestrictions": _points("preFilter", "filter"),
    "NodeVolumeLimits": _points("preFilter", "filter"),
    "VolumeBinding": _points("preFilter", "filter", "reserve", "preBind"),
    "VolumeZone": _points("preFilter", "filter"),
    "PodTopologySpread": _points("preFilter", "filter", "preScore", "score"),
    "InterPodAffinity": _points("preFilter", "filter", "preScore", "score"),
    "DynamicResources": _points("preEnqueue", "preFilter", "filter", "postFilter", "reserve", "preBind"),
    "DefaultPreemption": _points("preEnqueue", "postFilter"),
    "NodeResourcesBalancedAllocation": _points("preScore", "score"),
    "ImageLocality": _points("score"),
    "DefaultBinder": _points("bind"),
    # legacy / seed-era plugins
    "SelectorSpread": _points("preScore", "score"),
    "ServiceAffinity": _points("preFilter", "filter"),
    "ServiceAntiAffinity": _points("preScore", "score"),
    "CheckNodeCondition": _points("filter"),
    "CheckNodeMemoryPressure": _points("filter"),
    "CheckNodeDiskPressure": _points("filter"),
    "CheckNodePIDPressure": _points("filter"),
    "EqualPriority": _points("score"),
    "LeastRequestedPriority": _points("score"),
    "MostRequestedPriority": _points("score"),
    "BalancedResourceAllocation": _points("score"),
    "NoDiskConflict": _points("filter"),
    "NodeLabel": _points("filter", "score"),
    "NodePreferAvoidPods": _points("score"),
}

# Python method name -> extension point, for inspecting third-party plugin classes.
METHOD_TO_EXTENSION_POINT: dict[str, str] = {
    "pre_enqueue": "preEnqueue",
    "less": "queueSort",
    "pre_filter": "preFilter",
    "filter": "filter",
    "post_filter": "postFilter",
    "pre_score": "preScore",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "pre_bind": "preBind",
    "bind": "bind",
    "post_bind": "postBind",
}


def extension_points_of_class(cls: type) -> frozenset[str]:
    """The extension points a plugin class implements, judged by its (callable) methods.

    The Python counterpart of upstream's ``reflect.TypeOf(plugin).Implements(iface)``.
    """
    found = set()
    for method, point in METHOD_TO_EXTENSION_POINT.items():
        attr = inspect.getattr_static(cls, method, None)
        if attr is not None and (callable(attr) or isinstance(attr, classmethod)):
            found.add(point)
    return frozenset(found)


_CPU_MEMORY: list[dict[str, Any]] = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]

# plugin name -> args kind
ARGS_KIND: dict[str, str] = {
    "DefaultPreemption": "DefaultPreemptionArgs",
    "InterPodAffinity": "InterPodAffinityArgs",
    "NodeAffinity": "NodeAffinityArgs",
    "NodeResourcesFit": "NodeResourcesFitArgs",
    "NodeResourcesBalancedAllocation": "NodeResourcesBalancedAllocationArgs",
    "PodTopologySpread": "PodTopologySpreadArgs",
    "VolumeBinding": "VolumeBindingArgs",
    "SelectorSpread": "SelectorSpreadArgs",
    "ServiceAffinity": "ServiceAffinityArgs",
    "ServiceAntiAffinity": "ServiceAntiAffinityArgs",
    "NodeLabel": "NodeLabelArgs",
}

DEFAULT_ARGS: dict[str, dict[str, Any]] = {
    "DefaultPreemptionArgs": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    "InterPodAffinityArgs": {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    "NodeAffinityArgs": {"addedAffinity": None},
    "NodeResourcesFitArgs": {
        "ignoredResources": [],
        "ignoredResourceGroups": [],
        "scoringStrategy": {"type": "LeastAllocated", "resources": _CPU_MEMORY},
    },
    "NodeResourcesBalancedAllocationArgs": {"resources": _CPU_MEMORY},
    "PodTopologySpreadArgs": {"defaultConstraints": [], "defaultingType": "System"},
    # shape only exists with the alpha StorageCapacityScoring gate, which we run with off.
    "VolumeBindingArgs": {"bindTimeoutSeconds": 600},
    # legacy (v1beta1 names): SelectorSpread had no args upstream; ServiceAffinityArgs carried both the
    # filter labels and the anti-affinity scoring labels; ServiceAntiAffinity is our split-out scorer.
    "SelectorSpreadArgs": {},
    "ServiceAffinityArgs": {"affinityLabels": [], "antiAffinityLabelsPreference": []},
    "ServiceAntiAffinityArgs": {"antiAffinityLabelsPreference": []},
    "NodeLabelArgs": {"presentLabels": [], "absentLabels": [], "presentLabelsPreference": [],
                      "absentLabelsPreference": []},
}


def default_args(plugin: str) -> dict[str, Any] | None:
    """A fresh copy of the defaulted args of ``plugin``, or None when it has no args type."""
    kind = ARGS_KIND.get(plugin)
    if kind is None:
        return None
    return copy.deepcopy(DEFAULT_ARGS[kind])


def default_multipoint() -> list[tuple[str, int]]:
    """The default MultiPoint list (a fresh list the caller may change)."""
    return list(DEFAULT_MULTIPOINT)


def expand_default_plugins() -> dict[str, list[tuple[str, int]]]:
    """The default set expanded per extension point, as upstream's ExpandedPluginsV1 (for docs and tests).

    Score weights are the MultiPoint weights; other points carry weight 0.
    """
    out: dict[str, list[tuple[str, int]]] = {p: [] for p in EXTENSION_POINTS}
    for name, weight in DEFAULT_MULTIPOINT:
        for point in EXTENSION_POINTS:
            if point in EXTENSION_POINTS_BY_PLUGIN[name]:
                out[point].append((name, (weight or 1) if point == "score" else 0))
    return out
