"""Sums kept across cycles (NodeTotals: InterPodAffinity, PodTopologySpread) equal the walk over every node
done afresh.

A long-lived plugin (its sums refreshed from the snapshot's change log) and a new plugin per cycle (sums
from scratch) see the same cache through a random stream of changes: pods bound and deleted, nodes
relabelled, added and deleted. After every change each incoming pod template must get the same PreFilter
counters and PreScore sums from both.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.cache import Cache, Snapshot
from scheduler.framework.interface import CycleState
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod
from scheduler.plugins.helper.node_totals import NodeTotals
from scheduler.plugins.inter_pod_affinity import PRE_FILTER_STATE_KEY as IPA_FILTER
from scheduler.plugins.inter_pod_affinity import PRE_SCORE_STATE_KEY as IPA_SCORE
from scheduler.plugins.inter_pod_affinity import InterPodAffinity
from scheduler.plugins.pod_topology_spread import PRE_FILTER_STATE_KEY as PTS_FILTER
from scheduler.plugins.pod_topology_spread import PRE_SCORE_STATE_KEY as PTS_SCORE
from scheduler.plugins.pod_topology_spread import PodTopologySpread
from scheduler.testing import make_node, make_pod
from tests.plugins.pod_to_pod_util import FakeObjects
from tests.plugins.util import FakeHandle

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
TS = "2026-01-01T00:00:00Z"


def cluster_node(i: int, zone: int, rack: int, rv: int = 1) -> Any:
    """Node ``n<i>`` of the random cluster: in zone ``z<zone>`` and, unless 0, rack ``r<rack>``."""
    w = (make_node().name(f"n{i}").uid(f"u{i}").resource_version(str(rv)).creation_timestamp(TS)
         .labels({HOST: f"n{i}", ZONE: f"z{zone}"}).allocatable(cpu="8", memory="16Gi", pods="110"))
    return (w.label("rack", f"r{rack}") if rack else w).obj()


def _term(app: str, key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


AFFINITIES: list[dict[str, Any]] = [
    {},
    {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("a", HOST)]}},
    {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("b", ZONE)]}},
    {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("a", ZONE), _term("a", "rack")]}},
    {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 3, "podAffinityTerm": _term("b", HOST)}]},
     "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
         {"weight": 3, "podAffinityTerm": _term("a", "rack")}]}},
]


def _spread(key: str, when: str, app: str, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": app}}, **extra}


SPREADS: list[list[dict[str, Any]]] = [
    [],
    [_spread(ZONE, "DoNotSchedule", "a")],
    [_spread(ZONE, "DoNotSchedule", "b", minDomains=3), _spread("rack", "DoNotSchedule", "b")],
    [_spread(HOST, "ScheduleAnyway", "a"), _spread(ZONE, "ScheduleAnyway", "a")],
    [_spread("rack", "ScheduleAnyway", "c", nodeAffinityPolicy="Ignore")],
]


def drawn_pod(i: int, app: str, affinity: int, node_name: str = "", namespace: str = "default",
              spread: int = 0) -> Pod:
    """Pod ``p<i>`` of the random walk: AFFINITIES[affinity] and SPREADS[spread] (the fifth also selects zone
    z1), bound to ``node_name`` when given."""
    w = make_pod().name(f"p{i}").uid(f"p{i}").namespace(namespace).label("app", app).creation_timestamp(TS)
    if AFFINITIES[affinity]:
        w.affinity(AFFINITIES[affinity])
    if SPREADS[spread]:
        w.spec_field("topologySpreadConstraints", SPREADS[spread])
        if spread == 4:
            w.node_selector({ZONE: "z1"})
    return (w.node(node_name) if node_name else w).obj()


pod_st = st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, len(AFFINITIES) - 1),
                   st.sampled_from(["default", "other"]))
event_st = st.one_of(
    st.tuples(st.just("bind"), st.integers(0, 1000), pod_st),
    st.tuples(st.just("bind"), st.integers(0, 1000), pod_st),
    st.tuples(st.just("bind"), st.integers(0, 1000), pod_st),
    st.tuples(st.just("delete-pod"), st.integers(0, 1000)),
    st.tuples(st.just("relabel"), st.integers(0, 1000), st.integers(0, 2), st.integers(0, 2)),
    st.tuples(st.just("add-node"), st.integers(0, 2), st.integers(0, 2)),
    st.tuples(st.just("delete-node"), st.integers(0, 1000)),
)


class _Handle(FakeHandle):
    def objects(self) -> Any:
        return FakeObjects([])


def _run(plugin: InterPodAffinity | PodTopologySpread, incoming: Pod, infos: list[NodeInfo],
         filter_key: str, score_key: str) -> tuple[Any, Any, Any, Any]:
    """PreFilter's and PreScore's statuses and the states they wrote."""
    state = CycleState()
    _, pre_filter = plugin.pre_filter(state, incoming, infos)
    pre_score = plugin.pre_score(state, incoming, infos)
    return pre_filter, pre_score, state.get(filter_key), state.get(score_key)


def _inter_pod_affinity_views(plugin: InterPodAffinity, incoming: Pod, infos: list[NodeInfo]) -> tuple[Any, ...]:
    pre_filter, pre_score, pf, ps = _run(plugin, incoming, infos, IPA_FILTER, IPA_SCORE)
    return (
        pre_filter, pre_score,
        None if pf is None else (pf.existing_anti_affinity_counts, pf.affinity_counts, pf.anti_affinity_counts),
        None if ps is None else (ps.topology_score, sorted(ps.keys)),
    )


def _topology_spread_views(plugin: PodTopologySpread, incoming: Pod, infos: list[NodeInfo]) -> tuple[Any, ...]:
    pre_filter, pre_score, pf, ps = _run(plugin, incoming, infos, PTS_FILTER, PTS_SCORE)
    return (
        pre_filter, pre_score,
        None if pf is None else (pf.match_num, pf.domains_at_count, pf.min_match_num),
        None if ps is None else (ps.value_counts, ps.ignored_nodes, ps.topology_normalizing_weight),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=12),
       events=st.lists(event_st, min_size=1, max_size=30))
def test_kept_sums_equal_fresh_walks(nodes: list[tuple[int, int]], events: list[tuple[Any, ...]]) -> None:
    cache = Cache()
    for i, (zone, rack) in enumerate(nodes):
        cache.add_node(cluster_node(i, zone, rack))
    names = [f"n{i}" for i in range(len(nodes))]
    bound: list[Pod] = []
    snapshot = Snapshot()
    kept = InterPodAffinity({}, _Handle(snapshot))
    kept_spread = PodTopologySpread({}, _Handle(snapshot))
    incoming = [drawn_pod(10_000 + k, app, aff) for k, (app, aff) in enumerate(
        [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 0), ("a", 4)])]
    spreading = [drawn_pod(20_000 + k, app, 0, spread=k) for k, app in enumerate(["a", "a", "b", "a", "c"])]
    for n, event in enumerate(events):
        kind = event[0]
        if kind == "bind" and names:
            app, affinity, namespace = event[2]
            p = drawn_pod(n, app, affinity, names[event[1] % len(names)], namespace)
            cache.add_pod(p)
            bound.append(p)
        elif kind == "delete-pod" and bound:
            cache.remove_pod(bound.pop(event[1] % len(bound)))
        elif kind == "relabel" and names:
            name = names[event[1] % len(names)]
            i = int(name[1:])
            cache.update_node(cache.get_node(name), cluster_node(i, event[2], event[3], rv=n + 2))
        elif kind == "add-node":
            cache.add_node(cluster_node(100 + n, event[1], event[2]))
            names.append(f"n{100 + n}")
        elif kind == "delete-node" and names:
            name = names.pop(event[1] % len(names))
            bound = [p for p in bound if p.node_name != name]
            cache.remove_node(name)
        cache.update_snapshot(snapshot)
        infos = list(snapshot.list())
        for p in incoming:
            fresh = InterPodAffinity({}, _Handle(snapshot))
            assert _inter_pod_affinity_views(kept, p, infos) == _inter_pod_affinity_views(fresh, p, infos)
        # Only the feasible nodes' domains are scored: take every other node as feasible.
        for p in spreading:
            fresh_spread = PodTopologySpread({}, _Handle(snapshot))
            for candidates in (infos, infos[::2]):
                assert _topology_spread_views(kept_spread, p, candidates) == \
                    _topology_spread_views(fresh_spread, p, candidates)


def test_only_changed_positions_are_recomputed() -> None:
    """With a change log, a refresh after one pod lands recomputes that node alone."""
    cache = Cache()
    for i in range(5):
        cache.add_node(cluster_node(i, i % 3, 0))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    seen: list[str] = []

    def contribute(ni: NodeInfo) -> list[tuple[int, Any, int]]:
        seen.append(ni.name)
        assert ni.node is not None
        return [(0, ni.node.labels[ZONE], len(ni.pods))]

    totals = NodeTotals(1, contribute)
    assert totals.refresh(snapshot.list(), snapshot) == [{}]
    assert len(seen) == 5
    seen.clear()
    cache.add_pod(drawn_pod(1, "a", 0, "n4"))
    cache.update_snapshot(snapshot)
    assert totals.refresh(snapshot.list(), snapshot) == [{"z1": 1}]
    assert seen == ["n4"]
    seen.clear()
    # Another list than the snapshot's: computed afresh.
    assert totals.refresh(list(snapshot.list())[:2], snapshot) == [{}]
    assert len(seen) == 2
