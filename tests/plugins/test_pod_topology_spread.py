"""PodTopologySpread: filter verdicts from the skew rule and scores from the v1.34 scoring formula.

Score expectations are worked out in the comments: raw = round(Σ cnt·ln(#domains + 2) + maxSkew - 1), then
100·(max + min - raw) // max.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import QueueingHint
from scheduler.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
    go_round,
)
from scheduler.testing import PodWrapper, make_node, make_pod
from tests.plugins.pod_to_pod_util import (
    cluster,
    filter_nodes,
    match,
    raw_scores,
    run_filter,
    run_score,
    service,
    spread,
    workload,
)

OK = ("SUCCESS", "")
SKEW = ("UNSCHEDULABLE", ERR_REASON_CONSTRAINTS_NOT_MATCH)
MISSING = ("UNSCHEDULABLE_AND_UNRESOLVABLE", ERR_REASON_NODE_LABEL_NOT_MATCH)
ZONE = "zone"
HOST = "kubernetes.io/hostname"
TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
FOO = match(foo="bar")


def four_nodes() -> list[Any]:
    """node-a, node-b in zone1; node-x, node-y in zone2."""
    return [make_node().name(n).labels({ZONE: z, HOST: n}).obj() for n, z in
            (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2"))]


def pods_on(counts: dict[str, int], labels: dict[str, str] | None = None, ns: str = "default",
            prefix: str = "e", deleting: bool = False) -> list[Any]:
    """``counts[node]`` pods bound to each node, labelled foo=bar unless ``labels`` says, terminating if
    ``deleting``."""
    labels = {"foo": "bar"} if labels is None else labels
    pods = [make_pod().name(f"{prefix}-{node}-{i}").namespace(ns).uid(f"{ns}/{prefix}-{node}-{i}").labels(labels)
            .node(node)
            for node, n in counts.items() for i in range(n)]
    return [(p.terminating("2024-01-01T00:00:00Z") if deleting else p).obj() for p in pods]


def plugin(handle: Any, **args: Any) -> PodTopologySpread:
    return PodTopologySpread(args, handle)


def incoming(*constraints: dict[str, Any], labels: dict[str, str] | None = None) -> PodWrapper:
    """The pod under test: ``labels`` (foo=bar unless given) and these spread constraints."""
    w = make_pod().name("p").labels({"foo": "bar"} if labels is None else labels)
    return w.spec_field("topologySpreadConstraints", list(constraints))


# ----- Filter -----------------------------------------------------------------------------------------

FILTER_CASES = [
    pytest.param(incoming(spread(1, ZONE, FOO)).obj(), {"node-a": 2, "node-b": 1, "node-x": 1},
                 {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK},
                 id="zone: 3 vs 1 with maxSkew 1"),
    pytest.param(incoming(spread(1, HOST, FOO)).obj(), {"node-a": 2, "node-b": 1, "node-x": 1},
                 {"node-a": SKEW, "node-b": SKEW, "node-x": SKEW, "node-y": OK},
                 id="hostname: global minimum 0 on node-y"),
    pytest.param(incoming(spread(1, ZONE, FOO), labels={}).obj(), {"node-a": 2, "node-b": 1, "node-x": 1},
                 {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK},
                 id="pod not matching its own selector adds 0"),
    pytest.param(incoming(spread(1, ZONE, FOO), labels={}).obj(), {"node-a": 1, "node-x": 0},
                 {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
                 id="skew 1 without self-match passes"),
    pytest.param(incoming(spread(1, ZONE, FOO), spread(1, HOST, FOO)).obj(), {"node-a": 1, "node-x": 1},
                 {"node-a": SKEW, "node-b": OK, "node-x": SKEW, "node-y": OK},
                 id="two constraints: zone ok everywhere, host only on the empty nodes"),
    pytest.param(incoming(spread(1, ZONE, FOO), spread(3, HOST, FOO)).obj(), {"node-a": 1, "node-x": 1, "node-y": 1},
                 {"node-a": OK, "node-b": OK, "node-x": SKEW, "node-y": SKEW},
                 id="two constraints: host ok everywhere, zone2 too full"),
    pytest.param(incoming(spread(1, ZONE, FOO, minDomains=3)).obj(), {"node-a": 1, "node-x": 1},
                 {"node-a": SKEW, "node-b": SKEW, "node-x": SKEW, "node-y": SKEW},
                 id="minDomains 3 > 2 domains: global minimum treated as 0"),
    pytest.param(incoming(spread(1, ZONE, FOO, minDomains=2)).obj(), {"node-a": 1, "node-x": 1},
                 {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
                 id="minDomains 2 reached: global minimum 1"),
    pytest.param(incoming(spread(2, ZONE, FOO)).obj(), {"node-a": 2, "node-x": 0},
                 {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK},
                 id="maxSkew 2: 2 + 1 - 0 > 2"),
    pytest.param(incoming(spread(1, HOST, {})).obj(), {"node-a": 3},
                 {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
                 id="empty selector counts no pod but the pod matches itself"),
]


@pytest.mark.parametrize(("pod", "counts", "want"), FILTER_CASES)
def test_filter(pod: Any, counts: dict[str, int], want: dict[str, tuple[str, str]]) -> None:
    h = cluster(four_nodes(), pods_on(counts))
    assert run_filter(plugin(h), h, pod) == want


def test_seed_even_pods_spread_example() -> None:
    """Seed 001: app=foo in zone1 and zone2 once each, zone3 empty; maxSkew 1 → only zone3, 2 → all."""
    nodes = [make_node().name(f"n{i}").labels({ZONE: f"zone{i}"}).obj() for i in (1, 2, 3)]
    h = cluster(nodes, pods_on({"n1": 1, "n2": 1}, {"app": "foo"}))
    sel = match(app="foo")
    assert run_filter(plugin(h), h, incoming(spread(1, ZONE, sel), labels={"app": "foo"}).obj()) == \
        {"n1": SKEW, "n2": SKEW, "n3": OK}
    assert run_filter(plugin(h), h, incoming(spread(2, ZONE, sel), labels={"app": "foo"}).obj()) == \
        {"n1": OK, "n2": OK, "n3": OK}


def test_node_without_the_key_is_unresolvable() -> None:
    h = cluster([*four_nodes(), make_node().name("node-z").labels({HOST: "node-z"}).obj()], pods_on({"node-a": 1}))
    assert run_filter(plugin(h), h, incoming(spread(1, ZONE, FOO)).obj())["node-z"] == MISSING


def test_terminating_and_other_namespace_pods_do_not_count() -> None:
    existing = [*pods_on({"node-a": 2}, deleting=True), *pods_on({"node-a": 2}, ns="other")]
    h = cluster(four_nodes(), existing)
    assert run_filter(plugin(h), h, incoming(spread(1, HOST, FOO)).obj())["node-a"] == OK


def three_zone_nodes(taint_c: bool = False) -> list[Any]:
    taints = [{"key": "k", "value": "v", "effect": "NoSchedule"}] if taint_c else []
    return [make_node().name("a").labels({ZONE: "z1", "ssd": "y"}).obj(),
            make_node().name("b").labels({ZONE: "z2", "ssd": "y"}).obj(),
            make_node().name("c").labels({ZONE: "z3"}).taints(taints).obj()]


SSD = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}]}}}


@pytest.mark.parametrize(("policy", "want"), [
    (None, {"a": SKEW, "b": OK, "c": OK}),  # Honor (default): zone z3 not counted, minimum 1
    ("Honor", {"a": SKEW, "b": OK, "c": OK}),
    ("Ignore", {"a": SKEW, "b": SKEW, "c": OK}),  # z3 counted with 0 pods
])
def test_node_affinity_policy(policy: str | None, want: dict[str, tuple[str, str]]) -> None:
    h = cluster(three_zone_nodes(), pods_on({"a": 2, "b": 1}))
    extra = {} if policy is None else {"nodeAffinityPolicy": policy}
    assert run_filter(plugin(h), h, incoming(spread(1, ZONE, FOO, **extra)).affinity(SSD).obj()) == want


def test_node_affinity_policy_honours_node_selector() -> None:
    h = cluster(three_zone_nodes(), pods_on({"a": 2, "b": 1}))
    assert run_filter(plugin(h), h, incoming(spread(1, ZONE, FOO)).node_selector({"ssd": "y"}).obj())["b"] == OK


@pytest.mark.parametrize(("policy", "tolerate", "want_b"), [
    (None, False, SKEW),  # Ignore (default): tainted z3 counted, minimum 0
    ("Honor", False, OK),  # z3 untolerated: not counted, minimum 1
    ("Honor", True, SKEW),  # tolerated: counted again
])
def test_node_taints_policy(policy: str | None, tolerate: bool, want_b: tuple[str, str]) -> None:
    h = cluster(three_zone_nodes(taint_c=True), pods_on({"a": 2, "b": 1}))
    extra = {} if policy is None else {"nodeTaintsPolicy": policy}
    tol = [{"key": "k", "operator": "Exists"}] if tolerate else []
    assert run_filter(plugin(h), h, incoming(spread(1, ZONE, FOO, **extra)).tolerations(tol).obj())["b"] == want_b


def test_match_label_keys_restricts_to_the_pods_revision() -> None:
    h = cluster(four_nodes(), pods_on({"node-a": 2}, {"app": "web", "rev": "1"}))
    labels = {"app": "web", "rev": "2"}
    without = incoming(spread(1, HOST, match(app="web")), labels=labels).obj()
    with_keys = incoming(spread(1, HOST, match(app="web"), matchLabelKeys=["rev"]), labels=labels).obj()
    assert run_filter(plugin(h), h, without)["node-a"] == SKEW
    assert run_filter(plugin(h), h, with_keys)["node-a"] == OK


def test_malformed_selector_is_an_error_naming_the_field() -> None:
    h = cluster(four_nodes())
    bad = {"matchExpressions": [{"key": "foo", "operator": "Exists", "values": ["x"]}]}
    _, s = plugin(h).pre_filter(CycleState(), incoming(spread(1, ZONE, bad)).obj(), h.snapshot().list())
    assert s is not None and s.code == Code.ERROR
    assert "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].values" in s.message


def test_schedule_anyway_only_pod_skips_pre_filter() -> None:
    h = cluster(four_nodes())
    _, s = plugin(h).pre_filter(CycleState(), incoming(spread(1, ZONE, FOO, "ScheduleAnyway")).obj(),
                                h.snapshot().list())
    assert s is not None and s.code == Code.SKIP


# ----- AddPod / RemovePod -----------------------------------------------------------------------------


def test_add_and_remove_pod_change_the_verdict() -> None:
    nodes = [make_node().name("a").labels({HOST: "a"}).obj(), make_node().name("b").labels({HOST: "b"}).obj()]
    on_a = make_pod().name("on-a").labels({"foo": "bar"}).node("a").obj()
    h = cluster(nodes, [on_a])
    pl, p, state = plugin(h), incoming(spread(1, HOST, FOO)).obj(), CycleState()
    assert pl.pre_filter(state, p, h.snapshot().list())[1] is None
    assert filter_nodes(pl, state, h, p) == {"a": SKEW, "b": OK}
    a, b = h.snapshot().get("a"), h.snapshot().get("b")
    assert a is not None and b is not None
    copy = state.clone()
    assert pl.add_pod(copy, p, make_pod().name("other-ns").namespace("x").labels({"foo": "bar"}).node("b").obj(),
                      b) is None
    assert pl.add_pod(copy, p, make_pod().name("no-match").labels({"foo": "baz"}).node("b").obj(), b) is None
    assert filter_nodes(pl, copy, h, p) == {"a": SKEW, "b": OK}
    assert pl.add_pod(copy, p, make_pod().name("on-b").labels({"foo": "bar"}).node("b").obj(), b) is None
    assert filter_nodes(pl, copy, h, p) == {"a": OK, "b": OK}  # 1 / 1: minimum 1
    assert pl.remove_pod(copy, p, on_a, a) is None
    assert filter_nodes(pl, copy, h, p) == {"a": OK, "b": SKEW}  # 0 / 1: minimum 0
    assert filter_nodes(pl, state, h, p) == {"a": SKEW, "b": OK}  # the original state is untouched


def test_remove_then_add_keeps_the_minimum_exact() -> None:
    """Three hosts at 1/1/2; remove from a (0), add back to a (1): minimum 0 then 1."""
    nodes = [make_node().name(n).labels({HOST: n}).obj() for n in "abc"]
    existing = pods_on({"a": 1, "b": 1, "c": 2})
    h = cluster(nodes, existing)
    pl, p, state = plugin(h), incoming(spread(1, HOST, FOO)).obj(), CycleState()
    pl.pre_filter(state, p, h.snapshot().list())
    a = h.snapshot().get("a")
    assert a is not None
    pl.remove_pod(state, p, existing[0], a)
    assert filter_nodes(pl, state, h, p) == {"a": OK, "b": SKEW, "c": SKEW}
    pl.add_pod(state, p, existing[0], a)
    assert filter_nodes(pl, state, h, p) == {"a": OK, "b": OK, "c": SKEW}


# ----- default constraints ----------------------------------------------------------------------------


def test_system_defaults_never_filter() -> None:
    h = cluster(four_nodes(), pods_on({"node-a": 5}, {"app": "web"}), [service("s", {"app": "web"})])
    _, s = plugin(h).pre_filter(CycleState(), make_pod().name("p").labels({"app": "web"}).obj(), h.snapshot().list())
    assert s is not None and s.code == Code.SKIP


LIST_ARGS = {"defaultingType": "List",
             "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}


def test_list_defaulting_uses_the_service_selector() -> None:
    objects = [service("s", {"app": "web"})]
    h = cluster(four_nodes(), pods_on({"node-a": 2}, {"app": "web"}), objects)
    p = make_pod().name("p").labels({"app": "web"}).obj()
    assert run_filter(plugin(h, **LIST_ARGS), h, p) == \
        {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK}
    h2 = cluster(four_nodes(), pods_on({"node-a": 2}, {"app": "web"}))
    assert run_filter(plugin(h2, **LIST_ARGS), h2, p) == {n: OK for n in ("node-a", "node-b", "node-x", "node-y")}


def test_list_defaulting_uses_the_owning_replica_set() -> None:
    objects = [workload("ReplicaSet", "rs", {"matchLabels": {"app": "web"}})]
    h = cluster(four_nodes(), pods_on({"node-x": 2}, {"app": "web"}), objects)
    p = make_pod().name("p").labels({"app": "web"}).owner_reference("rs", "ReplicaSet").obj()
    assert run_filter(plugin(h, **LIST_ARGS), h, p) == \
        {"node-a": OK, "node-b": OK, "node-x": SKEW, "node-y": SKEW}


def test_explicit_constraints_disable_defaults() -> None:
    objects = [service("s", {"app": "web"})]
    h = cluster(four_nodes(), pods_on({"node-a": 2}, {"app": "web"}), objects)
    p = make_pod().name("p").labels({"app": "web"}).spec_field("topologySpreadConstraints",
                                                               [spread(5, ZONE, match(app="web"),
                                                                       "ScheduleAnyway")]).obj()
    _, s = plugin(h, **LIST_ARGS).pre_filter(CycleState(), p, h.snapshot().list())
    assert s is not None and s.code == Code.SKIP


@pytest.mark.parametrize("args", [
    {"defaultingType": "System", "defaultConstraints": LIST_ARGS["defaultConstraints"]},
    {"defaultingType": "Other"},
    {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                                       "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]},
])
def test_args_validation(args: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="PodTopologySpreadArgs"):
        PodTopologySpread(args, cluster([]))


# ----- Score ------------------------------------------------------------------------------------------


def test_score_zone() -> None:
    """2 domains: w = ln 4 = 1.386. zone1 has 3 → 4.159 → 4, zone2 has 1 → 1.386 → 1.
    Normalized with max 4, min 1: zone1 100·1//4 = 25, zone2 100·4//4 = 100."""
    h = cluster(four_nodes(), pods_on({"node-a": 2, "node-b": 1, "node-x": 1}))
    p = incoming(spread(1, ZONE, FOO, "ScheduleAnyway")).obj()
    assert raw_scores(plugin(h), h, p) == {"node-a": 4, "node-b": 4, "node-x": 1, "node-y": 1}
    assert run_score(plugin(h), h, p) == {"node-a": 25, "node-b": 25, "node-x": 100, "node-y": 100}


def test_score_hostname() -> None:
    """3 filtered nodes: w = ln 5 = 1.609. a: 2·w = 3.22 → 3, b: 1.61 → 2, c: 0.
    Normalized (max 3, min 0): a 0, b 100·1//3 = 33, c 100."""
    nodes = [make_node().name(n).labels({HOST: n}).obj() for n in "abc"]
    h = cluster(nodes, pods_on({"a": 2, "b": 1}))
    p = incoming(spread(1, HOST, FOO, "ScheduleAnyway")).obj()
    assert raw_scores(plugin(h), h, p) == {"a": 3, "b": 2, "c": 0}
    assert run_score(plugin(h), h, p) == {"a": 0, "b": 33, "c": 100}


def test_score_two_constraints_five_nodes() -> None:
    """host (maxSkew 2, w = ln 7 = 1.946) + zone (maxSkew 1, 3 domains, w = ln 5 = 1.609).
    zone counts z1 3, z2 2, z3 0. a: 3·1.946 + 1 + 3·1.609 = 11.67 → 12; b: 0 + 1 + 4.83 = 5.83 → 6;
    c, d: 1.946 + 1 + 2·1.609 = 6.16 → 6; e: 0 + 1 + 0 → 1. Normalized (max 12, min 1):
    a 100·1//12 = 8, b/c/d 100·7//12 = 58, e 100."""
    zones = {"a": "z1", "b": "z1", "c": "z2", "d": "z2", "e": "z3"}
    nodes = [make_node().name(n).labels({HOST: n, ZONE: z}).obj() for n, z in zones.items()]
    h = cluster(nodes, pods_on({"a": 3, "c": 1, "d": 1}))
    p = incoming(spread(2, HOST, FOO, "ScheduleAnyway"), spread(1, ZONE, FOO, "ScheduleAnyway")).obj()
    assert raw_scores(plugin(h), h, p) == {"a": 12, "b": 6, "c": 6, "d": 6, "e": 1}
    assert run_score(plugin(h), h, p) == {"a": 8, "b": 58, "c": 58, "d": 58, "e": 100}


def test_score_only_filtered_nodes_define_domains_but_all_nodes_count() -> None:
    """Scoring only node-a and node-x: still 2 domains; zone1 counts the pods of node-b too (3 → 4)."""
    h = cluster(four_nodes(), pods_on({"node-a": 1, "node-b": 2, "node-x": 1}))
    p = incoming(spread(1, ZONE, FOO, "ScheduleAnyway")).obj()
    assert run_score(plugin(h), h, p, names=["node-a", "node-x"]) == {"node-a": 25, "node-x": 100}


def test_score_ignores_nodes_missing_a_key() -> None:
    """node-z lacks the zone: ignored (0) and not a domain; the others as in test_score_zone."""
    h = cluster([*four_nodes(), make_node().name("node-z").labels({HOST: "node-z"}).obj()],
                pods_on({"node-a": 2, "node-b": 1, "node-x": 1}))
    p = incoming(spread(1, ZONE, FOO, "ScheduleAnyway")).obj()
    assert run_score(plugin(h), h, p) == {"node-a": 25, "node-b": 25, "node-x": 100, "node-y": 100, "node-z": 0}


def test_score_all_equal_zero_gives_100() -> None:
    h = cluster(four_nodes())
    assert run_score(plugin(h), h, incoming(spread(1, ZONE, FOO, "ScheduleAnyway")).obj()) == \
        {"node-a": 100, "node-b": 100, "node-x": 100, "node-y": 100}


def test_score_system_default_constraints() -> None:
    """Service app=web. Hostname maxSkew 3 (w = ln 5 over 3 nodes), zone maxSkew 5 over domains z1 and ""
    (node c has no zone, still a node of the "" domain: w = ln 4). z1 has 3 pods.
    a: 2·1.609 + 2 + 3·1.386 + 4 = 13.38 → 13; b: 1.609 + 2 + 8.16 = 11.77 → 12; c: 0 + 2 (no zone key) → 2.
    Normalized (max 13, min 2): a 100·2//13 = 15, b 100·3//13 = 23, c 100."""
    nodes = [make_node().name("a").labels({HOST: "a", TOPOLOGY_ZONE: "z1"}).obj(),
             make_node().name("b").labels({HOST: "b", TOPOLOGY_ZONE: "z1"}).obj(),
             make_node().name("c").labels({HOST: "c"}).obj()]
    h = cluster(nodes, pods_on({"a": 2, "b": 1}, {"app": "web"}), [service("s", {"app": "web"})])
    p = make_pod().name("p").labels({"app": "web"}).obj()
    assert raw_scores(plugin(h), h, p) == {"a": 13, "b": 12, "c": 2}
    assert run_score(plugin(h), h, p) == {"a": 15, "b": 23, "c": 100}


def test_score_system_defaults_need_a_workload() -> None:
    h = cluster(four_nodes(), pods_on({"node-a": 2}, {"app": "web"}), [service("s", {"app": "db"})])
    assert run_score(plugin(h), h, make_pod().name("p").labels({"app": "web"}).obj()) is None


def test_go_round_is_half_away_from_zero() -> None:
    assert [go_round(x) for x in (0.5, 1.5, 2.5, -0.5, 0.49999999999999994, 4.158883083359672)] == [1, 2, 3, -1, 0, 4]


# ----- hints ------------------------------------------------------------------------------------------

Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
HARD = incoming(spread(1, ZONE, FOO)).obj()


@pytest.mark.parametrize(("pod", "old", "new", "want"), [
    (HARD, None, make_pod().name("o").labels({"foo": "bar"}).node("n").obj(), Q),
    (HARD, None, make_pod().name("o").labels({"foo": "baz"}).node("n").obj(), S),
    (HARD, None, make_pod().name("o").labels({"foo": "bar"}).obj(), S),  # unscheduled
    (HARD, None, make_pod().name("o").namespace("x").labels({"foo": "bar"}).node("n").obj(), S),
    (HARD, make_pod().name("o").labels({"foo": "bar"}).node("n").obj(), None, Q),
    (HARD, make_pod().name("o").labels({"foo": "bar"}).node("n").obj(),
     make_pod().name("o").labels({"foo": "baz"}).node("n").obj(), Q),
    (HARD, make_pod().name("o").labels({"foo": "bar"}).node("n").obj(),
     make_pod().name("o").labels({"foo": "bar", "x": "y"}).node("n").obj(),
     S),
    (incoming(spread(1, ZONE, FOO, nodeTaintsPolicy="Honor")).obj(), incoming(spread(1, ZONE, FOO)).obj(),
     incoming(spread(1, ZONE, FOO)).tolerations([{"key": "k", "operator": "Exists"}]).obj(), Q),
    (HARD, incoming(spread(1, ZONE, FOO)).obj(),
     incoming(spread(1, ZONE, FOO)).tolerations([{"key": "k", "operator": "Exists"}]).obj(), S),
    # Tolerations compare as whole objects (equality.Semantic.DeepEqual): tolerationSeconds counts.
    (incoming(spread(1, ZONE, FOO, nodeTaintsPolicy="Honor")).obj(),
     incoming(spread(1, ZONE, FOO)).tolerations([{"key": "k", "operator": "Exists", "effect": "NoExecute"}]).obj(),
     incoming(spread(1, ZONE, FOO)).tolerations([{"key": "k", "operator": "Exists", "effect": "NoExecute",
                                                  "tolerationSeconds": 30}]).obj(), Q),
])
def test_pod_change_hint(pod: Any, old: Any, new: Any, want: QueueingHint) -> None:
    assert plugin(cluster([])).is_schedulable_after_pod_change(pod, old, new) == want


@pytest.mark.parametrize(("old", "new", "want"), [
    (None, make_node().name("n").labels({ZONE: "z"}).obj(), Q),
    (None, make_node().name("n").obj(), S),
    (make_node().name("n").labels({ZONE: "z"}).obj(), None, Q),
    (make_node().name("n").obj(), None, S),
    (make_node().name("n").labels({ZONE: "z"}).obj(), make_node().name("n").labels({ZONE: "z", "x": "y"}).obj(), S),
    (make_node().name("n").labels({ZONE: "z"}).obj(), make_node().name("n").labels({ZONE: "z2"}).obj(), Q),
    (make_node().name("n").obj(), make_node().name("n").labels({ZONE: "z"}).obj(), Q),
    (make_node().name("n").labels({ZONE: "z"}).obj(),
     make_node().name("n").labels({ZONE: "z"}).taints([{"key": "k", "effect": "NoSchedule"}]).obj(), Q),
    # Taints compare as whole objects: a changed timeAdded is a change.
    (make_node().name("n").labels({ZONE: "z"})
     .taints([{"key": "k", "effect": "NoExecute", "timeAdded": "2025-01-01T00:00:00Z"}]).obj(),
     make_node().name("n").labels({ZONE: "z"}).taints([{"key": "k", "effect": "NoExecute",
                                                        "timeAdded": "2025-01-02T00:00:00Z"}]).obj(), Q),
    (make_node().name("n").labels({ZONE: "z"}).taints([{"key": "k", "effect": "NoExecute"}]).obj(),
     make_node().name("n").labels({ZONE: "z"}).taints([{"key": "k", "effect": "NoExecute"}]).obj(), S),
])
def test_node_change_hint(old: Any, new: Any, want: QueueingHint) -> None:
    assert plugin(cluster([])).is_schedulable_after_node_change(HARD, old, new) == want


def test_system_default_constraints_follow_the_services() -> None:
    """The defaulted constraints are remembered per pod template and object-store generation: a Service
    added, changed or deleted after a pod of the template was seen changes them for the next pod."""
    from scheduler.cache.objects import ObjectStore

    h = cluster(four_nodes())
    store = ObjectStore()
    h._objects = store  # type: ignore[assignment]  # the scheduler's store, with its generation
    pl = plugin(h)

    def defaulted(name: str) -> tuple[Any, ...]:
        return pl.get_constraints(make_pod().name(name).labels({"app": "web"}).obj(), "ScheduleAnyway")

    assert defaulted("p1") == ()  # no workload selects the pod
    store.upsert("Service", service("s", {"app": "web"}))
    with_service = defaulted("p2")
    assert [c.topology_key for c in with_service] == [HOST, TOPOLOGY_ZONE]
    assert all(c.selector.requirements for c in with_service)
    store.upsert("Service", service("s", {"app": "db"}))
    assert defaulted("p3") == ()
    store.upsert("Service", service("s", {"app": "web"}))
    assert defaulted("p4") == with_service
    store.delete("Service", service("s", {"app": "web"}))
    assert defaulted("p5") == ()


def test_a_pods_remembered_constraints_follow_the_services() -> None:
    """get_constraints keeps its answer in the pod's memo with the store's generation: the same pod asked again
    after a Service change gets the new defaulted constraints, and the same object while nothing changed."""
    from scheduler.cache.objects import ObjectStore

    h = cluster(four_nodes())
    store = ObjectStore()
    h._objects = store  # type: ignore[assignment]  # the scheduler's store, with its generation
    pl = plugin(h)
    pod = make_pod().name("p").labels({"app": "web"}).obj()
    assert pl.get_constraints(pod, "ScheduleAnyway") == ()
    store.upsert("Service", service("s", {"app": "web"}))
    first = pl.get_constraints(pod, "ScheduleAnyway")
    assert [c.topology_key for c in first] == [HOST, TOPOLOGY_ZONE]
    assert pl.get_constraints(pod, "ScheduleAnyway") is first
    assert pl.get_constraints(pod, "DoNotSchedule") == ()  # the other action is kept apart
    store.delete("Service", service("s", {"app": "web"}))
    assert pl.get_constraints(pod, "ScheduleAnyway") == ()


def test_signature_delta_names_the_nodes_of_the_domains_that_filled_or_freed() -> None:
    """One constraint (the common case) and two: a node is affected when its value of a changed constraint's
    key is a domain that became full or stopped being full; a fragment with another key relates to nothing."""
    handle = cluster([*(make_node().name(n).labels({ZONE: z, HOST: n}).obj() for n,
                        z in (("a", "z1"), ("b", "z2"), ("c", "z3"))),
                      make_node().name("d").labels({HOST: "d"}).obj()])  # d: without the zone key
    pl = PodTopologySpread({}, handle)
    nodes = handle.snapshot().list()

    def affected(old: Any, new: Any) -> list[str]:
        test = pl.signature_delta(old, new)
        assert test is not None
        return [ni.name for ni in nodes if test(ni)]

    assert affected(((ZONE, frozenset({"z1"})),), ((ZONE, frozenset({"z2"})),)) == ["a", "b"]
    assert affected(((ZONE, frozenset()),), ((ZONE, frozenset()),)) == []
    two_before = ((ZONE, frozenset({"z1"})), (HOST, frozenset()))
    assert affected(two_before, ((ZONE, frozenset({"z1"})), (HOST, frozenset({"c"})))) == ["c"]
    assert affected(two_before, ((ZONE, frozenset({"z3"})), (HOST, frozenset({"d"})))) == ["a", "c", "d"]
    assert pl.signature_delta(((ZONE, frozenset()),), ((HOST, frozenset()),)) is None
