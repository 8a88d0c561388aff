"""The Kubernetes CEL library functions DRA selectors may call, for cel-expr-python (Google's cel-cpp).

Follows ``k8s.io/apiserver/pkg/cel/library/``: ``k8s.io/apiserver/pkg/cel/library/quantity.go`` (quantity, isQuantity
and the Quantity methods), ``k8s.io/apiserver/pkg/cel/library/semverlib.go`` (semver, isSemver, with and without
normalisation, and the Semver methods), ``k8s.io/apiserver/pkg/cel/library/lists.go`` (isSorted, sum, min, max; not
indexOf and lastIndexOf on lists, as cel-cpp's strings extension owns those names),
``k8s.io/apiserver/pkg/cel/library/regex.go`` (find, findAll) and cel-go's ``ext.Sets`` (sets.contains,
sets.equivalent, sets.intersects). cel-cpp supplies the standard library and the strings, optional-types and bindings
extensions itself.

Quantities and semantic versions are opaque types upstream (``kubernetes.Quantity``,
``kubernetes.Semver``); cel-cpp cannot carry Python objects, so they travel as small protobuf
messages of those names built here at import time. Their fields hold a canonical form, so that
CEL's ``==`` on two of them compares values as upstream's ``Equal`` does (``1000m == 1``; versions
ignore build metadata).

A function raises :class:`CelFunctionError` with upstream's message; the caller strips cel-cpp's
status prefix from the error value it gets back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from kubernetes.utils import parse_quantity

QUANTITY_FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_QUANTITY_FORMAT = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class CelFunctionError(ValueError):
    """A library function failed at run time; the message is upstream's."""


def _build_pool() -> tuple[descriptor_pool.DescriptorPool, Any, Any]:
    """A descriptor pool with the two opaque value types as messages in package ``kubernetes``."""
    fdp = descriptor_pb2.FileDescriptorProto(name="py_scheduler_dra_cel.proto", package="kubernetes",
                                             syntax="proto3")
    q = fdp.message_type.add(name="Quantity")
    q.field.add(name="py_decimal", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    s = fdp.message_type.add(name="Semver")
    for i, fname in enumerate(("py_major", "py_minor", "py_patch"), start=1):
        s.field.add(name=fname, number=i, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    s.field.add(name="py_pre", number=4, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    qcls = message_factory.GetMessageClass(pool.FindMessageTypeByName("kubernetes.Quantity"))
    scls = message_factory.GetMessageClass(pool.FindMessageTypeByName("kubernetes.Semver"))
    return pool, qcls, scls


POOL, _QuantityMsg, _SemverMsg = _build_pool()
QUANTITY = cel.Type("kubernetes.Quantity")
SEMVER = cel.Type("kubernetes.Semver")


# --- quantity -----------------------------------------------------------------------------------------

def quantity_value(d: Decimal) -> Any:
    """The CEL value of an exact quantity."""
    text = format(d.normalize(), "f") if d != 0 else "0"
    return _QuantityMsg(py_decimal=text)


def _dec(q: Any) -> Decimal:
    return Decimal(q.py_decimal)


def parse_quantity_text(s: str) -> Decimal:
    """``resource.ParseQuantity`` (exact); raises CelFunctionError with upstream's format message.

    The official client's parser is lenient (it accepts blanks); upstream's format is checked first."""
    if not _QUANTITY_FORMAT.match(s):
        raise CelFunctionError(QUANTITY_FORMAT_ERROR)
    try:
        return Decimal(parse_quantity(s))
    except (ValueError, TypeError, InvalidOperation) as exc:
        raise CelFunctionError(QUANTITY_FORMAT_ERROR) from exc


def _is_quantity(s: str) -> bool:
    try:
        parse_quantity_text(s)
    except CelFunctionError:
        return False
    return True


def _cmp(a: Decimal, b: Decimal) -> int:
    return (a > b) - (a < b)


def _as_int64(q: Any) -> int:
    d = _dec(q)
    if d != d.to_integral_value() or not _INT64_MIN <= int(d) <= _INT64_MAX:
        raise CelFunctionError("cannot convert value to integer")
    return int(d)


def _is_integer(q: Any) -> bool:
    d = _dec(q)
    return d == d.to_integral_value() and _INT64_MIN <= int(d) <= _INT64_MAX


# --- semver -------------------------------------------------------------------------------------------

_NUM = re.compile(r"^[0-9]+$")
_IDENT = re.compile(r"^[0-9A-Za-z-]+$")


def _parse_semver(s: str) -> tuple[int, int, int, tuple[str, ...]]:
    """blang/semver ``Parse``: strict MAJOR.MINOR.PATCH[-PRE][+BUILD], its error messages."""
    if not s:
        raise CelFunctionError("Version string empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise CelFunctionError("No Major.Minor.Patch elements found")
    nums = []
    for label, p in zip(("major", "minor"), parts[:2], strict=True):
        if not _NUM.match(p):
            raise CelFunctionError(f"Invalid character(s) found in {label} number {p!r}".replace("'", '"'))
        if len(p) > 1 and p[0] == "0":
            raise CelFunctionError(f'{label.capitalize()} number must not contain leading zeroes "{p}"')
        nums.append(int(p))
    rest = parts[2]
    build = ""
    if "+" in rest:
        rest, build = rest.split("+", 1)
    pre = ""
    if "-" in rest:
        rest, pre = rest.split("-", 1)
    if not _NUM.match(rest):
        raise CelFunctionError(f'Invalid character(s) found in patch number "{rest}"')
    if len(rest) > 1 and rest[0] == "0":
        raise CelFunctionError(f'Patch number must not contain leading zeroes "{rest}"')
    nums.append(int(rest))
    pres: tuple[str, ...] = ()
    if pre:
        pres = tuple(pre.split("."))
        for p in pres:
            if not p:
                raise CelFunctionError("Prerelease is empty")
            if not _IDENT.match(p):
                raise CelFunctionError(f'Invalid character(s) found in prerelease "{p}"')
            if _NUM.match(p) and len(p) > 1 and p[0] == "0":
                raise CelFunctionError(f'Number "{p}" must not contain leading zeroes')
    if build:
        for b in build.split("."):
            if not b:
                raise CelFunctionError("Build meta data is empty")
            if not _IDENT.match(b):
                raise CelFunctionError(f'Invalid character(s) found in build meta data "{b}"')
    return nums[0], nums[1], nums[2], pres


def _normalize_semver(s: str) -> str:
    """semverlib's ``normalizeAndParse`` before parsing: drop ``v``, strip leading zeros, pad parts."""
    s = s.removeprefix("v")
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or not p[0].isdigit():
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise CelFunctionError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def semver_value(s: str, normalize: bool = False) -> Any:
    """The CEL value of a version string; raises CelFunctionError for an invalid one."""
    major, minor, patch, pre = _parse_semver(_normalize_semver(s) if normalize else s)
    return _SemverMsg(py_major=major, py_minor=minor, py_patch=patch, py_pre=".".join(pre))


def _is_semver(s: str, normalize: bool = False) -> bool:
    try:
        semver_value(s, normalize)
    except CelFunctionError:
        return False
    return True


def _pre_cmp(a: str, b: str) -> int:
    """Semver 2.0 precedence of pre-release strings (empty: a release, higher than any pre-release)."""
    if a == b:
        return 0
    if not a:
        return 1
    if not b:
        return -1
    pa, pb = a.split("."), b.split(".")
    for x, y in zip(pa, pb, strict=False):
        if x == y:
            continue
        xn, yn = x.isdigit(), y.isdigit()
        if xn and yn:
            return _cmp(Decimal(int(x)), Decimal(int(y)))
        if xn != yn:
            return -1 if xn else 1
        return -1 if x < y else 1
    return _cmp(Decimal(len(pa)), Decimal(len(pb)))


def _semver_cmp(a: Any, b: Any) -> int:
    for x, y in ((a.py_major, b.py_major), (a.py_minor, b.py_minor), (a.py_patch, b.py_patch)):
        if x != y:
            return -1 if x < y else 1
    return _pre_cmp(a.py_pre, b.py_pre)


# --- lists, regex, sets -------------------------------------------------------------------------------

def _is(value: Any, full_name: str) -> bool:
    """Whether a value is one of the opaque messages (cel-cpp hands back instances of its own class)."""
    descriptor = getattr(value, "DESCRIPTOR", None)
    return descriptor is not None and descriptor.full_name == full_name


def _compare(a: Any, b: Any) -> int:
    """compareTo of two quantities or two versions; anything else has no such overload."""
    if _is(a, "kubernetes.Quantity") and _is(b, "kubernetes.Quantity"):
        return _cmp(_dec(a), _dec(b))
    if _is(a, "kubernetes.Semver") and _is(b, "kubernetes.Semver"):
        return _semver_cmp(a, b)
    raise CelFunctionError("no such overload")


def _comparable(items: Sequence[Any]) -> list[Any]:
    return [_dec(i) if _is(i, "kubernetes.Quantity") else i for i in items]


def _is_sorted(items: list[Any]) -> bool:
    vals = _comparable(items)
    return all(vals[i] <= vals[i + 1] for i in range(len(vals) - 1))


def _sum(items: list[Any]) -> Any:
    total: Any = 0
    for i in items:
        total = total + i
    return total


def _extreme(name: str, pick: Callable[[Any], Any]) -> Callable[[list[Any]], Any]:
    def fn(items: list[Any]) -> Any:
        if not items:
            raise CelFunctionError(f"{name} called on empty list")
        return pick(items)
    return fn


def _find(s: str, pattern: str) -> str:
    m = re.search(pattern, s)
    return m.group(0) if m else ""


def _find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    out = [m.group(0) for m in re.finditer(pattern, s)]
    return out if limit < 0 else out[:limit]


def _overload(oid: str, ret: cel.Type, params: list[cel.Type], impl: Callable[..., Any],
              member: bool = False) -> cel.Overload:
    return cel.Overload(oid, ret, params, is_member=member, impl=impl)


def functions() -> list[cel.FunctionDecl]:
    """Declarations (with implementations) of every library function named in the module docstring."""
    S, B, INT, D, DYN = cel.Type.STRING, cel.Type.BOOL, cel.Type.INT, cel.Type.DOUBLE, cel.Type.DYN
    Q, V = QUANTITY, SEMVER
    LD = cel.Type.List(DYN)
    fn = cel.FunctionDecl
    return [
        fn("quantity", [_overload("string_to_quantity", Q, [S], lambda s: quantity_value(parse_quantity_text(s)))]),
        fn("isQuantity", [_overload("is_quantity_string", B, [S], _is_quantity)]),
        fn("sign", [_overload("quantity_sign", INT, [Q], lambda q: _cmp(_dec(q), Decimal(0)))]),  # global upstream
        fn("asApproximateFloat", [_overload("quantity_get_float", D, [Q], lambda q: float(_dec(q)), True)]),
        fn("asInteger", [_overload("quantity_get_int", INT, [Q], _as_int64, True)]),
        fn("isInteger", [_overload("quantity_is_integer", B, [Q], _is_integer, True)]),
        fn("add", [_overload("quantity_add", Q, [Q, Q], lambda a, b: quantity_value(_dec(a) + _dec(b)), True),
                   _overload("quantity_add_int", Q, [Q, INT], lambda a, b: quantity_value(_dec(a) + b), True)]),
        fn("sub", [_overload("quantity_sub", Q, [Q, Q], lambda a, b: quantity_value(_dec(a) - _dec(b)), True),
                   _overload("quantity_sub_int", Q, [Q, INT], lambda a, b: quantity_value(_dec(a) - b), True)]),
        fn("semver", [_overload("string_to_semver", V, [S], semver_value),
                      _overload("string_bool_to_semver", V, [S, B], semver_value)]),
        fn("isSemver", [_overload("is_semver_string", B, [S], _is_semver),
                        _overload("is_semver_string_bool", B, [S, B], _is_semver)]),
        fn("major", [_overload("semver_major", INT, [V], lambda v: v.py_major, True)]),
        fn("minor", [_overload("semver_minor", INT, [V], lambda v: v.py_minor, True)]),
        fn("patch", [_overload("semver_patch", INT, [V], lambda v: v.py_patch, True)]),
        # cel-cpp registers implementations by run-time kind and both opaque types are messages: the
        # quantity overload carries the one implementation (dispatching on the values' types), the
        # semver overload only its declaration, so the checker still sees upstream's signatures.
        fn("isGreaterThan", [_overload("quantity_is_greater_than", B, [Q, Q], lambda a, b: _compare(a, b) == 1, True),
                             cel.Overload("semver_is_greater_than", B, [V, V], is_member=True)]),
        fn("isLessThan", [_overload("quantity_is_less_than", B, [Q, Q], lambda a, b: _compare(a, b) == -1, True),
                          cel.Overload("semver_is_less_than", B, [V, V], is_member=True)]),
        fn("compareTo", [_overload("quantity_compare_to", INT, [Q, Q], _compare, True),
                         cel.Overload("semver_compare_to", INT, [V, V], is_member=True)]),
        fn("isSorted", [_overload("list_is_sorted", B, [LD], _is_sorted, True)]),
        fn("sum", [_overload("list_sum", DYN, [LD], _sum, True)]),
        fn("min", [_overload("list_min", DYN, [LD], _extreme("min", min), True)]),
        fn("max", [_overload("list_max", DYN, [LD], _extreme("max", max), True)]),
        fn("find", [_overload("string_find_string", S, [S, S], _find, True)]),
        fn("findAll", [_overload("string_find_all_string", cel.Type.List(S), [S, S], _find_all, True),
                       _overload("string_find_all_string_int", cel.Type.List(S), [S, S, INT], _find_all, True)]),
        fn("sets.contains", [_overload("list_sets_contains_list", B, [LD, LD],
                                       lambda a, b: all(x in a for x in b))]),
        fn("sets.equivalent", [_overload("list_sets_equivalent_list", B, [LD, LD],
                                         lambda a, b: all(x in b for x in a) and all(x in a for x in b))]),
        fn("sets.intersects", [_overload("list_sets_intersects_list", B, [LD, LD],
                                         lambda a, b: any(x in b for x in a))]),
    ]
