"""PodTopologySpread: spread a workload's pods evenly over topology domains (kube-scheduler v1.37).

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/{plugin,common,filtering,scoring}.go``.

Why the shape: skew compares the node's domain with the emptiest domain, so PreFilter counts matching pods
once per domain (cost: nodes + their pods), and keeps per constraint how many domains sit at each count so
that the global minimum stays exact in O(1) while AddPod/RemovePod move single pods (the nominated-pods
pass and preemption dry runs). Filter is then a couple of dictionary look-ups per node.

Upstream keeps two "critical paths" instead of the count histogram; for the ±1 updates on one node that
the framework performs, both give the same minimum.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import SYSTEM_DEFAULTING, PodTopologySpreadArgs
from scheduler.framework.batch import TemplateMemo, template_key
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeScore,
    ObjectLister,
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
from scheduler.model.labels import (
    NODE_OPS,
    NOTHING,
    LabelSelector,
    Requirement,
    parse_label_selector,
    parse_requirement,
)
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.taints import NO_EXECUTE, NO_SCHEDULE, first_untolerated
from scheduler.plugins.helper.generation_memo import GenerationMemo
from scheduler.plugins.helper.node_totals import Contribute, Contribution, NodeTotalsCache
from scheduler.plugins.helper.spreading import (
    COUNTED_SELECTORS,
    as_node,
    as_pod,
    count_matching_pods,
    default_selector,
    matching_pod_counter,
    selector_from_set,
)

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
_CONSTRAINTS_MEMO = NAME + ".constraints"
_NODE_AFFINITY_MEMO = NAME + ".requiredNodeAffinity"

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
# pod.memo keys of get_constraints' answers, by action.
_CONSTRAINTS_BY_ACTION = {action: f"{NAME}.constraints.{action}" for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)}
HONOR = "Honor"
IGNORE = "Ignore"

_DO_NOT_SCHEDULE_TAINTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
_MAX_INT32 = 2**31 - 1


# ----- required node affinity (nodeSelector + required nodeAffinity), as component-helpers matches it ------


@dataclass(frozen=True, slots=True)
class _NodeSelectorTerm:
    labels: tuple[Requirement, ...] = ()
    fields: tuple[tuple[str, str, str], ...] = ()  # (key, op, value) on node fields (metadata.name)
    broken: bool = False  # a term that does not parse never matches (its error is ignored by this plugin)

    def matches(self, node: Node) -> bool:
        if self.broken or (not self.labels and not self.fields):
            return False
        if not all(r.matches(node.labels) for r in self.labels):
            return False
        node_fields = {"metadata.name": node.name}
        return all((node_fields.get(key, "") == value) == (op == "In") for key, op, value in self.fields)


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """The pod's nodeSelector AND its required node affinity terms (any term may match)."""

    node_selector: Mapping[str, str]
    terms: tuple[_NodeSelectorTerm, ...] | None  # None: the pod has no required node affinity

    def matches(self, node: Node) -> bool:
        if any(node.labels.get(k) != v for k, v in self.node_selector.items()):
            return False
        if self.terms is None:
            return True
        return any(t.matches(node) for t in self.terms)


def _parse_node_selector_term(pod: Pod, raw: object, fld: str) -> _NodeSelectorTerm:
    if not isinstance(raw, Mapping):
        return _NodeSelectorTerm(broken=True)
    try:
        labels = tuple(
            parse_requirement(e, f"pod {pod.key}", f"{fld}.matchExpressions[{i}]", NODE_OPS)
            for i, e in enumerate(raw.get("matchExpressions") or [])
        )
    except (InvalidObjectError, AttributeError):
        return _NodeSelectorTerm(broken=True)
    fields = []
    for e in raw.get("matchFields") or []:
        values = e.get("values") if isinstance(e, Mapping) else None
        op = e.get("operator") if isinstance(e, Mapping) else None
        if op not in ("In", "NotIn") or not isinstance(values, list) or len(values) != 1:
            return _NodeSelectorTerm(broken=True)
        fields.append((str(e.get("key") or ""), str(op), str(values[0])))
    return _NodeSelectorTerm(labels, tuple(fields))


def required_node_affinity(pod: Pod) -> RequiredNodeAffinity:
    """GetRequiredNodeAffinity, parsed once per pod (cached in ``pod.memo``)."""
    cached = pod.memo.get(_NODE_AFFINITY_MEMO)
    if cached is not None:
        found: RequiredNodeAffinity = cached
        return found
    node_aff = pod.affinity.get("nodeAffinity") if isinstance(pod.affinity, Mapping) else None
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node_aff, Mapping) else None
    terms: tuple[_NodeSelectorTerm, ...] | None = None
    if isinstance(required, Mapping):
        fld = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        terms = tuple(
            _parse_node_selector_term(pod, t, f"{fld}[{i}]")
            for i, t in enumerate(required.get("nodeSelectorTerms") or [])
        )
    result = RequiredNodeAffinity(dict(pod.node_selector), terms)
    pod.memo[_NODE_AFFINITY_MEMO] = result
    return result


# ----- constraints -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """A v1.TopologySpreadConstraint with its selector parsed and the optional fields defaulted."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def match_node_inclusion_policies(self, pod: Pod, node: Node, required: RequiredNodeAffinity) -> bool:
        """Is this node's domain counted: node affinity honoured by default, taints only when asked."""
        if self.node_affinity_policy == HONOR and not required.matches(node):
            return False
        return not (
            self.node_taints_policy == HONOR
            and first_untolerated(node.taints, pod.tolerations, _DO_NOT_SCHEDULE_TAINTS) is not None
        )


def _merge_match_label_keys(selector: LabelSelector, keys: object, pod_labels: Mapping[str, str]) -> LabelSelector:
    """matchLabelKeys: the incoming pod's values for those keys AND-ed into the selector (a nil selector
    stays match-nothing)."""
    if not isinstance(keys, list) or not keys:
        return selector
    match = {k: pod_labels[k] for k in keys if isinstance(k, str) and k in pod_labels}
    if not match or selector.nothing:
        return selector
    return LabelSelector(selector_from_set(match).requirements + selector.requirements)


def _parse_constraint(
    raw: Mapping[str, Any], pod_labels: Mapping[str, str], obj: str, fld: str
) -> TopologySpreadConstraint:
    """filterTopologySpreadConstraints for one entry (selector parse errors name the field)."""
    selector = parse_label_selector(raw.get("labelSelector"), obj, f"{fld}.labelSelector")
    selector = _merge_match_label_keys(selector, raw.get("matchLabelKeys"), pod_labels)
    min_domains = raw.get("minDomains")
    max_skew = raw.get("maxSkew")
    if isinstance(max_skew, bool) or not isinstance(max_skew, int):
        raise InvalidObjectError(obj, f"{fld}.maxSkew", "must be an integer")
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=str(raw.get("topologyKey") or ""),
        selector=selector,
        min_domains=min_domains if isinstance(min_domains, int) and not isinstance(min_domains, bool) else 1,
        node_affinity_policy=str(raw.get("nodeAffinityPolicy") or HONOR),
        node_taints_policy=str(raw.get("nodeTaintsPolicy") or IGNORE),
    )


def _pod_constraints(pod: Pod) -> tuple[tuple[str, TopologySpreadConstraint], ...]:
    """The pod's own constraints with their whenUnsatisfiable, parsed once (cached in ``pod.memo``).

    Raises InvalidObjectError for a malformed entry; the error is cached too.
    """
    cached = pod.memo.get(_CONSTRAINTS_MEMO)
    if cached is None:
        try:
            cached = _parse_pod_constraints(pod)
        except InvalidObjectError as exc:
            cached = exc
        pod.memo[_CONSTRAINTS_MEMO] = cached
    if isinstance(cached, InvalidObjectError):
        raise cached
    parsed: tuple[tuple[str, TopologySpreadConstraint], ...] = cached
    return parsed


def _parse_pod_constraints(pod: Pod) -> tuple[tuple[str, TopologySpreadConstraint], ...]:
    raw = (pod.raw.get("spec") or {}).get("topologySpreadConstraints") or []
    obj = f"pod {pod.key}"
    if not isinstance(raw, list):
        raise InvalidObjectError(obj, "spec.topologySpreadConstraints", "must be a list")
    out = []
    for i, c in enumerate(raw):
        fld = f"spec.topologySpreadConstraints[{i}]"
        if not isinstance(c, Mapping):
            raise InvalidObjectError(obj, fld, "must be an object")
        out.append((str(c.get("whenUnsatisfiable") or ""), _parse_constraint(c, pod.labels, obj, fld)))
    return tuple(out)


def _defaulted(
    pod: Pod, defaults: tuple[TopologySpreadConstraint, ...], objects: ObjectLister
) -> tuple[TopologySpreadConstraint, ...]:
    """The default constraints with the pod's workload selector (none when the pod has no workload)."""
    selector = default_selector(pod, objects)
    if selector.nothing or not selector.requirements:
        return ()
    return tuple(replace(c, selector=selector) for c in defaults)


def has_pod_constraints(pod: Pod) -> bool:
    """len(pod.Spec.TopologySpreadConstraints) > 0: explicit constraints switch the defaults off."""
    raw = (pod.raw.get("spec") or {}).get("topologySpreadConstraints")
    return isinstance(raw, list) and len(raw) > 0


def _node_has_all_keys(labels: Mapping[str, str], constraints: Sequence[TopologySpreadConstraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


def _domain_contribution(
    pod: Pod, constraints: tuple[TopologySpreadConstraint, ...], require_all: bool, required_key: bool
) -> Contribute:
    """What one node adds, per constraint i: slot 2i its domain (the node counts: it has the keys and
    passes the inclusion policies), slot 2i+1 the pod's matching pods there. ``require_all``: a node
    lacking any constraint's key counts for none; ``required_key``: the domain is the node's value of
    the key (else a missing key is the domain "")."""
    required = required_node_affinity(pod)
    namespace = pod.namespace

    def contribute(ni: NodeInfo) -> Contribution:
        node = ni.node
        if node is None or (require_all and not _node_has_all_keys(node.labels, constraints)):
            return []
        out: Contribution = []
        for i, c in enumerate(constraints):
            if not c.match_node_inclusion_policies(pod, node, required):
                continue
            value = node.labels[c.topology_key] if required_key else node.labels.get(c.topology_key, "")
            out.append((2 * i, value, 1))
            n = count_matching_pods(ni.pods.values(), c.selector, namespace)
            if n:
                out.append((2 * i + 1, value, n))
        return out

    return contribute


# ----- PreFilter state -------------------------------------------------------------------------------


class _PreFilterState:
    """Per constraint: matching pods per domain, how many domains are at each count, and the minimum."""

    __slots__ = ("constraints", "domains_at_count", "match_num", "min_match_num")

    def __init__(self, constraints: tuple[TopologySpreadConstraint, ...]) -> None:
        self.constraints = constraints
        self.match_num: list[dict[str, int]] = [{} for _ in constraints]
        self.domains_at_count: list[dict[int, int]] = [{} for _ in constraints]
        self.min_match_num: list[int] = [_MAX_INT32 for _ in constraints]

    def finish(self) -> None:
        """Build the histograms and minima once the counts are complete."""
        for i, per_domain in enumerate(self.match_num):
            hist: dict[int, int] = {}
            for n in per_domain.values():
                hist[n] = hist.get(n, 0) + 1
            self.domains_at_count[i] = hist
            self.min_match_num[i] = min(per_domain.values(), default=_MAX_INT32)

    def clone(self) -> _PreFilterState:
        c = _PreFilterState(self.constraints)
        c.match_num = [dict(m) for m in self.match_num]
        c.domains_at_count = [dict(h) for h in self.domains_at_count]
        c.min_match_num = list(self.min_match_num)
        return c

    def global_min(self, i: int) -> int:
        """The skew baseline: 0 while fewer than minDomains eligible domains exist."""
        if len(self.match_num[i]) < self.constraints[i].min_domains:
            return 0
        return self.min_match_num[i]

    def move(self, i: int, value: str, delta: int) -> None:
        """One pod more/less in a domain; keeps the minimum exact (one domain moves by one)."""
        hist = self.domains_at_count[i]
        old = self.match_num[i].get(value)
        cur = (old or 0) + delta
        self.match_num[i][value] = cur
        if old is not None:
            hist[old] -= 1
            if hist[old] <= 0:
                del hist[old]
        hist[cur] = hist.get(cur, 0) + 1
        if cur < self.min_match_num[i]:
            self.min_match_num[i] = cur
        elif old is not None and old == self.min_match_num[i] and old not in hist:
            self.min_match_num[i] = min(hist)


class _PreScoreState:
    """Constraints for scoring, ignored nodes, per-domain counts and ln(#domains + 2) weights."""

    __slots__ = ("constraints", "counters", "ignored_nodes", "nodes", "topology_normalizing_weight", "value_counts")

    def __init__(self) -> None:
        self.constraints: tuple[TopologySpreadConstraint, ...] = ()
        self.counters: list[Callable[[NodeInfo], int]] = []  # matching pods per node, one per constraint
        self.ignored_nodes: set[str] = set()
        # PreScore's nodes, which Score and NormalizeScore get in the same order (the ignored ones' places)
        self.nodes: Sequence[NodeInfo] = ()
        self.value_counts: list[dict[str, int]] = []
        self.topology_normalizing_weight: list[float] = []

    def clone(self) -> _PreScoreState:
        return self


def topology_normalizing_weight(size: int) -> float:
    """ln(size + 2): small topologies are not watered down by big ones (1.09..8.52 for 1..5000 nodes)."""
    return math.log(size + 2)


def score_for_count(cnt: int, max_skew: int, weight: float) -> float:
    """cnt·w + (maxSkew - 1): maxSkew makes the score tolerant to that much difference."""
    return float(cnt) * weight + float(max_skew - 1)


def go_round(x: float) -> int:
    """Go's math.Round (half away from zero); x - trunc(x) is exact, so no x + 0.5 rounding trap."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return t


# ----- the plugin -----------------------------------------------------------------------------------


class PodTopologySpread:
    """Filter on DoNotSchedule constraints, Score on ScheduleAnyway ones (explicit or defaulted)."""

    name = NAME

    def __init__(self, args: PodTopologySpreadArgs | Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        self._counts: GenerationMemo[int] = GenerationMemo(COUNTED_SELECTORS)
        # Per pod template: its domains and matching pods per domain over all nodes, kept across cycles.
        self._pre_filter_totals = NodeTotalsCache()
        self._pre_score_totals = NodeTotalsCache()
        a = plugin_args(PodTopologySpreadArgs, args)
        self.system_defaulted = a.defaulting_type == SYSTEM_DEFAULTING
        if self.system_defaulted:
            self.default_constraints: tuple[tuple[str, TopologySpreadConstraint], ...] = (
                (SCHEDULE_ANYWAY, TopologySpreadConstraint(3, LABEL_HOSTNAME, NOTHING)),
                (SCHEDULE_ANYWAY, TopologySpreadConstraint(5, LABEL_TOPOLOGY_ZONE, NOTHING)),
            )
        else:
            self.default_constraints = self._build_defaults(a.default_constraints)
        self._defaults_for: dict[str, tuple[TopologySpreadConstraint, ...]] = {}
        for when, c in self.default_constraints:
            self._defaults_for[when] = (*self._defaults_for.get(when, ()), c)
        # get_constraints by pod template: PreFilter, PreScore and the batch's signing and rescoring each ask.
        self._own: TemplateMemo[tuple[TopologySpreadConstraint, ...]] = TemplateMemo()
        self._defaulted: TemplateMemo[tuple[TopologySpreadConstraint, ...]] = TemplateMemo()

    @staticmethod
    def _build_defaults(
        constraints: Sequence[Mapping[str, Any]],
    ) -> tuple[tuple[str, TopologySpreadConstraint], ...]:
        """The validated default constraints (no selector: the workload's is added per pod) as matchers."""
        out = []
        for i, c in enumerate(constraints):
            fld = f"defaultConstraints[{i}]"
            try:
                out.append(
                    (str(c.get("whenUnsatisfiable") or ""), _parse_constraint(c, {}, "PodTopologySpreadArgs", fld))
                )
            except InvalidObjectError as exc:
                raise ValueError(str(exc)) from None
        return tuple(out)

    # --- constraints of a pod --------------------------------------------------------------------

    def get_constraints(self, pod: Pod, action: str) -> tuple[TopologySpreadConstraint, ...]:
        """The pod's own constraints for ``action``, or the default ones with the workload's selector.

        Raises InvalidObjectError (naming the field) when the pod's constraints do not parse. A cycle asks four
        times (signing, PreFilter, PreScore, the batch's rescoring check): the answer is kept in the pod's memo
        with the object store's generation, which moves with every object the default selector may read.
        """
        objects = self.handle.objects()
        generation = getattr(objects, "generation", None)
        memo_key = _CONSTRAINTS_BY_ACTION.get(action)
        if generation is None or memo_key is None:
            return self._constraints(pod, action, objects, generation)
        held = pod.memo.get(memo_key)
        if held is not None and held[0] == generation:
            known: tuple[TopologySpreadConstraint, ...] = held[1]  # no cast(): a call a lookup
            return known
        constraints = self._constraints(pod, action, objects, generation)
        pod.memo[memo_key] = (generation, constraints)
        return constraints

    def _constraints(
        self, pod: Pod, action: str, objects: ObjectLister, generation: int | None
    ) -> tuple[TopologySpreadConstraint, ...]:
        """get_constraints without the pod's memo: own constraints by template, defaulted ones by template and
        generation (both remembered across the pods of a template)."""
        if has_pod_constraints(pod):
            return self._own.get(pod, action, lambda: tuple(c for when, c in _pod_constraints(pod) if when == action))
        defaults = self._defaults_for.get(action, ())
        if not defaults:
            return ()
        if generation is None:
            return _defaulted(pod, defaults, objects)
        return self._defaulted.get(pod, (action, generation), lambda: _defaulted(pod, defaults, objects))

    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable: a node's verdict under DoNotSchedule constraints depends on its own labels and on which
        domains are too full (skew over maxSkew), so that set (with its topology key) is the signature; it
        changes only when a domain crosses the limit, and ``signature_delta`` names the nodes of the domains
        that crossed it. ScheduleAnyway constraints (own or defaulted) never reject: their scores, which
        move with every pod placed in a domain, are recomputed each cycle (``rescore_each_cycle``)."""
        try:
            hard = self.get_constraints(pod, DO_NOT_SCHEDULE)
        except InvalidObjectError:
            return None
        if not hard:
            return ()
        s = self._pre_filter_state(pod, hard, self.handle.snapshot().list())
        return tuple(
            (c.topology_key, frozenset(value for value, n in s.match_num[i].items() if n + offset > c.max_skew))
            for i, c in enumerate(hard)
            for offset in ((1 if c.selector.matches(pod.labels) else 0) - s.global_min(i),)
        )

    def signature_delta(self, old: Hashable, new: Hashable) -> Callable[[NodeInfo], bool] | None:
        """Between two fragments of one pod template (same constraints), only nodes in a domain that became
        full or stopped being full can change verdict: the others keep theirs (a node without a constraint's
        key is rejected under both). The plugin's scores do not read the fragment."""
        if not isinstance(old, tuple) or not isinstance(new, tuple) or len(old) != len(new) or not old:
            return None
        changed: list[tuple[str, frozenset[str]]] = []
        for (key, full_before), (key_after, full_after) in zip(old, new, strict=True):
            if key != key_after:
                return None
            if full_before != full_after:
                changed.append((key, full_before ^ full_after))
        if len(changed) == 1:  # one constraint's domains (a zone's, typically): the test is asked of every node
            (one_key, one_values), = changed

            def affected_by_one(node_info: NodeInfo) -> bool:
                node = node_info.node
                return node is None or node.labels.get(one_key) in one_values

            return affected_by_one

        def affected(node_info: NodeInfo) -> bool:
            node = node_info.node
            if node is None:
                return True
            labels = node.labels
            for key, values in changed:  # noqa: SIM110  (asked of every node: any() builds a generator a call)
                if labels.get(key) in values:
                    return True
            return False

        return affected

    def rescore_each_cycle(self, pod: Pod) -> bool:
        """Scores come from ScheduleAnyway constraints, which count the pods placed in each domain."""
        try:
            return bool(self.get_constraints(pod, SCHEDULE_ANYWAY))
        except InvalidObjectError:
            return True

    # --- PreFilter / Filter ----------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Count matching pods per domain of every DoNotSchedule constraint; Skip when there is none."""
        try:
            constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        except InvalidObjectError as exc:
            return None, error(f"get constraints from pod: obtaining pod's hard topology spread constraints: {exc}")
        if not constraints:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, self._pre_filter_state(pod, constraints, nodes))
        return None, None

    def _pre_filter_state(
        self, pod: Pod, constraints: tuple[TopologySpreadConstraint, ...], nodes: Sequence[NodeInfo]
    ) -> _PreFilterState:
        """Matching pods per domain of every constraint over ``nodes``, from sums kept across cycles."""
        s = _PreFilterState(constraints)
        totals = self._pre_filter_totals.get(
            (template_key(pod), constraints), 2 * len(constraints),
            lambda: _domain_contribution(pod, constraints, True, True),
        ).refresh(nodes, self.handle.snapshot())
        for i in range(len(constraints)):
            matching = totals[2 * i + 1]
            s.match_num[i] = cast(dict[str, int], {value: matching.get(value, 0) for value in totals[2 * i]})
        s.finish()
        return s

    def pre_filter_extensions(self) -> PodTopologySpread:
        return self

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        return self._update(state, pod, pod_to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo) -> Status | None:
        return self._update(state, pod, pod_to_remove, node_info, -1)

    @staticmethod
    def _update(state: CycleState, pod: Pod, other: Pod, node_info: NodeInfo, delta: int) -> Status | None:
        """updateWithPod: only same-namespace pods on nodes counted in PreFilter move the counts."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        node = node_info.node
        if other.namespace != pod.namespace or node is None or not _node_has_all_keys(node.labels, s.constraints):
            return None
        required = required_node_affinity(pod)
        for i, c in enumerate(s.constraints):
            if not c.selector.matches(other.labels) or not c.match_node_inclusion_policies(pod, node, required):
                continue
            s.move(i, node.labels[c.topology_key], delta)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """skew = pods in the node's domain + (1 if the pod matches itself) - global minimum ≤ maxSkew."""
        return self.filter_for(state, pod)(node_info)

    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None]:
        """``filter`` with the pod's self-match and each constraint's global minimum worked out once."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            missing = error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
            return lambda node_info: missing
        plan = tuple(
            (c.topology_key, s.match_num[i], (1 if c.selector.matches(pod.labels) else 0) - s.global_min(i), c.max_skew)
            for i, c in enumerate(s.constraints)
        )

        def check(node_info: NodeInfo) -> Status | None:
            node = node_info.node
            if node is None:
                return error("node not found")
            labels = node.labels
            for key, counts, offset, max_skew in plan:
                value = labels.get(key)
                if value is None:
                    return unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
                if counts.get(value, 0) + offset > max_skew:
                    return unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
            return None

        return check

    # --- PreScore / Score / NormalizeScore -------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Domains of the filtered nodes, their weights, and matching-pod counts over all nodes."""
        all_nodes = self.handle.snapshot().list()
        if not all_nodes:
            return skip()
        try:
            constraints = self.get_constraints(pod, SCHEDULE_ANYWAY)
        except InvalidObjectError as exc:
            return error(f"calculating preScoreState: obtaining pod's soft topology spread constraints: {exc}")
        if not constraints:  # most pods: no state to build
            return skip()
        # System defaults do not require every key, so nodes without a zone still get hostname spreading.
        require_all = has_pod_constraints(pod) or not self.system_defaulted
        s = _PreScoreState()
        self._init_pre_score_state(s, constraints, nodes, require_all)
        n = len(self.handle.snapshot().list())
        s.counters = [matching_pod_counter(self._counts, c.selector, pod.namespace, n) for c in s.constraints]
        # Matching pods per domain over all nodes; only the candidate nodes' domains are kept (hostname
        # domains are counted in Score, node by node).
        totals = self._pre_score_totals.get(
            (template_key(pod), s.constraints, require_all), 2 * len(s.constraints),
            lambda: _domain_contribution(pod, s.constraints, require_all, False),
        ).refresh(all_nodes, self.handle.snapshot())
        for i, c in enumerate(s.constraints):
            if c.topology_key != LABEL_HOSTNAME:
                matching = totals[2 * i + 1]
                s.value_counts[i] = {value: matching.get(value, 0) for value in s.value_counts[i]}
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    @staticmethod
    def _init_pre_score_state(
        s: _PreScoreState, constraints: tuple[TopologySpreadConstraint, ...], nodes: Sequence[NodeInfo],
        require_all: bool,
    ) -> None:
        s.constraints = constraints
        s.nodes = nodes
        present = [ni.node for ni in nodes if ni.node is not None]
        if require_all:
            ignored = [node for node in present if not _node_has_all_keys(node.labels, constraints)]
            if ignored:
                s.ignored_nodes = {node.name for node in ignored}
                present = [node for node in present if node.name not in s.ignored_nodes]
        # The domains of each constraint among the nodes (hostname ones are counted node by node in Score)
        s.value_counts = [{} if c.topology_key == LABEL_HOSTNAME else
                          dict.fromkeys([node.labels.get(c.topology_key, "") for node in present], 0)
                          for c in constraints]
        weights = []
        for i, c in enumerate(s.constraints):
            size = len(nodes) - len(s.ignored_nodes) if c.topology_key == LABEL_HOSTNAME else len(s.value_counts[i])
            weights.append(topology_normalizing_weight(size))
        s.topology_normalizing_weight = weights

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return score_by_batch(self, state, pod, node_info)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """``score`` for every node in one call, the per-constraint data unpacked once."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return [], error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        ignored = s.ignored_nodes
        # score_for_count and go_round inlined (the same float operations in the same order): a total is
        # never negative (weights > 0, maxSkew >= 1), so Go's rounding is a truncation plus the half step.
        plan = tuple(
            (c.topology_key, c.topology_key == LABEL_HOSTNAME, s.counters[i], float(c.max_skew - 1),
             s.topology_normalizing_weight[i], s.value_counts[i])
            for i, c in enumerate(s.constraints)
        )
        out: list[int] = []
        append = out.append
        for ni in nodes:
            node = ni.node
            if node is None:
                return [], error("node not found")
            if ignored and node.name in ignored:
                append(0)
                continue
            labels = node.labels
            total = 0.0
            for key, is_hostname, counter, tolerance, weight, counts in plan:
                value = labels.get(key)
                if value is None:
                    continue
                total += float(counter(ni) if is_hostname else counts.get(value, 0)) * weight + tolerance
            rounded = int(total)
            append(rounded + 1 if total - rounded >= 0.5 else rounded)
        return out, None

    def score_extensions(self) -> PodTopologySpread:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        """100·(max + min - s)/max (integer); ignored nodes 0; max 0 → 100 for everyone scored."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        valid = [ns.score for ns in scores if ns.name not in s.ignored_nodes]
        lo = min(valid, default=0)
        hi = max(valid, default=0)
        hi = max(hi, 0)
        for ns in scores:
            if ns.name in s.ignored_nodes:
                ns.score = 0
            elif hi == 0:
                ns.score = MAX_NODE_SCORE
            else:
                ns.score = MAX_NODE_SCORE * (hi + lo - ns.score) // hi
        return None

    def normalize_values(self, state: CycleState, pod: Pod, values: ScoreRow) -> Status | None:
        """``normalize_score`` on the framework's score row (the same integer arithmetic); the ignored nodes'
        places are those of PreScore's nodes."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        if not values.size:
            return None
        ignored = None
        if s.ignored_nodes:
            if len(s.nodes) != len(values):
                return error(f"{len(values)} scores for the {len(s.nodes)} nodes of PreScore")
            ignored = np.fromiter((ni.name in s.ignored_nodes for ni in s.nodes), dtype=np.bool_, count=len(values))
        valid = values if ignored is None else values[~ignored]
        lo = int(valid.min()) if valid.size else 0
        hi = max(int(valid.max()) if valid.size else 0, 0)
        if hi == 0:
            values[:] = MAX_NODE_SCORE
        else:
            values[:] = MAX_NODE_SCORE * (hi + lo - values) // hi
        if ignored is not None:
            values[ignored] = 0
        return None

    # --- queueing hints --------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Assigned pods added / relabelled / deleted and the pod's own toleration change; nodes added,
        deleted, relabelled or retainted."""
        pod_actions = (
            ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_TOLERATION | ActionType.DELETE
        )
        node_actions = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, pod_actions), self.is_schedulable_after_pod_change),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_actions), self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_pod_change(self, pod: Pod, old_obj: object, new_obj: object) -> QueueingHint:
        """Queue when a same-namespace assigned pod matching a constraint's selector appears, disappears or
        flips its match, or when the pod itself gains tolerations that a taints-Honor constraint counts."""
        old, new = as_pod(old_obj), as_pod(new_obj)
        if (new is not None and not _involved(new, pod)) or (old is not None and not _involved(old, pod)):
            return QueueingHint.QUEUE_SKIP
        constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        if old is not None and new is not None:
            if (
                pod.uid == new.uid
                and _spec_list(old.raw, "tolerations") != _spec_list(new.raw, "tolerations")
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            if dict(old.labels) == dict(new.labels):
                return QueueingHint.QUEUE_SKIP
            flipped = any(c.selector.matches(old.labels) != c.selector.matches(new.labels) for c in constraints)
            return QueueingHint.QUEUE if flipped else QueueingHint.QUEUE_SKIP
        changed = new if new is not None else old
        if changed is None:
            return QueueingHint.QUEUE_SKIP
        matches = any(c.selector.matches(changed.labels) for c in constraints)
        return QueueingHint.QUEUE if matches else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old_obj: object, new_obj: object) -> QueueingHint:
        """Queue when a node carrying all the keys appears or goes away, gains or loses a key, changes a
        key's value, or (carrying all keys) changes its taints."""
        old, new = as_node(old_obj), as_node(new_obj)
        constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        old_match = old is not None and _node_has_all_keys(old.labels, constraints)
        new_match = new is not None and _node_has_all_keys(new.labels, constraints)
        if old is not None and new is not None:
            if old_match != new_match:
                return QueueingHint.QUEUE
            keys_changed = any(old.labels.get(c.topology_key) != new.labels.get(c.topology_key) for c in constraints)
            if new_match and (keys_changed or _spec_list(old.raw, "taints") != _spec_list(new.raw, "taints")):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            return QueueingHint.QUEUE if new_match else QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if old_match else QueueingHint.QUEUE_SKIP


def _spec_list(raw: Mapping[str, Any], key: str) -> list[Any]:
    """spec.<key> as equality.Semantic.DeepEqual compares it: every field (tolerationSeconds, timeAdded),
    a missing list equal to an empty one."""
    spec = raw.get("spec")
    value = spec.get(key) if isinstance(spec, Mapping) else None
    return list(value) if isinstance(value, list) else []


def _involved(other: Pod, pod: Pod) -> bool:
    """involvedInTopologySpreading: the pod itself, or an assigned pod of its namespace."""
    return other.uid == pod.uid or (bool(other.node_name) and other.namespace == pod.namespace)
