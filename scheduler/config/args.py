"""Decoding, defaulting and validation of plugin args (``pluginConfig[].args``) into the typed Args.

Mirrors upstream's v1 defaulting (``SetDefaults_<Kind>``) and
``pkg/scheduler/apis/config/validation/validation_pluginargs.go``: user keys override defaults key by key; a few
nested defaults are applied as upstream does (scoring resources, resource weight 0 -> 1, defaultingType "" -> System).
Decoding is strict as upstream's: an unknown key or a value of the wrong type is an error naming the field. The result
is the plugin's Args dataclass (``types_pluginargs``); plugins without an args type (third-party plugins, args-less
in-tree plugins) get their args mapping passed through unchanged.

Errors go into an :class:`ErrorList` so every problem in a file is reported at once.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from scheduler.config.duration import parse_duration
from scheduler.config.errors import ErrorList
from scheduler.config.types_pluginargs import (
    DEFAULT_RESOURCES,
    LIST_DEFAULTING,
    MAX_CUSTOM_PRIORITY_SCORE,
    SCORING_STRATEGY_TYPES,
    SYSTEM_DEFAULTING,
    CoschedulingArgs,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeLabelArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PluginArgs,
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
from scheduler.model.errors import InvalidObjectError
from scheduler.model.labels import NODE_OPS, parse_requirement

API_VERSION = "kubescheduler.config.k8s.io/v1"


_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def qualified_name_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label key (``[prefix/]name``), or None. As IsQualifiedName."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return "prefix part must be a lowercase RFC 1123 subdomain"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _NAME.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


# --- typed accessors: each returns the value when it has the right type, else records an error ------------


def type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, Mapping):
        return "object"
    return type(v).__name__


def want_int(v: Any, path: str, errs: ErrorList) -> int | None:
    """Integers only: YAML ``true`` is not 1 and ``1.5`` is not an int32 (Go's strict decoding agrees)."""
    if isinstance(v, bool) or not isinstance(v, int):
        errs.add(path, f"must be an integer, got {type_name(v)} {v!r}")
        return None
    return v


def want_number(v: Any, path: str, errs: ErrorList) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        errs.add(path, f"must be a number, got {type_name(v)} {v!r}")
        return None
    return float(v)


def want_bool(v: Any, path: str, errs: ErrorList) -> bool | None:
    if not isinstance(v, bool):
        errs.add(path, f"must be a boolean, got {type_name(v)} {v!r}")
        return None
    return v


def want_str(v: Any, path: str, errs: ErrorList) -> str | None:
    if not isinstance(v, str):
        errs.add(path, f"must be a string, got {type_name(v)} {v!r}")
        return None
    return v


def want_list(v: Any, path: str, errs: ErrorList) -> list[Any] | None:
    """A list; YAML ``null`` counts as an empty list (as a nil Go slice)."""
    if v is None:
        return []
    if not isinstance(v, list):
        errs.add(path, f"must be a list, got {type_name(v)}")
        return None
    return v


def want_map(v: Any, path: str, errs: ErrorList) -> Mapping[str, Any] | None:
    """A mapping; YAML ``null`` counts as an empty one (as a nil Go struct pointer)."""
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        errs.add(path, f"must be an object, got {type_name(v)}")
        return None
    return v


def check_keys(m: Mapping[str, Any], allowed: frozenset[str] | set[str], path: str, errs: ErrorList) -> bool:
    """Strict decoding: report every key not in ``allowed``; True when there was none."""
    ok = True
    for k in m:
        if k not in allowed:
            errs.add(f"{path}.{k}" if path else str(k), "unknown field")
            ok = False
    return ok


def named_items(
    v: Any, path: str, keys: frozenset[str] | set[str], errs: ErrorList,
    required: str = "required: a non-empty plugin name",
) -> Iterator[tuple[str, Mapping[str, Any], str]]:
    """The ``{name: ..., ...}`` objects of a list, each as (name, object, its path): items that are not
    objects or lack a non-empty string name are reported (``required`` says what the name must be) and
    skipped; unknown keys are reported but the item is kept, as strict decoding does."""
    for i, item in enumerate(want_list(v, path, errs) or []):
        p = f"{path}[{i}]"
        m = want_map(item, p, errs)
        if m is None:
            continue
        check_keys(m, keys, p, errs)
        name = m.get("name")
        if not isinstance(name, str) or not name:
            errs.add(f"{p}.name", required)
            continue
        yield name, m, p


def want_str_list(v: Any, path: str, errs: ErrorList) -> list[str] | None:
    items = want_list(v, path, errs)
    if items is None:
        return None
    out: list[str] = []
    for i, item in enumerate(items):
        s = want_str(item, f"{path}[{i}]", errs)
        if s is not None:
            out.append(s)
    return out


# --- per-kind decoders. Each receives the user's keys (null ones dropped) and returns the typed Args. -------------

A = TypeVar("A")


def _int_field(a: Mapping[str, Any], key: str, default: int, path: str, errs: ErrorList) -> int:
    """``a[key]`` as an int (absent: ``default``); a wrong type is recorded and gives the default."""
    if key not in a:
        return default
    v = want_int(a[key], f"{path}.{key}", errs)
    return default if v is None else v


def _default_preemption(a: Mapping[str, Any], path: str, errs: ErrorList) -> DefaultPreemptionArgs:
    d = DefaultPreemptionArgs()
    pct = _int_field(a, "minCandidateNodesPercentage", d.min_candidate_nodes_percentage, path, errs)
    absolute = _int_field(a, "minCandidateNodesAbsolute", d.min_candidate_nodes_absolute, path, errs)
    if not 0 <= pct <= 100:
        errs.add(f"{path}.minCandidateNodesPercentage", f"invalid value {pct}: not in valid range [0, 100]")
    if absolute < 0:
        errs.add(f"{path}.minCandidateNodesAbsolute", f"invalid value {absolute}: not in valid range [0, inf)")
    if pct == 0 and absolute == 0:
        errs.add(f"{path}.minCandidateNodesPercentage", "cannot be zero at the same time as minCandidateNodesAbsolute")
    return DefaultPreemptionArgs(pct, absolute)


def _coscheduling(a: Mapping[str, Any], path: str, errs: ErrorList) -> CoschedulingArgs:
    d = CoschedulingArgs()
    wait = _int_field(a, "permitWaitingTimeSeconds", d.permit_waiting_time_seconds, path, errs)
    backoff = _int_field(a, "podGroupBackoffSeconds", d.pod_group_backoff_seconds, path, errs)
    for key, v in (("permitWaitingTimeSeconds", wait), ("podGroupBackoffSeconds", backoff)):
        if v < 0:
            errs.add(f"{path}.{key}", f"invalid value {v}: must not be negative")
    return CoschedulingArgs(wait, backoff)


def _inter_pod_affinity(a: Mapping[str, Any], path: str, errs: ErrorList) -> InterPodAffinityArgs:
    d = InterPodAffinityArgs()
    w = _int_field(a, "hardPodAffinityWeight", d.hard_pod_affinity_weight, path, errs)
    if not 0 <= w <= 100:
        errs.add(f"{path}.hardPodAffinityWeight", f"invalid value {w}: not in valid range [0, 100]")
    ignore = d.ignore_preferred_terms_of_existing_pods
    if "ignorePreferredTermsOfExistingPods" in a:
        b = want_bool(a["ignorePreferredTermsOfExistingPods"], f"{path}.ignorePreferredTermsOfExistingPods", errs)
        ignore = ignore if b is None else b
    return InterPodAffinityArgs(w, ignore)


def _node_selector_term(term: Any, path: str, errs: ErrorList) -> None:
    t = want_map(term, path, errs)
    if t is None:
        return
    check_keys(t, {"matchExpressions", "matchFields"}, path, errs)
    for i, expr in enumerate(want_list(t.get("matchExpressions"), f"{path}.matchExpressions", errs) or []):
        p = f"{path}.matchExpressions[{i}]"
        e = want_map(expr, p, errs)
        if e is None:
            continue
        check_keys(e, {"key", "operator", "values"}, p, errs)
        try:
            parse_requirement(e, "NodeAffinityArgs", p, NODE_OPS)
        except InvalidObjectError as err:
            errs.add(err.field, err.message)
    for i, expr in enumerate(want_list(t.get("matchFields"), f"{path}.matchFields", errs) or []):
        p = f"{path}.matchFields[{i}]"
        e = want_map(expr, p, errs)
        if e is None:
            continue
        check_keys(e, {"key", "operator", "values"}, p, errs)
        # upstream supports only metadata.name, In/NotIn, exactly one value.
        if e.get("key") != "metadata.name":
            errs.add(f"{p}.key", f"unsupported field selector key {e.get('key')!r}: only 'metadata.name'")
        if e.get("operator") not in ("In", "NotIn"):
            errs.add(f"{p}.operator", f"unsupported operator {e.get('operator')!r}: In or NotIn")
        vals = want_str_list(e.get("values"), f"{p}.values", errs)
        if vals is not None and len(vals) != 1:
            errs.add(f"{p}.values", "must have exactly one value")


def _node_affinity(a: Mapping[str, Any], path: str, errs: ErrorList) -> NodeAffinityArgs:
    added = a.get("addedAffinity")
    if added is None:
        return NodeAffinityArgs()
    p = f"{path}.addedAffinity"
    m = want_map(added, p, errs)
    if m is None:
        return NodeAffinityArgs()
    req_key, pref_key = (
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
    check_keys(m, {req_key, pref_key}, p, errs)
    if m.get(req_key) is not None:
        rp = f"{p}.{req_key}"
        req = want_map(m[req_key], rp, errs)
        if req is not None:
            check_keys(req, {"nodeSelectorTerms"}, rp, errs)
            terms = want_list(req.get("nodeSelectorTerms"), f"{rp}.nodeSelectorTerms", errs)
            for i, term in enumerate(terms or []):
                _node_selector_term(term, f"{rp}.nodeSelectorTerms[{i}]", errs)
    for i, pref in enumerate(want_list(m.get(pref_key), f"{p}.{pref_key}", errs) or []):
        pp = f"{p}.{pref_key}[{i}]"
        pm = want_map(pref, pp, errs)
        if pm is None:
            continue
        check_keys(pm, {"weight", "preference"}, pp, errs)
        w = want_int(pm.get("weight"), f"{pp}.weight", errs)
        if w is not None and not 1 <= w <= 100:
            errs.add(f"{pp}.weight", f"invalid value {w}: must be in the range 1-100")
        _node_selector_term(pm.get("preference"), f"{pp}.preference", errs)
    return NodeAffinityArgs(copy.deepcopy(dict(m)))


def _resources(value: Any, path: str, errs: ErrorList, *, exactly_one: bool) -> tuple[ResourceSpec, ...]:
    """ResourceSpec lists: empty -> cpu:1,memory:1; weight 0/absent -> 1."""
    items = want_list(value, path, errs)
    if items is None:
        return ()
    if not items:
        return DEFAULT_RESOURCES
    out: list[ResourceSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        r = want_map(item, p, errs)
        if r is None:
            continue
        check_keys(r, {"name", "weight"}, p, errs)
        name = want_str(r.get("name"), f"{p}.name", errs)
        weight = want_int(r.get("weight", 0), f"{p}.weight", errs)
        if name is None or weight is None:
            continue
        if weight == 0:
            weight = 1
        if exactly_one:
            if name in seen:
                errs.add(f"{p}.name", f"duplicate value {name!r}")
            if weight != 1:
                errs.add(f"{p}.weight", f"invalid value {weight}: must be 1")
        elif not 0 < weight <= 100:
            errs.add(f"{p}.weight", f"invalid value {weight}: resource weight of {name} not in valid range (0, 100]")
        seen.add(name)
        out.append(ResourceSpec(name, weight))
    return tuple(out)


def _shape(value: Any, path: str, errs: ErrorList) -> tuple[UtilizationShapePoint, ...]:
    items = want_list(value, path, errs)
    if items is None:
        return ()
    if not items:
        errs.add(path, "required: at least one point must be specified")
        return ()
    out: list[UtilizationShapePoint] = []
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        pt = want_map(item, p, errs)
        if pt is None:
            continue
        check_keys(pt, {"utilization", "score"}, p, errs)
        u = want_int(pt.get("utilization", 0), f"{p}.utilization", errs)
        s = want_int(pt.get("score", 0), f"{p}.score", errs)
        if u is None or s is None:
            continue
        if not 0 <= u <= 100:
            errs.add(f"{p}.utilization", f"invalid value {u}: not in valid range [0, 100]")
        if not 0 <= s <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.add(f"{p}.score", f"invalid value {s}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
        out.append(UtilizationShapePoint(u, s))
    for i in range(1, len(out)):
        if out[i - 1].utilization >= out[i].utilization:
            errs.add(f"{path}[{i}].utilization", "values must be sorted in increasing order")
            break
    return tuple(out)


def _scoring_strategy(raw: Any, sp: str, errs: ErrorList) -> ScoringStrategy:
    ss = want_map(raw, sp, errs)
    if ss is None:
        return ScoringStrategy()
    check_keys(ss, {"type", "resources", "requestedToCapacityRatio"}, sp, errs)
    typ = ss.get("type", "")
    if typ not in SCORING_STRATEGY_TYPES:
        errs.add(f"{sp}.type", f"unsupported value {typ!r}: supported values: {', '.join(SCORING_STRATEGY_TYPES)}")
    resources = _resources(ss.get("resources"), f"{sp}.resources", errs, exactly_one=False)
    rtcr = ss.get("requestedToCapacityRatio")
    param: RequestedToCapacityRatioParam | None = None
    rp = f"{sp}.requestedToCapacityRatio"
    if typ == "RequestedToCapacityRatio":
        if rtcr is None:
            errs.add(rp, "required: must be specified when type is RequestedToCapacityRatio")
        else:
            r = want_map(rtcr, rp, errs)
            if r is not None:
                check_keys(r, {"shape"}, rp, errs)
                param = RequestedToCapacityRatioParam(_shape(r.get("shape"), f"{rp}.shape", errs))
    elif rtcr is not None:
        errs.add(rp, "forbidden: must be nil when type is not RequestedToCapacityRatio")
    return ScoringStrategy(str(typ), resources, param)


def _node_resources_fit(a: Mapping[str, Any], path: str, errs: ErrorList) -> NodeResourcesFitArgs:
    lists: dict[str, tuple[str, ...]] = {}
    for key, no_slash in (("ignoredResources", False), ("ignoredResourceGroups", True)):
        names = want_str_list(a.get(key), f"{path}.{key}", errs)
        for i, n in enumerate(names or []):
            if no_slash and "/" in n:
                errs.add(f"{path}.{key}[{i}]", f"invalid value {n!r}: resource group name can't contain '/'")
            elif (problem := qualified_name_problem(n)) is not None:
                errs.add(f"{path}.{key}[{i}]", f"invalid value {n!r}: {problem}")
        lists[key] = tuple(names or ())
    raw = a.get("scoringStrategy")
    strategy = ScoringStrategy() if raw is None else _scoring_strategy(raw, f"{path}.scoringStrategy", errs)
    return NodeResourcesFitArgs(lists["ignoredResources"], lists["ignoredResourceGroups"], strategy)


def _balanced_allocation(a: Mapping[str, Any], path: str, errs: ErrorList) -> NodeResourcesBalancedAllocationArgs:
    resources = _resources(a.get("resources"), f"{path}.resources", errs, exactly_one=True)
    return NodeResourcesBalancedAllocationArgs(resources)


_TSC_KEYS = frozenset(
    {
        "maxSkew",
        "topologyKey",
        "whenUnsatisfiable",
        "labelSelector",
        "minDomains",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "matchLabelKeys",
    }
)


def _pod_topology_spread(a: Mapping[str, Any], path: str, errs: ErrorList) -> PodTopologySpreadArgs:
    dt = a.get("defaultingType") or SYSTEM_DEFAULTING
    constraints = want_list(a.get("defaultConstraints"), f"{path}.defaultConstraints", errs) or []
    if dt not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errs.add(f"{path}.defaultingType", f"unsupported value {dt!r}: supported values: List, System")
    elif dt == SYSTEM_DEFAULTING and constraints:
        errs.add(f"{path}.defaultingType", "invalid value 'System': when .defaultConstraints are not empty")
    seen: list[tuple[Any, Any]] = []
    for i, c in enumerate(constraints):
        p = f"{path}.defaultConstraints[{i}]"
        cm = want_map(c, p, errs)
        if cm is None:
            continue
        check_keys(cm, _TSC_KEYS, p, errs)
        skew = want_int(cm.get("maxSkew", 0), f"{p}.maxSkew", errs)
        if skew is not None and skew <= 0:
            errs.add(f"{p}.maxSkew", f"invalid value {skew}: not in valid range (0, inf)")
        key = cm.get("topologyKey", "")
        if want_str(key, f"{p}.topologyKey", errs) is not None:
            if not key:
                errs.add(f"{p}.topologyKey", "required: can not be empty")
            elif (problem := qualified_name_problem(key)) is not None:
                errs.add(f"{p}.topologyKey", f"invalid value {key!r}: {problem}")
        when = cm.get("whenUnsatisfiable", "")
        if not when:
            errs.add(f"{p}.whenUnsatisfiable", "required: can not be empty")
        elif when not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.add(
                f"{p}.whenUnsatisfiable", f"unsupported value {when!r}: supported values: DoNotSchedule, ScheduleAnyway"
            )
        if cm.get("labelSelector") is not None:
            errs.add(
                f"{p}.labelSelector", "forbidden: constraint must not define a selector, as they deduced for each pod"
            )
        if "minDomains" in cm and cm["minDomains"] is not None:
            md = want_int(cm["minDomains"], f"{p}.minDomains", errs)
            if md is not None and md <= 0:
                errs.add(f"{p}.minDomains", f"invalid value {md}: must be greater than 0")
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if cm.get(policy) is not None and cm[policy] not in ("Honor", "Ignore"):
                errs.add(f"{p}.{policy}", f"unsupported value {cm[policy]!r}: supported values: Honor, Ignore")
        want_str_list(cm.get("matchLabelKeys"), f"{p}.matchLabelKeys", errs)
        pair = (key, when)
        if pair in seen:
            errs.add(p, f"duplicate value {{{key}, {when}}}")
        seen.append(pair)
    return PodTopologySpreadArgs(tuple(copy.deepcopy(c) for c in constraints), str(dt))


def _volume_binding(a: Mapping[str, Any], path: str, errs: ErrorList) -> VolumeBindingArgs:
    t = _int_field(a, "bindTimeoutSeconds", VolumeBindingArgs().bind_timeout_seconds, path, errs)
    if t < 0:
        errs.add(f"{path}.bindTimeoutSeconds", f"invalid value {t}: should not be a negative value")
    # validateFunctionShape with StorageCapacityScoring on; the plugin refuses a shape with the gate off.
    shape = _shape(a.get("shape"), f"{path}.shape", errs) if a.get("shape") is not None else None
    return VolumeBindingArgs(t, shape)


def _duration_field(a: Mapping[str, Any], key: str, default: float, path: str, errs: ErrorList) -> float:
    """``a[key]`` as a metav1.Duration string in seconds (absent: ``default``)."""
    if key not in a:
        return default
    try:
        return parse_duration(a[key])
    except ValueError as exc:
        errs.add(f"{path}.{key}", str(exc))
        return default


def _dynamic_resources(a: Mapping[str, Any], path: str, errs: ErrorList) -> DynamicResourcesArgs:
    """ValidateDynamicResourcesArgs with the v1.37 default gates (DRASchedulerFilterTimeout,
    DRADeviceBindingConditions and DRAResourceClaimDeviceStatus on)."""
    d = DynamicResourcesArgs()
    filter_timeout = _duration_field(a, "filterTimeout", d.filter_timeout, path, errs)
    if filter_timeout < 0:
        errs.add(f"{path}.filterTimeout", f'invalid value "{a["filterTimeout"]}": must be zero or positive')
    binding_timeout = _duration_field(a, "bindingTimeout", d.binding_timeout, path, errs)
    if binding_timeout < 1:
        errs.add(f"{path}.bindingTimeout", f'invalid value "{a["bindingTimeout"]}": must be at least 1 second')
    return DynamicResourcesArgs(filter_timeout, binding_timeout)


def _labels(a: Mapping[str, Any], key: str, path: str, errs: ErrorList) -> tuple[str, ...]:
    labels = want_str_list(a.get(key), f"{path}.{key}", errs)
    for i, label in enumerate(labels or []):
        if (problem := qualified_name_problem(label)) is not None:
            errs.add(f"{path}.{key}[{i}]", f"invalid value {label!r}: {problem}")
    return tuple(labels or ())


def _selector_spread(a: Mapping[str, Any], path: str, errs: ErrorList) -> SelectorSpreadArgs:
    return SelectorSpreadArgs()


def _service_affinity(a: Mapping[str, Any], path: str, errs: ErrorList) -> ServiceAffinityArgs:
    return ServiceAffinityArgs(
        _labels(a, "affinityLabels", path, errs), _labels(a, "antiAffinityLabelsPreference", path, errs)
    )


def _service_anti_affinity(a: Mapping[str, Any], path: str, errs: ErrorList) -> ServiceAntiAffinityArgs:
    return ServiceAntiAffinityArgs(_labels(a, "antiAffinityLabelsPreference", path, errs))


def _node_label(a: Mapping[str, Any], path: str, errs: ErrorList) -> NodeLabelArgs:
    """Label keys, and no key both required and forbidden (nor both preferred present and absent)."""
    keys = ("presentLabels", "absentLabels", "presentLabelsPreference", "absentLabelsPreference")
    present, absent, present_pref, absent_pref = (_labels(a, k, path, errs) for k in keys)
    for key, p, q in (("presentLabels", present, absent), ("presentLabelsPreference", present_pref, absent_pref)):
        both = sorted(set(p) & set(q))
        if both:
            errs.add(f"{path}.{key}", f"detecting at least one label (e.g., {both[0]!r}) that exist in both the "
                     f"present({list(p)}) and absent({list(q)}) label list")
    return NodeLabelArgs(present, absent, present_pref, absent_pref)


_DECODERS: dict[type, Callable[[Mapping[str, Any], str, ErrorList], Any]] = {
    CoschedulingArgs: _coscheduling,
    DefaultPreemptionArgs: _default_preemption,
    InterPodAffinityArgs: _inter_pod_affinity,
    NodeAffinityArgs: _node_affinity,
    NodeResourcesFitArgs: _node_resources_fit,
    NodeResourcesBalancedAllocationArgs: _balanced_allocation,
    PodTopologySpreadArgs: _pod_topology_spread,
    VolumeBindingArgs: _volume_binding,
    DynamicResourcesArgs: _dynamic_resources,
    SelectorSpreadArgs: _selector_spread,
    ServiceAffinityArgs: _service_affinity,
    ServiceAntiAffinityArgs: _service_anti_affinity,
    NodeLabelArgs: _node_label,
}


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(w.capitalize() for w in rest)


def _allowed_keys(kind: type) -> frozenset[str]:
    """The YAML keys of an args type besides apiVersion/kind."""
    return frozenset(_camel(f.name) for f in dataclasses.fields(kind))


def decode_args(kind: type[A], user: Any, path: str, errs: ErrorList) -> A:
    """``user`` (a mapping, None meaning empty) as the typed ``kind``, defaulted and validated; every
    problem goes into ``errs`` with its field path (the returned value is then meaningless)."""
    given = want_map(user, path, errs)
    if given is None:
        given = {}
    name = kind.__name__
    if "apiVersion" in given and given["apiVersion"] != API_VERSION:
        errs.add(f"{path}.apiVersion", f"unsupported value {given['apiVersion']!r}: must be {API_VERSION!r}")
    if "kind" in given and given["kind"] != name:
        errs.add(f"{path}.kind", f"invalid value {given['kind']!r}: has to match plugin args ({name})")
    body = {k: v for k, v in given.items() if k not in ("apiVersion", "kind")}
    check_keys(body, _allowed_keys(kind), path, errs)
    # null keeps the default, as a nil pointer/slice is defaulted upstream.
    body = {k: v for k, v in body.items() if v is not None}
    result: A = _DECODERS[kind](body, path, errs)
    return result


def plugin_args(kind: type[A], args: A | Mapping[str, Any] | None) -> A:
    """A plugin's args as its typed ``kind``: what the config loader resolved passes through; a mapping (a
    plugin built directly, as in tests or embedding code) is decoded as the loader would. Raises
    ValueError naming each invalid field."""
    if isinstance(args, kind):
        return args
    errs = ErrorList()
    out = decode_args(kind, args, kind.__name__, errs)
    if errs.errors:
        raise ValueError("; ".join(str(e) for e in errs.errors))
    return out


def resolve_args(args_type: type | None, user: Any, path: str, errs: ErrorList) -> PluginArgs | dict[str, Any]:
    """The final args of a plugin whose args type is ``args_type``: user args (may be None) over the
    defaults, validated. ``path`` names the args in messages (``profiles[0].pluginConfig[2].args``).
    Without an args type the user's mapping is returned as given (empty when None)."""
    if args_type is None:
        return dict(want_map(user, path, errs) or {})
    resolved: PluginArgs = decode_args(args_type, user, path, errs)
    return resolved
