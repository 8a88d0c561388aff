"""What the API server would reject, for the fields the scheduler reads (pkg/apis/core/validation).

The live scheduler only sees objects the API server accepted; `simulate` reads files, so it checks them
here first and reports every invalid field by its path instead of silently reading it as "no match".
Only the fields scheduling depends on are checked: names and labels, resources, ports, priorities,
node selectors and affinity, tolerations and taints, topology spread constraints, scheduling gates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeGuard

from scheduler.model.errors import InvalidObjectError
from scheduler.model.labels import LABEL_OPS, NODE_OPS, is_valid_label_key, is_valid_label_value, parse_int64
from scheduler.model.quantity import CPU, EPHEMERAL_STORAGE, HUGEPAGES_PREFIX, MEMORY, parse
from scheduler.model.resources import NATIVE_NAMESPACE, aggregate_container_requests
from scheduler.model.taints import EFFECTS, NO_EXECUTE

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_TOLERATION_OPS = ("Equal", "Exists")
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_INCLUSION_POLICIES = ("Honor", "Ignore")
_PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
_CONTAINER_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One invalid field: its path in the object and what is wrong with it."""

    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


class _Errors(list[FieldError]):
    def add(self, path: str, detail: str) -> None:
        self.append(FieldError(path, detail))


def _supported(value: object, allowed: tuple[str, ...]) -> str:
    return f"unsupported value {value!r} (supported: {', '.join(allowed)})"


def _map(value: object, path: str, errs: _Errors) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errs.add(path, "must be an object")
        return {}
    return value


def _list(value: object, path: str, errs: _Errors) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        errs.add(path, "must be a list")
        return []
    return value


def _objects(value: object, path: str, errs: _Errors) -> list[tuple[str, Mapping[str, Any]]]:
    """The entries of a list of objects with their paths; non-objects are reported and skipped."""
    out = []
    for i, item in enumerate(_list(value, path, errs)):
        if isinstance(item, Mapping):
            out.append((f"{path}[{i}]", item))
        else:
            errs.add(f"{path}[{i}]", "must be an object")
    return out


def _int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


# --- metadata ---------------------------------------------------------------------------------------

def _name(value: object, path: str, errs: _Errors, *, label: bool = False) -> None:
    pattern, limit = (_DNS_LABEL, 63) if label else (_DNS_SUBDOMAIN, 253)
    if not isinstance(value, str) or not value:
        errs.add(path, "required")
    elif len(value) > limit or not pattern.fullmatch(value):
        kind = "DNS label" if label else "DNS subdomain"
        errs.add(path, f"{value!r} is not a valid {kind} (lowercase alphanumerics, '-'{'' if label else ', .'})")


def _label_map(value: object, path: str, errs: _Errors) -> None:
    for k, v in _map(value, path, errs).items():
        if not isinstance(k, str) or not is_valid_label_key(k):
            errs.add(path, f"{k!r} is not a valid label key")
        elif not isinstance(v, str) or not is_valid_label_value(v):
            errs.add(f"{path}.{k}", f"{v!r} is not a valid label value")


def _metadata(obj: Mapping[str, Any], errs: _Errors, *, namespaced: bool) -> None:
    meta = _map(obj.get("metadata"), "metadata", errs)
    _name(meta.get("name"), "metadata.name", errs)
    if namespaced and meta.get("namespace") is not None:
        _name(meta.get("namespace"), "metadata.namespace", errs, label=True)
    _label_map(meta.get("labels"), "metadata.labels", errs)


# --- selectors --------------------------------------------------------------------------------------

def _requirement(expr: Mapping[str, Any], path: str, errs: _Errors, ops: frozenset[str]) -> None:
    """ValidateLabelSelectorRequirement / ValidateNodeSelectorRequirement: key, operator, values per
    operator; label-selector values must be label values, Gt/Lt take one integer (as labels.NewRequirement
    demands when the scheduler reads it)."""
    key, op = expr.get("key"), expr.get("operator")
    values = _list(expr.get("values"), f"{path}.values", errs)
    if not isinstance(key, str) or not key:
        errs.add(f"{path}.key", "required")
    elif not is_valid_label_key(key):
        errs.add(f"{path}.key", f"{key!r} is not a valid label key")
    if op not in ops:
        errs.add(f"{path}.operator", _supported(op, tuple(sorted(ops))))
        return
    for i, v in enumerate(values):
        if not isinstance(v, str) or (ops is LABEL_OPS and not is_valid_label_value(v)):
            errs.add(f"{path}.values[{i}]", f"{v!r} is not a valid label value")
    if op in ("In", "NotIn") and not values:
        errs.add(f"{path}.values", f"must be specified when operator is {op}")
    elif op in ("Exists", "DoesNotExist") and values:
        errs.add(f"{path}.values", f"may not be specified when operator is {op}")
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.add(f"{path}.values", f"must be specified single value when operator is {op}")
        elif not isinstance(values[0], str) or parse_int64(values[0]) is None:
            errs.add(f"{path}.values[0]", f"{values[0]!r} must be an integer when operator is {op}")


def _label_selector(sel: object, path: str, errs: _Errors) -> None:
    sel = _map(sel, path, errs)
    _label_map(sel.get("matchLabels"), f"{path}.matchLabels", errs)
    for p, expr in _objects(sel.get("matchExpressions"), f"{path}.matchExpressions", errs):
        _requirement(expr, p, errs, LABEL_OPS)


def _node_selector_term(term: Mapping[str, Any], path: str, errs: _Errors) -> None:
    for p, expr in _objects(term.get("matchExpressions"), f"{path}.matchExpressions", errs):
        _requirement(expr, p, errs, NODE_OPS)
    for p, expr in _objects(term.get("matchFields"), f"{path}.matchFields", errs):
        if expr.get("key") != "metadata.name":
            errs.add(f"{p}.key", _supported(expr.get("key"), ("metadata.name",)))
        if expr.get("operator") not in ("In", "NotIn"):
            errs.add(f"{p}.operator", _supported(expr.get("operator"), ("In", "NotIn")))
        elif len(_list(expr.get("values"), f"{p}.values", errs)) != 1:
            errs.add(f"{p}.values", "must have exactly one value for metadata.name")


def _weight(value: object, path: str, errs: _Errors) -> None:
    if not _int(value) or not 1 <= value <= 100:
        errs.add(path, f"{value!r}: must be in the range 1-100")


def _node_affinity(na: Mapping[str, Any], path: str, errs: _Errors) -> None:
    required = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        rp = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
        terms = _objects(_map(required, rp, errs).get("nodeSelectorTerms"), f"{rp}.nodeSelectorTerms", errs)
        if not terms and isinstance(required, Mapping):
            errs.add(f"{rp}.nodeSelectorTerms", "must have at least one node selector term")
        for p, term in terms:
            _node_selector_term(term, p, errs)
    for p, pref in _objects(na.get("preferredDuringSchedulingIgnoredDuringExecution"),
                            f"{path}.preferredDuringSchedulingIgnoredDuringExecution", errs):
        _weight(pref.get("weight"), f"{p}.weight", errs)
        _node_selector_term(_map(pref.get("preference"), f"{p}.preference", errs), f"{p}.preference", errs)


def _pod_affinity_term(term: Mapping[str, Any], path: str, errs: _Errors) -> None:
    key = term.get("topologyKey")
    if not isinstance(key, str) or not key:
        errs.add(f"{path}.topologyKey", "can not be empty")
    elif not is_valid_label_key(key):
        errs.add(f"{path}.topologyKey", f"{key!r} is not a valid label key")
    _label_selector(term.get("labelSelector"), f"{path}.labelSelector", errs)
    _label_selector(term.get("namespaceSelector"), f"{path}.namespaceSelector", errs)
    for i, ns in enumerate(_list(term.get("namespaces"), f"{path}.namespaces", errs)):
        _name(ns, f"{path}.namespaces[{i}]", errs, label=True)
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        keys = _list(term.get(field), f"{path}.{field}", errs)
        if keys and term.get("labelSelector") is None:
            errs.add(f"{path}.{field}", "must not be specified when labelSelector is not set")
        for i, k in enumerate(keys):
            if not isinstance(k, str) or not is_valid_label_key(k):
                errs.add(f"{path}.{field}[{i}]", f"{k!r} is not a valid label key")


def _pod_affinity(pa: Mapping[str, Any], path: str, errs: _Errors) -> None:
    for p, term in _objects(pa.get("requiredDuringSchedulingIgnoredDuringExecution"),
                            f"{path}.requiredDuringSchedulingIgnoredDuringExecution", errs):
        _pod_affinity_term(term, p, errs)
    for p, wt in _objects(pa.get("preferredDuringSchedulingIgnoredDuringExecution"),
                          f"{path}.preferredDuringSchedulingIgnoredDuringExecution", errs):
        _weight(wt.get("weight"), f"{p}.weight", errs)
        term = _map(wt.get("podAffinityTerm"), f"{p}.podAffinityTerm", errs)
        _pod_affinity_term(term, f"{p}.podAffinityTerm", errs)


def _affinity(value: object, errs: _Errors) -> None:
    aff = _map(value, "spec.affinity", errs)
    if aff.get("nodeAffinity") is not None:
        _node_affinity(_map(aff["nodeAffinity"], "spec.affinity.nodeAffinity", errs),
                       "spec.affinity.nodeAffinity", errs)
    for kind in ("podAffinity", "podAntiAffinity"):
        if aff.get(kind) is not None:
            _pod_affinity(_map(aff[kind], f"spec.affinity.{kind}", errs), f"spec.affinity.{kind}", errs)


# --- taints and tolerations -------------------------------------------------------------------------

def _tolerations(value: object, errs: _Errors) -> None:
    """ValidateTolerations: operator Equal/Exists (empty is Equal), Exists takes no value, an empty key
    needs Exists, tolerationSeconds only with NoExecute."""
    for p, t in _objects(value, "spec.tolerations", errs):
        key, op, val, effect = t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "", t.get("effect")
        if key and (not isinstance(key, str) or not is_valid_label_key(key)):
            errs.add(f"{p}.key", f"{key!r} is not a valid label key")
        if op not in _TOLERATION_OPS:
            errs.add(f"{p}.operator", _supported(op, _TOLERATION_OPS))
        elif not key and op != "Exists":
            errs.add(f"{p}.operator", "must be Exists when key is empty, which means \"match all values and all keys\"")
        if op == "Exists" and val:
            errs.add(f"{p}.operator", "value must be empty when operator is Exists")
        elif op == "Equal" and (not isinstance(val, str) or not is_valid_label_value(val)):
            errs.add(f"{p}.value", f"{val!r} is not a valid label value")
        if effect and effect not in EFFECTS:
            errs.add(f"{p}.effect", _supported(effect, tuple(sorted(EFFECTS))))
        if t.get("tolerationSeconds") is not None:
            if effect != NO_EXECUTE:
                errs.add(f"{p}.effect", "must be NoExecute when tolerationSeconds is set")
            if not _int(t["tolerationSeconds"]):
                errs.add(f"{p}.tolerationSeconds", "must be an integer")


def _taints(value: object, errs: _Errors) -> None:
    """validateNodeTaints: a key, a label-value value, a known effect, no duplicate key+effect."""
    seen: set[tuple[object, object]] = set()
    for p, t in _objects(value, "spec.taints", errs):
        key, effect, val = t.get("key"), t.get("effect"), t.get("value") or ""
        if not isinstance(key, str) or not key:
            errs.add(f"{p}.key", "required")
        elif not is_valid_label_key(key):
            errs.add(f"{p}.key", f"{key!r} is not a valid label key")
        if not isinstance(val, str) or not is_valid_label_value(val):
            errs.add(f"{p}.value", f"{val!r} is not a valid label value")
        if not effect:
            errs.add(f"{p}.effect", "required")
        elif effect not in EFFECTS:
            errs.add(f"{p}.effect", _supported(effect, tuple(sorted(EFFECTS))))
        if (key, effect) in seen:
            errs.add(p, f"duplicate taint {key}:{effect} (taints must be unique by key and effect)")
        seen.add((key, effect))


# --- resources --------------------------------------------------------------------------------------

def _quantity(value: object, path: str, errs: _Errors) -> Decimal | None:
    try:
        q = parse(value, "", path)
    except InvalidObjectError:
        errs.add(path, f"{value!r} is not a valid quantity")
        return None
    if q < 0:
        errs.add(path, "must be >= 0")
        return None
    return q


def _is_extended(name: str) -> bool:
    return "/" in name and NATIVE_NAMESPACE not in name


def _resource_name(name: object, path: str, errs: _Errors, pod_level: bool) -> bool:
    """validateContainerResourceName / pod-level: standard names, hugepages-*, or a qualified domain name."""
    if not isinstance(name, str) or (not is_valid_label_key(name) and not name.startswith(HUGEPAGES_PREFIX)):
        errs.add(path, f"{name!r} is not a valid resource name")
        return False
    if pod_level and not (name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)):
        errs.add(path, _supported(name, (CPU, MEMORY, "hugepages-<size>")))
        return False
    if name in _CONTAINER_RESOURCES or name.startswith(HUGEPAGES_PREFIX) or "/" in name:
        return True
    errs.add(path, "must be a standard resource for containers (or a fully qualified extended resource)")
    return False


def _resource_list(value: object, path: str, errs: _Errors, pod_level: bool) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for name, raw in _map(value, path, errs).items():
        if not _resource_name(name, f"{path}.{name}", errs, pod_level):
            continue
        q = _quantity(raw, f"{path}.{name}", errs)
        if q is None:
            continue
        if _is_extended(name) and q != q.to_integral_value():
            errs.add(f"{path}.{name}", "must be an integer")
            continue
        out[name] = q
    return out


def _requirements(value: object, path: str, errs: _Errors, *, pod_level: bool = False) -> dict[str, Decimal]:
    """ValidateResourceRequirements: valid names and quantities >= 0, requests <= limits, extended
    resources and hugepages with requests equal to limits. Returns the valid requests."""
    res = _map(value, path, errs)
    limits = _resource_list(res.get("limits"), f"{path}.limits", errs, pod_level)
    requests = _resource_list(res.get("requests"), f"{path}.requests", errs, pod_level)
    for name, q in requests.items():
        limit = limits.get(name)
        if _is_extended(name) or name.startswith(HUGEPAGES_PREFIX):
            if limit is None and _is_extended(name):
                errs.add(f"{path}.limits", f"limit must be set for non overcommitable resource {name}")
            elif limit is not None and q != limit:
                errs.add(f"{path}.requests.{name}", f"must be equal to {name} limit of {res['limits'][name]}")
        elif limit is not None and q > limit:
            errs.add(f"{path}.requests.{name}", f"must be less than or equal to {name} limit of {res['limits'][name]}")
    return requests


def _pod_level_requests(spec: Mapping[str, Any], errs: _Errors) -> None:
    """Pod-level requests must cover what the containers request together (validatePodResourceConsistency)."""
    requests = _requirements(spec["resources"], "spec.resources", errs, pod_level=True)
    if errs:
        return  # the containers' own errors make their aggregate meaningless
    aggregate = aggregate_container_requests(spec, {}, "")
    for name, q in requests.items():
        if name in aggregate and q < aggregate[name]:
            errs.add(f"spec.resources.requests.{name}",
                     f"must be greater than or equal to aggregate container requests of {aggregate[name]}")


# --- containers, ports, spread ----------------------------------------------------------------------

def _ports(container: Mapping[str, Any], path: str, errs: _Errors, host_ports: set[tuple[object, ...]]) -> None:
    for p, port in _objects(container.get("ports"), f"{path}.ports", errs):
        cp, hp, proto = port.get("containerPort"), port.get("hostPort"), port.get("protocol") or "TCP"
        if not _int(cp) or not 1 <= cp <= 65535:
            errs.add(f"{p}.containerPort", f"{cp!r}: must be between 1 and 65535, inclusive")
        if hp is not None and hp != 0:
            if not _int(hp) or not 1 <= hp <= 65535:
                errs.add(f"{p}.hostPort", f"{hp!r}: must be between 1 and 65535, inclusive")
            else:
                ident = (hp, proto, port.get("hostIP") or "")
                if ident in host_ports:
                    errs.add(f"{p}.hostPort", f"duplicate value {hp}/{proto}")
                host_ports.add(ident)
        if proto not in _PROTOCOLS:
            errs.add(f"{p}.protocol", _supported(proto, _PROTOCOLS))


def _containers(spec: Mapping[str, Any], errs: _Errors) -> None:
    names: set[object] = set()
    host_ports: set[tuple[object, ...]] = set()
    containers = _objects(spec.get("containers"), "spec.containers", errs)
    if not containers:
        errs.add("spec.containers", "required (at least one container)")
    for p, c in _objects(spec.get("initContainers"), "spec.initContainers", errs) + containers:
        _name(c.get("name"), f"{p}.name", errs, label=True)
        if c.get("name") in names:
            errs.add(f"{p}.name", f"duplicate container name {c.get('name')!r}")
        names.add(c.get("name"))
        _requirements(c.get("resources"), f"{p}.resources", errs)
        _ports(c, p, errs, host_ports)


def _spread_constraints(spec: Mapping[str, Any], errs: _Errors) -> None:
    """validateTopologySpreadConstraints: maxSkew > 0, topologyKey, whenUnsatisfiable, minDomains only
    with DoNotSchedule, inclusion policies, unique topologyKey/whenUnsatisfiable pairs."""
    seen: set[tuple[object, object]] = set()
    for p, c in _objects(spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints", errs):
        skew, key, when = c.get("maxSkew"), c.get("topologyKey"), c.get("whenUnsatisfiable")
        if not _int(skew) or skew <= 0:
            errs.add(f"{p}.maxSkew", f"{skew!r}: must be greater than zero")
        if not isinstance(key, str) or not key:
            errs.add(f"{p}.topologyKey", "can not be empty")
        elif not is_valid_label_key(key):
            errs.add(f"{p}.topologyKey", f"{key!r} is not a valid label key")
        if when not in _WHEN_UNSATISFIABLE:
            errs.add(f"{p}.whenUnsatisfiable", _supported(when, _WHEN_UNSATISFIABLE))
        min_domains = c.get("minDomains")
        if min_domains is not None:
            if not _int(min_domains) or min_domains <= 0:
                errs.add(f"{p}.minDomains", f"{min_domains!r}: must be greater than zero")
            elif when != "DoNotSchedule":
                errs.add(f"{p}.minDomains", "can only be used when whenUnsatisfiable is DoNotSchedule")
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if c.get(policy) is not None and c[policy] not in _INCLUSION_POLICIES:
                errs.add(f"{p}.{policy}", _supported(c[policy], _INCLUSION_POLICIES))
        if (key, when) in seen:
            errs.add(p, f"duplicate {{{key!r}, {when!r}}} pair")
        seen.add((key, when))
        _label_selector(c.get("labelSelector"), f"{p}.labelSelector", errs)
        for i, k in enumerate(_list(c.get("matchLabelKeys"), f"{p}.matchLabelKeys", errs)):
            if not isinstance(k, str) or not is_valid_label_key(k):
                errs.add(f"{p}.matchLabelKeys[{i}]", f"{k!r} is not a valid label key")


def _scalars(spec: Mapping[str, Any], errs: _Errors) -> None:
    prio = spec.get("priority")
    if prio is not None and (not _int(prio) or not _INT32_MIN <= prio <= _INT32_MAX):
        errs.add("spec.priority", f"{prio!r} must be a 32-bit integer")
    policy = spec.get("preemptionPolicy")
    if policy is not None and policy not in _PREEMPTION_POLICIES:
        errs.add("spec.preemptionPolicy", _supported(policy, _PREEMPTION_POLICIES))
    if spec.get("nodeName"):
        _name(spec["nodeName"], "spec.nodeName", errs)
    if spec.get("schedulerName") is not None:
        _name(spec["schedulerName"], "spec.schedulerName", errs)
    for p, gate in _objects(spec.get("schedulingGates"), "spec.schedulingGates", errs):
        if not isinstance(gate.get("name"), str) or not is_valid_label_key(gate["name"]):
            errs.add(f"{p}.name", f"{gate.get('name')!r} is not a valid qualified name")
    for name, raw in _map(spec.get("overhead"), "spec.overhead", errs).items():
        _quantity(raw, f"spec.overhead.{name}", errs)


# --- entry points -----------------------------------------------------------------------------------

def validate_pod(obj: Mapping[str, Any]) -> list[FieldError]:
    """Every scheduling-relevant field of a Pod the API server would reject."""
    errs = _Errors()
    _metadata(obj, errs, namespaced=True)
    spec = _map(obj.get("spec"), "spec", errs)
    _containers(spec, errs)
    if spec.get("resources") is not None:
        _pod_level_requests(spec, errs)
    _label_map(spec.get("nodeSelector"), "spec.nodeSelector", errs)
    _affinity(spec.get("affinity"), errs)
    _tolerations(spec.get("tolerations"), errs)
    _spread_constraints(spec, errs)
    _scalars(spec, errs)
    return list(errs)


def validate_node(obj: Mapping[str, Any]) -> list[FieldError]:
    """Every scheduling-relevant field of a Node the API server would reject."""
    errs = _Errors()
    _metadata(obj, errs, namespaced=False)
    spec = _map(obj.get("spec"), "spec", errs)
    _taints(spec.get("taints"), errs)
    status = _map(obj.get("status"), "status", errs)
    for section in ("capacity", "allocatable"):
        for name, raw in _map(status.get(section), f"status.{section}", errs).items():
            if not isinstance(name, str) or not (is_valid_label_key(name) or name.startswith(HUGEPAGES_PREFIX)):
                errs.add(f"status.{section}", f"{name!r} is not a valid resource name")
            else:
                _quantity(raw, f"status.{section}.{name}", errs)
    return list(errs)


# The classes the API server creates at start-up (pkg/apis/scheduling/v1/helpers.go); "system-" names and values
# above HighestUserDefinablePriority are theirs alone.
SYSTEM_PRIORITY_CLASSES: dict[str, int] = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000


def _system_class_problem(name: str, value: int, global_default: object) -> str:
    """IsKnownSystemPriorityClass's error ('' when the class is one of the system classes as defined)."""
    if name not in SYSTEM_PRIORITY_CLASSES:
        return f"{name} is not a known system priority class"
    if value != SYSTEM_PRIORITY_CLASSES[name]:
        return f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def validate_priority_class(obj: Mapping[str, Any]) -> list[FieldError]:
    """ValidatePriorityClass's checks that decide a pod's priority: a 32-bit value, reserved names and
    values, the preemption policy."""
    errs = _Errors()
    _metadata(obj, errs, namespaced=False)
    name, value = (obj.get("metadata") or {}).get("name"), obj.get("value")
    if not _int(value) or not _INT32_MIN <= value <= _INT32_MAX:
        errs.add("value", f"{value!r} must be a 32-bit integer")
    elif isinstance(name, str) and name.startswith("system-"):
        problem = _system_class_problem(name, value, obj.get("globalDefault", False))
        if problem:
            errs.add("metadata.name", f"priority class names with 'system-' prefix are reserved for system use "
                                      f"only. error: {problem}")
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.add("value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}")
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in _PREEMPTION_POLICIES:
        errs.add("preemptionPolicy", _supported(policy, _PREEMPTION_POLICIES))
    if not isinstance(obj.get("globalDefault", False), bool):
        errs.add("globalDefault", "must be a boolean")
    return list(errs)


def validate(obj: Mapping[str, Any]) -> list[FieldError]:
    """Pods, Nodes and PriorityClasses are checked field by field; other kinds only for their metadata."""
    kind = obj.get("kind")
    if kind == "Pod":
        return validate_pod(obj)
    if kind == "Node":
        return validate_node(obj)
    if kind == "PriorityClass":
        return validate_priority_class(obj)
    errs = _Errors()
    _metadata(obj, errs, namespaced=True)
    return list(errs)
