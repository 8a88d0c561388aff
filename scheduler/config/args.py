"""Defaulting and validation of plugin args (``pluginConfig[].args``) for the args types we know.

Mirrors upstream's v1 defaulting (``SetDefaults_<Kind>``) and ``validation_pluginargs.go``: user keys
override defaults key by key; a few nested defaults are applied as upstream does (scoring resources,
resource weight 0 -> 1, defaultingType "" -> System). Decoding is strict as upstream's: an unknown key or
a value of the wrong type is an error naming the field. Plugins without a known args type (third-party
plugins, args-less in-tree plugins) get their args passed through unchanged.

Errors go into an :class:`ErrorList` so every problem in a file is reported at once.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any

from scheduler.config.defaults import ARGS_KIND, DEFAULT_ARGS
from scheduler.config.errors import ErrorList
from scheduler.model.errors import InvalidObjectError
from scheduler.model.labels import NODE_OPS, parse_requirement

API_VERSION = "kubescheduler.config.k8s.io/v1"

SCORING_STRATEGY_TYPES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
MAX_CUSTOM_PRIORITY_SCORE = 10  # upstream config.MaxCustomPriorityScore (shape scores)

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


# --- per-kind validators. Each receives the already merged args dict and returns the final one. --------------


def _default_preemption(a: dict[str, Any], path: str, errs: ErrorList) -> dict[str, Any]:
    pct = want_int(a.get("minCandidateNodesPercentage"), f"{path}.minCandidateNodesPercentage", errs)
    absolute = want_int(a.get("minCandidateNodesAbsolute"), f"{path}.minCandidateNodesAbsolute", errs)
    if pct is not None and not 0 <= pct <= 100:
        errs.add(f"{path}.minCandidateNodesPercentage", f"invalid value {pct}: not in valid range [0, 100]")
    if absolute is not None and absolute < 0:
        errs.add(f"{path}.minCandidateNodesAbsolute", f"invalid value {absolute}: not in valid range [0, inf)")
    if pct == 0 and absolute == 0:
        errs.add(f"{path}.minCandidateNodesPercentage", "cannot be zero at the same time as minCandidateNodesAbsolute")
    return a


def _inter_pod_affinity(a: dict[str, Any], path: str, errs: ErrorList) -> dict[str, Any]:
    w = want_int(a.get("hardPodAffinityWeight"), f"{path}.hardPodAffinityWeight", errs)
    if w is not None and not 0 <= w <= 100:
        errs.add(f"{path}.hardPodAffinityWeight", f"invalid value {w}: not in valid range [0, 100]")
    want_bool(a.get("ignorePreferredTermsOfExistingPods"), f"{path}.ignorePreferredTermsOfExistingPods", errs)
    return a


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


def _node_affinity(a: dict[str, Any], path: str, errs: ErrorList) -> dict[str, Any]:
    added = a.get("addedAffinity")
    if added is None:
        return a
    p = f"{path}.addedAffinity"
    m = want_map(added, p, errs)
    if m is None:
        return a
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
    return a


def _resources(
    value: Any, path: str, errs: ErrorList, *, default_when_empty: bool, exactly_one: bool
) -> list[dict[str, Any]]:
    """ResourceSpec lists: empty -> cpu:1,memory:1 (when the kind defaults it); weight 0/absent -> 1."""
    items = want_list(value, path, errs)
    if items is None:
        return []
    if not items and default_when_empty:
        return copy.deepcopy(DEFAULT_ARGS["NodeResourcesBalancedAllocationArgs"]["resources"])
    out: list[dict[str, Any]] = []
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
        out.append({"name": name, "weight": weight})
    return out


def _shape(value: Any, path: str, errs: ErrorList) -> list[dict[str, int]]:
    items = want_list(value, path, errs)
    if items is None:
        return []
    if not items:
        errs.add(path, "required: at least one point must be specified")
        return []
    out: list[dict[str, int]] = []
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
        out.append({"utilization": u, "score": s})
    for i in range(1, len(out)):
        if out[i - 1]["utilization"] >= out[i]["utilization"]:
            errs.add(f"{path}[{i}].utilization", "values must be sorted in increasing order")
            break
    return out


def _node_resources_fit(a: dict[str, Any], path: str, errs: ErrorList) -> dict[str, Any]:
    for key, no_slash in (("ignoredResources", False), ("ignoredResourceGroups", True)):
        names = want_str_list(a.get(key), f"{path}.{key}", errs)
        for i, n in enumerate(names or []):
            if no_slash and "/" in n:
                errs.add(f"{path}.{key}[{i}]", f"invalid value {n!r}: resource group name can't contain '/'")
            elif (problem := qualified_name_problem(n)) is not None:
                errs.add(f"{path}.{key}[{i}]", f"invalid value {n!r}: {problem}")
        a[key] = names or []
    sp = f"{path}.scoringStrategy"
    raw = a.get("scoringStrategy")
    if raw is None:
        a["scoringStrategy"] = copy.deepcopy(DEFAULT_ARGS["NodeResourcesFitArgs"]["scoringStrategy"])
        return a
    ss = want_map(raw, sp, errs)
    if ss is None:
        return a
    check_keys(ss, {"type", "resources", "requestedToCapacityRatio"}, sp, errs)
    strategy: dict[str, Any] = {}
    typ = ss.get("type", "")
    if typ not in SCORING_STRATEGY_TYPES:
        errs.add(f"{sp}.type", f"unsupported value {typ!r}: supported values: {', '.join(SCORING_STRATEGY_TYPES)}")
    strategy["type"] = typ
    strategy["resources"] = _resources(
        ss.get("resources"), f"{sp}.resources", errs, default_when_empty=True, exactly_one=False
    )
    rtcr = ss.get("requestedToCapacityRatio")
    if typ == "RequestedToCapacityRatio":
        if rtcr is None:
            errs.add(
                f"{sp}.requestedToCapacityRatio", "required: must be specified when type is RequestedToCapacityRatio"
            )
        else:
            rp = f"{sp}.requestedToCapacityRatio"
            r = want_map(rtcr, rp, errs)
            if r is not None:
                check_keys(r, {"shape"}, rp, errs)
                strategy["requestedToCapacityRatio"] = {"shape": _shape(r.get("shape"), f"{rp}.shape", errs)}
    elif rtcr is not None:
        errs.add(f"{sp}.requestedToCapacityRatio", "forbidden: must be nil when type is not RequestedToCapacityRatio")
    a["scoringStrategy"] = strategy
    return a


def _balanced_allocation(a: dict[str, Any], path: str, errs: ErrorList) -> dict[str, Any]:
    a["resources"] = _resources(
        a.get("resources"), f"{path}.resources", errs, default_when_empty=True, exactly_one=True
    )
    return a


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


def _pod_topology_spread(a: dict[str, Any], path: str, errs: ErrorList) -> dict[str, Any]:
    dt = a.get("defaultingType") or "System"
    a["defaultingType"] = dt
    constraints = want_list(a.get("defaultConstraints"), f"{path}.defaultConstraints", errs)
    a["defaultConstraints"] = constraints if constraints is not None else []
    if dt not in ("System", "List"):
        errs.add(f"{path}.defaultingType", f"unsupported value {dt!r}: supported values: List, System")
    elif dt == "System" and constraints:
        errs.add(f"{path}.defaultingType", "invalid value 'System': when .defaultConstraints are not empty")
    seen: list[tuple[Any, Any]] = []
    for i, c in enumerate(constraints or []):
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
    return a


def _volume_binding(a: dict[str, Any], path: str, errs: ErrorList) -> dict[str, Any]:
    t = want_int(a.get("bindTimeoutSeconds"), f"{path}.bindTimeoutSeconds", errs)
    if t is not None and t < 0:
        errs.add(f"{path}.bindTimeoutSeconds", f"invalid value {t}: should not be a negative value")
    if a.get("shape") is not None:
        errs.add(
            f"{path}.shape",
            "unexpected field `shape`: storage capacity scoring (gate StorageCapacityScoring) is not supported",
        )
    return a


def _label_lists(*keys: str) -> Callable[[dict[str, Any], str, ErrorList], dict[str, Any]]:
    def check(a: dict[str, Any], path: str, errs: ErrorList) -> dict[str, Any]:
        for key in keys:
            labels = want_str_list(a.get(key), f"{path}.{key}", errs)
            for i, label in enumerate(labels or []):
                if (problem := qualified_name_problem(label)) is not None:
                    errs.add(f"{path}.{key}[{i}]", f"invalid value {label!r}: {problem}")
            a[key] = labels or []
        return a

    return check


def _node_label(a: dict[str, Any], path: str, errs: ErrorList) -> dict[str, Any]:
    """Label keys, and no key both required and forbidden (or both preferred present and absent)."""
    a = _label_lists("presentLabels", "absentLabels", "presentLabelsPreference", "absentLabelsPreference")(
        a, path, errs)
    for present, absent in (("presentLabels", "absentLabels"), ("presentLabelsPreference", "absentLabelsPreference")):
        both = sorted(set(a[present]) & set(a[absent]))
        if both:
            errs.add(f"{path}.{present}", f"detecting at least one label (e.g., {both[0]!r}) that exist in both "
                     f"the present({a[present]}) and absent({a[absent]}) label list")
    return a


_VALIDATORS: dict[str, Callable[[dict[str, Any], str, ErrorList], dict[str, Any]]] = {
    "DefaultPreemptionArgs": _default_preemption,
    "InterPodAffinityArgs": _inter_pod_affinity,
    "NodeAffinityArgs": _node_affinity,
    "NodeResourcesFitArgs": _node_resources_fit,
    "NodeResourcesBalancedAllocationArgs": _balanced_allocation,
    "PodTopologySpreadArgs": _pod_topology_spread,
    "VolumeBindingArgs": _volume_binding,
    "SelectorSpreadArgs": _label_lists(),
    "ServiceAffinityArgs": _label_lists("affinityLabels", "antiAffinityLabelsPreference"),
    "ServiceAntiAffinityArgs": _label_lists("antiAffinityLabelsPreference"),
    "NodeLabelArgs": _node_label,
}

# keys each kind accepts besides apiVersion/kind (VolumeBindingArgs.shape is accepted so it can be rejected
# with a clear message instead of "unknown field").
_ALLOWED_KEYS: dict[str, frozenset[str]] = {kind: frozenset(d) for kind, d in DEFAULT_ARGS.items()}
_ALLOWED_KEYS["VolumeBindingArgs"] = _ALLOWED_KEYS["VolumeBindingArgs"] | {"shape"}


def resolve_args(plugin: str, user: Any, path: str, errs: ErrorList) -> dict[str, Any]:
    """The final args of ``plugin``: user args (may be None) over the defaults, validated.

    ``path`` names the args in messages (``profiles[0].pluginConfig[2].args``). For plugins without a
    known args type the user's mapping is returned as given (empty when None).
    """
    kind = ARGS_KIND.get(plugin)
    given = want_map(user, path, errs)
    if given is None:
        given = {}
    if kind is None:
        return dict(given)
    merged: dict[str, Any] = copy.deepcopy(DEFAULT_ARGS[kind])
    body = {k: v for k, v in given.items() if k not in ("apiVersion", "kind")}
    if "apiVersion" in given and given["apiVersion"] != API_VERSION:
        errs.add(f"{path}.apiVersion", f"unsupported value {given['apiVersion']!r}: must be {API_VERSION!r}")
    if "kind" in given and given["kind"] != kind:
        errs.add(f"{path}.kind", f"invalid value {given['kind']!r}: has to match plugin args ({kind})")
    check_keys(body, _ALLOWED_KEYS[kind], path, errs)
    for k, v in body.items():
        # null keeps the default, as a nil pointer/slice is defaulted upstream.
        if k in _ALLOWED_KEYS[kind] and v is not None:
            merged[k] = copy.deepcopy(v)
    return _VALIDATORS[kind](merged, path, errs)
