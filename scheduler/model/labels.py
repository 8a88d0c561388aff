"""Label selectors (metav1.LabelSelector) and node selector requirements, matched as upstream."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from scheduler.model.errors import InvalidObjectError

Labels = Mapping[str, str]
Matcher = Callable[[Labels], bool]

LABEL_OPS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
NODE_OPS = LABEL_OPS | {"Gt", "Lt"}

_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def parse_int64(value: str) -> int | None:
    """strconv.ParseInt(value, 10, 64): ASCII digits with an optional sign, no spaces, no underscores,
    within int64; None where Go returns an error (Python's int() accepts " 5", "1_000" and non-ASCII digits)."""
    if not _GO_INT.fullmatch(value):
        return None
    n = int(value)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def is_valid_label_key(key: str) -> bool:
    """validation.IsQualifiedName: [prefix/]name, prefix a DNS subdomain, name at most 63 characters."""
    parts = key.split("/")
    if len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return False
    elif len(parts) == 1:
        name = parts[0]
    else:
        return False
    return 0 < len(name) <= 63 and _QUALIFIED_NAME.fullmatch(name) is not None


def is_valid_label_value(value: str) -> bool:
    """validation.IsValidLabelValue: empty, or a qualified name part of at most 63 characters."""
    return value == "" or (len(value) <= 63 and _QUALIFIED_NAME.fullmatch(value) is not None)


@dataclass(frozen=True, slots=True)
class Requirement:
    """One key/operator/values requirement; Gt and Lt carry one integer."""

    key: str
    op: str
    values: frozenset[str]
    number: int = 0

    def matches(self, labels: Labels) -> bool:
        present = self.key in labels
        if self.op == "In":
            return present and labels[self.key] in self.values
        if self.op == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.op == "Exists":
            return present
        if self.op == "DoesNotExist":
            return not present
        if not present:
            return False
        v = parse_int64(labels[self.key])
        if v is None:
            return False
        return v > self.number if self.op == "Gt" else v < self.number


def parse_requirement(expr: Mapping[str, object], obj: str, fld: str, ops: frozenset[str]) -> Requirement:
    """Validate one matchExpressions entry as labels.NewRequirement does (key a qualified name, values
    label values, Gt/Lt one ParseInt-able value); unknown operators and bad values are errors, not misses."""
    key = expr.get("key")
    op = expr.get("operator")
    raw_values = expr.get("values") or []
    if not isinstance(key, str) or not key:
        raise InvalidObjectError(obj, f"{fld}.key", "must be a non-empty string")
    if not is_valid_label_key(key):
        raise InvalidObjectError(obj, f"{fld}.key", f"{key!r} is not a valid label key")
    if op not in ops:
        raise InvalidObjectError(obj, f"{fld}.operator", f"unknown operator {op!r}")
    if not isinstance(raw_values, list) or not all(isinstance(v, str) for v in raw_values):
        raise InvalidObjectError(obj, f"{fld}.values", "must be a list of strings")
    for i, v in enumerate(raw_values):
        if not is_valid_label_value(v):
            raise InvalidObjectError(obj, f"{fld}.values[{i}]", f"{v!r} is not a valid label value")
    values = frozenset(raw_values)
    if op in ("In", "NotIn") and not values:
        raise InvalidObjectError(obj, f"{fld}.values", f"must be non-empty for operator {op}")
    if op in ("Exists", "DoesNotExist") and values:
        raise InvalidObjectError(obj, f"{fld}.values", f"must be empty for operator {op}")
    number = 0
    if op in ("Gt", "Lt"):
        if len(raw_values) != 1:
            raise InvalidObjectError(obj, f"{fld}.values", f"operator {op} needs exactly one value")
        parsed = parse_int64(raw_values[0])
        if parsed is None:
            raise InvalidObjectError(obj, f"{fld}.values[0]", f"{raw_values[0]!r} is not an integer (operator {op})")
        number = parsed
    return Requirement(key, str(op), values, number)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed metav1.LabelSelector. `nothing` is the nil selector, which matches no object."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Labels) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """An empty (non-nil) selector matches everything."""
        return not self.nothing and not self.requirements


NOTHING = LabelSelector(nothing=True)


def parse_label_selector(sel: object, obj: str, fld: str) -> LabelSelector:
    """metav1.LabelSelectorAsSelector: nil matches nothing, {} matches everything."""
    if sel is None:
        return NOTHING
    if not isinstance(sel, Mapping):
        raise InvalidObjectError(obj, fld, "must be an object")
    reqs: list[Requirement] = []
    match_labels = sel.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise InvalidObjectError(obj, f"{fld}.matchLabels", "must be a map")
    for k, v in match_labels.items():
        if not is_valid_label_key(str(k)):
            raise InvalidObjectError(obj, f"{fld}.matchLabels", f"{str(k)!r} is not a valid label key")
        if not is_valid_label_value(str(v)):
            raise InvalidObjectError(obj, f"{fld}.matchLabels.{k}", f"{str(v)!r} is not a valid label value")
        reqs.append(Requirement(str(k), "In", frozenset({str(v)})))
    for i, expr in enumerate(sel.get("matchExpressions") or []):
        reqs.append(parse_requirement(expr, obj, f"{fld}.matchExpressions[{i}]", LABEL_OPS))
    return LabelSelector(tuple(reqs))


def requirements_match(reqs: Sequence[Requirement], labels: Labels) -> bool:
    return all(r.matches(labels) for r in reqs)
