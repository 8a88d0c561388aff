"""NodeAffinity (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go`` with
component-helpers' matcher).

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

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import NodeAffinityArgs
from scheduler.framework.batch import SignsByTemplate
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
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.helper.nodeaffinity import (
    NodeSelectorTerm,
    PreferredTerm,
    RequiredNodeAffinity,
    go_preferred_terms_error,
    parse_preferred_terms,
    parse_required_terms,
)
from scheduler.plugins.helper.normalize_score import default_normalize_score, default_normalize_values

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


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


# A pod with neither nodeSelector nor node affinity terms (most pods): one shared, immutable view.
_UNCONSTRAINED = PodNodeAffinity(RequiredNodeAffinity(None, None), False, None, None, None)


def _parse_pod(pod: Pod) -> PodNodeAffinity:
    # Decoded JSON holds plain dicts: ``type(x) is dict`` first spares the Mapping ABC's Python-level check.
    spec = pod.raw.get("spec") or {}
    affinity = pod.affinity
    node_affinity = affinity.get("nodeAffinity") if type(affinity) is dict or isinstance(affinity, Mapping) else None
    if node_affinity is None or not (type(node_affinity) is dict or isinstance(node_affinity, Mapping)):
        node_affinity = {}
    if ((type(spec) is dict or isinstance(spec, Mapping)) and spec.get("nodeSelector") is None
            and node_affinity.get(_REQUIRED) is None and node_affinity.get(_PREFERRED) is None):
        return _UNCONSTRAINED
    obj = f"pod {pod.namespace}/{pod.name}"
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


class NodeAffinity(SignsByTemplate):
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
