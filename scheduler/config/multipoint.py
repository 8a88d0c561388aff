"""A profile's plugins: its ``plugins`` section merged with the default MultiPoint set and expanded per
extension point (upstream ``pkg/scheduler/apis/config/v1/default_plugins.go`` mergePlugins, then the framework's
expandMultiPointPlugins in ``pkg/scheduler/framework/runtime/framework.go``), with the checks upstream makes there
(a plugin must exist and implement the point it is enabled at; queueSort and bind; the score overflow).

Resolution follows upstream exactly (``pkg/scheduler/apis/config/v1/default_plugins.go`` mergePluginSet, then the
framework's MultiPoint expansion):

1. ``multiPoint`` is merged into the default MultiPoint list: ``disabled: [{name: "*"}]`` drops every
   default; a disabled name drops that default; a default listed in ``enabled`` is replaced in place
   (default order kept, the new entry's weight taken, so a re-listed default without weight scores 1);
   other enabled plugins are appended in the given order. A plugin disabled in multiPoint is therefore
   expanded to no extension point.
2. Each extension point starts from its own ``enabled`` list (checked: the plugin implements the point,
   no duplicates). Unless that point has ``disabled: "*"``, the merged MultiPoint plugins implementing the
   point are added, skipping those disabled at the point. A plugin both in MultiPoint and in the point's
   own list is an explicit override: the final order is overrides (in the point's order), then MultiPoint
   plugins, then the point's remaining plugins.
3. Score weights come from the ``score`` list first, then from MultiPoint (specific > explicit multiPoint >
   default multiPoint).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler.config.args import API_VERSION, check_keys, named_items, want_int, want_map
from scheduler.config.defaults import INVALID_IN_V1, default_multipoint, extension_points_of_class
from scheduler.config.errors import ErrorList
from scheduler.config.registry import DeclaresExtensionPoints, PluginNotAvailable, Registry
from scheduler.config.types import EXTENSION_POINTS, MAX_NODE_SCORE, MAX_TOTAL_SCORE, WEIGHTED_POINTS, PluginRef
from scheduler.plugins.names import IN_TREE_BY_NAME

__all__ = ["PluginResolver"]


@dataclass(slots=True)
class _Entry:
    name: str
    weight: int | None
    path: str  # where it was enabled ("" for the default set)


@dataclass(slots=True)
class _PluginSet:
    enabled: list[_Entry] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


class PluginResolver:
    """Resolves the ``plugins`` sections of one configuration against one registry; remembers per plugin
    its extension points and why it cannot be provided, so that each plugin is imported once."""

    def __init__(self, errs: ErrorList, registry: Registry) -> None:
        self.errs = errs
        self.registry = registry
        self._points_cache: dict[str, frozenset[str] | None] = {}
        self._missing: dict[str, str] = {}  # plugin -> why it cannot be provided

    def _plugin_set(self, raw: Any, path: str) -> _PluginSet:
        e = self.errs
        ps = _PluginSet()
        m = want_map(raw, path, e)
        if not m:
            return ps
        check_keys(m, {"enabled", "disabled"}, path, e)
        for name, pm, p in named_items(m.get("enabled"), f"{path}.enabled", {"name", "weight"}, e):
            if name in INVALID_IN_V1:
                e.add(f"{p}.name", f"invalid value {name!r}: was invalid in version {API_VERSION!r}")
                continue
            weight: int | None = None
            if pm.get("weight") is not None:
                weight = want_int(pm["weight"], f"{p}.weight", e)
                if weight is not None and weight < 0:
                    e.add(f"{p}.weight", f"invalid value {weight}: must not be negative (0 or absent means 1)")
                    weight = None
            ps.enabled.append(_Entry(name, weight, p))
        for name, _, _ in named_items(m.get("disabled"), f"{path}.disabled", {"name", "weight"}, e,
                                      "required: a non-empty plugin name or '*'"):
            ps.disabled.append(name)
        return ps

    def _points_of(self, name: str) -> frozenset[str] | None:
        """Extension points ``name`` implements; None when unknowable (a non-class factory) or missing.

        Missing plugins are recorded in ``self._missing`` (with the reason) for the caller to judge.
        """
        if name in self._points_cache:
            return self._points_cache[name]
        in_tree = IN_TREE_BY_NAME.get(name)
        points: frozenset[str] | None = in_tree.points if in_tree is not None else None
        if points is None:
            if not self.registry.known(name):
                self._missing[name] = (
                    "no such plugin (not in-tree, not in pyScheduler.registry, not 'pkg.module:Class')"
                )
            else:
                try:
                    obj = self.registry.factory(name)
                except PluginNotAvailable as err:
                    self._missing[name] = err.reason
                except Exception as err:  # the plugin's own module failed to import
                    self._missing[name] = f"import failed: {type(err).__name__}: {err}"
                else:
                    if isinstance(obj, type):
                        points = extension_points_of_class(obj)
                    elif isinstance(obj, DeclaresExtensionPoints):
                        points = frozenset(obj.extension_points)
        self._points_cache[name] = points
        return points

    def _exists(self, name: str) -> bool:
        """Known to the registry (in-tree plugins by the table, whether or not their module imports)."""
        if name in IN_TREE_BY_NAME:
            return True
        self._points_of(name)
        return name not in self._missing

    def resolve(self, raw: Any, path: str) -> dict[str, list[PluginRef]]:
        e = self.errs
        m = want_map(raw, path, e) or {}
        check_keys(m, {*EXTENSION_POINTS, "multiPoint"}, path, e)
        enabled_at: dict[str, str] = {}

        # 1. mergePluginSet(default multiPoint, user multiPoint)
        user_mp = self._plugin_set(m.get("multiPoint"), f"{path}.multiPoint")
        mp_disabled = set(user_mp.disabled)
        user_by_name = {en.name: en for en in user_mp.enabled}  # last one wins, as upstream's map
        replaced: set[int] = set()
        multipoint: list[_Entry] = []
        if "*" not in mp_disabled:
            for default in default_multipoint():
                name = default.name
                if name in mp_disabled:
                    continue
                if name in user_by_name:
                    custom = user_by_name[name]
                    replaced.add(id(custom))
                    multipoint.append(custom)
                else:
                    multipoint.append(_Entry(name, default.default_weight or None, ""))
        multipoint += [en for en in user_mp.enabled if id(en) not in replaced]
        mp_seen: set[str] = set()
        for en in multipoint:
            enabled_at.setdefault(en.name, en.path)
            if en.name in mp_seen:
                e.add(f"{en.path}.name", f"plugin {en.name!r} already registered in multiPoint")
            mp_seen.add(en.name)
            if not self._exists(en.name):
                continue
            if self._points_of(en.name) is None:
                e.add(
                    f"{en.path}.name",
                    f"cannot tell which extension points plugin {en.name!r} implements (its factory is not a "
                    "class): enable it at specific extension points instead of multiPoint",
                )

        # 2. per extension point: own list + MultiPoint expansion
        specific: dict[str, _PluginSet] = {}
        resolved: dict[str, list[_Entry]] = {}
        for point in EXTENSION_POINTS:
            ps = self._plugin_set(m.get(point), f"{path}.{point}")
            specific[point] = ps
            own: list[_Entry] = []
            own_names: set[str] = set()
            for en in ps.enabled:
                enabled_at.setdefault(en.name, en.path)
                if en.name in own_names:
                    e.add(f"{en.path}.name", f"plugin {en.name!r} already registered as {point}")
                    continue
                own_names.add(en.name)
                if self._exists(en.name):
                    points = self._points_of(en.name)
                    if points is not None and point not in points:
                        e.add(f"{en.path}.name", f"plugin {en.name!r} does not extend the {point} extension point")
                        continue
                own.append(en)
            if "*" in ps.disabled:
                resolved[point] = own
                continue
            disabled = set(ps.disabled)
            overrides: set[str] = set()
            from_mp: list[_Entry] = []
            for en in multipoint:
                points = self._points_of(en.name)
                if points is None or point not in points or en.name in disabled:
                    continue
                if en.name in own_names:
                    overrides.add(en.name)
                elif en.name not in {x.name for x in from_mp}:
                    from_mp.append(en)
            resolved[point] = (
                [en for en in own if en.name in overrides] + from_mp + [en for en in own if en.name not in overrides]
            )

        # 3. weights (score, and placementScore as upstream's getValidScoreWeights): the point's own list
        # first, then multiPoint; 0/absent -> 1
        weights: dict[str, dict[str, int]] = {}
        for point in WEIGHTED_POINTS:
            weights[point] = self._weights(point, specific[point].enabled + multipoint)
            total = sum(weights[point].get(en.name, 1) * MAX_NODE_SCORE for en in resolved[point])
            if total > MAX_TOTAL_SCORE:
                e.add(f"{path}.{point}", "total score of Score plugins could overflow")

        # Every enabled plugin must be providable (upstream: "... does not exist").
        for name, where in enabled_at.items():
            reason = self._missing.get(name)
            if reason is None and name in IN_TREE_BY_NAME:
                reason = self._unavailable_reason(name)
            if reason is not None:
                e.add(f"{where}.name" if where else path, f"plugin {name!r} is not available: {reason}")

        plugins = {
            point: [PluginRef(en.name, weights[point].get(en.name, 1) if point in weights else 0) for en in entries]
            for point, entries in resolved.items()
        }
        n_sort = len(plugins["queueSort"])
        if n_sort != 1:
            e.add(f"{path}.queueSort", f"only one queue sort plugin required, but got {n_sort}")
        if not plugins["bind"]:
            e.add(f"{path}.bind", "at least one bind plugin is needed")
        return plugins

    def _weights(self, point: str, entries: list[_Entry]) -> dict[str, int]:
        """Each plugin's weight at a weighted point: its first entry among those that implement it."""
        weights: dict[str, int] = {}
        for en in entries:
            points = self._points_of(en.name)
            if en.name in weights or (points is not None and point not in points):
                continue
            weights[en.name] = en.weight or 1
        return weights

    def _unavailable_reason(self, name: str) -> str | None:
        """Why the registry cannot provide ``name`` (None: it can). Cached: imports happen once."""
        if name in self._missing:
            return self._missing[name]
        try:
            self.registry.factory(name)
        except PluginNotAvailable as err:
            self._missing[name] = err.reason
            return err.reason
        except Exception as err:  # the module exists but fails to import: a bug in the plugin
            reason = f"import failed: {type(err).__name__}: {err}"
            self._missing[name] = reason
            self.errs.add("", f"plugin {name!r}: {reason}")
            return reason
        return None
