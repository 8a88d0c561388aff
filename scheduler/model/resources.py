"""Resource arithmetic: the scheduler's view of requests and allocatable (framework.Resource upstream).

Requests are aggregated as quantities (exact decimals) and converted to integers only at the end, as
component-helpers' ``resource.PodRequests`` sums ``resource.Quantity`` values before the scheduler takes
``MilliValue()`` / ``Value()`` (both round up): two containers asking for 0.5m cpu need 1m, not 2m.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson

from scheduler.model.quantity import CPU, EPHEMERAL_STORAGE, HUGEPAGES_PREFIX, MEMORY, PODS, parse

# Defaults used for scoring only, per container without a request (pkg/scheduler/util/pod_resources.go upstream).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
REQUESTS_PREFIX = "requests."
NATIVE_NAMESPACE = "kubernetes.io/"

ResourceList = dict[str, Decimal]


# --- resource names (k8s.io/kubernetes/pkg/apis/core/v1/helper, scheduler util) -------------------

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def is_qualified_name(value: str) -> bool:
    """validation.IsQualifiedName: optional DNS-subdomain prefix, '/', and a 63-char name."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return False
    else:
        return False
    return 0 < len(name) <= 63 and _QUALIFIED_NAME.fullmatch(name) is not None


def is_prefixed_native_resource(name: str) -> bool:
    """Names in the kubernetes.io namespace are native even with a prefix (never ignorable)."""
    return NATIVE_NAMESPACE in name


def is_native_resource(name: str) -> bool:
    """Unprefixed names (cpu, hugepages-2Mi, ...) and kubernetes.io ones belong to Kubernetes itself."""
    return "/" not in name or is_prefixed_native_resource(name)


def is_extended_resource_name(name: str) -> bool:
    """Outside kubernetes.io and valid as a quota name: only these may be ignored by args."""
    if is_native_resource(name) or name.startswith(REQUESTS_PREFIX):
        return False
    return is_qualified_name(REQUESTS_PREFIX + name)


def is_scalar_resource_name(name: str) -> bool:
    """Resources the scheduler tracks besides cpu, memory, ephemeral-storage and pods."""
    return (
        is_extended_resource_name(name)
        or name.startswith(HUGEPAGES_PREFIX)
        or is_prefixed_native_resource(name)
        or name.startswith(ATTACHABLE_VOLUMES_PREFIX)
    )


def milli_value(q: Decimal) -> int:
    """Quantity.MilliValue(): rounds up."""
    return math.ceil(q * 1000)


def int_value(q: Decimal) -> int:
    """Quantity.Value(): rounds up."""
    return math.ceil(q)


_new = object.__new__


@dataclass(slots=True)
class Resource:
    """Amounts of compute resources; cpu in millicores, the rest in whole units.

    ``scalar`` holds only the names upstream's ``Resource.Add`` keeps (``IsScalarResourceName``):
    extended resources, hugepages, kubernetes.io-prefixed and attachable-volumes names."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, rl: Mapping[str, object] | None, obj: str, fld: str) -> Resource:
        """Build from a ResourceList dict such as status.allocatable (framework.NewResource)."""
        return cls.from_quantities(parse_resource_list(rl, obj, fld))

    @classmethod
    def from_quantities(cls, rl: Mapping[str, Decimal]) -> Resource:
        """framework.Resource.Add of a parsed ResourceList: cpu in millicores, every value rounded up,
        names that are not scalar resources dropped."""
        r = cls()
        for name, q in rl.items():
            if name == CPU:
                r.milli_cpu += milli_value(q)
            elif name == MEMORY:
                r.memory += int_value(q)
            elif name == PODS:
                r.allowed_pod_number += int_value(q)
            elif name == EPHEMERAL_STORAGE:
                r.ephemeral_storage += int_value(q)
            elif is_scalar_resource_name(name):
                r.scalar[name] = r.scalar.get(name, 0) + int_value(q)
        return r

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def set(self, name: str, amount: int) -> None:
        if name == CPU:
            self.milli_cpu = amount
        elif name == MEMORY:
            self.memory = amount
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = amount
        elif name == PODS:
            self.allowed_pod_number = amount
        else:
            self.scalar[name] = amount

    def add(self, other: Resource) -> None:
        """In-place sum (pods count excluded: it is a node property, not a request)."""
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + v

    def sub(self, other: Resource) -> None:
        """In-place difference, used when a pod leaves a node."""
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) - v

    def copy(self) -> Resource:
        """Filled slot by slot, without the dataclass __init__: the snapshot's clone of a changed node copies
        two (NodeInfo.clone), a few changed nodes a cycle; tests/framework/test_types.py compares every field."""
        c = _new(Resource)
        c.milli_cpu = self.milli_cpu
        c.memory = self.memory
        c.ephemeral_storage = self.ephemeral_storage
        c.allowed_pod_number = self.allowed_pod_number
        c.scalar = self.scalar.copy()
        return c

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or any(self.scalar.values()))


# --- ResourceList arithmetic (k8s.io/component-helpers/resource/helpers.go) ------------------------------


def parse_resource_list(rl: Mapping[str, object] | None, obj: str, fld: str) -> ResourceList:
    """A ResourceList as exact decimals; every key is kept (presence matters for the defaults)."""
    return {str(name): parse(value, obj, f"{fld}.{name}") for name, value in (rl or {}).items()}


def _add_list(into: ResourceList, other: Mapping[str, Decimal]) -> None:
    for name, q in other.items():
        into[name] = into.get(name, Decimal(0)) + q


def _max_list(into: ResourceList, other: Mapping[str, Decimal]) -> None:
    for name, q in other.items():
        if name not in into or q > into[name]:
            into[name] = q


def _max_of(*lists: Mapping[str, Decimal]) -> ResourceList:
    out: ResourceList = {}
    for rl in lists:
        _max_list(out, rl)
    return out


def _apply_non_missing(reqs: Mapping[str, Decimal], non_missing: Mapping[str, Decimal]) -> ResourceList:
    """A container without a request for a resource gets the default for it (a present zero stays)."""
    out = dict(reqs)
    for name, q in non_missing.items():
        if name not in reqs:
            out[name] = q
    return out


def _mappings(value: object) -> list[Mapping[str, object]]:
    """The mappings of a list (a decoded one holds dicts: tested first, as an ABC check costs far more)."""
    return [v for v in value if type(v) is dict or isinstance(v, Mapping)] if isinstance(value, list) else []


def _section(obj: Mapping[str, object], key: str) -> Mapping[str, object]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _requests_of(c: Mapping[str, object], obj: str, fld: str) -> ResourceList:
    return parse_resource_list(_section(_section(c, "resources"), "requests"), obj, f"{fld}.resources.requests")


def is_pod_resize_infeasible(status: Mapping[str, object]) -> bool:
    """The first PodResizePending condition says Infeasible. (Every watch event asks: no list is built.)"""
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        for cond in conditions:
            if (type(cond) is dict or isinstance(cond, Mapping)) and cond.get("type") == "PodResizePending":
                return cond.get("reason") == "Infeasible"
    return False


ContainerRequests = Callable[[Mapping[str, object], "Mapping[str, object] | None", str], "ResourceList | None"]


def _allocated_of(cs: Mapping[str, object] | None, obj: str, fld: str) -> ResourceList | None:
    """A container status' allocatedResources, None when the field is absent."""
    if cs is None or not isinstance(cs.get("allocatedResources"), Mapping):
        return None
    return parse_resource_list(_section(cs, "allocatedResources"), obj, f"{fld}(status).allocatedResources")


def _actual_of(cs: Mapping[str, object] | None, obj: str, fld: str) -> ResourceList | None:
    """A container status' resources.requests, None when absent."""
    if cs is None or not isinstance(_section(cs, "resources").get("requests"), Mapping):
        return None
    return _requests_of(cs, obj, f"{fld}(status)")


def aggregate_container_requests(
    spec: Mapping[str, object],
    status: Mapping[str, object],
    obj: str,
    *,
    use_status: bool = False,
    non_missing: Mapping[str, Decimal] | None = None,
) -> ResourceList:
    """AggregateContainerRequests (v1.37): without ``use_status`` the spec requests aggregated; with it
    (InPlacePodVerticalScaling, GA) the per-resource max of three aggregates, of the spec, of the allocated
    and of the actuated (status) requests, each container falling back along status resources ->
    allocatedResources -> spec; an infeasible resize leaves the spec out, and a container without status
    then counts nothing. When the pod-level status maps are set (InPlacePodLevelResourcesVerticalScaling,
    beta and on) status.allocatedResources and status.resources.requests replace the two status
    aggregates. v1.34 took the max per container instead, and only for app and sidecar containers with
    status resources. ``non_missing`` fills requests a container does not set (the scoring defaults)."""
    if not use_status:
        return _aggregate(spec, status, obj, non_missing, lambda c, cs, fld: _requests_of(c, obj, fld))
    infeasible = is_pod_resize_infeasible(status)
    spec_reqs = _aggregate(spec, status, obj, non_missing, lambda c, cs, fld: _requests_of(c, obj, fld))
    pod_allocated = status.get("allocatedResources")
    pod_actual = _section(status, "resources").get("requests")
    if isinstance(pod_allocated, Mapping) and isinstance(pod_actual, Mapping):
        allocated = parse_resource_list(pod_allocated, obj, "status.allocatedResources")
        actual = parse_resource_list(pod_actual, obj, "status.resources.requests")
    else:
        def allocated_fn(c: Mapping[str, object], cs: Mapping[str, object] | None, fld: str) -> ResourceList | None:
            found = _allocated_of(cs, obj, fld)
            if found is not None:
                return found
            return None if infeasible else _requests_of(c, obj, fld)

        def actual_fn(c: Mapping[str, object], cs: Mapping[str, object] | None, fld: str) -> ResourceList | None:
            found = _actual_of(cs, obj, fld)
            if found is None:
                found = _allocated_of(cs, obj, fld)
            if found is not None:
                return found
            return None if infeasible else _requests_of(c, obj, fld)

        allocated = _aggregate(spec, status, obj, non_missing, allocated_fn, statuses=True)
        actual = _aggregate(spec, status, obj, non_missing, actual_fn, statuses=True)
    return _max_of(actual, allocated) if infeasible else _max_of(spec_reqs, actual, allocated)


def _aggregate(
    spec: Mapping[str, object],
    status: Mapping[str, object],
    obj: str,
    non_missing: Mapping[str, Decimal] | None,
    requests_of: ContainerRequests,
    statuses: bool = False,
) -> ResourceList:
    """aggregateContainerResourcesByFn: app containers and restartable (sidecar) init containers add up; a
    regular init container needs its own request plus the sidecars started before it; the pod needs the
    larger of the two. ``requests_of`` gives a container's list from it and its status (``statuses``)."""
    by_name: dict[str, Mapping[str, object]] = {}
    if statuses:
        for key in ("initContainerStatuses", "containerStatuses"):  # a regular container's status wins
            for cs in _mappings(status.get(key)):
                by_name[str(cs.get("name") or "")] = cs

    def requests(c: Mapping[str, object], fld: str) -> ResourceList:
        cr = requests_of(c, by_name.get(str(c.get("name") or "")), fld) or {}
        if non_missing:
            cr = _apply_non_missing(cr, non_missing)
        return cr

    reqs: ResourceList = {}
    for i, c in enumerate(_mappings(spec.get("containers"))):
        _add_list(reqs, requests(c, f"spec.containers[{i}]"))
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for i, c in enumerate(_mappings(spec.get("initContainers"))):
        cr = requests(c, f"spec.initContainers[{i}]")
        if c.get("restartPolicy") == "Always":
            _add_list(reqs, cr)
            _add_list(sidecars, cr)
            need = dict(sidecars)
        else:
            need = {}
            _add_list(need, cr)
            _add_list(need, sidecars)
        _max_list(init_max, need)
    _max_list(reqs, init_max)
    return reqs


def is_supported_pod_level_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def pod_level_requests(spec: Mapping[str, object]) -> Mapping[str, object] | None:
    """spec.resources.requests when it names a supported pod-level resource (IsPodLevelRequestsSet)."""
    requests = _section(_section(spec, "resources"), "requests")
    if any(is_supported_pod_level_resource(str(n)) for n in requests):
        return requests
    return None


def pod_request_list(
    spec: Mapping[str, object],
    status: Mapping[str, object],
    obj: str,
    *,
    use_status: bool = False,
    non_missing: Mapping[str, Decimal] | None = None,
    pod_level: bool = True,
) -> ResourceList:
    """resource.PodRequests: container aggregate, then (``pod_level``: PodLevelResources is beta, on in 1.37)
    pod-level cpu/memory/hugepages requests replace it, then pod overhead."""
    reqs = aggregate_container_requests(spec, status, obj, use_status=use_status, non_missing=non_missing)
    pod_level_reqs = pod_level_requests(spec) if pod_level else None
    if pod_level_reqs is not None:
        parsed = parse_resource_list(pod_level_reqs, obj, "spec.resources.requests")
        if use_status and isinstance(status.get("resources"), Mapping):
            parsed = _effective_pod_level(parsed, status, obj)
        for name, q in parsed.items():
            if is_supported_pod_level_resource(name):
                reqs[name] = q
    overhead = spec.get("overhead")
    if isinstance(overhead, Mapping):
        _add_list(reqs, parse_resource_list(overhead, obj, "spec.overhead"))
    return reqs


def _effective_pod_level(spec_reqs: ResourceList, status: Mapping[str, object], obj: str) -> ResourceList:
    """effectivePodLevelResources (InPlacePodLevelResourcesVerticalScaling, beta and on in v1.37): the max of
    the pod-level spec (left out for an infeasible resize), status.resources.requests and
    status.allocatedResources."""
    actual = parse_resource_list(_section(_section(status, "resources"), "requests"), obj, "status.resources.requests")
    allocated = parse_resource_list(_section(status, "allocatedResources"), obj, "status.allocatedResources")
    base = {} if is_pod_resize_infeasible(status) else spec_reqs
    return _max_of(base, actual, allocated)


DEFAULT_NON_MISSING: Mapping[str, Decimal] = {
    CPU: Decimal(DEFAULT_MILLI_CPU_REQUEST) / 1000,
    MEMORY: Decimal(DEFAULT_MEMORY_REQUEST),
}


@dataclass(frozen=True, slots=True)
class PodResources:
    """What NodeInfo accounts for a pod (PodInfo.CalculateResource): its requests and its non-zero
    cpu/memory (100m / 200Mi for what neither a container nor the pod level requests).

    ``derived`` remembers other functions of the same resource fields (the plugins' request lists): it is
    shared by every pod whose fields are identical, so a template's pods parse their quantities once."""

    requests: Resource
    non_zero_milli_cpu: int
    non_zero_memory: int
    derived: dict[Hashable, Any] = field(default_factory=dict, compare=False, repr=False)


def calculate_pod_resources(spec: Mapping[str, object], status: Mapping[str, object], obj: str) -> PodResources:
    """PodInfo.CalculateResource with InPlacePodVerticalScaling, PodLevelResources and
    InPlacePodLevelResourcesVerticalScaling on (v1.37 defaults).

    Without pod-level requests every container lacking a cpu/memory request gets the default; with them
    the default only fills a resource missing from the whole pod's requests."""
    requests = pod_request_list(spec, status, obj, use_status=True)
    if pod_level_requests(spec) is None:
        non_missing: Mapping[str, Decimal] = DEFAULT_NON_MISSING
    else:
        non_missing = {k: v for k, v in DEFAULT_NON_MISSING.items() if k not in requests}
    non_zero = requests
    if non_missing:
        non_zero = pod_request_list(spec, status, obj, use_status=True, non_missing=non_missing)
    return PodResources(
        Resource.from_quantities(requests),
        milli_value(non_zero.get(CPU, Decimal(0))),
        int_value(non_zero.get(MEMORY, Decimal(0))),
    )


# Pods made from one template carry the same resource fields, so their parsed resources are shared:
# the JSON of exactly what calculate_pod_resources reads -> its result. Cleared when it grows past the bound.
_RESOURCES_MEMO: dict[bytes, PodResources] = {}
_RESOURCES_MEMO_MAX = 4096


StatusResourceFields = tuple[list[tuple[object, object, object]], object, object, bool]


def status_resource_fields(status: Mapping[str, object]) -> StatusResourceFields:
    """Everything calculate_pod_resources reads of a pod's status: two statuses that give equal tuples give
    a pod of one spec the same resources."""
    statuses = [
        (cs.get("name"), cs.get("resources"), cs.get("allocatedResources"))
        for key in ("containerStatuses", "initContainerStatuses")
        for cs in _mappings(status.get(key))
    ]
    return statuses, status.get("allocatedResources"), status.get("resources"), is_pod_resize_infeasible(status)


_CONTAINER_STATUSES = ("containerStatuses", "initContainerStatuses")
_RESIZE_FEASIBLE: tuple[object, ...] = (False,)
_RESIZE_INFEASIBLE: tuple[object, ...] = (True,)


def status_resource_key(status: Mapping[str, object]) -> tuple[object, ...]:
    """What the resources of a pod of a given spec depend on in its status: equal keys, equal resources. A
    status that holds no resources at all (no container status with resources or allocatedResources, none
    at the pod level: every container falls back to its spec) gives only whether a resize is infeasible, as
    one of two shared tuples (every watch event asks)."""
    get = status.get
    if get("allocatedResources") is None and get("resources") is None:
        for key in _CONTAINER_STATUSES:
            statuses = get(key)
            if not statuses:
                continue
            if type(statuses) is not list:
                return status_resource_fields(status)  # not decoded JSON: told apart by the whole
            for cs in statuses:
                if type(cs) is not dict or cs.get("resources") is not None or cs.get("allocatedResources") is not None:
                    return status_resource_fields(status)
        return _RESIZE_INFEASIBLE if is_pod_resize_infeasible(status) else _RESIZE_FEASIBLE
    return status_resource_fields(status)


def _resource_fields(spec: Mapping[str, object], status: Mapping[str, object]) -> bytes:
    """Everything calculate_pod_resources reads of a pod, serialized."""
    return orjson.dumps((
        spec.get("containers"), spec.get("initContainers"), spec.get("resources"), spec.get("overhead"),
        *status_resource_fields(status),
    ), default=str)


def pod_resources(spec: Mapping[str, object], status: Mapping[str, object], obj: str) -> PodResources:
    """calculate_pod_resources, remembered by the fields it reads (the pod watch builds thousands of
    pods from a few templates), with its shared ``derived`` memo. Invalid pods are not remembered: their
    error names the pod."""
    key = _resource_fields(spec, status)
    found = _RESOURCES_MEMO.get(key)
    if found is not None:
        return found
    result = calculate_pod_resources(spec, status, obj)
    if len(_RESOURCES_MEMO) >= _RESOURCES_MEMO_MAX:
        _RESOURCES_MEMO.clear()
    _RESOURCES_MEMO[memoryview(key).tobytes()] = result  # a tight copy: orjson's result holds 4 KiB
    return result


def scoring_request_list(
    spec: Mapping[str, object], status: Mapping[str, object], obj: str, use_requested: bool
) -> ResourceList:
    """The request list resourceAllocationScorer.calculatePodResourceRequest reads.

    ``use_requested`` is BalancedAllocation's scorer: status resources and pod-level requests honoured.
    Otherwise it is NodeResourcesFit's, which upstream
    (k8s.io/kubernetes@v1.34.0/pkg/scheduler/framework/plugins/noderesources/fit.go) builds without the
    InPlacePodVerticalScaling and PodLevelResources flags: spec requests of the containers only, with the 100m / 200Mi
    default for every container lacking a cpu/memory request, pod-level requests ignored."""
    if use_requested:
        return pod_request_list(spec, status, obj, use_status=True)
    return pod_request_list(spec, status, obj, non_missing=DEFAULT_NON_MISSING, pod_level=False)


def request_amount(rl: Mapping[str, Decimal], name: str) -> int:
    """requests[name] as the scorer reads it: MilliValue for cpu, Value otherwise, 0 when absent."""
    q = rl.get(name, Decimal(0))
    return milli_value(q) if name == CPU else int_value(q)
