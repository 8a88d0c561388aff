"""InterPodAffinity: required pod (anti-)affinity as a filter, preferred terms as a score (kube-scheduler v1.37).

Upstream: ``pkg/scheduler/framework/plugins/interpodaffinity/{plugin,filtering,scoring}.go``.

Why the shape: checking a term means looking at other pods, and a cluster has many more pods than nodes.
So PreFilter walks the pods once and reduces them to counters keyed by ``(topologyKey, value)``; Filter
then only looks the node's own label values up in those counters. PreScore does the same for the
weighted terms. Parsed terms are cached on each pod (``Pod.memo``), so an existing pod's selectors are
parsed once in its life, not once per scheduling cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np
import orjson

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import InterPodAffinityArgs
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeScore,
    PreFilterResult,
    ScoreRow,
    score_by_batch,
)
from scheduler.framework.status import Status, error, skip, unresolvable, unschedulable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.errors import InvalidObjectError
from scheduler.model.jsonutil import plain
from scheduler.model.labels import NOTHING, LabelSelector, parse_label_selector
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.helper.node_totals import Contribute, Contribution, NodeTotalsCache
from scheduler.plugins.helper.normalize_score import on_node_scores
from scheduler.plugins.helper.spreading import as_node, as_pod, object_labels

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
_TERMS_MEMO = NAME + ".terms"
_MATCH_MEMO = NAME + ".matchesAllTerms"
_INTERNED_TERMS_MAX = 1024  # distinct required-term tuples kept for sharing (a bound, not a tuning knob)

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

TopologyPair = tuple[str, str]
Counts = dict[TopologyPair, int]


# ----- parsed terms ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed PodAffinityTerm (upstream fwk.AffinityTerm).

    ``ns_selector`` is NOTHING when the term has no namespaceSelector. For the incoming pod the selector
    is folded into ``namespaces`` once per cycle (see ``_merge_namespaces``).
    """

    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str
    ns_selector: LabelSelector = NOTHING

    def matches(self, pod: Pod, ns_labels: Mapping[str, str] | None) -> bool:
        """In the term's namespaces (by name or by namespace labels) and matched by its label selector."""
        if pod.namespace in self.namespaces or self.ns_selector.matches(ns_labels or {}):
            return self.selector.matches(pod.labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    """All four term lists of one pod, plus what failed to parse ("<list>: <error>")."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    errors: tuple[str, ...] = ()
    failed: frozenset[str] = frozenset()  # attribute names of the lists that did not parse

    @property
    def parse_error(self) -> str:
        """utilerrors.NewAggregate formatting: one error as is, several as ``[a, b]``."""
        if len(self.errors) == 1:
            return self.errors[0]
        return "[" + ", ".join(self.errors) + "]"


_NO_TERMS = PodAffinityTerms()


def _parse_term(pod: Pod, raw: object, fld: str) -> AffinityTerm:
    ident = f"pod {pod.key}"
    if not isinstance(raw, Mapping):
        raise InvalidObjectError(ident, fld, "must be an object")
    selector = parse_label_selector(raw.get("labelSelector"), ident, f"{fld}.labelSelector")
    raw_ns = raw.get("namespaces") or []
    if not isinstance(raw_ns, list) or not all(isinstance(n, str) for n in raw_ns):
        raise InvalidObjectError(ident, f"{fld}.namespaces", "must be a list of strings")
    raw_ns_sel = raw.get("namespaceSelector")
    ns_selector = parse_label_selector(raw_ns_sel, ident, f"{fld}.namespaceSelector")
    # getNamespacesFromPodAffinityTerm: neither namespaces nor a selector means "the pod's own namespace".
    namespaces = frozenset(raw_ns) if raw_ns or raw_ns_sel is not None else frozenset({pod.namespace})
    return AffinityTerm(namespaces, selector, str(raw.get("topologyKey") or ""), ns_selector)


def _parse_terms(pod: Pod, raw: object, fld: str) -> tuple[AffinityTerm, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidObjectError(f"pod {pod.key}", fld, "must be a list")
    return tuple(_parse_term(pod, t, f"{fld}[{i}]") for i, t in enumerate(raw))


def _parse_weighted(pod: Pod, raw: object, fld: str) -> tuple[WeightedAffinityTerm, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidObjectError(f"pod {pod.key}", fld, "must be a list")
    out = []
    for i, w in enumerate(raw):
        if not isinstance(w, Mapping):
            raise InvalidObjectError(f"pod {pod.key}", f"{fld}[{i}]", "must be an object")
        weight = w.get("weight") or 0
        if not isinstance(weight, int):
            raise InvalidObjectError(f"pod {pod.key}", f"{fld}[{i}].weight", "must be an integer")
        out.append(WeightedAffinityTerm(_parse_term(pod, w.get("podAffinityTerm"), f"{fld}[{i}].podAffinityTerm"),
                                        weight))
    return tuple(out)


def _section(affinity: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = affinity.get(key)
    return v if isinstance(v, Mapping) else {}


def parse_affinity_terms(pod: Pod) -> PodAffinityTerms:
    """framework.NewPodInfo's term parsing: each of the four lists parses on its own; a list with an
    error is empty and its error is recorded (an existing pod keeps its other lists, the incoming pod is
    rejected in PreFilter)."""
    aff = _section(pod.affinity, "podAffinity")
    anti = _section(pod.affinity, "podAntiAffinity")
    base = "spec.affinity"
    req, pref = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"
    errors: list[str] = []
    parts: dict[str, Any] = {}
    specs = (
        ("required_affinity", "requiredAffinityTerms", _parse_terms, aff.get(req), f"{base}.podAffinity.{req}"),
        ("required_anti_affinity", "requiredAntiAffinityTerms", _parse_terms, anti.get(req),
         f"{base}.podAntiAffinity.{req}"),
        ("preferred_affinity", "preferredAffinityTerms", _parse_weighted, aff.get(pref), f"{base}.podAffinity.{pref}"),
        ("preferred_anti_affinity", "preferredAntiAffinityTerms", _parse_weighted, anti.get(pref),
         f"{base}.podAntiAffinity.{pref}"),
    )
    failed: set[str] = set()
    for attr, label, parse, raw, fld in specs:
        try:
            parts[attr] = parse(pod, raw, fld)
        except InvalidObjectError as exc:
            errors.append(f"{label}: {exc}")
            failed.add(attr)
    return PodAffinityTerms(**parts, errors=tuple(errors), failed=frozenset(failed))


def affinity_terms(pod: Pod) -> PodAffinityTerms:
    """The pod's parsed terms, cached in ``pod.memo`` (the spec of a pod never changes its affinity)."""
    if not pod.affinity:
        return _NO_TERMS
    cached = pod.memo.get(_TERMS_MEMO)
    if cached is None:
        cached = parse_affinity_terms(pod)
        pod.memo[_TERMS_MEMO] = cached
    terms: PodAffinityTerms = cached
    return terms


def pod_matches_all_terms(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """True iff there are terms and the pod matches every one (namespaces already merged: no labels)."""
    if not terms:
        return False
    return all(t.matches(pod, None) for t in terms)


def _matches_all_terms_memo(terms: tuple[AffinityTerm, ...], pod: Pod) -> bool:
    """pod_matches_all_terms, remembered on the pod for the last terms tuple asked about, compared by identity
    (the memo holds the tuple, so no other tuple can take its id). PreFilter shares equal term tuples, so the
    members of a group made from one template ask with one tuple: preemption's reprieve loop, which adds and
    removes each victim once per member, matches each victim once."""
    cached = pod.memo.get(_MATCH_MEMO)
    if cached is not None and cached[0] is terms:
        hit: bool = cached[1]
        return hit
    matched = pod_matches_all_terms(terms, pod)
    pod.memo[_MATCH_MEMO] = (terms, matched)
    return matched


def _required_terms_unparsable(terms: PodAffinityTerms) -> bool:
    """GetAffinityTerms failed for the required affinity or anti-affinity list (hints then queue)."""
    return bool(terms.failed & {"required_affinity", "required_anti_affinity"})


def _has_preferred_constraints(pod: Pod) -> bool:
    """hasPreferred(Anti)AffinityConstraints: read from the spec, whether or not the terms parse."""
    affinity = pod.affinity
    if not affinity:  # most pods: no ABC check of two absent sections
        return False
    for key in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(key)
        if section and isinstance(section, Mapping) and section.get("preferredDuringSchedulingIgnoredDuringExecution"):
            return True
    return False


# ----- counters -------------------------------------------------------------------------------------


def _bump(counts: Counts, node: Node, key: str, delta: int) -> None:
    """Add ``delta`` at (key, node's value); entries that reach zero disappear, as upstream's map."""
    value = node.labels.get(key)
    if value is None:
        return
    pair = (key, value)
    n = counts.get(pair, 0) + delta
    if n == 0:
        counts.pop(pair, None)
    else:
        counts[pair] = n


def _count_affinity(counts: Counts, terms: tuple[AffinityTerm, ...], pod: Pod, node: Node, delta: int) -> None:
    """One pod satisfies the incoming pod's affinity only if it matches *all* terms: then every term's key counts."""
    if _matches_all_terms_memo(terms, pod):
        for t in terms:
            _bump(counts, node, t.topology_key, delta)


def _count_anti_affinity(
    counts: Counts, terms: Sequence[AffinityTerm], pod: Pod, ns_labels: Mapping[str, str] | None, node: Node,
    delta: int,
) -> None:
    """Anti-affinity terms count one by one: matching any single term is enough to repel."""
    for t in terms:
        if t.matches(pod, ns_labels):
            _bump(counts, node, t.topology_key, delta)


class _PreFilterState:
    """Counters computed in PreFilter; AddPod/RemovePod move them for nominated pods and preemption."""

    __slots__ = ("affinity_counts", "anti_affinity_counts", "existing_anti_affinity_counts", "ns_labels", "pod",
                 "required_affinity", "required_anti_affinity")

    def __init__(
        self, pod: Pod, required_affinity: tuple[AffinityTerm, ...], required_anti_affinity: tuple[AffinityTerm, ...],
        ns_labels: Mapping[str, str],
    ) -> None:
        self.pod = pod
        self.required_affinity = required_affinity
        self.required_anti_affinity = required_anti_affinity
        self.ns_labels = ns_labels
        self.existing_anti_affinity_counts: Counts = {}
        self.affinity_counts: Counts = {}
        self.anti_affinity_counts: Counts = {}

    def clone(self) -> _PreFilterState:
        c = _PreFilterState(self.pod, self.required_affinity, self.required_anti_affinity, self.ns_labels)
        c.existing_anti_affinity_counts = dict(self.existing_anti_affinity_counts)
        c.affinity_counts = dict(self.affinity_counts)
        c.anti_affinity_counts = dict(self.anti_affinity_counts)
        return c

    def update_with_pod(self, other: Pod, node: Node, delta: int) -> None:
        """Account (delta=+1) or un-account (-1) one pod placed on ``node`` in all three counters."""
        _count_anti_affinity(self.existing_anti_affinity_counts, affinity_terms(other).required_anti_affinity,
                             self.pod, self.ns_labels, node, delta)
        _count_affinity(self.affinity_counts, self.required_affinity, other, node, delta)
        _count_anti_affinity(self.anti_affinity_counts, self.required_anti_affinity, other, None, node, delta)


class _PreScoreState:
    """Weighted sums per (topologyKey, value) and the keys that have any; read-only after PreScore, so
    clone shares it."""

    __slots__ = ("keys", "topology_score")

    def __init__(self, topology_score: dict[TopologyPair, int], keys: Sequence[str]) -> None:
        self.topology_score = topology_score
        self.keys = tuple(keys)

    def clone(self) -> _PreScoreState:
        return self


def _contribution_signature(pod: Pod) -> object:
    """Namespace, labels and affinity of a pod: all that decides its scoring contributions (kept on the
    pod, which is rebuilt whenever it changes)."""
    sig = pod.memo.get(_SIGNATURE_KEY)
    if sig is None:
        # As str: orjson's bytes keep a 4 KiB buffer, and every pod holds its signature.
        affinity = orjson.dumps(pod.affinity, option=orjson.OPT_SORT_KEYS, default=plain).decode()
        sig = pod.memo[_SIGNATURE_KEY] = (pod.namespace, tuple(sorted(pod.labels.items())), affinity)
    return sig


_SIGNATURE_KEY = "InterPodAffinity.signature"


def _pre_filter_contribution(s: _PreFilterState) -> Contribute:
    """What one node adds to PreFilter's three counters (slots 0: existing pods' anti-affinity to the
    incoming pod, 1: its affinity, 2: its anti-affinity; slot 3: the topology keys counted in slot 0).
    Existing pods alike are matched once."""
    existing_keys: dict[object, list[str]] = {}
    incoming_keys: dict[object, tuple[list[str], list[str]]] = {}
    incoming = bool(s.required_affinity or s.required_anti_affinity)

    def keys_against_incoming(existing: Pod) -> list[str]:
        sig = _contribution_signature(existing)
        keys = existing_keys.get(sig)
        if keys is None:
            keys = existing_keys[sig] = [t.topology_key for t in affinity_terms(existing).required_anti_affinity
                                         if t.matches(s.pod, s.ns_labels)]
        return keys

    def keys_of_incoming(existing: Pod) -> tuple[list[str], list[str]]:
        sig = _contribution_signature(existing)
        keys = incoming_keys.get(sig)
        if keys is None:
            affinity = ([t.topology_key for t in s.required_affinity]
                        if pod_matches_all_terms(s.required_affinity, existing) else [])
            anti = [t.topology_key for t in s.required_anti_affinity if t.matches(existing, None)]
            keys = incoming_keys[sig] = (affinity, anti)
        return keys

    def contribute(ni: NodeInfo) -> Contribution:
        node = ni.node
        if node is None:
            return []
        labels = node.labels
        out: Contribution = []
        for existing in ni.pods_with_required_anti_affinity.values():
            for key in keys_against_incoming(existing):
                value = labels.get(key)
                if value is not None:
                    out.append((0, (key, value), 1))
                    out.append((3, key, 1))
        if incoming:
            for existing in ni.pods.values():
                affinity, anti = keys_of_incoming(existing)
                _append_pairs(out, 1, affinity, labels, 1)
                _append_pairs(out, 2, anti, labels, 1)
        return out

    return contribute


def _pre_score_contribution(contributions: Callable[[Pod], list[tuple[str, int]]], all_pods: bool) -> Contribute:
    """What one node adds in PreScore: slot 0 the weights per (key, value), slot 1 (key None) the number
    of matching terms (a match counts even when weights cancel out), slot 2 the keys seen. Only pods with
    affinity contribute unless the incoming pod has preferred terms (``all_pods``)."""
    by_signature: dict[object, list[tuple[str, int]]] = {}

    def contribute(ni: NodeInfo) -> Contribution:
        node = ni.node
        if node is None or not node.labels:
            return []
        labels = node.labels
        out: Contribution = []
        for existing in (ni.pods if all_pods else ni.pods_with_affinity).values():
            sig = _contribution_signature(existing)
            found = by_signature.get(sig)
            if found is None:
                found = by_signature[sig] = contributions(existing)
            for key, weight in found:
                value = labels.get(key)
                if value is not None:
                    out.append((0, (key, value), weight))
                    out.append((1, None, 1))
                    out.append((2, key, 1))
        return out

    return contribute


def _label_value_contribution(key: str) -> Contribute:
    """Slot 0: nodes per value of the label ``key``; slot 1 (key None): nodes that have the label."""

    def contribute(ni: NodeInfo) -> Contribution:
        value = ni.node.labels.get(key) if ni.node is not None else None
        return [] if value is None else [(0, value, 1), (1, None, 1)]

    return contribute


def _append_pairs(out: Contribution, slot: int, keys: Sequence[str], labels: Mapping[str, str], n: int) -> None:
    for key in keys:
        value = labels.get(key)
        if value is not None:
            out.append((slot, (key, value), n))


# ----- the plugin -----------------------------------------------------------------------------------


class InterPodAffinity:
    """PreFilter/Filter on required terms, PreScore/Score/NormalizeScore on preferred terms."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable when every topology key that can matter for the pod has a distinct value on each node
        (kubernetes.io/hostname, as a rule): a node's verdict and score then depend on its own pods only.

        The keys that matter are the pod's own terms' and those of other pods' terms that match it (with
        pods there). Not batchable: required pod affinity (the first pod of a group may go anywhere, a
        cluster-wide condition), namespace selectors in the pod's terms (Namespace objects decide), terms
        that do not parse. The namespace's labels and the keys are part of the signature."""
        snapshot = self.handle.snapshot()
        if not pod.has_affinity and not snapshot.have_pods_with_affinity_list() \
                and not snapshot.have_pods_with_required_anti_affinity_list():
            return ()
        terms = affinity_terms(pod)
        own = terms.required_anti_affinity + tuple(w.term for w in terms.preferred_affinity) \
            + tuple(w.term for w in terms.preferred_anti_affinity)
        if terms.errors or terms.required_affinity or any(not t.ns_selector.nothing for t in own):
            return None
        ns_labels = self._namespace_labels(pod.namespace)
        nodes = snapshot.list()
        keys: set[Hashable] = {t.topology_key for t in own}
        keys.update(self._filter_sums(pod, (), terms.required_anti_affinity, ns_labels, nodes)[3])
        keys.update(self._score_sums(pod, terms.preferred_affinity, terms.preferred_anti_affinity, ns_labels,
                                     _has_preferred_constraints(pod))[2])
        if not all(self._unique_values(cast(str, key)) for key in keys):
            return None
        return tuple(sorted(ns_labels.items())), frozenset(keys)

    def _unique_values(self, key: str) -> bool:
        """No two nodes of the snapshot share a value of the label ``key``."""
        snapshot = self.handle.snapshot()
        values, labelled = self._label_values.get(key, 2, lambda: _label_value_contribution(key)).refresh(
            snapshot.list(), snapshot)
        return len(values) == labelled.get(None, 0)

    def _filter_sums(
        self, pod: Pod, required_affinity: tuple[AffinityTerm, ...], required_anti_affinity: tuple[AffinityTerm, ...],
        ns_labels: Mapping[str, str], nodes: Sequence[NodeInfo],
    ) -> list[dict[Hashable, int]]:
        """PreFilter's counters over ``nodes`` (slots of ``_pre_filter_contribution``), kept across cycles."""
        key = (_contribution_signature(pod), tuple(sorted(ns_labels.items())), required_affinity,
               required_anti_affinity)
        totals = self._pre_filter_totals.get(key, 4, lambda: _pre_filter_contribution(
            _PreFilterState(pod, required_affinity, required_anti_affinity, ns_labels)))
        return totals.refresh(nodes, self.handle.snapshot())

    def _score_sums(
        self, pod: Pod, preferred: tuple[WeightedAffinityTerm, ...], preferred_anti: tuple[WeightedAffinityTerm, ...],
        ns_labels: Mapping[str, str], has_constraints: bool,
    ) -> list[dict[Hashable, int]]:
        """PreScore's sums over every node (slots of ``_pre_score_contribution``), kept across cycles."""
        key = (_contribution_signature(pod), tuple(sorted(ns_labels.items())), preferred, preferred_anti,
               has_constraints)

        def contributions(existing: Pod) -> list[tuple[str, int]]:
            return self._contributions(pod, ns_labels, preferred, preferred_anti, existing)

        snapshot = self.handle.snapshot()
        totals = self._pre_score_totals.get(key, 3, lambda: _pre_score_contribution(contributions, has_constraints))
        return totals.refresh(snapshot.list(), snapshot)

    def __init__(self, args: InterPodAffinityArgs | Mapping[str, Any], handle: Handle) -> None:
        a = plugin_args(InterPodAffinityArgs, args)
        self.hard_pod_affinity_weight = a.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = a.ignore_preferred_terms_of_existing_pods
        self.handle = handle
        # The walks over every node's pods, kept per incoming pod kind and redone on changed nodes only.
        self._pre_filter_totals = NodeTotalsCache()
        self._pre_score_totals = NodeTotalsCache()
        self._label_values = NodeTotalsCache()  # per label key: nodes per value (are values unique?)
        self._interned_terms: dict[tuple[AffinityTerm, ...], tuple[AffinityTerm, ...]] = {}

    # --- namespaces -------------------------------------------------------------------------------

    def _namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """GetNamespaceLabelsSnapshot: a missing namespace means no labels, not an error."""
        return dict(object_labels(self.handle.objects().get("Namespace", "", namespace)))

    def _merge_namespaces(self, terms: Iterable[AffinityTerm]) -> tuple[AffinityTerm, ...]:
        """mergeAffinityTermNamespacesIfNotEmpty: fold the incoming pod's namespaceSelector into names.

        Afterwards matching an existing pod needs no lookup of that pod's namespace labels. An empty
        selector ({}) stays: it matches every namespace without help.
        """
        out = []
        all_namespaces: list[Mapping[str, Any]] | None = None
        for t in terms:
            if t.ns_selector.nothing or t.ns_selector.empty:
                out.append(t)
                continue
            if all_namespaces is None:
                all_namespaces = list(self.handle.objects().list("Namespace"))
            names = {str((ns.get("metadata") or {}).get("name") or "") for ns in all_namespaces
                     if t.ns_selector.matches(object_labels(ns))}
            out.append(replace(t, namespaces=t.namespaces | frozenset(names), ns_selector=NOTHING))
        return self._intern(tuple(out))

    def _intern(self, terms: tuple[AffinityTerm, ...]) -> tuple[AffinityTerm, ...]:
        """One tuple object for equal merged terms, so that pods made from one template share it (the match
        memo of AddPod/RemovePod keys on it)."""
        if not terms:
            return terms
        shared = self._interned_terms.get(terms)
        if shared is None:
            if len(self._interned_terms) >= _INTERNED_TERMS_MAX:
                self._interned_terms.clear()
            shared = self._interned_terms[terms] = terms
        return shared

    # --- PreFilter / Filter ----------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Count, per (topologyKey, value), the pods that matter for this pod's required terms.

        A pod whose terms do not parse is UnschedulableAndUnresolvable: no cluster change can fix it.
        Skip when there is nothing to check (no required terms here, no existing anti-affinity to it).
        """
        terms = affinity_terms(pod)
        if terms.errors:
            return None, unresolvable(f"parsing pod: {terms.parse_error}")
        if not terms.required_affinity and not terms.required_anti_affinity \
                and not self.handle.snapshot().have_pods_with_required_anti_affinity_list():
            return None, skip()  # every counter would be empty: no walk, as upstream's empty lists
        s = _PreFilterState(pod, self._merge_namespaces(terms.required_affinity),
                            self._merge_namespaces(terms.required_anti_affinity), self._namespace_labels(pod.namespace))
        totals = self._filter_sums(pod, s.required_affinity, s.required_anti_affinity, s.ns_labels, nodes)
        s.existing_anti_affinity_counts = cast(Counts, dict(totals[0]))
        s.affinity_counts = cast(Counts, dict(totals[1]))
        s.anti_affinity_counts = cast(Counts, dict(totals[2]))
        if not s.existing_anti_affinity_counts and not s.required_affinity and not s.required_anti_affinity:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> InterPodAffinity:
        return self

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_to_remove, node_info, -1)

    @staticmethod
    def _update(state: CycleState, other: Pod, node_info: NodeInfo, delta: int) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if node_info.node is not None:
            s.update_with_pod(other, node_info.node, delta)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Affinity first (unresolvable), then the pod's anti-affinity, then existing pods' (both Unschedulable:
        preemption can remove the pods in the way)."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        node = node_info.node
        if node is None:
            return error("node not found")
        if not _satisfy_pod_affinity(s, node):
            return unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if not _satisfy_pod_anti_affinity(s, node):
            return unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not _satisfy_existing_pods_anti_affinity(s, node):
            return unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    # --- PreScore / Score / NormalizeScore -------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Sum term weights per (topologyKey, value) over the pods that can contribute.

        Only pods with affinity can contribute unless the incoming pod has preferred terms, so the walk is
        limited to them in the common case. Skip when nothing contributed.
        """
        terms = affinity_terms(pod)
        has_constraints = _has_preferred_constraints(pod)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return skip()
        if terms.errors:
            return error(f"failed to parse pod: {terms.parse_error}")
        if not has_constraints and not self.handle.snapshot().have_pods_with_affinity_list():
            return skip()  # no pod could contribute: upstream walks an empty node list
        preferred = self._merge_weighted(terms.preferred_affinity)
        preferred_anti = self._merge_weighted(terms.preferred_anti_affinity)
        ns_labels = self._namespace_labels(pod.namespace)
        scores, hits, keys = self._score_sums(pod, preferred, preferred_anti, ns_labels, has_constraints)
        if not hits:
            return skip()
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(cast(dict[TopologyPair, int], dict(scores)),
                                                        cast(list[str], list(keys))))
        return None

    def _merge_weighted(self, terms: tuple[WeightedAffinityTerm, ...]) -> tuple[WeightedAffinityTerm, ...]:
        merged = self._merge_namespaces(w.term for w in terms)
        return tuple(WeightedAffinityTerm(t, w.weight) for t, w in zip(merged, terms, strict=True))

    def _contributions(
        self, pod: Pod, ns_labels: Mapping[str, str], preferred: Sequence[WeightedAffinityTerm],
        preferred_anti: Sequence[WeightedAffinityTerm], existing: Pod,
    ) -> list[tuple[str, int]]:
        """processExistingPod's five kinds of terms for one existing pod: (topology key, weight) for every
        term that matches, to be added at its node's value of the key. A matching term counts even with a
        net weight of 0 (upstream then still scores)."""
        out = [(w.term.topology_key, w.weight) for w in preferred if w.term.matches(existing, None)]
        out += [(w.term.topology_key, -w.weight) for w in preferred_anti if w.term.matches(existing, None)]
        existing_terms = affinity_terms(existing)
        if self.hard_pod_affinity_weight > 0:
            out += [(t.topology_key, self.hard_pod_affinity_weight)
                    for t in existing_terms.required_affinity if t.matches(pod, ns_labels)]
        out += [(w.term.topology_key, w.weight)
                for w in existing_terms.preferred_affinity if w.term.matches(pod, ns_labels)]
        out += [(w.term.topology_key, -w.weight)
                for w in existing_terms.preferred_anti_affinity if w.term.matches(pod, ns_labels)]
        return out

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return score_by_batch(self, state, pod, node_info)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """``score`` for every node in one call."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return [], error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        keys = s.keys
        score_of = s.topology_score.get
        out: list[int] = []
        append = out.append
        for ni in nodes:
            node = ni.node
            if node is None:
                return [], error("node not found")
            labels = node.labels
            total = 0
            for key in keys:
                value = labels.get(key)
                if value is not None:
                    total += score_of((key, value), 0)
            append(total)
        return out, None

    def score_extensions(self) -> InterPodAffinity:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        """Min-max to [0, 100], truncating; all equal → 0."""
        return on_node_scores(scores, lambda values: self.normalize_values(state, pod, values))

    def normalize_values(self, state: CycleState, pod: Pod, values: ScoreRow) -> Status | None:
        """``normalize_score`` on the framework's score row (the same float arithmetic, truncated)."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        if not s.keys or not values.size:
            return None
        lo = int(values.min())
        diff = int(values.max()) - lo
        if diff > 0:
            values[:] = (MAX_NODE_SCORE * ((values - lo) / diff)).astype(np.int64)
        else:
            values[:] = 0
        return None

    # --- queueing hints --------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pods added / relabelled / deleted, nodes added or relabelled. Upstream adds UpdateNodeTaint only
        when queueing hints are off (the preCheck workaround); they are always on in 1.37."""
        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, pod_actions), self.is_schedulable_after_pod_change),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_actions), self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_pod_change(self, pod: Pod, old_obj: object, new_obj: object) -> QueueingHint:
        """Queue when an assigned pod starts to match all of the pending pod's required affinity terms, or
        stops matching (by label change or deletion) all of its required anti-affinity terms.

        As upstream: an unassigned pod's event (the pending pod's own update included) never queues, and
        anti-affinity looks at *all* terms matching, not any (podMatchesAllAffinityTerms)."""
        old, new = as_pod(old_obj), as_pod(new_obj)
        if (new is not None and not new.node_name) or (old is not None and not old.node_name):
            return QueueingHint.QUEUE_SKIP
        terms = affinity_terms(pod)
        if _required_terms_unparsable(terms):
            return QueueingHint.QUEUE
        if old is not None and new is not None:
            if not pod_matches_all_terms(terms.required_affinity, old) and \
                    pod_matches_all_terms(terms.required_affinity, new):
                return QueueingHint.QUEUE
            if pod_matches_all_terms(terms.required_anti_affinity, old) and \
                    not pod_matches_all_terms(terms.required_anti_affinity, new):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            return _queue_if(pod_matches_all_terms(terms.required_affinity, new))
        if old is None:
            return QueueingHint.QUEUE_SKIP
        return _queue_if(pod_matches_all_terms(terms.required_anti_affinity, old))

    def is_schedulable_after_node_change(self, pod: Pod, old_obj: object, new_obj: object) -> QueueingHint:
        """Affinity: a node (newly) carrying a term's key, or a changed value. Anti-affinity: any new node,
        or a node losing/changing a term's key."""
        old, new = as_node(old_obj), as_node(new_obj)
        if new is None:
            return QueueingHint.QUEUE_SKIP
        terms = affinity_terms(pod)
        if _required_terms_unparsable(terms):
            return QueueingHint.QUEUE
        for t in terms.required_affinity:
            key = t.topology_key
            if old is None:
                if key in new.labels:
                    return QueueingHint.QUEUE
                continue
            if key in new.labels and (key not in old.labels or old.labels[key] != new.labels[key]):
                return QueueingHint.QUEUE
        for t in terms.required_anti_affinity:
            key = t.topology_key
            if old is None:
                return QueueingHint.QUEUE
            if key in old.labels and (key not in new.labels or old.labels[key] != new.labels[key]):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def _queue_if(condition: bool) -> QueueingHint:
    return QueueingHint.QUEUE if condition else QueueingHint.QUEUE_SKIP


def _satisfy_pod_affinity(s: _PreFilterState, node: Node) -> bool:
    """Every term's key on the node with a matching pod in that domain; or the first pod of a group."""
    pods_exist = True
    for t in s.required_affinity:
        value = node.labels.get(t.topology_key)
        if value is None:
            return False  # all topology labels must exist on the node
        if s.affinity_counts.get((t.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # No pod anywhere matches and the pod matches its own terms: let the group start somewhere.
    return not s.affinity_counts and pod_matches_all_terms(s.required_affinity, s.pod)


def _satisfy_pod_anti_affinity(s: _PreFilterState, node: Node) -> bool:
    if not s.anti_affinity_counts:
        return True
    for t in s.required_anti_affinity:
        value = node.labels.get(t.topology_key)
        if value is not None and s.anti_affinity_counts.get((t.topology_key, value), 0) > 0:
            return False
    return True


def _satisfy_existing_pods_anti_affinity(s: _PreFilterState, node: Node) -> bool:
    counts = s.existing_anti_affinity_counts
    if not counts:
        return True
    if len(counts) < len(node.labels):
        return not any(n > 0 and node.labels.get(k) == v for (k, v), n in counts.items())
    return not any(counts.get((k, v), 0) > 0 for k, v in node.labels.items())
