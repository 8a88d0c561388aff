"""The default profile upstream's v1 config expands to (``pkg/scheduler/apis/config/v1/default_plugins.go``), and the
extension points of third-party plugin classes.

The in-tree plugins (their extension points and default MultiPoint weights) are one table, the leaf
``scheduler.plugins.names``; this module derives from it what the config loader needs.
"""

from __future__ import annotations

import inspect

from scheduler.config.types import EXTENSION_POINT_METHODS, EXTENSION_POINTS
from scheduler.plugins.names import IN_TREE_PLUGINS, PluginSpec

# Plugins upstream removed from v1 configs: naming them is an error there ("was invalid in version").
INVALID_IN_V1: frozenset[str] = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})

# Upstream's default MultiPoint list, in order (getDefaultPlugins; a view of the table), with its gates at their
# v1.37 defaults.
DEFAULT_MULTIPOINT: tuple[PluginSpec, ...] = tuple(p for p in IN_TREE_PLUGINS if p.default_weight is not None)
_BY_NAME = {p.name: p for p in IN_TREE_PLUGINS}

# applyFeatureGates' workload part, process-wide as upstream's DefaultFeatureGate: set from --feature-gates before
# any configuration is loaded (set_workload_gates).
_workload_gates = (False, False)


def set_workload_gates(generic_workload: bool, topology_aware: bool) -> None:
    """GenericWorkload appends GangScheduling to the default MultiPoint set; TopologyAwareWorkloadScheduling
    TopologyPlacementGenerator and PodGroupPodsCount (weight 1), as upstream's applyFeatureGates."""
    global _workload_gates
    _workload_gates = (generic_workload, topology_aware)


def default_multipoint() -> tuple[PluginSpec, ...]:
    """DEFAULT_MULTIPOINT with the plugins the workload gates in force add."""
    generic, topology = _workload_gates
    if not generic and not topology:
        return DEFAULT_MULTIPOINT
    extra: list[PluginSpec] = []
    if generic:
        extra.append(_with_weight(_BY_NAME["GangScheduling"], 0))
    if topology:
        extra += [_with_weight(_BY_NAME["TopologyPlacementGenerator"], 0),
                  _with_weight(_BY_NAME["PodGroupPodsCount"], 1)]
    return DEFAULT_MULTIPOINT + tuple(extra)


def _with_weight(spec: PluginSpec, weight: int) -> PluginSpec:
    return PluginSpec(spec.name, spec.points, weight)


def extension_points_of_class(cls: type) -> frozenset[str]:
    """The extension points a plugin class implements, judged by its (callable) methods.

    The Python counterpart of upstream's ``reflect.TypeOf(plugin).Implements(iface)``.
    """
    found = set()
    for point, method in EXTENSION_POINT_METHODS.items():
        attr = inspect.getattr_static(cls, method, None)
        if attr is not None and (callable(attr) or isinstance(attr, classmethod)):
            found.add(point)
    return frozenset(found)


def expand_default_plugins() -> dict[str, list[tuple[str, int]]]:
    """The default set expanded per extension point, as upstream's ExpandedPluginsV1 (for docs and tests).

    Score weights are the MultiPoint weights; other points carry weight 0.
    """
    out: dict[str, list[tuple[str, int]]] = {p: [] for p in EXTENSION_POINTS}
    for plugin in default_multipoint():
        for point in EXTENSION_POINTS:
            if point in plugin.points:
                out[point].append((plugin.name, (plugin.default_weight or 1) if point == "score" else 0))
    return out
