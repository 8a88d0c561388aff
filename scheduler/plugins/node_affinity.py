"""NodeAffinity (kube-scheduler v1.34 ``nodeaffinity/node_affinity.go`` with component-helpers' matcher).

Required: ``spec.nodeSelector`` (every key=value) AND ``requiredDuringSchedulingIgnoredDuringExecution``
(terms OR-ed; in a term matchExpressions and matchFields AND-ed; a term with neither matches nothing;
matchFields compare ``metadata.name`` with In/NotIn and exactly one value). Failing it is
UnschedulableAndUnresolvable ``node(s) didn't match Pod's node affinity/selector``; failing the
scheduler-wide ``addedAffinity`` is ``node(s) didn't match scheduler-enforced node affinity``.
PreFilter narrows the nodes to the ``metadata.name In`` values when every term names nodes (union over
terms, intersection within one) and rejects with ``pod affinity terms conflict`` when that set is empty.
Score sums the weights of matching preferred terms (pod's and addedAffinity's); NormalizeScore maps
the maximum to 100.

Malformed terms (unknown operator, Gt/Lt value that is not an integer, wrong number of values) are
handled as upstream's lazy matcher does: such a term never matches, the others still count, so
verdicts are upstream's; a pod whose every required term is malformed fails Filter on every node with
the usual ``node(s) didn't match Pod's node affinity/selector`` (the API server accepts e.g. ``Gt "abc"``,
so this is reachable and must read as upstream's). A malformed preferred term fails PreScore with an
Error status naming it, as upstream's NewPreferredSchedulingTerms error does.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import NodeAffinityArgs
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeScore,
    PreFilterResult,
    ScoreRow,
    score_by_batch,
)
from scheduler.framework.status import Status, error, skip, unresolvable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
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
from scheduler.model.pod import Pod
from scheduler.plugins.normalize_score import default_normalize_score, default_normalize_values

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

OBJECT_NAME_FIELD = "metadata.name"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


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


# --- the pod's view (parsed once per pod) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodNodeAffinity:
    """Everything this plugin needs from a pod, parsed once (pods are scheduled many times)."""

    required: RequiredNodeAffinity
    node_selector_set: bool  # spec.nodeSelector present (even empty), upstream's "!= nil"
    prefilter_names: frozenset[str] | None  # None: all nodes
    preferred: tuple[PreferredTerm, ...] | None  # None: the pod has no preferred terms
    preferred_error: str | None


def _prefilter_names(terms: tuple[NodeSelectorTerm, ...] | None) -> frozenset[str] | None:
    """Union over terms of the intersection of a term's metadata.name In sets; None if a term has none."""
    if not terms:
        return None
    union: set[str] = set()
    for term in terms:
        if not term.name_in_sets:
            return None
        union |= frozenset.intersection(*term.name_in_sets)
    return frozenset(union)


def _parse_pod(pod: Pod) -> PodNodeAffinity:
    obj = f"pod {pod.namespace}/{pod.name}"
    spec = pod.raw.get("spec") or {}
    node_affinity = pod.affinity.get("nodeAffinity") if isinstance(pod.affinity, Mapping) else None
    node_affinity = node_affinity if isinstance(node_affinity, Mapping) else {}
    base = "spec.affinity.nodeAffinity"
    terms = None
    if node_affinity.get(_REQUIRED) is not None:
        terms = parse_required_terms(node_affinity[_REQUIRED], obj, f"{base}.{_REQUIRED}")
    selector: dict[str, str] | None = None
    selector_error = None
    if isinstance(pod.node_selector, Mapping):
        selector = {str(k): str(v) for k, v in pod.node_selector.items()} or None
    else:
        selector_error = str(InvalidObjectError(obj, "spec.nodeSelector", "must be a map of strings"))
    preferred: tuple[PreferredTerm, ...] | None = None
    preferred_error = None
    if node_affinity.get(_PREFERRED) is not None:
        preferred, errs = parse_preferred_terms(node_affinity[_PREFERRED], obj, f"{base}.{_PREFERRED}")
        if errs:
            preferred_error = go_preferred_terms_error(node_affinity[_PREFERRED]) or "; ".join(errs)
    return PodNodeAffinity(
        required=RequiredNodeAffinity(selector, terms, selector_error),
        node_selector_set=isinstance(spec, Mapping) and spec.get("nodeSelector") is not None,
        prefilter_names=_prefilter_names(terms),
        preferred=preferred,
        preferred_error=preferred_error,
    )


def pod_node_affinity(pod: Pod) -> PodNodeAffinity:
    """The pod's parsed node affinity, cached in ``pod.memo``."""
    cached = pod.memo.get(NAME)
    if cached is None:
        cached = pod.memo[NAME] = _parse_pod(pod)
    return cached


# --- the plugin -----------------------------------------------------------------------------------


def _added_affinity_terms(
    added: Mapping[str, Any] | None,
) -> tuple[tuple[NodeSelectorTerm, ...] | None, tuple[PreferredTerm, ...] | None]:
    """The (validated) addedAffinity as matchers; unlike a pod's terms, any error here is a configuration error."""
    if added is None:
        return None, None
    obj = "NodeAffinityArgs"
    required = None
    if added.get(_REQUIRED) is not None:
        required = parse_required_terms(added[_REQUIRED], obj, f"addedAffinity.{_REQUIRED}")
        errs = [e for t in required for e in t.errors]
        if errs:
            raise ValueError("; ".join(errs))
    preferred = None
    if added.get(_PREFERRED):
        preferred, errs2 = parse_preferred_terms(added[_PREFERRED], obj, f"addedAffinity.{_PREFERRED}")
        if errs2:
            raise ValueError("; ".join(errs2))
    return required, preferred


class NodeAffinity:
    """Keeps pods on nodes their nodeSelector / node affinity allow; prefers preferred-term matches."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable: verdicts and scores depend on the pod template and the one node only."""
        return ()

    def __init__(self, args: NodeAffinityArgs | Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        added = plugin_args(NodeAffinityArgs, args).added_affinity
        self.added_required, self.added_preferred = _added_affinity_terms(added)

    def _added_match(self, node: Node) -> bool:
        return self.added_required is None or any(t.matches(node) for t in self.added_required)

    # PreFilter / Filter

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        aff = pod_node_affinity(pod)
        terms = aff.required.terms
        if terms is None and self.added_required is None and not aff.node_selector_set:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, aff.required)
        if aff.required.selector_error is not None:  # not a map: cannot come from the API server
            return None, unresolvable(aff.required.selector_error)
        if not terms:
            return None, None
        names = aff.prefilter_names
        if names is None:
            return None, None
        if not names:
            return None, unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(set(names)), None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return error("node not found")
        if not self._added_match(node):
            return unresolvable(ERR_REASON_ENFORCED)
        required = state.get(PRE_FILTER_STATE_KEY)
        if required is None:  # PreFilter disabled: compute here
            required = pod_node_affinity(pod).required
        matched, _ = required.match(node)
        return None if matched else unresolvable(ERR_REASON_POD)

    # PreScore / Score

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        aff = pod_node_affinity(pod)
        if aff.preferred_error is not None:
            return error(aff.preferred_error)
        if aff.preferred is None and self.added_preferred is None:
            return skip()
        state.write(PRE_SCORE_STATE_KEY, aff.preferred or ())
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return score_by_batch(self, state, pod, node_info)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """``score`` for every node in one call: the (term, weight) list is built once."""
        preferred = state.get(PRE_SCORE_STATE_KEY)
        if preferred is None:  # PreScore disabled: compute here (errors as the first per-node call)
            aff = pod_node_affinity(pod)
            if aff.preferred_error is not None:
                if not nodes:
                    return [], None
                if nodes[0].node is None:
                    return [], error("node not found")
                return [], error(aff.preferred_error)
            preferred = aff.preferred or ()
        terms = tuple((p.term, p.weight) for p in (*(self.added_preferred or ()), *preferred))
        out: list[int] = []
        append = out.append
        for ni in nodes:
            node = ni.node
            if node is None:
                return [], error("node not found")
            count = 0
            for term, weight in terms:
                if term.matches(node):
                    count += weight
            append(count)
        return out, None

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    def normalize_values(self, state: CycleState, pod: Pod, values: ScoreRow) -> Status | None:
        default_normalize_values(MAX_NODE_SCORE, False, values)
        return None

    def score_extensions(self) -> NodeAffinity:
        return self

    # queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Only a node's labels (or a new node) can change whether the pod's affinity matches it."""
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue when the new node matches and, for an update, the old one did not (or could not be judged)."""
        if new is None:
            return QueueingHint.QUEUE
        if not self._added_match(new):
            return QueueingHint.QUEUE_SKIP
        required = pod_node_affinity(pod).required
        matched, errors = required.match(new)
        if errors:
            return QueueingHint.QUEUE  # upstream: an error from the matcher counts as Queue
        if not matched:
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        was_matched, errors = required.match(old)
        if errors:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP if was_matched else QueueingHint.QUEUE
