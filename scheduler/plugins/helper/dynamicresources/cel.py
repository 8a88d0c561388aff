"""The CEL environment of DRA device selectors, compiled once per expression and cached.

Follows ``k8s.io/dynamic-resource-allocation/cel/`` (``k8s.io/dynamic-resource-allocation/cel/compile.go``,
``k8s.io/dynamic-resource-allocation/cel/cache.go``, ``k8s.io/dynamic-resource-allocation/cel/errors.go``) with
v1.37.2's default features (DRAConsumableCapacity on, DRAListTypeAttributes off): the one variable ``device`` with
``driver``, ``allowMultipleAllocations``, ``attributes`` and ``capacity``; attributes and capacities keyed by domain
then identifier, a name without a domain filed under the driver's name; a missing domain reads as an empty map, so
``device.attributes["other.example.com"].x`` fails with ``no such key: x`` and ``has()`` on it is false. The
expression must evaluate to bool.

The library is cel-expr-python (Google's cel-cpp) with its optional-types, strings and bindings
extensions plus the Kubernetes functions of :mod:`.cel_library`. Differences from upstream's cel-go
environment, kept small and stated (docs/dra.md lists them too):

* ``device`` is type-checked as an object (``kubernetes.DRADevice``, a protobuf message whose
  attribute and capacity domains are ``google.protobuf.Struct``: maps of string to dyn) but runs as a
  map, since cel-cpp values cannot be Python objects; so a capacity is ``dyn`` to the checker, not a
  Quantity (``device.capacity[d].memory > 1`` fails at run time, not at compile time).
* a missing domain is an empty map only for domains written as string literals in the expression
  (how selectors name them); a domain computed at run time reads as missing.
* the run-time cost limit (``CELSelectorExpressionMaxCost``, 1,000,000) is not tracked: cel-cpp has
  no cost tracker in Python. The API server already refuses selectors whose estimated cost is above
  it when a claim or class is stored, and the actual cost never exceeds the estimate; only objects
  that bypass the API server (``simulate`` files) could hold a selector upstream would stop.
* the URL, IP, CIDR, Kubernetes format, two-variable comprehension and ext.Lists libraries are not declared:
  a selector using them fails to compile with ``undeclared reference``.
* run-time error texts are translated to cel-go's where they differ (:func:`runtime_error_text`);
  docs/dra.md lists the remaining differences (``e2e/dra_allocator/diff.py --cel`` shows them).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings
from google.protobuf import descriptor_pb2, struct_pb2

from scheduler.model.dra import DeviceAttribute, DeviceCapacity
from scheduler.plugins.helper.dynamicresources import cel_library
from scheduler.plugins.helper.dynamicresources.cel_library import CelFunctionError

CACHE_SIZE = 10  # pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go: cel.NewCache(10, ...)


class CelRuntimeError(ValueError):
    """An expression failed while evaluated against one device; ``str()`` is upstream's text."""


@dataclass(slots=True)
class CelDevice:
    """What a selector sees of a device (``cel.Device``); its CEL value is built once, on first use."""

    driver: str
    attributes: Mapping[str, DeviceAttribute]
    capacity: Mapping[str, DeviceCapacity]
    allow_multiple_allocations: bool | None = None
    _value: dict[str, Any] | None = field(default=None, compare=False, repr=False)


_env_lock = threading.Lock()
_envs: dict[str, Any] = {}


def _extensions() -> list[Any]:
    return [ext_optional.ExtOptional(), ext_strings.ExtStrings(), ext_bindings.ExtBindings()]


def environment() -> Any:
    """The environment programs run in: ``device`` is a map, so it can carry quantities and versions."""
    with _env_lock:
        if "run" not in _envs:
            device = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
            _envs["run"] = cel.NewEnv(cel_library.POOL, variables={"device": device},
                                      extensions=_extensions(), functions=cel_library.functions())
        return _envs["run"]


def _add_device_type(pool: Any) -> None:
    """``kubernetes.DRADevice`` as a message: driver, allowMultipleAllocations, and the attribute and
    capacity maps whose domain values are ``google.protobuf.Struct`` (CEL's map of string to dyn)."""
    field_type = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="py_scheduler_dra_device.proto", package="kubernetes",
                                             syntax="proto3", dependency=["google/protobuf/struct.proto"])
    msg = fdp.message_type.add(name="DRADevice")
    msg.field.add(name="driver", number=1, type=field_type.TYPE_STRING, label=field_type.LABEL_OPTIONAL)
    msg.field.add(name="allowMultipleAllocations", number=2, type=field_type.TYPE_BOOL,
                  label=field_type.LABEL_OPTIONAL)
    for number, name in ((3, "attributes"), (4, "capacity")):
        entry = msg.nested_type.add(name=name.capitalize() + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=field_type.TYPE_STRING, label=field_type.LABEL_OPTIONAL)
        entry.field.add(name="value", number=2, type=field_type.TYPE_MESSAGE, type_name=".google.protobuf.Struct",
                        label=field_type.LABEL_OPTIONAL)
        msg.field.add(name=name, number=number, type=field_type.TYPE_MESSAGE,
                      type_name=f".kubernetes.DRADevice.{name.capitalize()}Entry", label=field_type.LABEL_REPEATED)
    try:
        pool.FindFileByName("google/protobuf/struct.proto")
    except KeyError:
        pool.AddSerializedFile(struct_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)


def checking_environment() -> Any:
    """The environment expressions are type-checked in: ``device`` is an object with typed fields, as
    upstream declares it, so ``device.foo`` and ``device.driver == 1`` fail to compile as there."""
    with _env_lock:
        if "check" not in _envs:
            _add_device_type(cel_library.POOL)
            _envs["check"] = cel.NewEnv(cel_library.POOL, variables={"device": cel.Type("kubernetes.DRADevice")},
                                        extensions=_extensions(), functions=cel_library.functions())
        return _envs["check"]


# --- static look at the source ------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<str>[rR]?(?:'''(?:.|\n)*?'''|\"\"\"(?:.|\n)*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))"""
)


def _literal_text(token: str) -> str:
    """The value of a simple string literal (escapes other than quotes are kept as written)."""
    raw = token[0] in "rR"
    body = token[1:] if raw else token
    q = 3 if body[:3] in ("'''", '"""') else 1
    body = body[q:-q]
    return body if raw else re.sub(r"\\(['\"\\])", r"\1", body)


def _literals(expression: str) -> frozenset[str]:
    """The string literals of the expression (the domains a selector names)."""
    return frozenset(_literal_text(m.group("str")) for m in _TOKEN.finditer(expression))


# --- types and errors in cel-go's words ---------------------------------------------------------------

def _go_type(name: str) -> str:
    """cel-cpp's type name (``LIST<STRING>``) as cel-go writes it (``list(string)``)."""
    m = re.fullmatch(r"(LIST|MAP)<(.*)>", name)
    if m:
        inner = m.group(2)
        if m.group(1) == "LIST":
            return f"list({_go_type(inner)})"
        depth = 0
        for i, ch in enumerate(inner):
            depth += ch == "<"
            depth -= ch == ">"
            if ch == "," and depth == 0:
                return f"map({_go_type(inner[:i].strip())}, {_go_type(inner[i + 1:].strip())})"
    simple = {"BOOL": "bool", "INT": "int", "UINT": "uint", "DOUBLE": "double", "STRING": "string",
              "BYTES": "bytes", "NULL": "null_type", "DYN": "dyn", "TIMESTAMP": "google.protobuf.Timestamp",
              "DURATION": "google.protobuf.Duration"}
    return simple.get(name, name)


_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")


def _strip_status(text: str) -> str:
    return _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text, count=1))


def runtime_error_text(text: str) -> str:
    """cel-cpp's error value as cel-go's error text, with ``EnhanceRuntimeError``'s hint added."""
    text = _strip_status(text)
    m = re.fullmatch(r'Key not found in map : "?(.*?)"?', text)
    if m:
        text = f"no such key: {m.group(1)}"
    elif text == "divide by zero":
        text = "division by zero"
    elif text == "modulus by zero":
        text = "modulus by zero"
    elif text.startswith("No matching overloads found"):
        text = "no such overload"
    else:
        index = re.fullmatch(r"Index error: index=(-?\d+) size=\d+", text)
        if index:
            text = f"index out of bounds: {index.group(1)}"
    if "no such key:" in text:
        text += (". consider using CEL optional chaining (.? followed by orValue()) or guarding the check"
                 " with has() for optional fields")
    return text


def _conversion_error(go_type: str) -> str:
    """cel-go's ``ConvertToNative(bool)`` error for a non-bool result (its wording varies by type)."""
    if go_type == "string":
        return "unsupported native conversion from string to 'bool'"
    return f"unsupported type conversion from '{go_type}' to bool"


# --- compile and evaluate -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CompilationResult:
    """A compiled selector; ``error`` is set instead of ``program`` when compilation failed."""

    expression: str
    program: Any = None
    literals: frozenset[str] = frozenset()
    error: str | None = None
    # Result (or run-time error text) per device object and driver: a selector's outcome depends on
    # them alone, so it is kept for as long as the device object (its slice) and this compilation live.
    outcomes: WeakKeyDictionary[Any, dict[str, bool | str]] = field(default_factory=WeakKeyDictionary,
                                                                    repr=False, compare=False)

    def device_matches_cached(self, key: Any, driver: str, device: Callable[[], CelDevice]) -> bool:
        """:meth:`device_matches` remembered per device object ``key`` and ``driver``; ``device``
        builds the input on a miss."""
        per_driver = self.outcomes.get(key)
        if per_driver is None:
            per_driver = self.outcomes[key] = {}
        outcome = per_driver.get(driver)
        if outcome is None:
            try:
                outcome = self.device_matches(device())
            except CelRuntimeError as exc:
                outcome = str(exc)
            per_driver[driver] = outcome
        if isinstance(outcome, str):
            raise CelRuntimeError(outcome)
        return outcome

    def device_matches(self, device: CelDevice) -> bool:
        """Evaluate against one device (``CompilationResult.DeviceMatches``); raises CelRuntimeError."""
        if self.program is None:
            raise CelRuntimeError(self.error or "not compiled")
        try:
            data = {"device": device_value(device, self.literals)}
        except CelFunctionError as exc:
            raise CelRuntimeError(str(exc)) from None
        value = self.program.eval(data=data)
        kind = value.type().name()
        if kind == "ERROR":
            raise CelRuntimeError(runtime_error_text(str(value.value())))
        result = value.value()
        if not isinstance(result, bool):
            raise CelRuntimeError(f"CEL result of type {_go_type(kind)} could not be converted to bool: "
                                  + _conversion_error(_go_type(kind)))
        return result


_STRUCT_FIELD = re.compile(r"(undefined field '[^']*') not found in struct '[^']*'")


def compile_selector(expression: str) -> CompilationResult:
    """``CompileCELExpression`` for a selector: type-checked against the typed ``device``, output must
    be bool (or dyn); the program itself is compiled for the map-typed environment it runs in."""
    checking, running = checking_environment(), environment()
    try:
        checked = checking.compile(expression)
    except RuntimeError as exc:
        detail = _STRUCT_FIELD.sub(r"\1", _strip_status(str(exc)))
        return CompilationResult(expression, error="compilation failed: " + detail)
    out = checked.return_type().name()
    if out not in ("BOOL", "DYN"):
        return CompilationResult(expression, error=f"must evaluate to bool or the unknown type, not {_go_type(out)}")
    try:
        program = running.compile(expression)
    except RuntimeError as exc:
        return CompilationResult(expression, error="compilation failed: " + _strip_status(str(exc)))
    return CompilationResult(expression, program, _literals(expression))


def _attribute_value(attr: DeviceAttribute) -> Any:
    """``getAttributeValue``: the one value set, versions as semver values."""
    if attr.int_values is not None:
        return list(attr.int_values)
    if attr.bool_values is not None:
        return list(attr.bool_values)
    if attr.string_values is not None:
        return list(attr.string_values)
    if attr.version_values is not None:
        return [_version(v) for v in attr.version_values]
    if attr.int_value is not None:
        return attr.int_value
    if attr.bool_value is not None:
        return attr.bool_value
    if attr.string_value is not None:
        return attr.string_value
    if attr.version_value is not None:
        return _version(attr.version_value)
    raise CelFunctionError("unsupported attribute value")


def _version(text: str) -> Any:
    try:
        return cel_library.semver_value(text)
    except CelFunctionError as exc:
        raise CelFunctionError(f"parse semantic version: {exc}") from None


def _split(name: str, driver: str) -> tuple[str, str]:
    """``parseQualifiedName``: ``domain/id``, or the driver's name as domain."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _base_value(device: CelDevice) -> dict[str, Any]:
    """The ``device`` variable without the literal domains (built once per CelDevice)."""
    if device._value is not None:
        return device._value
    attributes: dict[str, dict[str, Any]] = {}
    for name, attr in device.attributes.items():
        domain, ident = _split(name, device.driver)
        try:
            attributes.setdefault(domain, {})[ident] = _attribute_value(attr)
        except CelFunctionError as exc:
            raise CelFunctionError(f"attribute {name}: {exc}") from None
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in device.capacity.items():
        domain, ident = _split(name, device.driver)
        capacity.setdefault(domain, {})[ident] = cel_library.quantity_value(cap.value)
    device._value = {"driver": device.driver, "allowMultipleAllocations": bool(device.allow_multiple_allocations),
                     "attributes": attributes, "capacity": capacity}
    return device._value


def _with_domains(domains: dict[str, dict[str, Any]], literals: frozenset[str]) -> dict[str, dict[str, Any]]:
    missing = [lit for lit in literals if lit not in domains]
    if not missing:
        return domains
    out = dict(domains)
    for lit in missing:
        out[lit] = {}
    return out


def device_value(device: CelDevice, literals: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The ``device`` variable; every literal of the expression reads as a domain (empty if absent)."""
    base = _base_value(device)
    if not literals:
        return base
    return dict(base, attributes=_with_domains(base["attributes"], literals),
                capacity=_with_domains(base["capacity"], literals))


class CelCache:
    """``cel.Cache``: an LRU of successfully compiled selectors (failures are compiled anew each time)."""

    def __init__(self, max_entries: int = CACHE_SIZE) -> None:
        self._max = max_entries
        self._entries: OrderedDict[str, CompilationResult] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_compile(self, expression: str) -> CompilationResult:
        with self._lock:
            hit = self._entries.get(expression)
            if hit is not None:
                self._entries.move_to_end(expression)
                return hit
        result = compile_selector(expression)
        if result.error is None:
            with self._lock:
                self._entries[expression] = result
                self._entries.move_to_end(expression)
                while len(self._entries) > self._max:
                    self._entries.popitem(last=False)
        return result
