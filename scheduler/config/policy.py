"""The seed-era scheduler Policy (``kind: Policy``, ``apiVersion: v1``) translated into a profile.

kube-scheduler 1.18-1.22 still read a Policy (``--policy-config-file`` or ``--policy-configmap``) and
turned it into one framework profile with its legacy registry
(``k8s.io/kubernetes@v1.22.0/pkg/scheduler/framework/plugins/legacy_registry.go``): every predicate and priority names
plugins per extension point, in a fixed predicate order, and PrioritySort, DefaultPreemption and DefaultBinder are
added. This module does the same and hands the result to the KubeSchedulerConfiguration loader, so validation, args
defaults and the registry are shared. What is translated (upstream's table, 1.21):

* predicates (run in upstream's ``predicateOrdering``): GeneralPredicates -> NodeResourcesFit, NodeName,
  NodePorts, NodeAffinity; PodFitsResources -> NodeResourcesFit; HostName -> NodeName; PodFitsHostPorts
  (alias PodFitsPorts) -> NodePorts; MatchNodeSelector -> NodeAffinity; PodToleratesNodeTaints ->
  TaintToleration; CheckNodeUnschedulable -> NodeUnschedulable (both always added); CheckVolumeBinding ->
  VolumeBinding; NoDiskConflict -> VolumeRestrictions; NoVolumeZoneConflict -> VolumeZone;
  MaxCSIVolumeCountPred -> NodeVolumeLimits; MatchInterPodAffinity -> InterPodAffinity; EvenPodsSpread ->
  PodTopologySpread; CheckNodeLabelPresence (``labelsPresence``) -> NodeLabel; CheckServiceAffinity
  (``serviceAffinity``) -> ServiceAffinity.
* priorities: SelectorSpreadPriority (alias ServiceSpreadingPriority) -> SelectorSpread; TaintToleration-,
  NodeAffinity-, ImageLocality-, InterPodAffinityPriority -> TaintToleration, NodeAffinity, ImageLocality,
  InterPodAffinity; NodePreferAvoidPodsPriority -> NodePreferAvoidPods; Least-/MostRequestedPriority and
  BalancedResourceAllocation -> the legacy plugins of those names (the 1.18 formulas on 0..100);
  EvenPodsSpreadPriority -> PodTopologySpread; ``labelPreference`` -> NodeLabel (weight x number of
  preferences); ``requestedToCapacityRatioArguments`` -> RequestedToCapacityRatio; EqualPriority is
  accepted and skipped, as upstream.
* ``hardPodAffinitySymmetricWeight`` -> InterPodAffinityArgs.hardPodAffinityWeight; ``alwaysCheckAllPredicates``
  -> every filter runs and all reasons are reported; ``extenders`` -> the extenders (keys case-insensitive,
  ``httpTimeout`` in nanoseconds, as the Policy's Go decoding read them).
* omitted ``predicates`` / ``priorities`` -> upstream's defaults; an empty list -> only the mandatory
  predicates / no priority.

Where 1.34 differs, on purpose: a plugin's PreFilter (PreScore) is enabled with its Filter (Score) because
today's plugins keep their per-cycle state there; MaxEBSVolumeCount, MaxGCEPDVolumeCount,
MaxAzureDiskVolumeCount and MaxCinderVolumeCount map to NodeVolumeLimits (the in-tree volume plugins are
counted there since CSI migration; EBSLimits & co. no longer exist); RequestedToCapacityRatio is
NodeResourcesFit's ``RequestedToCapacityRatio`` scoring strategy; ``serviceAntiAffinity`` maps to the
split-out ServiceAntiAffinity scorer; SelectorSpreadPriority keeps the seed's SelectorSpread (upstream
switched to PodTopologySpread's system defaults when DefaultPodTopologySpread went beta in 1.20);
SchedulingGates is always enabled (a 1.34 API server refuses to bind a gated pod); the v1.16 predicates
CheckNodeCondition and CheckNode{Memory,Disk,PID}Pressure are accepted and map to the legacy plugins;
RequestedToCapacityRatioPriority without an argument gets the v1.16 default shape (0 -> 10, 100 -> 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.config.args import (
    check_keys,
    qualified_name_problem,
    want_bool,
    want_int,
    want_list,
    want_map,
    want_str,
)
from scheduler.config.errors import ConfigError, ErrorList, FieldError
from scheduler.config.load import KIND, load_dict, parse_document
from scheduler.config.registry import Registry
from scheduler.config.types import EXTENSION_POINTS, SchedulerConfiguration

POLICY_KIND = "Policy"
POLICY_API_VERSION = "v1"
MAX_WEIGHT = (2**63 - 1) // 10  # upstream MaxWeight = MaxTotalScore / MaxCustomPriorityScore
SCHED_API_VERSION = "kubescheduler.config.k8s.io/v1"

_FILTER = ("preFilter", "filter")
# predicate -> [(plugin, extension points)], in upstream's predicateOrdering (v1.16's condition
# predicates first and after the volume ones, where v1.16 ran them).
PREDICATES: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "CheckNodeCondition": [("CheckNodeCondition", ("filter",))],
    "CheckNodeUnschedulable": [("NodeUnschedulable", ("filter",))],
    "GeneralPredicates": [("NodeResourcesFit", _FILTER), ("NodeName", ("filter",)), ("NodePorts", _FILTER),
                          ("NodeAffinity", _FILTER)],
    "HostName": [("NodeName", ("filter",))],
    "PodFitsHostPorts": [("NodePorts", _FILTER)],
    "MatchNodeSelector": [("NodeAffinity", _FILTER)],
    "PodFitsResources": [("NodeResourcesFit", _FILTER)],
    "NoDiskConflict": [("VolumeRestrictions", _FILTER)],
    "PodToleratesNodeTaints": [("TaintToleration", ("filter",))],
    "CheckNodeLabelPresence": [("NodeLabel", ("filter",))],
    "CheckServiceAffinity": [("ServiceAffinity", _FILTER)],
    "MaxEBSVolumeCount": [("NodeVolumeLimits", _FILTER)],
    "MaxGCEPDVolumeCount": [("NodeVolumeLimits", _FILTER)],
    "MaxCSIVolumeCountPred": [("NodeVolumeLimits", _FILTER)],
    "MaxAzureDiskVolumeCount": [("NodeVolumeLimits", _FILTER)],
    "MaxCinderVolumeCount": [("NodeVolumeLimits", _FILTER)],
    "CheckVolumeBinding": [("VolumeBinding", ("preFilter", "filter", "reserve", "preBind"))],
    "NoVolumeZoneConflict": [("VolumeZone", _FILTER)],
    "CheckNodeMemoryPressure": [("CheckNodeMemoryPressure", ("filter",))],
    "CheckNodePIDPressure": [("CheckNodePIDPressure", ("filter",))],
    "CheckNodeDiskPressure": [("CheckNodeDiskPressure", ("filter",))],
    "EvenPodsSpread": [("PodTopologySpread", _FILTER)],
    "MatchInterPodAffinity": [("InterPodAffinity", _FILTER)],
}
PREDICATE_ALIASES = {"PodFitsPorts": "PodFitsHostPorts"}
MANDATORY_PREDICATES = ("PodToleratesNodeTaints", "CheckNodeUnschedulable")
DEFAULT_PREDICATES = (
    "NoVolumeZoneConflict", "MaxEBSVolumeCount", "MaxGCEPDVolumeCount", "MaxAzureDiskVolumeCount",
    "MaxCSIVolumeCountPred", "MatchInterPodAffinity", "NoDiskConflict", "GeneralPredicates",
    "PodToleratesNodeTaints", "CheckVolumeBinding", "CheckNodeUnschedulable", "EvenPodsSpread",
)

# priority -> (plugin, whether it has a PreScore to enable with its Score)
PRIORITIES: dict[str, tuple[str, bool]] = {
    "SelectorSpreadPriority": ("SelectorSpread", True),
    "TaintTolerationPriority": ("TaintToleration", True),
    "NodeAffinityPriority": ("NodeAffinity", True),
    "ImageLocalityPriority": ("ImageLocality", False),
    "InterPodAffinityPriority": ("InterPodAffinity", True),
    "NodePreferAvoidPodsPriority": ("NodePreferAvoidPods", False),
    "MostRequestedPriority": ("MostRequestedPriority", False),
    "BalancedResourceAllocation": ("BalancedResourceAllocation", False),
    "LeastRequestedPriority": ("LeastRequestedPriority", False),
    "EvenPodsSpreadPriority": ("PodTopologySpread", True),
    "RequestedToCapacityRatioPriority": ("NodeResourcesFit", True),
}
PRIORITY_ALIASES = {"ServiceSpreadingPriority": "SelectorSpreadPriority"}
EQUAL_PRIORITY = "EqualPriority"
DEFAULT_PRIORITIES = {
    "SelectorSpreadPriority": 1, "InterPodAffinityPriority": 1, "LeastRequestedPriority": 1,
    "BalancedResourceAllocation": 1, "NodePreferAvoidPodsPriority": 10000, "NodeAffinityPriority": 1,
    "TaintTolerationPriority": 1, "ImageLocalityPriority": 1, "EvenPodsSpreadPriority": 2,
}
# v1.16's default RequestedToCapacityRatio shape (least requested), on the 0..10 score scale.
DEFAULT_RTCR_SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]

_POLICY_KEYS = frozenset({"kind", "apiVersion", "predicates", "priorities", "extenders",
                          "hardPodAffinitySymmetricWeight", "alwaysCheckAllPredicates"})
_EXTENDER_KEYS = {k.lower(): k for k in (
    "urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb", "tlsConfig", "httpTimeout",
    "nodeCacheCapable", "managedResources", "ignorable")} | {"enablehttps": "enableHTTPS"}


def load_policy(path: str, scheduler_names: list[str] | None = None, *,
                registry: Registry | None = None) -> SchedulerConfiguration:
    """Read a Policy file (JSON or YAML) and resolve it; ConfigError names the file and the field."""
    return load_policy_text(_read(path), path, scheduler_names, registry=registry)


def load_policy_text(text: str, source: str, scheduler_names: list[str] | None = None, *,
                     registry: Registry | None = None) -> SchedulerConfiguration:
    """A Policy document (from a file or a ConfigMap's ``policy.cfg``) resolved into a configuration."""
    data = parse_document(text, source)
    errs = ErrorList()
    if not isinstance(data, Mapping):
        errs.add("", f"the document must be an object (a Policy), got {type(data).__name__}")
        errs.raise_if_any(source)
    translated, run_all_filters = _Translator(errs).translate(data)
    errs.raise_if_any(source)
    cfg = load_dict(translated, scheduler_names, registry=registry, source=source)
    for profile in cfg.profiles:
        profile.run_all_filters = run_all_filters
    return cfg


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise ConfigError([FieldError("", f"cannot read {path}: {e.strerror or e}")], path) from None


class _Translator:
    """Policy -> KubeSchedulerConfiguration document; problems go to ``errs`` with the Policy's field path."""

    def __init__(self, errs: ErrorList) -> None:
        self.errs = errs
        self.points: dict[str, list[dict[str, Any]]] = {p: [] for p in EXTENSION_POINTS}
        self.plugin_config: dict[str, dict[str, Any]] = {}

    def translate(self, d: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        e = self.errs
        if d.get("kind") != POLICY_KIND:
            e.add("kind", f"unsupported value {d.get('kind')!r}: must be {POLICY_KIND!r}")
        if d.get("apiVersion") != POLICY_API_VERSION:
            e.add("apiVersion", f"unsupported value {d.get('apiVersion')!r}: must be {POLICY_API_VERSION!r}")
        check_keys(d, _POLICY_KEYS, "", e)
        self._enable("PrioritySort", "queueSort")
        self._enable("SchedulingGates", "preEnqueue")
        predicates = self._predicates(d.get("predicates"))
        for name in sorted(predicates, key=_predicate_order):
            for plugin, points in PREDICATES[name]:
                for point in points:
                    self._enable(plugin, point)
        self._enable("DefaultPreemption", "postFilter")
        for name, weight in sorted(self._priorities(d.get("priorities")).items()):
            self._priority(name, weight)
        self._enable("DefaultBinder", "bind")
        hard = d.get("hardPodAffinitySymmetricWeight")
        if hard is not None and (w := want_int(hard, "hardPodAffinitySymmetricWeight", e)) is not None:
            if not 0 <= w <= 100:
                e.add("hardPodAffinitySymmetricWeight", f"invalid value {w}: not in valid range [0-100]")
            elif w and any(ref["name"] == "InterPodAffinity" for refs in self.points.values() for ref in refs):
                self.plugin_config.setdefault("InterPodAffinity", {})["hardPodAffinityWeight"] = w
        run_all = d.get("alwaysCheckAllPredicates")
        run_all_filters = bool(want_bool(run_all, "alwaysCheckAllPredicates", e)) if run_all is not None else False
        profile = {
            "plugins": {"multiPoint": {"disabled": [{"name": "*"}]},
                        **{p: {"enabled": refs, "disabled": [{"name": "*"}]} for p, refs in self.points.items()}},
            "pluginConfig": [{"name": n, "args": a} for n, a in self.plugin_config.items()],
        }
        doc = {"apiVersion": SCHED_API_VERSION, "kind": KIND, "leaderElection": {"leaderElect": False},
               "profiles": [profile], "extenders": self._extenders(d.get("extenders"))}
        return doc, run_all_filters

    def _enable(self, plugin: str, point: str, weight: int | None = None) -> None:
        """appendToPluginSet: add once per point; a plugin listed twice keeps the larger weight."""
        for ref in self.points[point]:
            if ref["name"] == plugin:
                if weight is not None and weight > ref.get("weight", 0):
                    ref["weight"] = weight
                return
        self.points[point].append({"name": plugin, **({"weight": weight} if weight is not None else {})})

    # ----- predicates

    def _predicates(self, raw: Any) -> set[str]:
        e = self.errs
        if raw is None:
            return set(DEFAULT_PREDICATES)
        keys = set(MANDATORY_PREDICATES)
        for i, item in enumerate(want_list(raw, "predicates", e) or []):
            p = f"predicates[{i}]"
            m = want_map(item, p, e)
            if m is None:
                continue
            check_keys(m, {"name", "argument"}, p, e)
            name = want_str(m.get("name"), f"{p}.name", e)
            if name is None:
                continue
            name = PREDICATE_ALIASES.get(name, name)
            if name in PREDICATES:
                keys.add(name)
                continue
            arg = self._argument(m, p, name, "predicate", PREDICATES)
            if arg is None:
                continue
            check_keys(arg, {"serviceAffinity", "labelsPresence"}, f"{p}.argument", e)
            if len([k for k in ("serviceAffinity", "labelsPresence") if arg.get(k) is not None]) != 1:
                e.add(f"{p}.argument", "exactly 1 predicate argument is required")
                continue
            if arg.get("serviceAffinity") is not None:
                labels = self._labels(arg["serviceAffinity"], "labels", f"{p}.argument.serviceAffinity")
                self._append_args("ServiceAffinity", "affinityLabels", labels)
                keys.add("CheckServiceAffinity")
            else:
                lp = f"{p}.argument.labelsPresence"
                labels = self._labels(arg["labelsPresence"], "labels", lp)
                presence = want_bool((arg["labelsPresence"] or {}).get("presence", False), f"{lp}.presence", e)
                self._append_args("NodeLabel", "presentLabels" if presence else "absentLabels", labels)
                keys.add("CheckNodeLabelPresence")
        return keys

    def _argument(self, m: Mapping[str, Any], p: str, name: str, what: str,
                  known: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The argument of a custom predicate or priority; without one, the name had to be a known one."""
        arg = want_map(m.get("argument"), f"{p}.argument", self.errs) if m.get("argument") is not None else None
        if not arg:
            self.errs.add(f"{p}.name", f"unsupported value {name!r}: {what} type not found (known: "
                          f"{', '.join(sorted(known))}; or give an argument)")
            return None
        return arg

    def _labels(self, raw: Any, key: str, path: str) -> list[str]:
        m = want_map(raw, path, self.errs) or {}
        check_keys(m, {key, "presence"}, path, self.errs)
        value = m.get(key)
        items = [value] if key == "label" else want_list(value, f"{path}.{key}", self.errs) or []
        out = []
        for j, label in enumerate(items):
            lp = f"{path}.{key}" if key == "label" else f"{path}.{key}[{j}]"
            if want_str(label, lp, self.errs) is None:
                continue
            if (problem := qualified_name_problem(label)) is not None:
                self.errs.add(lp, f"invalid value {label!r}: {problem}")
            out.append(label)
        return out

    def _append_args(self, plugin: str, key: str, values: list[str]) -> None:
        args = self.plugin_config.setdefault(plugin, {})
        args[key] = [*args.get(key, []), *values]

    # ----- priorities

    def _priorities(self, raw: Any) -> dict[str, int]:
        """Priority key -> weight. Custom priorities (with an argument) collapse into one key per plugin."""
        e = self.errs
        if raw is None:
            return dict(DEFAULT_PRIORITIES)
        keys: dict[str, int] = {}
        custom: dict[str, tuple[str, int]] = {}  # custom kind -> (first priority name, weight)
        for i, item in enumerate(want_list(raw, "priorities", e) or []):
            p = f"priorities[{i}]"
            m = want_map(item, p, e)
            if m is None:
                continue
            check_keys(m, {"name", "weight", "argument"}, p, e)
            name = want_str(m.get("name"), f"{p}.name", e)
            weight = want_int(m.get("weight"), f"{p}.weight", e) if m.get("weight") is not None else 0
            if weight is not None and not 0 < weight < MAX_WEIGHT:
                e.add(f"{p}.weight", f"invalid value {weight}: priority {name} should have a positive weight "
                      "applied to it or it has overflown")
            if name is None or weight is None:
                continue
            if name == EQUAL_PRIORITY:
                continue  # every node the same: upstream skips it
            name = PRIORITY_ALIASES.get(name, name)
            if name in PRIORITIES:  # a registered name wins over an argument, as upstream
                keys[name] = weight
                continue
            arg = self._argument(m, p, name, "priority", PRIORITIES)
            if arg is None:
                continue
            kind = self._custom_priority(arg, f"{p}.argument")
            if kind is None:
                continue
            if kind in custom:  # upstream validateCustomPriorities
                first, first_weight = custom[kind]
                if kind == "requestedToCapacityRatioArguments":
                    e.add(f"{p}.argument", f"priority {name!r} redeclares custom priority {kind!r}, from: {first!r}")
                elif weight != first_weight:
                    e.add(f"{p}.weight", f"{kind} priority {name!r} has a different weight with {first!r}")
                continue
            custom[kind] = (name, weight)
            keys[kind] = weight
        return keys

    def _custom_priority(self, arg: Mapping[str, Any], path: str) -> str | None:
        e = self.errs
        kinds = ("serviceAntiAffinity", "labelPreference", "requestedToCapacityRatioArguments")
        check_keys(arg, set(kinds), path, e)
        given = [k for k in kinds if arg.get(k) is not None]
        if len(given) != 1:
            e.add(path, "exactly 1 priority argument is required")
            return None
        kind = given[0]
        if kind == "serviceAntiAffinity":
            self._append_args("ServiceAntiAffinity", "antiAffinityLabelsPreference",
                              self._labels(arg[kind], "label", f"{path}.{kind}"))
        elif kind == "labelPreference":
            lp = f"{path}.{kind}"
            labels = self._labels(arg[kind], "label", lp)
            presence = want_bool((arg[kind] or {}).get("presence", False), f"{lp}.presence", e)
            self._append_args("NodeLabel", "presentLabelsPreference" if presence else "absentLabelsPreference", labels)
        else:
            self._rtcr_args(arg[kind], f"{path}.{kind}")
        return kind

    def _rtcr_args(self, raw: Any, path: str) -> None:
        e = self.errs
        m = want_map(raw, path, e) or {}
        check_keys(m, {"shape", "resources"}, path, e)
        shape = want_list(m.get("shape"), f"{path}.shape", e) or []
        resources = want_list(m.get("resources"), f"{path}.resources", e) or []
        self._set_rtcr(shape, resources)

    def _set_rtcr(self, shape: list[Any], resources: list[Any]) -> None:
        strategy: dict[str, Any] = {"type": "RequestedToCapacityRatio",
                                    "requestedToCapacityRatio": {"shape": shape}}
        if resources:
            strategy["resources"] = resources
        self.plugin_config.setdefault("NodeResourcesFit", {})["scoringStrategy"] = strategy

    def _priority(self, key: str, weight: int) -> None:
        """Enable what a priority key stands for (upstream's priority config producers)."""
        if key == "serviceAntiAffinity":
            labels = self.plugin_config["ServiceAntiAffinity"]["antiAffinityLabelsPreference"]
            self._enable("ServiceAntiAffinity", "preScore")
            self._enable("ServiceAntiAffinity", "score", weight * len(labels))
            return
        if key == "labelPreference":
            args = self.plugin_config["NodeLabel"]
            n = len(args.get("presentLabelsPreference", [])) + len(args.get("absentLabelsPreference", []))
            self._enable("NodeLabel", "score", weight * n)
            return
        if key == "requestedToCapacityRatioArguments":
            key = "RequestedToCapacityRatioPriority"
        elif key == "RequestedToCapacityRatioPriority":
            self._set_rtcr(list(DEFAULT_RTCR_SHAPE), [])
        plugin, pre_score = PRIORITIES[key]
        if pre_score:
            self._enable(plugin, "preScore")
        self._enable(plugin, "score", weight)

    # ----- extenders

    def _extenders(self, raw: Any) -> list[Any]:
        """Policy extenders as KubeSchedulerConfiguration entries: keys matched case-insensitively, and
        ``httpTimeout`` (a Go time.Duration in JSON: nanoseconds) as a duration string."""
        out: list[Any] = []
        for i, item in enumerate(want_list(raw, "extenders", self.errs) or []):
            if not isinstance(item, Mapping):
                out.append(item)  # the loader reports it at extenders[i]
                continue
            entry: dict[str, Any] = {}
            for key, value in item.items():
                name = _EXTENDER_KEYS.get(str(key).lower(), str(key))
                if name == "httpTimeout" and value is not None:
                    ns = want_int(value, f"extenders[{i}].httpTimeout", self.errs)
                    value = f"{ns}ns" if ns is not None else "0"
                entry[name] = value
            out.append(entry)
        return out


def _predicate_order(name: str) -> int:
    return list(PREDICATES).index(name)
