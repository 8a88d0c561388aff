"""Typed views of the resource.k8s.io/v1 kinds that Dynamic Resource Allocation reads.

Follows ``k8s.io/api/resource/v1/types.go``: ResourceSlice, DeviceClass, ResourceClaim (spec
and the allocation in its status) and DeviceTaintRule, parsed from the JSON dicts the API server
sends. Every field the structured allocator (``scheduler/plugins/helper/dynamicresources/``) reads is typed
here; a field of the wrong JSON type raises :class:`InvalidObjectError` naming the object and the
field, so a malformed object is reported instead of crashing the scheduler. Fields the allocator
does not read (status conditions, device status, node allocatable mappings) are left in ``raw``.

Quantities are exact ``Decimal`` values (``scheduler.model.quantity``), as ``resource.Quantity``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

from scheduler.model.errors import InvalidObjectError
from scheduler.model.quantity import parse as parse_quantity

T = TypeVar("T")

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
TAINT_NO_SCHEDULE = "NoSchedule"
TAINT_NO_EXECUTE = "NoExecute"
TAINT_NONE = "None"
CONFIG_SOURCE_CLASS = "FromClass"
CONFIG_SOURCE_CLAIM = "FromClaim"
ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize


class _Reader:
    """Reads typed fields of one API object, raising InvalidObjectError with the field's path."""

    def __init__(self, obj: str) -> None:
        self.label = obj

    def fail(self, path: str, message: str) -> InvalidObjectError:
        return InvalidObjectError(self.label, path, message)

    def obj(self, value: object, path: str) -> Mapping[str, Any]:
        if type(value) is dict:  # what JSON decodes to: no ABC check (the watch parses every claim it brings)
            return value
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(path, "must be an object")
        return value

    def seq(self, value: object, path: str) -> Sequence[Any]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(path, "must be a list")
        return value

    def text(self, value: object, path: str, required: bool = False) -> str:
        if value is None or value == "":
            if required:
                raise self.fail(path, "required")
            return ""
        if not isinstance(value, str):
            raise self.fail(path, "must be a string")
        return value

    def opt_text(self, value: object, path: str) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(path, "must be a string")
        return value

    def integer(self, value: object, path: str) -> int:
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, "must be an integer")
        return value

    def opt_bool(self, value: object, path: str) -> bool | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            raise self.fail(path, "must be a boolean")
        return value

    def quantity(self, value: object, path: str) -> Decimal:
        return parse_quantity(value, self.label, path)

    def opt_quantity(self, value: object, path: str) -> Decimal | None:
        return None if value is None else self.quantity(value, path)

    def texts(self, value: object, path: str) -> tuple[str, ...]:
        return tuple(self.text(v, f"{path}[{i}]", required=True) for i, v in enumerate(self.seq(value, path)))


def _obj_name(kind: str, obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "")
    label = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
    return name, namespace, label


# --- devices (ResourceSlice) --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    """Exactly one of the values is set (upstream's one-of); list values are DRAListTypeAttributes (alpha)."""

    int_value: int | None = None
    bool_value: bool | None = None
    string_value: str | None = None
    version_value: str | None = None
    int_values: tuple[int, ...] | None = None
    bool_values: tuple[bool, ...] | None = None
    string_values: tuple[str, ...] | None = None
    version_values: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicyRange:
    min: Decimal | None
    max: Decimal | None
    step: Decimal | None


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicy:
    default: Decimal | None
    valid_values: tuple[Decimal, ...]
    valid_range: CapacityRequestPolicyRange | None


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: Decimal
    request_policy: CapacityRequestPolicy | None = None


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class DeviceCounterConsumption:
    counter_set: str
    counters: Mapping[str, Decimal]
    compatibility_groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CounterSet:
    name: str
    counters: Mapping[str, Decimal]


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class Device:
    """One device of a slice. Compared by identity (it holds dicts); weakly referenceable so that
    selector results can be remembered per device object for as long as its slice is current."""

    name: str
    attributes: Mapping[str, DeviceAttribute] = field(default_factory=dict)
    capacity: Mapping[str, DeviceCapacity] = field(default_factory=dict)
    consumes_counters: tuple[DeviceCounterConsumption, ...] = ()
    node_name: str | None = None
    node_selector: Mapping[str, Any] | None = None  # a core/v1 NodeSelector, parsed by the allocator
    all_nodes: bool | None = None
    taints: tuple[DeviceTaint, ...] = ()
    binds_to_node: bool | None = None
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    allow_multiple_allocations: bool | None = None


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    name: str
    driver: str
    pool_name: str
    pool_generation: int
    pool_resource_slice_count: int
    node_name: str | None = None
    node_selector: Mapping[str, Any] | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


def _attribute(r: _Reader, raw: object, path: str) -> DeviceAttribute:
    m = r.obj(raw, path)
    values: dict[str, Any] = {}
    if "int" in m:
        values["int_value"] = r.integer(m["int"], f"{path}.int")
    if "bool" in m:
        values["bool_value"] = r.opt_bool(m["bool"], f"{path}.bool")
    if "string" in m:
        values["string_value"] = r.text(m["string"], f"{path}.string")
    if "version" in m:
        values["version_value"] = r.text(m["version"], f"{path}.version")
    if "ints" in m:
        values["int_values"] = tuple(r.integer(v, f"{path}.ints[{i}]") for i, v in enumerate(r.seq(m["ints"], path)))
    if "bools" in m:
        values["bool_values"] = tuple(bool(r.opt_bool(v, f"{path}.bools[{i}]"))
                                      for i, v in enumerate(r.seq(m["bools"], path)))
    if "strings" in m:
        values["string_values"] = r.texts(m["strings"], f"{path}.strings")
    if "versions" in m:
        values["version_values"] = r.texts(m["versions"], f"{path}.versions")
    if len(values) != 1:
        raise r.fail(path, "exactly one value must be specified")
    return DeviceAttribute(**values)


def _capacity(r: _Reader, raw: object, path: str) -> DeviceCapacity:
    m = r.obj(raw, path)
    if "value" not in m:
        raise r.fail(f"{path}.value", "required")
    policy = None
    if m.get("requestPolicy") is not None:
        p = r.obj(m["requestPolicy"], f"{path}.requestPolicy")
        rng = None
        if p.get("validRange") is not None:
            vr = r.obj(p["validRange"], f"{path}.requestPolicy.validRange")
            rng = CapacityRequestPolicyRange(
                r.opt_quantity(vr.get("min"), f"{path}.requestPolicy.validRange.min"),
                r.opt_quantity(vr.get("max"), f"{path}.requestPolicy.validRange.max"),
                r.opt_quantity(vr.get("step"), f"{path}.requestPolicy.validRange.step"))
        valid = tuple(r.quantity(v, f"{path}.requestPolicy.validValues[{i}]")
                      for i, v in enumerate(r.seq(p.get("validValues"), f"{path}.requestPolicy.validValues")))
        policy = CapacityRequestPolicy(r.opt_quantity(p.get("default"), f"{path}.requestPolicy.default"), valid, rng)
    return DeviceCapacity(r.quantity(m["value"], f"{path}.value"), policy)


def _counters(r: _Reader, raw: object, path: str) -> dict[str, Decimal]:
    out = {}
    for name, c in r.obj(raw, path).items():
        cm = r.obj(c, f"{path}[{name}]")
        out[str(name)] = r.quantity(cm.get("value"), f"{path}[{name}].value")
    return out


def _taints(r: _Reader, raw: object, path: str) -> tuple[DeviceTaint, ...]:
    out = []
    for i, t in enumerate(r.seq(raw, path)):
        tm = r.obj(t, f"{path}[{i}]")
        out.append(_taint(r, tm, f"{path}[{i}]"))
    return tuple(out)


def _taint(r: _Reader, tm: Mapping[str, Any], path: str) -> DeviceTaint:
    return DeviceTaint(r.text(tm.get("key"), f"{path}.key", required=True), r.text(tm.get("value"), f"{path}.value"),
                       r.text(tm.get("effect"), f"{path}.effect", required=True))


def _node_selector(r: _Reader, raw: object, path: str) -> Mapping[str, Any] | None:
    return None if raw is None else r.obj(raw, path)


def _device(r: _Reader, raw: object, path: str) -> Device:
    m = r.obj(raw, path)
    consumes = []
    for i, c in enumerate(r.seq(m.get("consumesCounters"), f"{path}.consumesCounters")):
        cp = f"{path}.consumesCounters[{i}]"
        cm = r.obj(c, cp)
        consumes.append(DeviceCounterConsumption(
            r.text(cm.get("counterSet"), f"{cp}.counterSet", required=True),
            _counters(r, cm.get("counters"), f"{cp}.counters"),
            r.texts(cm.get("compatibilityGroups"), f"{cp}.compatibilityGroups")))
    attrs = {str(k): _attribute(r, v, f"{path}.attributes[{k}]")
             for k, v in r.obj(m.get("attributes"), f"{path}.attributes").items()}
    caps = {str(k): _capacity(r, v, f"{path}.capacity[{k}]")
            for k, v in r.obj(m.get("capacity"), f"{path}.capacity").items()}
    return Device(
        name=r.text(m.get("name"), f"{path}.name", required=True),
        attributes=attrs,
        capacity=caps,
        consumes_counters=tuple(consumes),
        node_name=r.opt_text(m.get("nodeName"), f"{path}.nodeName"),
        node_selector=_node_selector(r, m.get("nodeSelector"), f"{path}.nodeSelector"),
        all_nodes=r.opt_bool(m.get("allNodes"), f"{path}.allNodes"),
        taints=_taints(r, m.get("taints"), f"{path}.taints"),
        binds_to_node=r.opt_bool(m.get("bindsToNode"), f"{path}.bindsToNode"),
        binding_conditions=r.texts(m.get("bindingConditions"), f"{path}.bindingConditions"),
        binding_failure_conditions=r.texts(m.get("bindingFailureConditions"), f"{path}.bindingFailureConditions"),
        allow_multiple_allocations=r.opt_bool(m.get("allowMultipleAllocations"), f"{path}.allowMultipleAllocations"),
    )


def resource_slice_from_api(obj: Mapping[str, Any]) -> ResourceSlice:
    """A ResourceSlice from its JSON form; raises InvalidObjectError for a malformed one."""
    name, _, label = _obj_name("ResourceSlice", obj)
    r = _Reader(label)
    spec = r.obj(obj.get("spec"), "spec")
    pool = r.obj(spec.get("pool"), "spec.pool")
    counter_sets = []
    for i, cs in enumerate(r.seq(spec.get("sharedCounters"), "spec.sharedCounters")):
        csm = r.obj(cs, f"spec.sharedCounters[{i}]")
        counter_sets.append(CounterSet(r.text(csm.get("name"), f"spec.sharedCounters[{i}].name", required=True),
                                       _counters(r, csm.get("counters"), f"spec.sharedCounters[{i}].counters")))
    return ResourceSlice(
        name=name,
        driver=r.text(spec.get("driver"), "spec.driver", required=True),
        pool_name=r.text(pool.get("name"), "spec.pool.name", required=True),
        pool_generation=r.integer(pool.get("generation"), "spec.pool.generation"),
        pool_resource_slice_count=r.integer(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount"),
        node_name=r.opt_text(spec.get("nodeName"), "spec.nodeName"),
        node_selector=_node_selector(r, spec.get("nodeSelector"), "spec.nodeSelector"),
        all_nodes=r.opt_bool(spec.get("allNodes"), "spec.allNodes"),
        per_device_node_selection=r.opt_bool(spec.get("perDeviceNodeSelection"), "spec.perDeviceNodeSelection"),
        devices=tuple(_device(r, d, f"spec.devices[{i}]")
                      for i, d in enumerate(r.seq(spec.get("devices"), "spec.devices"))),
        shared_counters=tuple(counter_sets),
        raw=obj,
    )


# --- DeviceClass ----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DeviceSelector:
    """Only CEL selectors exist in v1; ``cel`` None is a future selector type the allocator refuses."""

    cel: str | None


@dataclass(frozen=True, slots=True)
class DeviceConfiguration:
    """An opaque configuration: passed through to the allocation result unchanged."""

    driver: str
    parameters: Any


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[DeviceSelector, ...] = ()
    config: tuple[DeviceConfiguration, ...] = ()
    extended_resource_name: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


def _selectors(r: _Reader, raw: object, path: str) -> tuple[DeviceSelector, ...]:
    out = []
    for i, s in enumerate(r.seq(raw, path)):
        sm = r.obj(s, f"{path}[{i}]")
        expr = None
        if sm.get("cel") is not None:
            expr = r.text(r.obj(sm["cel"], f"{path}[{i}].cel").get("expression"), f"{path}[{i}].cel.expression",
                         required=True)
        out.append(DeviceSelector(expr))
    return tuple(out)


def _configuration(r: _Reader, m: Mapping[str, Any], path: str) -> DeviceConfiguration:
    opaque = r.obj(m.get("opaque"), f"{path}.opaque")
    return DeviceConfiguration(r.text(opaque.get("driver"), f"{path}.opaque.driver"), opaque.get("parameters"))


def device_class_from_api(obj: Mapping[str, Any]) -> DeviceClass:
    """A DeviceClass from its JSON form; raises InvalidObjectError for a malformed one."""
    name, _, label = _obj_name("DeviceClass", obj)
    r = _Reader(label)
    spec = r.obj(obj.get("spec"), "spec")
    config = tuple(_configuration(r, r.obj(c, f"spec.config[{i}]"), f"spec.config[{i}]")
                   for i, c in enumerate(r.seq(spec.get("config"), "spec.config")))
    return DeviceClass(name, _selectors(r, spec.get("selectors"), "spec.selectors"), config,
                       r.opt_text(spec.get("extendedResourceName"), "spec.extendedResourceName"), raw=obj)


# --- ResourceClaim --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str
    operator: str  # "" means Equal (defaulted by the API server)
    value: str
    effect: str
    toleration_seconds: int | None = None

    def tolerates(self, taint: DeviceTaint) -> bool:
        """``resourceclaim.ToleratesTaint``: empty effect and key match all; unknown operators nothing."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


@dataclass(frozen=True, slots=True)
class DeviceSubRequest:
    """One entry of ``firstAvailable`` (also the shape the allocator reads for an ``exactly`` request)."""

    name: str
    device_class_name: str
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity_requests: Mapping[str, Decimal] | None = None
    has_derived_attributes: bool = False


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """Exactly one of ``exactly`` and ``first_available`` is set (API validation)."""

    name: str
    exactly: DeviceSubRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@dataclass(frozen=True, slots=True)
class DeviceClaimConfiguration:
    requests: tuple[str, ...]
    config: DeviceConfiguration


@dataclass(frozen=True, slots=True)
class DeviceRequestAllocationResult:
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    share_id: str | None = None
    consumed_capacity: Mapping[str, Decimal] | None = None


@dataclass(frozen=True, slots=True)
class DeviceAllocationConfiguration:
    source: str  # FromClass or FromClaim
    requests: tuple[str, ...]
    config: DeviceConfiguration


@dataclass(frozen=True, slots=True)
class AllocationResult:
    """``status.allocation``: the devices per request and where the claim can be used (None: anywhere)."""

    results: tuple[DeviceRequestAllocationResult, ...] = ()
    config: tuple[DeviceAllocationConfiguration, ...] = ()
    node_selector: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ConsumerReference:
    api_group: str
    resource: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    name: str
    namespace: str
    uid: str
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceClaimConfiguration, ...] = ()
    allocation: AllocationResult | None = None
    reserved_for: tuple[ConsumerReference, ...] = ()
    resource_version: str = ""
    controller_uid: str | None = None  # the owner reference with controller: true (a template's pod)
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def key(self) -> str:
        """``klog.KObj(claim)``: namespace/name, as upstream's messages name a claim."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def _tolerations(r: _Reader, raw: object, path: str) -> tuple[DeviceToleration, ...]:
    out = []
    for i, t in enumerate(r.seq(raw, path)):
        p = f"{path}[{i}]"
        tm = r.obj(t, p)
        secs = tm.get("tolerationSeconds")
        out.append(DeviceToleration(r.text(tm.get("key"), f"{p}.key"), r.text(tm.get("operator"), f"{p}.operator"),
                                    r.text(tm.get("value"), f"{p}.value"), r.text(tm.get("effect"), f"{p}.effect"),
                                    None if secs is None else r.integer(secs, f"{p}.tolerationSeconds")))
    return tuple(out)


def _sub_request(r: _Reader, m: Mapping[str, Any], name: str, path: str) -> DeviceSubRequest:
    cap = None
    if m.get("capacity") is not None:
        reqs = r.obj(r.obj(m["capacity"], f"{path}.capacity").get("requests"), f"{path}.capacity.requests")
        cap = {str(k): r.quantity(v, f"{path}.capacity.requests[{k}]") for k, v in reqs.items()}
    mode = r.text(m.get("allocationMode"), f"{path}.allocationMode") or ALLOCATION_MODE_EXACT_COUNT
    count = m.get("count")
    return DeviceSubRequest(
        name=name,
        device_class_name=r.text(m.get("deviceClassName"), f"{path}.deviceClassName"),
        selectors=_selectors(r, m.get("selectors"), f"{path}.selectors"),
        allocation_mode=mode,
        # Defaulted to 1 for ExactCount by the API server; kept as written otherwise.
        count=1 if count is None and mode == ALLOCATION_MODE_EXACT_COUNT else r.integer(count, f"{path}.count"),
        admin_access=r.opt_bool(m.get("adminAccess"), f"{path}.adminAccess"),
        tolerations=_tolerations(r, m.get("tolerations"), f"{path}.tolerations"),
        capacity_requests=cap,
        has_derived_attributes=bool(r.seq(m.get("derivedAttributes"), f"{path}.derivedAttributes")),
    )


def _request(r: _Reader, raw: object, path: str) -> DeviceRequest:
    m = r.obj(raw, path)
    name = r.text(m.get("name"), f"{path}.name", required=True)
    exactly = None
    if m.get("exactly") is not None:
        exactly = _sub_request(r, r.obj(m["exactly"], f"{path}.exactly"), name, f"{path}.exactly")
    subs = []
    for i, s in enumerate(r.seq(m.get("firstAvailable"), f"{path}.firstAvailable")):
        sp = f"{path}.firstAvailable[{i}]"
        sm = r.obj(s, sp)
        subs.append(_sub_request(r, sm, r.text(sm.get("name"), f"{sp}.name", required=True), sp))
    if (exactly is None) == (not subs):
        raise r.fail(path, "exactly one of `exactly` or `firstAvailable` is required")
    return DeviceRequest(name, exactly, tuple(subs))


def _result(r: _Reader, raw: object, path: str) -> DeviceRequestAllocationResult:
    m = r.obj(raw, path)
    consumed = None
    if m.get("consumedCapacity") is not None:
        consumed = {str(k): r.quantity(v, f"{path}.consumedCapacity[{k}]")
                    for k, v in r.obj(m["consumedCapacity"], f"{path}.consumedCapacity").items()}
    return DeviceRequestAllocationResult(
        request=r.text(m.get("request"), f"{path}.request", required=True),
        driver=r.text(m.get("driver"), f"{path}.driver", required=True),
        pool=r.text(m.get("pool"), f"{path}.pool", required=True),
        device=r.text(m.get("device"), f"{path}.device", required=True),
        admin_access=r.opt_bool(m.get("adminAccess"), f"{path}.adminAccess"),
        tolerations=_tolerations(r, m.get("tolerations"), f"{path}.tolerations"),
        binding_conditions=r.texts(m.get("bindingConditions"), f"{path}.bindingConditions"),
        binding_failure_conditions=r.texts(m.get("bindingFailureConditions"), f"{path}.bindingFailureConditions"),
        share_id=r.opt_text(m.get("shareID"), f"{path}.shareID"),
        consumed_capacity=consumed,
    )


def _allocation(r: _Reader, raw: object, path: str) -> AllocationResult:
    m = r.obj(raw, path)
    devices = r.obj(m.get("devices"), f"{path}.devices")
    results = tuple(_result(r, x, f"{path}.devices.results[{i}]")
                    for i, x in enumerate(r.seq(devices.get("results"), f"{path}.devices.results")))
    config = []
    for i, c in enumerate(r.seq(devices.get("config"), f"{path}.devices.config")):
        cp = f"{path}.devices.config[{i}]"
        cm = r.obj(c, cp)
        config.append(DeviceAllocationConfiguration(r.text(cm.get("source"), f"{cp}.source"),
                                                    r.texts(cm.get("requests"), f"{cp}.requests"),
                                                    _configuration(r, cm, cp)))
    return AllocationResult(results, tuple(config), _node_selector(r, m.get("nodeSelector"), f"{path}.nodeSelector"))


def resource_claim_from_api(obj: Mapping[str, Any], previous: ResourceClaim | None = None) -> ResourceClaim:
    """A ResourceClaim (spec and allocation status) from its JSON form; raises InvalidObjectError.
    ``previous``: a claim parsed before (this one's earlier version, or another claim); an equal spec is not parsed
    again (a claim's spec never changes, its status does, and a template's claims share one spec)."""
    name, namespace, label = _obj_name("ResourceClaim", obj)
    r = _Reader(label)
    meta = r.obj(obj.get("metadata"), "metadata")
    spec = obj.get("spec")
    if previous is not None and spec is not None and spec == previous.raw.get("spec"):
        devices, constraints, config = None, previous.constraints, previous.config
    else:
        devices, constraints, config = _claim_devices(r, spec)
    status = r.obj(obj.get("status"), "status")
    allocation = None if status.get("allocation") is None else _allocation(r, status["allocation"], "status.allocation")
    reserved = []
    for i, c in enumerate(r.seq(status.get("reservedFor"), "status.reservedFor")):
        cp = f"status.reservedFor[{i}]"
        cm = r.obj(c, cp)
        reserved.append(ConsumerReference(r.text(cm.get("apiGroup"), f"{cp}.apiGroup"),
                                          r.text(cm.get("resource"), f"{cp}.resource"),
                                          r.text(cm.get("name"), f"{cp}.name"), r.text(cm.get("uid"), f"{cp}.uid")))
    controller = None
    for i, ref in enumerate(r.seq(meta.get("ownerReferences"), "metadata.ownerReferences")):
        rm = r.obj(ref, f"metadata.ownerReferences[{i}]")
        if r.opt_bool(rm.get("controller"), f"metadata.ownerReferences[{i}].controller"):
            controller = r.text(rm.get("uid"), f"metadata.ownerReferences[{i}].uid")
            break
    uid = r.text(meta.get("uid"), "metadata.uid")
    if devices is None:
        assert previous is not None
        requests = previous.requests
    else:
        requests = tuple(_request(r, x, f"spec.devices.requests[{i}]")
                         for i, x in enumerate(r.seq(devices.get("requests"), "spec.devices.requests")))
    return ResourceClaim(
        name=name,
        namespace=namespace,
        uid=uid,
        controller_uid=controller,
        requests=requests,
        constraints=constraints,
        config=config,
        allocation=allocation,
        reserved_for=tuple(reserved),
        resource_version=r.text(meta.get("resourceVersion"), "metadata.resourceVersion"),
        raw=obj,
    )


def _claim_devices(r: _Reader, spec: object) -> tuple[Mapping[str, Any], tuple[DeviceConstraint, ...],
                                                      tuple[DeviceClaimConfiguration, ...]]:
    """``spec.devices``, its constraints and configuration (the requests are read last, as they always were)."""
    devices = r.obj(r.obj(spec, "spec").get("devices"), "spec.devices")
    constraints = _each(r, devices.get("constraints"), "spec.devices.constraints", lambda cm, cp: DeviceConstraint(
        r.texts(cm.get("requests"), f"{cp}.requests"), r.opt_text(cm.get("matchAttribute"), f"{cp}.matchAttribute"),
        r.opt_text(cm.get("distinctAttribute"), f"{cp}.distinctAttribute")))
    config = _each(r, devices.get("config"), "spec.devices.config", lambda cm, cp: DeviceClaimConfiguration(
        r.texts(cm.get("requests"), f"{cp}.requests"), _configuration(r, cm, cp)))
    return devices, constraints, config


def _each(r: _Reader, raw: object, path: str, make: Callable[[Mapping[str, Any], str], T]) -> tuple[T, ...]:
    """Each object of the list at ``path`` made into a T (with its own path, for errors)."""
    return tuple(make(r.obj(c, f"{path}[{i}]"), f"{path}[{i}]") for i, c in enumerate(r.seq(raw, path)))


# --- DeviceTaintRule ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DeviceTaintRule:
    """Adds ``taint`` to every device the selector names (None fields match all; no selector: none)."""

    name: str
    taint: DeviceTaint
    has_selector: bool
    driver: str | None = None
    pool: str | None = None
    device: str | None = None


def device_taint_rule_from_api(obj: Mapping[str, Any]) -> DeviceTaintRule:
    """A DeviceTaintRule from its JSON form; raises InvalidObjectError for a malformed one."""
    name, _, label = _obj_name("DeviceTaintRule", obj)
    r = _Reader(label)
    spec = r.obj(obj.get("spec"), "spec")
    sel_raw = spec.get("deviceSelector")
    sel = r.obj(sel_raw, "spec.deviceSelector")
    return DeviceTaintRule(
        name=name,
        taint=_taint(r, r.obj(spec.get("taint"), "spec.taint"), "spec.taint"),
        has_selector=sel_raw is not None,
        driver=r.opt_text(sel.get("driver"), "spec.deviceSelector.driver"),
        pool=r.opt_text(sel.get("pool"), "spec.deviceSelector.pool"),
        device=r.opt_text(sel.get("device"), "spec.deviceSelector.device"),
    )


# --- back to JSON ---------------------------------------------------------------------------------------

def _quantity_text(q: Decimal) -> str:
    """A quantity as a plain decimal string (a valid quantity; the API server canonicalises it)."""
    return format(q.normalize(), "f") if q != 0 else "0"


def _toleration_to_api(t: DeviceToleration) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (("key", t.key), ("operator", t.operator), ("value", t.value), ("effect", t.effect)):
        if value:
            out[key] = value
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def allocation_result_to_api(result: AllocationResult) -> dict[str, Any]:
    """``status.allocation`` as JSON, fields omitted when empty as Go's ``omitempty`` does (PreBind writes
    it; ``allocationTimestamp`` is the caller's to add)."""
    results = []
    for r in result.results:
        item: dict[str, Any] = {"request": r.request, "driver": r.driver, "pool": r.pool, "device": r.device}
        if r.admin_access is not None:
            item["adminAccess"] = r.admin_access
        if r.tolerations:
            item["tolerations"] = [_toleration_to_api(t) for t in r.tolerations]
        if r.binding_conditions:
            item["bindingConditions"] = list(r.binding_conditions)
        if r.binding_failure_conditions:
            item["bindingFailureConditions"] = list(r.binding_failure_conditions)
        if r.share_id is not None:
            item["shareID"] = r.share_id
        if r.consumed_capacity:
            item["consumedCapacity"] = {k: _quantity_text(v) for k, v in r.consumed_capacity.items()}
        results.append(item)
    devices: dict[str, Any] = {}
    if results:
        devices["results"] = results
    if result.config:
        devices["config"] = [
            {"source": c.source, **({"requests": list(c.requests)} if c.requests else {}),
             "opaque": {"driver": c.config.driver, "parameters": c.config.parameters}}
            for c in result.config]
    out: dict[str, Any] = {"devices": devices}
    if result.node_selector is not None:
        out["nodeSelector"] = dict(result.node_selector)
    return out
