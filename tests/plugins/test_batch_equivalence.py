"""Batch scoring and fast filters equal the per-node reference, on random clusters.

Every plugin with a ``score_nodes`` must return exactly ``[score(n) for n in nodes]`` (the per-node
``score`` stays the reference and the fallback), and the filters with precomputed fast paths must
return the same verdict, code and reasons as a straightforward per-node reference implementation.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.cache import new_cache_and_snapshot, new_snapshot
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code, Status, error, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo
from scheduler.model.node import Node
from scheduler.model.pod import Pod, pod_from_api
from scheduler.model.taints import Taint, first_untolerated
from scheduler.plugins.image_locality import ImageLocality
from scheduler.plugins.inter_pod_affinity import (
    PRE_FILTER_STATE_KEY as IPA_FILTER_STATE,
)
from scheduler.plugins.inter_pod_affinity import (
    PRE_SCORE_STATE_KEY as IPA_STATE,
)
from scheduler.plugins.inter_pod_affinity import (
    InterPodAffinity,
    _count_affinity,
    _count_anti_affinity,
    _has_preferred_constraints,
    affinity_terms,
)
from scheduler.plugins.legacy.selector_spread import SelectorSpread
from scheduler.plugins.node_affinity import NodeAffinity
from scheduler.plugins.node_name import NodeName
from scheduler.plugins.node_ports import NodePorts
from scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from scheduler.plugins.node_resources_fit import NodeResourcesFit, fit_request, fits_request, status_for
from scheduler.plugins.node_unschedulable import NodeUnschedulable
from scheduler.plugins.pod_topology_spread import PRE_FILTER_STATE_KEY as PTS_FILTER_STATE
from scheduler.plugins.pod_topology_spread import PRE_SCORE_STATE_KEY as PTS_SCORE_STATE
from scheduler.plugins.pod_topology_spread import PodTopologySpread
from scheduler.plugins.taint_toleration import DO_NOT_SCHEDULE, UNTOLERATED_REASON, TaintToleration
from tests.builders import container, host_port, make_node, make_pod, taint
from tests.plugins.pod_to_pod_util import FakeObjects
from tests.plugins.util import FakeHandle

GPU = "example.com/gpu"
FOO = "example.com/foo"
HUGE = "hugepages-2Mi"
IMAGES = ["busybox", "busybox:latest", "nginx:1.27", "repo/app", "repo/app:v2", "img@sha256:abcd", "pause:3.10"]
ZONES = ["z0", "z1", "z2"]
TAINT_KEYS = ["k1", "k2", "dedicated"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
LABEL_VALUES = ["a", "b", "c"]

_UNSCHEDULABLE = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FIT_ARGS: list[dict[str, Any]] = [
    {},
    {"scoringStrategy": {"type": "MostAllocated"}},
    {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3},
                                                                {"name": "memory", "weight": 7}]}},
    {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": 3},
                                                                 {"name": "cpu", "weight": 2}]}},
    {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 5},
                                                                 {"name": "memory", "weight": 1},
                                                                 {"name": GPU, "weight": 4}]}},
    {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1},
                                                                {"name": "ephemeral-storage", "weight": 2},
                                                                {"name": HUGE, "weight": 3},
                                                                {"name": "pods", "weight": 1}]}},
    {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                         "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                         "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                                                {"utilization": 100, "score": 10}]}}},
    {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                         "resources": [{"name": GPU, "weight": 3}, {"name": "cpu", "weight": 1}],
                         "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10},
                                                                {"utilization": 40, "score": 3},
                                                                {"utilization": 100, "score": 0}]}}},
    {"ignoredResources": [GPU], "ignoredResourceGroups": ["example.org"]},
]
BALANCED_ARGS: list[dict[str, Any]] = [
    {},
    {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]},
    {"resources": [{"name": "memory"}, {"name": "cpu"}]},
    {"resources": [{"name": "cpu"}, {"name": "ephemeral-storage"}, {"name": HUGE}]},
]
NODE_AFFINITY_ARGS: list[dict[str, Any]] = [
    {},
    {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 7, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["a"]}]}}]}},
    {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["c"]}]}]}}},
]

# --- strategies ---------------------------------------------------------------------------------

cpu_q = st.sampled_from(["0", "1", "2", "500m", "4", "16", "100m"])
mem_q = st.sampled_from(["0", "1Gi", "8Gi", "32Gi", "512Mi", "3Gi"])
small_q = st.sampled_from(["0", "1", "2", "4"])
taint_st = st.builds(taint, st.sampled_from(TAINT_KEYS), st.sampled_from(["", "x", "y"]), st.sampled_from(EFFECTS))
labels_st = st.fixed_dictionaries({}, optional={"disk": st.sampled_from(LABEL_VALUES),
                                               "app": st.sampled_from(LABEL_VALUES),
                                               "topology.kubernetes.io/zone": st.sampled_from(ZONES)})


@st.composite
def nodes_st(draw: st.DrawFn) -> list[Node]:
    out = []
    for i in range(draw(st.integers(1, 8))):
        extra = draw(st.fixed_dictionaries({}, optional={GPU: small_q, FOO: small_q, HUGE: st.sampled_from(["0", "2Mi",
                                                                                                           "8Mi"])}))
        labels = dict(draw(labels_st))
        if draw(st.booleans()):
            labels["kubernetes.io/hostname"] = f"n{i}"
        images = draw(st.lists(st.tuples(st.lists(st.sampled_from(IMAGES), min_size=1, max_size=2),
                                         st.sampled_from([10 * 2**20, 300 * 2**20, 2000 * 2**20])), max_size=3))
        out.append(make_node(
            f"n{i}", cpu=draw(cpu_q), memory=draw(mem_q), pods=draw(st.sampled_from(["0", "1", "3", "110"])),
            ephemeral=draw(st.sampled_from([None, "0", "10Gi", "100Gi"])), extra=extra, labels=labels,
            taints=draw(st.lists(taint_st, max_size=3)), images=[(names, size) for names, size in images],
            unschedulable=draw(st.booleans()),
        ))
    return out


def container_st(allow_ports: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        container,
        cpu=st.none() | cpu_q,
        memory=st.none() | mem_q,
        ephemeral=st.none() | st.sampled_from(["0", "1Gi", "20Gi"]),
        extra=st.fixed_dictionaries({}, optional={GPU: small_q, FOO: small_q, HUGE: st.sampled_from(["0", "2Mi"]),
                                                  "example.org/bar": small_q}),
        image=st.sampled_from([*IMAGES, ""]),
        ports=st.lists(st.builds(host_port, st.sampled_from([80, 443, 8080]), st.sampled_from(["", "0.0.0.0",
                                                                                                 "10.0.0.1"]),
                                 st.sampled_from(["", "UDP"])), max_size=2) if allow_ports else st.just([]),
    )


toleration_st = st.fixed_dictionaries(
    {"key": st.sampled_from([*TAINT_KEYS, ""]), "operator": st.sampled_from(["Equal", "Exists"])},
    optional={"value": st.sampled_from(["", "x", "y"]), "effect": st.sampled_from([*EFFECTS, ""])},
)
expr_st = st.fixed_dictionaries({"key": st.sampled_from(["disk", "app", "topology.kubernetes.io/zone"]),
                                 "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"])}).map(
    lambda e: {**e, "values": ["a", "z1"]} if e["operator"] in ("In", "NotIn") else e
)
pod_term_st = st.fixed_dictionaries({
    "labelSelector": st.fixed_dictionaries({"matchLabels": st.fixed_dictionaries({"app": st.sampled_from(
        LABEL_VALUES)})}),
    "topologyKey": st.sampled_from(["topology.kubernetes.io/zone", "kubernetes.io/hostname", "disk"]),
})


@st.composite
def affinity_st(draw: st.DrawFn) -> dict[str, Any] | None:
    aff: dict[str, Any] = {}
    if draw(st.booleans()):
        node_aff: dict[str, Any] = {}
        if draw(st.booleans()):
            node_aff["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
                {"matchExpressions": draw(st.lists(expr_st, min_size=1, max_size=2))}]}
        if draw(st.booleans()):
            node_aff["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": draw(st.integers(1, 100)), "preference": {"matchExpressions": [draw(expr_st)]}}
                for _ in range(draw(st.integers(1, 3)))
            ]
        aff["nodeAffinity"] = node_aff
    if draw(st.booleans()):
        key = draw(st.sampled_from(["podAffinity", "podAntiAffinity"]))
        aff[key] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": draw(st.integers(1, 100)), "podAffinityTerm": draw(pod_term_st)}
            for _ in range(draw(st.integers(1, 2)))
        ]}
        if draw(st.booleans()):
            aff[key]["requiredDuringSchedulingIgnoredDuringExecution"] = [draw(pod_term_st)]
    return aff or None


def with_labels(pod: Pod, labels: Mapping[str, str], spread: Sequence[Mapping[str, Any]] = ()) -> Pod:
    from scheduler.model.pod import pod_from_api

    raw = {**pod.raw, "metadata": {**pod.raw["metadata"], "labels": dict(labels)}}
    if spread:
        raw["spec"] = {**raw["spec"], "topologySpreadConstraints": [dict(c) for c in spread]}
    return pod_from_api(raw)


spread_st = st.fixed_dictionaries({
    "maxSkew": st.integers(1, 3),
    "topologyKey": st.sampled_from(["topology.kubernetes.io/zone", "kubernetes.io/hostname"]),
    "whenUnsatisfiable": st.sampled_from(["ScheduleAnyway", "DoNotSchedule"]),
    "labelSelector": st.fixed_dictionaries({"matchLabels": st.fixed_dictionaries({"app": st.sampled_from(
        LABEL_VALUES)})}),
})


@st.composite
def cluster_st(draw: st.DrawFn) -> tuple[list[Node], list[Pod], Pod]:
    nodes = draw(nodes_st())
    existing = []
    for j in range(draw(st.integers(0, 10))):
        p = make_pod(
            f"e{j}", containers=draw(st.lists(container_st(), min_size=1, max_size=2)),
            node=f"n{draw(st.integers(0, len(nodes) - 1))}", affinity=draw(affinity_st()),
        )
        existing.append(with_labels(p, draw(st.fixed_dictionaries({}, optional={"app": st.sampled_from(
            LABEL_VALUES)}))))
    pod = make_pod(
        "incoming",
        containers=draw(st.lists(container_st(), min_size=1, max_size=3)),
        init_containers=draw(st.lists(container_st(allow_ports=False), max_size=1)),
        tolerations=draw(st.lists(toleration_st, max_size=3)),
        node_selector=draw(st.none() | st.fixed_dictionaries({"disk": st.sampled_from(LABEL_VALUES)})),
        affinity=draw(affinity_st()),
        node=draw(st.sampled_from(["", "", "", "n0", "n1"])),
    )
    pod = with_labels(pod, draw(st.fixed_dictionaries({}, optional={"app": st.sampled_from(LABEL_VALUES)})),
                      draw(st.lists(spread_st, max_size=2, unique_by=lambda c: (c["topologyKey"],
                                                                                c["whenUnsatisfiable"]))))
    return nodes, existing, pod


# --- helpers ------------------------------------------------------------------------------------


def _key(s: Status | None) -> tuple[Code, list[str]] | None:
    return None if s is None else (s.code, list(s.reasons))


class _Handle(FakeHandle):
    """A snapshot handle with one Service selecting app=a (so system-default spreading applies)."""

    SERVICE: Mapping[str, Any] = {
        "kind": "Service", "metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": {"app": "a"}},
    }

    def objects(self) -> Any:
        return FakeObjects([self.SERVICE])


def _setup(nodes: list[Node], existing: list[Pod]) -> tuple[FakeHandle, list[NodeInfo]]:
    handle = _Handle(new_snapshot(nodes, existing))
    return handle, list(handle.snapshot().list())


def _assert_batch_equals_per_node(plugin: Any, pod: Pod, infos: list[NodeInfo]) -> None:
    """PreScore, then score_nodes against score() per node (values, or the first error's message)."""
    state = CycleState()
    pre_score = getattr(plugin, "pre_score", None)
    if pre_score is not None:
        s = pre_score(state, pod, infos)
        if s is not None and s.code == Code.SKIP:
            return
        if s is not None:
            return  # PreScore failed: Score never runs
    batch, batch_status = plugin.score_nodes(state, pod, infos)
    expected: list[int] = []
    ref_status = None
    for ni in infos:
        value, s = plugin.score(state, pod, ni)
        if s is not None and s.code != Code.SUCCESS:
            ref_status = s
            break
        expected.append(value)
    if ref_status is not None:
        assert batch_status is not None and batch_status.message == ref_status.message
        return
    assert batch_status is None
    assert batch == expected


def _assert_filter_for_matches(plugin: Any, state: CycleState, pod: Pod, infos: list[NodeInfo]) -> None:
    """The per-pod specialised check (None: passes everywhere) gives ``filter``'s verdict on every node."""
    check = plugin.filter_for(state, pod)
    for ni in infos:
        got = None if check is None else check(ni)
        assert _key(got) == _key(plugin.filter(state, pod, ni)), ni.name


def _run_filters(plugin: Any, pod: Pod, infos: list[NodeInfo]) -> tuple[CycleState, Status | None]:
    state = CycleState()
    _, s = plugin.pre_filter(state, pod, infos)
    return state, s


# --- reference filters ----------------------------------------------------------------------------


def ref_fit_filter(plugin: NodeResourcesFit, pod: Pod, ni: NodeInfo) -> Status | None:
    return status_for(fits_request(fit_request(pod), ni.allocatable, ni.requested, len(ni.pods),
                                   plugin.ignored_resources, plugin.ignored_resource_groups))


def ref_taint_filter(pod: Pod, ni: NodeInfo) -> Status | None:
    node = ni.node
    if node is None:
        return error("node not found")
    for obj, prefix in ((pod, "spec.tolerations"), (node, "spec.taints")):
        err = obj.parse_error
        if err is not None and err.field.startswith(prefix):
            return unresolvable(str(err))
    if first_untolerated(node.taints, pod.tolerations, DO_NOT_SCHEDULE) is None:
        return None
    return unresolvable(UNTOLERATED_REASON)


def ref_node_name_filter(pod: Pod, ni: NodeInfo) -> Status | None:
    if ni.node is None:
        return error("node not found")
    ok = not pod.node_name or pod.node_name == ni.name
    return None if ok else unresolvable("node(s) didn't match the requested node name")


def ref_node_ports_filter(pod: Pod, ni: NodeInfo) -> Status | None:
    conflict = any(ni.port_conflict(p) for p in pod.host_ports)
    return unschedulable("node(s) didn't have free ports for the requested pod ports") if conflict else None


# --- tests ----------------------------------------------------------------------------------------


def check_node_resources_fit(cluster: tuple[list[Node], list[Pod], Pod], args_index: int) -> None:
    nodes, existing, pod = cluster
    handle, infos = _setup(nodes, existing)
    plugin = NodeResourcesFit(FIT_ARGS[args_index], handle)
    state, s = _run_filters(plugin, pod, infos)
    if s is None:
        for ni in infos:
            assert _key(plugin.filter(state, pod, ni)) == _key(ref_fit_filter(plugin, pod, ni))
        _assert_filter_for_matches(plugin, state, pod, infos)
    _assert_batch_equals_per_node(plugin, pod, infos)
    # Score without PreScore (the plugin computes the requests itself).
    batch, status = plugin.score_nodes(CycleState(), pod, infos)
    assert status is None
    assert batch == [plugin.score(CycleState(), pod, ni)[0] for ni in infos]


def check_balanced_allocation(cluster: tuple[list[Node], list[Pod], Pod], args_index: int) -> None:
    nodes, existing, pod = cluster
    handle, infos = _setup(nodes, existing)
    plugin = NodeResourcesBalancedAllocation(BALANCED_ARGS[args_index], handle)
    _assert_batch_equals_per_node(plugin, pod, infos)
    batch, status = plugin.score_nodes(CycleState(), pod, infos)
    assert status is None
    assert batch == [plugin.score(CycleState(), pod, ni)[0] for ni in infos]


def check_image_locality(cluster: tuple[list[Node], list[Pod], Pod]) -> None:
    nodes, existing, pod = cluster
    handle, infos = _setup(nodes, existing)
    _assert_batch_equals_per_node(ImageLocality({}, handle), pod, infos)


def check_taint_toleration(cluster: tuple[list[Node], list[Pod], Pod]) -> None:
    nodes, existing, pod = cluster
    handle, infos = _setup(nodes, existing)
    plugin = TaintToleration({}, handle)
    for ni in infos:
        assert _key(plugin.filter(CycleState(), pod, ni)) == _key(ref_taint_filter(pod, ni))
    _assert_filter_for_matches(plugin, CycleState(), pod, infos)
    _assert_batch_equals_per_node(plugin, pod, infos)


def check_node_affinity(cluster: tuple[list[Node], list[Pod], Pod], args_index: int) -> None:
    nodes, existing, pod = cluster
    handle, infos = _setup(nodes, existing)
    plugin = NodeAffinity(NODE_AFFINITY_ARGS[args_index], handle)
    _assert_batch_equals_per_node(plugin, pod, infos)
    batch, status = plugin.score_nodes(CycleState(), pod, infos)  # without PreScore
    assert status is None
    assert batch == [plugin.score(CycleState(), pod, ni)[0] for ni in infos]


def check_pod_topology_spread(cluster: tuple[list[Node], list[Pod], Pod]) -> None:
    nodes, existing, pod = cluster
    handle, infos = _setup(nodes, existing)
    _assert_batch_equals_per_node(PodTopologySpread({}, handle), pod, infos)


def _spread_results(pts: PodTopologySpread, ss: SelectorSpread, pod: Pod, infos: list[NodeInfo]) -> list[Any]:
    """What the spreading plugins computed from per-node pod counts: PreFilter domain counts, PreScore
    domain counts and scores, SelectorSpread's raw scores."""
    out: list[Any] = []
    state = CycleState()
    _, status = pts.pre_filter(state, pod, infos)
    pf = state.get(PTS_FILTER_STATE)
    out.append((_key(status), pf.match_num if pf is not None else None))
    status = pts.pre_score(state, pod, infos)
    out.append(_key(status))
    if status is None:
        out.append((state.get(PTS_SCORE_STATE).value_counts, pts.score_nodes(state, pod, infos)))
    status = ss.pre_score(state, pod, infos)
    out.append(_key(status))
    if status is None:
        out.append([ss.score(state, pod, ni)[0] for ni in infos])
    return out


def check_spread_counts_follow_node_changes(cluster: tuple[list[Node], list[Pod], Pod]) -> None:
    """Counts are kept across cycles (per NodeInfo generation, NodeTotals over the snapshot's change log):
    after pods like the incoming one land on half the nodes (through the cache, which replaces the
    snapshot's NodeInfos), the plugins that counted before must agree with fresh instances."""
    nodes, existing, pod = cluster
    cache, snapshot = new_cache_and_snapshot(nodes, existing)
    handle = _Handle(snapshot)
    pts, ss = PodTopologySpread({}, handle), SelectorSpread({}, handle)
    _spread_results(pts, ss, pod, list(snapshot.list()))  # fills the memos
    for i, ni in enumerate(list(snapshot.list())[::2]):
        cache.add_pod(with_labels(make_pod(f"twin-{i}", node=ni.name, uid=f"twin-{i}", namespace=pod.namespace),
                                  pod.labels))
    cache.update_snapshot(snapshot)
    infos = list(snapshot.list())
    assert _spread_results(pts, ss, pod, infos) == _spread_results(
        PodTopologySpread({}, handle), SelectorSpread({}, handle), pod, infos)


def check_inter_pod_affinity(cluster: tuple[list[Node], list[Pod], Pod], ignore_existing: bool) -> None:
    nodes, existing, pod = cluster
    handle, infos = _setup(nodes, existing)
    plugin = InterPodAffinity({"ignorePreferredTermsOfExistingPods": ignore_existing}, handle)
    _assert_batch_equals_per_node(plugin, pod, infos)


def _twin(p: Pod, suffix: str, node: str, namespace: str | None = None) -> Pod:
    raw = copy.deepcopy(dict(p.raw))
    raw["metadata"]["uid"] = f"{p.uid}-{suffix}"
    raw["metadata"]["name"] = f"{p.name}-{suffix}"
    if namespace is not None:
        raw["metadata"]["namespace"] = namespace
    raw["spec"]["nodeName"] = node
    return pod_from_api(raw)


def check_inter_pod_affinity_grouping(cluster: tuple[list[Node], list[Pod], Pod]) -> None:
    """PreScore matches each (namespace, labels, affinity) once per cycle; its sums must equal a walk that
    matches every existing pod itself. Every existing pod gets a twin on another node and one in another
    namespace, so groups of several pods occur."""
    nodes, existing, pod = cluster
    names = [n.name for n in nodes]
    twins = [_twin(p, "t", names[(i + 1) % len(names)]) for i, p in enumerate(existing)]
    twins += [_twin(p, "o", names[i % len(names)], "other") for i, p in enumerate(existing)]
    handle, infos = _setup(nodes, existing + twins)
    plugin = InterPodAffinity({}, handle)
    state = CycleState()
    status = plugin.pre_score(state, pod, infos)
    if affinity_terms(pod).errors:
        return
    has_constraints = _has_preferred_constraints(pod)
    terms = affinity_terms(pod)
    preferred = plugin._merge_weighted(terms.preferred_affinity)
    preferred_anti = plugin._merge_weighted(terms.preferred_anti_affinity)
    ns_labels = plugin._namespace_labels(pod.namespace)
    expected: dict[tuple[str, str], int] = {}
    keys: set[str] = set()
    for ni in infos:
        assert ni.node is not None
        for ex in (ni.pods if has_constraints else ni.pods_with_affinity).values():
            for key, weight in plugin._contributions(pod, ns_labels, preferred, preferred_anti, ex):
                value = ni.node.labels.get(key)
                if value is not None:
                    keys.add(key)
                    expected[key, value] = expected.get((key, value), 0) + weight
    if not keys:
        assert status is not None and status.code == Code.SKIP
    else:
        assert status is None
        got = state.get(IPA_STATE)
        assert got.topology_score == {k: v for k, v in expected.items() if v}  # zero sums read as absent
        assert set(got.keys) == keys
    # PreFilter's counters, grouped the same way, against counting pod by pod; also for a variant of the pod
    # that has required terms of both kinds, which random pods seldom have.
    _assert_pre_filter_counts(plugin, pod, infos)
    raw = copy.deepcopy(dict(pod.raw))
    raw["spec"]["affinity"] = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "topology.kubernetes.io/zone"}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "b"}}, "topologyKey": "kubernetes.io/hostname"},
            {"labelSelector": {"matchLabels": {"app": "c"}}, "topologyKey": "topology.kubernetes.io/zone"}]},
    }
    _assert_pre_filter_counts(plugin, pod_from_api(raw), infos)


def _assert_pre_filter_counts(plugin: InterPodAffinity, pod: Pod, infos: list[NodeInfo]) -> None:
    state = CycleState()
    plugin.pre_filter(state, pod, infos)
    pf = state.get(IPA_FILTER_STATE)
    if pf is None:
        return
    want_existing: dict[tuple[str, str], int] = {}
    want_affinity: dict[tuple[str, str], int] = {}
    want_anti: dict[tuple[str, str], int] = {}
    for ni in infos:
        assert ni.node is not None
        for ex in ni.pods.values():
            if ex.uid in ni.pods_with_required_anti_affinity:
                _count_anti_affinity(want_existing, affinity_terms(ex).required_anti_affinity, pod, pf.ns_labels,
                                     ni.node, 1)
            if pf.required_affinity or pf.required_anti_affinity:
                _count_affinity(want_affinity, pf.required_affinity, ex, ni.node, 1)
                _count_anti_affinity(want_anti, pf.required_anti_affinity, ex, None, ni.node, 1)
    assert (pf.existing_anti_affinity_counts, pf.affinity_counts, pf.anti_affinity_counts) == (
        want_existing, want_affinity, want_anti)


def check_simple_filters(cluster: tuple[list[Node], list[Pod], Pod]) -> None:
    nodes, existing, pod = cluster
    handle, infos = _setup(nodes, existing)
    node_name, unsched, ports = NodeName({}, handle), NodeUnschedulable({}, handle), NodePorts({}, handle)
    state, s = _run_filters(ports, pod, infos)
    for ni in infos:
        assert _key(node_name.filter(CycleState(), pod, ni)) == _key(ref_node_name_filter(pod, ni))
        if s is None:
            assert _key(ports.filter(state, pod, ni)) == _key(ref_node_ports_filter(pod, ni))
        expected = None
        if ni.node is not None and ni.node.unschedulable and not any(
            t.tolerates(_UNSCHEDULABLE) for t in pod.tolerations
        ):
            expected = unresolvable("node(s) were unschedulable")
        assert _key(unsched.filter(CycleState(), pod, ni)) == _key(expected)
    _assert_filter_for_matches(node_name, CycleState(), pod, infos)
    _assert_filter_for_matches(unsched, CycleState(), pod, infos)


@SETTINGS
@given(cluster_st())
def test_batch_equals_per_node(cluster: tuple[list[Node], list[Pod], Pod]) -> None:
    """One random cluster and pod, every plugin with each of its argument variants."""
    for i in range(len(FIT_ARGS)):
        check_node_resources_fit(cluster, i)
    for i in range(len(BALANCED_ARGS)):
        check_balanced_allocation(cluster, i)
    check_image_locality(cluster)
    check_taint_toleration(cluster)
    for i in range(len(NODE_AFFINITY_ARGS)):
        check_node_affinity(cluster, i)
    check_pod_topology_spread(cluster)
    check_spread_counts_follow_node_changes(cluster)
    check_inter_pod_affinity(cluster, True)
    check_inter_pod_affinity(cluster, False)
    check_inter_pod_affinity_grouping(cluster)
    check_simple_filters(cluster)
    check_resource_memo_follows_node_changes(cluster)


def check_resource_memo_follows_node_changes(cluster: tuple[list[Node], list[Pod], Pod]) -> None:
    """The resource scorers reuse scores of unchanged nodes across cycles (GenerationMemo): after half the
    nodes gain a pod (a new generation), every score must still equal the per-node reference."""
    nodes, existing, pod = cluster
    handle, infos = _setup(nodes, existing)
    extra = make_pod("memo-extra", containers=[container(cpu="700m", memory="3Gi")], uid="memo-extra")
    for plugin in (NodeResourcesFit({}, handle), NodeResourcesBalancedAllocation({}, handle)):
        plugin.score_nodes(CycleState(), pod, infos)  # fills the memo
        changed = [ni.clone() for ni in infos]  # clones keep the generation: still memo hits
        for ni in changed[::2]:
            ni.add_pod(extra)
        batch, status = plugin.score_nodes(CycleState(), pod, changed)
        assert status is None
        assert batch == [plugin.score(CycleState(), pod, ni)[0] for ni in changed]
    # NodeResourcesFit's filter_for remembers the generations that passed a request the same way.
    fit = NodeResourcesFit({}, handle)
    state, s = _run_filters(fit, pod, infos)
    if s is None:
        _assert_filter_for_matches(fit, state, pod, infos)  # fills the memo
        big = make_pod("memo-big", containers=[container(cpu="64", memory="512Gi")], uid="memo-big")
        changed = [ni.clone() for ni in infos]
        for ni in changed[::2]:
            ni.add_pod(big)
        _assert_filter_for_matches(fit, state, pod, changed)


def test_empty_node_list() -> None:
    """No node: every batch returns an empty list."""
    handle = FakeHandle(new_snapshot([], []))
    pod = make_pod(containers=[container(cpu="1", memory="1Gi")])
    plugins = (NodeResourcesFit({}, handle), NodeResourcesBalancedAllocation({}, handle), ImageLocality({}, handle))
    for plugin in plugins:
        state = CycleState()
        if not isinstance(plugin, ImageLocality):
            plugin.pre_score(state, pod, [])
        assert plugin.score_nodes(state, pod, []) == ([], None)


def test_node_without_object_fails_like_score() -> None:
    """A NodeInfo without its node fails the batch as the per-node score would."""
    handle = FakeHandle(new_snapshot([make_node("n0")], []))
    pod = make_pod(containers=[container(cpu="1")])
    infos = [*handle.snapshot().list(), NodeInfo()]
    plugin = TaintToleration({}, handle)
    state = CycleState()
    plugin.pre_score(state, pod, infos)
    _, status = plugin.score_nodes(state, pod, infos)
    assert status is not None and status.message == "node not found"
