"""Node selector terms, parsed once and matched against nodes (upstream component-helpers
``k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go``, with its validation messages).

Shared by NodeAffinity (required and preferred terms) and the volume helpers (a PersistentVolume's node
affinity); a helper, so that the volume helpers need not import a plugin.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.errors import InvalidObjectError
from scheduler.model.labels import (
    NODE_OPS,
    Requirement,
    is_valid_label_key,
    is_valid_label_value,
    parse_int64,
    parse_requirement,
    requirements_match,
)
from scheduler.model.node import Node

OBJECT_NAME_FIELD = "metadata.name"


# --- parsed terms -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One matchFields entry. Only metadata.name exists on a node; other keys read as ""."""

    key: str
    op: str
    value: str

    def matches(self, node_name: str) -> bool:
        actual = node_name if self.key == OBJECT_NAME_FIELD else ""
        return actual == self.value if self.op == "In" else actual != self.value


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A parsed term. `labels`/`fields` are None when the term has no such list; `errors` non-empty
    means the term could not be parsed and never matches."""

    labels: tuple[Requirement, ...] | None
    fields: tuple[FieldRequirement, ...] | None
    errors: tuple[str, ...] = ()
    # metadata.name In values per matchFields entry (raw, even if malformed): PreFilter uses them.
    name_in_sets: tuple[frozenset[str], ...] = ()

    def matches(self, node: Node) -> bool:
        if self.errors or (self.labels is None and self.fields is None):
            return False
        if self.labels is not None and not requirements_match(self.labels, node.labels):
            return False
        return not (self.fields is not None and node.name and not all(f.matches(node.name) for f in self.fields))


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    """A preferred scheduling term that counts: weight != 0 and a non-empty preference."""

    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """nodeSelector map (None when empty) AND the required terms (None when the pod has none)."""

    node_selector: Mapping[str, str] | None
    terms: tuple[NodeSelectorTerm, ...] | None
    selector_error: str | None = None  # spec.nodeSelector is not a map: nothing can match

    def match(self, node: Node) -> tuple[bool, bool]:
        """(matched, had parse errors): the lazy matcher skips bad terms and reports them only when
        no term matched."""
        if self.selector_error is not None:
            return False, True
        if self.node_selector is not None and any(node.labels.get(k) != v for k, v in self.node_selector.items()):
            return False, False
        if self.terms is None:
            return True, False
        errors = False
        for term in self.terms:
            if term.errors:
                errors = True
            elif term.matches(node):
                return True, False
        return False, errors



def _str_list(raw: object) -> list[str] | None:
    if raw is None:
        return []
    if isinstance(raw, list) and all(isinstance(v, str) for v in raw):
        return raw
    return None


def _parse_field(expr: object, obj: str, fld: str) -> FieldRequirement:
    """nodeSelectorRequirementsAsFieldSelector: In/NotIn with exactly one value."""
    if not isinstance(expr, Mapping):
        raise InvalidObjectError(obj, fld, "must be an object")
    key, op, values = expr.get("key"), expr.get("operator"), _str_list(expr.get("values"))
    if not isinstance(key, str):
        raise InvalidObjectError(obj, f"{fld}.key", "must be a string")
    if op not in ("In", "NotIn"):
        raise InvalidObjectError(obj, f"{fld}.operator", f"unknown operator {op!r}: supported values: In, NotIn")
    if values is None or len(values) != 1:
        raise InvalidObjectError(obj, f"{fld}.values", "must have one element")
    return FieldRequirement(key, str(op), values[0])


def _name_in_set(expr: object) -> frozenset[str] | None:
    if not isinstance(expr, Mapping) or expr.get("key") != OBJECT_NAME_FIELD or expr.get("operator") != "In":
        return None
    return frozenset(_str_list(expr.get("values")) or ())


def parse_term(raw: object, obj: str, fld: str) -> NodeSelectorTerm:
    """newNodeSelectorTerm: every error of the term is kept, so the reason can name them all."""
    if not isinstance(raw, Mapping):
        return NodeSelectorTerm(None, None, (str(InvalidObjectError(obj, fld, "must be an object")),))
    errors: list[str] = []
    labels: tuple[Requirement, ...] | None = None
    fields: tuple[FieldRequirement, ...] | None = None
    exprs, field_exprs = raw.get("matchExpressions") or [], raw.get("matchFields") or []
    if not isinstance(exprs, list) or not isinstance(field_exprs, list):
        return NodeSelectorTerm(
            None, None, (str(InvalidObjectError(obj, fld, "matchExpressions/matchFields must be lists")),)
        )
    if exprs:
        reqs = []
        for i, expr in enumerate(exprs):
            try:
                if not isinstance(expr, Mapping):
                    raise InvalidObjectError(obj, f"{fld}.matchExpressions[{i}]", "must be an object")
                reqs.append(parse_requirement(expr, obj, f"{fld}.matchExpressions[{i}]", NODE_OPS))
            except InvalidObjectError as exc:
                errors.append(str(exc))
        labels = tuple(reqs)
    if field_exprs:
        parsed = []
        for i, expr in enumerate(field_exprs):
            try:
                parsed.append(_parse_field(expr, obj, f"{fld}.matchFields[{i}]"))
            except InvalidObjectError as exc:
                errors.append(str(exc))
        fields = tuple(parsed)
    names = tuple(s for s in (_name_in_set(e) for e in field_exprs) if s is not None)
    return NodeSelectorTerm(labels, fields, tuple(errors), names)


def parse_required_terms(raw: object, obj: str, fld: str) -> tuple[NodeSelectorTerm, ...]:
    """A NodeSelector's nodeSelectorTerms (a malformed selector becomes one unmatchable term)."""
    if not isinstance(raw, Mapping):
        return (NodeSelectorTerm(None, None, (str(InvalidObjectError(obj, fld, "must be an object")),)),)
    terms = raw.get("nodeSelectorTerms") or []
    if not isinstance(terms, list):
        return (
            NodeSelectorTerm(None, None, (str(InvalidObjectError(obj, f"{fld}.nodeSelectorTerms", "must be a list")),)),
        )
    return tuple(parse_term(t, obj, f"{fld}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms))


def parse_preferred_terms(raw: object, obj: str, fld: str) -> tuple[tuple[PreferredTerm, ...], tuple[str, ...]]:
    """NewPreferredSchedulingTerms: weight-0 and empty terms are dropped; returns (terms, errors)."""
    if not isinstance(raw, list):
        return (), (str(InvalidObjectError(obj, fld, "must be a list")),)
    out: list[PreferredTerm] = []
    errors: list[str] = []
    for i, item in enumerate(raw):
        p = f"{fld}[{i}]"
        if not isinstance(item, Mapping):
            errors.append(str(InvalidObjectError(obj, p, "must be an object")))
            continue
        weight, pref = item.get("weight") or 0, item.get("preference")
        if isinstance(weight, bool) or not isinstance(weight, int):
            errors.append(str(InvalidObjectError(obj, f"{p}.weight", f"{weight!r} is not an integer")))
            continue
        if (
            weight == 0
            or not isinstance(pref, Mapping)
            or not (pref.get("matchExpressions") or pref.get("matchFields"))
        ):
            continue
        term = parse_term(pref, obj, f"{p}.preference")
        if term.errors:
            errors.extend(term.errors)
        else:
            out.append(PreferredTerm(weight, term))
    return tuple(out), tuple(errors)


# --- upstream's error text for preferred terms -----------------------------------------------------

_NODE_OP_VALUES = '"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'


def _go_json(value: object) -> str:
    """How field.Error renders a non-string bad value (json.Marshal: ["a","b"], null)."""
    return json.dumps(value, separators=(",", ":"))


def _go_expression_errors(expr: Mapping[str, Any], path: str) -> list[str] | None:
    """labels.NewRequirement's errors for one matchExpressions entry, as field.Error strings; None when
    the entry fails a check rendered here only approximately (label key/value syntax, which the API server
    validates anyway)."""
    op, key, values = expr.get("operator"), expr.get("key"), expr.get("values")
    if op not in NODE_OPS:
        return [f"{path}.operator: Unsupported value: {_go_json(op)}: supported values: {_NODE_OP_VALUES}"]
    vals = values if isinstance(values, list) and all(isinstance(v, str) for v in values) else None
    if not isinstance(key, str) or not is_valid_label_key(key) or vals is None:
        return None
    if not all(is_valid_label_value(v) for v in vals):
        return None
    vpath = f"{path}.values"
    errs: list[str] = []
    if op in ("In", "NotIn") and not vals:
        errs.append(f"{vpath}: Invalid value: {_go_json(values)}: "
                    "for 'in', 'notin' operators, values set can't be empty")
    elif op in ("Exists", "DoesNotExist") and vals:
        errs.append(f"{vpath}: Invalid value: {_go_json(vals)}: values set must be empty for exists and does not exist")
    elif op in ("Gt", "Lt"):
        if len(vals) != 1:
            errs.append(f"{vpath}: Invalid value: {_go_json(values)}: "
                        "for 'Gt', 'Lt' operators, exactly one value is required")
        for i, v in enumerate(vals):
            if parse_int64(v) is None:
                errs.append(f'{vpath}[{i}]: Invalid value: "{v}": '
                            "for 'Gt', 'Lt' operators, the value must be an integer")
    return errs


def _go_field_errors(expr: Mapping[str, Any], path: str) -> list[str]:
    """nodeSelectorRequirementsAsFieldSelector's error for one matchFields entry."""
    op, values = expr.get("operator"), expr.get("values")
    if op in ("In", "NotIn"):
        if not isinstance(values, list) or len(values) != 1:
            return [f"{path}.values: Invalid value: {_go_json(values)}: must have one element"]
        return []
    return [f'{path}.operator: Unsupported value: {_go_json(op)}: supported values: "In", "NotIn"']


def go_preferred_terms_error(raw: object) -> str | None:
    """The error NewPreferredSchedulingTerms returns for a pod's preferred terms, worded as upstream's
    flattened aggregate of field errors (``[0].matchExpressions[0].values[0]: Invalid value: "x": ...``;
    several distinct messages as ``[a, b]``). None when it cannot be reproduced exactly."""
    if not isinstance(raw, list):
        return None
    messages: list[str] = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            return None
        pref = item.get("preference")
        if not item.get("weight") or not isinstance(pref, Mapping):
            continue
        exprs, fields = pref.get("matchExpressions") or [], pref.get("matchFields") or []
        if not isinstance(exprs, list) or not isinstance(fields, list):
            return None
        for kind, entries, render in (("matchExpressions", exprs, _go_expression_errors),
                                      ("matchFields", fields, _go_field_errors)):
            for j, e in enumerate(entries):
                if not isinstance(e, Mapping):
                    return None
                errs = render(e, f"[{i}].{kind}[{j}]")
                if errs is None:
                    return None
                messages.extend(m for m in errs if m not in messages)
    if not messages:
        return None
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
