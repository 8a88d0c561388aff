"""InterPodAffinity: filter verdicts and scores derived from the rules of interpodaffinity/{filtering,scoring}.go."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import ActionType, EventResource, QueueingHint
from scheduler.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH as AFF,
)
from scheduler.plugins.inter_pod_affinity import (
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH as ANTI,
)
from scheduler.plugins.inter_pod_affinity import (
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH as EXISTING,
)
from scheduler.plugins.inter_pod_affinity import PRE_FILTER_STATE_KEY, InterPodAffinity, affinity_terms
from scheduler.testing import make_node, make_pod
from tests.plugins.pod_to_pod_util import (
    cluster,
    filter_nodes,
    labels_in,
    match,
    namespace,
    pod_affinity,
    raw_scores,
    run_filter,
    run_score,
    term,
)

OK = ("SUCCESS", "")
UNRESOLVABLE_AFF = ("UNSCHEDULABLE_AND_UNRESOLVABLE", AFF)
BLOCKED_ANTI = ("UNSCHEDULABLE", ANTI)
BLOCKED_EXISTING = ("UNSCHEDULABLE", EXISTING)

ZONE = "zone"
HOST = "kubernetes.io/hostname"


def nodes() -> list[Any]:
    """n1, n2 in zone z1; n3 in z2; n4 has no zone label."""
    return [
        make_node().name("n1").labels({ZONE: "z1", HOST: "n1"}).obj(),
        make_node().name("n2").labels({ZONE: "z1", HOST: "n2"}).obj(),
        make_node().name("n3").labels({ZONE: "z2", HOST: "n3"}).obj(),
        make_node().name("n4").labels({HOST: "n4"}).obj(),
    ]


def plugin(handle: Any, **args: Any) -> InterPodAffinity:
    return InterPodAffinity(args, handle)


# ----- Filter -----------------------------------------------------------------------------------------

FILTER_CASES = [
    pytest.param(
        make_pod().name("p").obj(), [make_pod().name("e").labels({"app": "db"}).node("n1").obj()],
        dict(n1=OK, n2=OK, n3=OK, n4=OK), id="no terms anywhere: Skip"),
    pytest.param(
        make_pod().name("p").affinity(pod_affinity(required=[term(labels_in("app", "db", "x"), ZONE)])).obj(),
        [make_pod().name("e").labels({"app": "db"}).node("n1").obj()],
        dict(n1=OK, n2=OK, n3=UNRESOLVABLE_AFF, n4=UNRESOLVABLE_AFF), id="affinity satisfied in the zone"),
    pytest.param(
        make_pod().name("p")
        .affinity(pod_affinity(required=[term(match(app="db"), ZONE), term(match(tier="be"), HOST)])).obj(),
        [make_pod().name("e1").labels({"app": "db"}).node("n1").obj(),
         make_pod().name("e2").labels({"tier": "be"}).node("n1").obj()],
        dict(n1=UNRESOLVABLE_AFF, n2=UNRESOLVABLE_AFF, n3=UNRESOLVABLE_AFF, n4=UNRESOLVABLE_AFF),
        id="one pod must match all terms (two pods matching one each do not count)"),
    pytest.param(
        make_pod().name("p").labels({"app": "web"})
        .affinity(pod_affinity(required=[term(match(app="web"), ZONE)])).obj(),
        [make_pod().name("e").labels({"app": "db"}).node("n1").obj()],
        dict(n1=OK, n2=OK, n3=OK, n4=UNRESOLVABLE_AFF), id="first pod of a group matching its own terms"),
    pytest.param(
        make_pod().name("p").labels({"app": "other"})
        .affinity(pod_affinity(required=[term(match(app="web"), ZONE)])).obj(),
        [],
        dict(n1=UNRESOLVABLE_AFF, n2=UNRESOLVABLE_AFF, n3=UNRESOLVABLE_AFF, n4=UNRESOLVABLE_AFF),
        id="no matching pod and not matching its own terms"),
    pytest.param(
        make_pod().name("p").labels({"app": "web"})
        .affinity(pod_affinity(required=[term(match(app="web"), ZONE)])).obj(),
        [make_pod().name("e").labels({"app": "web"}).node("n4").obj()],
        dict(n1=OK, n2=OK, n3=OK, n4=UNRESOLVABLE_AFF),
        id="matching pod on a node without the key counts nowhere: still the first pod"),
    pytest.param(
        make_pod().name("p").labels({"app": "web"})
        .affinity(pod_affinity(required=[term(match(app="web"), ZONE)])).obj(),
        [make_pod().name("e").labels({"app": "web"}).node("n3").obj()],
        dict(n1=UNRESOLVABLE_AFF, n2=UNRESOLVABLE_AFF, n3=OK, n4=UNRESOLVABLE_AFF),
        id="once the group exists the self-match exception no longer applies"),
    pytest.param(
        make_pod().name("p").affinity(pod_affinity(anti_required=[term(match(app="db"), HOST)])).obj(),
        [make_pod().name("e").labels({"app": "db"}).node("n1").obj()],
        dict(n1=BLOCKED_ANTI, n2=OK, n3=OK, n4=OK), id="anti-affinity per host"),
    pytest.param(
        make_pod().name("p").affinity(pod_affinity(anti_required=[term(match(app="db"), ZONE)])).obj(),
        [make_pod().name("e").labels({"app": "db"}).node("n1").obj()],
        dict(n1=BLOCKED_ANTI, n2=BLOCKED_ANTI, n3=OK, n4=OK), id="anti-affinity per zone; keyless node passes"),
    pytest.param(
        make_pod().name("p").labels({"app": "web"}).obj(),
        [make_pod().name("e").labels({"app": "db"}).node("n1")
         .affinity(pod_affinity(anti_required=[term(match(app="web"), ZONE)])).obj()],
        dict(n1=BLOCKED_EXISTING, n2=BLOCKED_EXISTING, n3=OK, n4=OK), id="symmetry: existing pod's anti-affinity"),
    pytest.param(
        make_pod().name("p").namespace("other").labels({"app": "web"}).obj(),
        [make_pod().name("e").labels({"app": "db"}).node("n1")
         .affinity(pod_affinity(anti_required=[term(match(app="web"), ZONE)])).obj()],
        dict(n1=OK, n2=OK, n3=OK, n4=OK), id="symmetry only within the existing pod's namespace"),
    pytest.param(
        make_pod().name("p")
        .affinity(pod_affinity(anti_required=[term(match(app="db"), HOST, namespaces=["other"])])).obj(),
        [make_pod().name("e1").labels({"app": "db"}).node("n1").obj(),
         make_pod().name("e2").namespace("other").labels({"app": "db"}).node("n2").obj()],
        dict(n1=OK, n2=BLOCKED_ANTI, n3=OK, n4=OK), id="namespaces list replaces the pod's namespace"),
    pytest.param(
        make_pod().name("p").labels({"app": "web"}).affinity(pod_affinity(required=[term(match(app="web"), ZONE)],
                                       anti_required=[term(match(app="web"), HOST)])).obj(),
        [make_pod().name("e").labels({"app": "web"}).node("n1").obj()],
        dict(n1=BLOCKED_ANTI, n2=OK, n3=UNRESOLVABLE_AFF, n4=UNRESOLVABLE_AFF),
        id="affinity checked before anti-affinity"),
]


@pytest.mark.parametrize(("pod", "existing", "want"), FILTER_CASES)
def test_filter(pod: Any, existing: list[Any], want: dict[str, tuple[str, str]]) -> None:
    h = cluster(nodes(), existing)
    assert run_filter(plugin(h), h, pod) == want


def test_pre_filter_skips_without_terms() -> None:
    h = cluster(nodes(), [make_pod().name("e").labels({"app": "db"}).node("n1").obj()])
    _, s = plugin(h).pre_filter(CycleState(), make_pod().name("p").obj(), h.snapshot().list())
    assert s is not None and s.code == Code.SKIP



def test_pre_filter_of_a_pod_without_terms_counts_existing_anti_affinity_only() -> None:
    """Skipped unless some existing pod's required anti-affinity matches the incoming pod."""
    existing = [make_pod().name("e").node("n1").affinity(pod_affinity(anti_required=[term(match(app="web"), HOST)]))
                .obj()]
    h = cluster(nodes(), existing)
    _, s = plugin(h).pre_filter(CycleState(), make_pod().name("p").labels({"app": "web"}).obj(), h.snapshot().list())
    assert s is None
    _, s = plugin(h).pre_filter(CycleState(), make_pod().name("q").labels({"app": "db"}).obj(), h.snapshot().list())
    assert s is not None and s.code == Code.SKIP


def test_pre_score_of_a_pod_without_preferred_terms_skips_when_no_pod_has_affinity() -> None:
    h = cluster(nodes(), [make_pod().name("e").labels({"app": "web"}).node("n1").obj()])
    assert run_score(plugin(h), h, make_pod().name("p").labels({"app": "web"}).obj()) is None
    attracted = pod_affinity(preferred=[(3, term(match(app="web"), HOST))])
    h = cluster(nodes(), [make_pod().name("a").node("n1").affinity(attracted).obj()])
    assert run_score(plugin(h), h, make_pod().name("p").labels({"app": "web"}).obj()) == dict(n1=100, n2=0, n3=0, n4=0)

NS_OBJECTS = [namespace("default"), namespace("team-a", {"team": "a"}), namespace("team-b", {"team": "b"})]


def test_namespace_selector_of_incoming_terms() -> None:
    """namespaceSelector team=a: the db pod in team-a repels, the one in team-b does not."""
    existing = [make_pod().name("a").namespace("team-a").labels({"app": "db"}).node("n1").obj(),
                make_pod().name("b").namespace("team-b").labels({"app": "db"}).node("n3").obj()]
    h = cluster(nodes(), existing, NS_OBJECTS)
    p = (make_pod().name("p")
         .affinity(pod_affinity(anti_required=[term(match(app="db"), HOST, ns_selector=match(team="a"))])).obj())
    assert run_filter(plugin(h), h, p) == dict(n1=BLOCKED_ANTI, n2=OK, n3=OK, n4=OK)


def test_empty_namespace_selector_matches_all_namespaces() -> None:
    existing = [make_pod().name("a").namespace("team-a").labels({"app": "db"}).node("n1").obj(),
                make_pod().name("b").namespace("team-b").labels({"app": "db"}).node("n3").obj()]
    h = cluster(nodes(), existing, NS_OBJECTS)
    p = make_pod().name("p").affinity(pod_affinity(anti_required=[term(match(app="db"), HOST, ns_selector={})])).obj()
    assert run_filter(plugin(h), h, p) == dict(n1=BLOCKED_ANTI, n2=OK, n3=BLOCKED_ANTI, n4=OK)


def test_not_in_namespace_selector_matches_only_the_namespaces_it_selects() -> None:
    """kube-scheduler v1.37 replaces the incoming term's selector by the namespaces it lists (v1.34 kept the
    selector on a copy and matched it against no labels, so NotIn and DoesNotExist took every namespace):
    team NotIn [a] selects default and team-b, so the db pod in team-a does not repel."""
    existing = [make_pod().name("a").namespace("team-a").labels({"app": "db"}).node("n1").obj(),
                make_pod().name("b").namespace("team-b").labels({"app": "db"}).node("n3").obj()]
    h = cluster(nodes(), existing, NS_OBJECTS)
    not_a = {"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]}
    p = (make_pod().name("p")
         .affinity(pod_affinity(anti_required=[term(match(app="db"), HOST, ns_selector=not_a)])).obj())
    assert run_filter(plugin(h), h, p) == dict(n1=OK, n2=OK, n3=BLOCKED_ANTI, n4=OK)


@pytest.mark.parametrize(("incoming_ns", "want_n1"), [("team-a", BLOCKED_EXISTING), ("team-b", OK)])
def test_namespace_selector_of_existing_terms_uses_incoming_namespace_labels(
    incoming_ns: str, want_n1: tuple[str, str]
) -> None:
    """Symmetry: the existing pod's namespaceSelector is matched against the incoming pod's namespace labels."""
    existing = [make_pod().name("e").namespace("team-b").labels({"app": "db"}).node("n1").affinity(pod_affinity(
        anti_required=[term(match(app="web"), HOST, ns_selector=match(team="a"))])).obj()]
    h = cluster(nodes(), existing, NS_OBJECTS)
    p = make_pod().name("p").namespace(incoming_ns).labels({"app": "web"}).obj()
    assert run_filter(plugin(h), h, p)["n1"] == want_n1


def test_malformed_selector_is_unresolvable_and_names_the_field() -> None:
    h = cluster(nodes())
    bad = {"matchExpressions": [{"key": "app", "operator": "Foo", "values": ["x"]}]}
    p = make_pod().name("p").affinity(pod_affinity(required=[term(bad, ZONE)])).obj()
    _, s = plugin(h).pre_filter(CycleState(), p, h.snapshot().list())
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.message.startswith("parsing pod: requiredAffinityTerms: ")
    assert "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]" \
           ".labelSelector.matchExpressions[0].operator" in s.message


def test_malformed_preferred_term_also_rejects_in_pre_filter() -> None:
    h = cluster(nodes())
    bad = {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}
    p = (make_pod().name("p")
         .affinity(pod_affinity(preferred=[(1, term(bad, ZONE))], anti_preferred=[(1, term(bad, ZONE))])).obj())
    _, s = plugin(h).pre_filter(CycleState(), p, h.snapshot().list())
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.message.startswith("parsing pod: [preferredAffinityTerms: ")
    assert ", preferredAntiAffinityTerms: " in s.message


def test_existing_pod_with_malformed_terms_keeps_its_other_terms() -> None:
    bad = {"matchExpressions": [{"key": "app", "operator": "Foo"}]}
    existing = [make_pod().name("e").node("n1").affinity(pod_affinity(
        required=[term(bad, ZONE)], anti_required=[term(match(app="web"), HOST)])).obj()]
    h = cluster(nodes(), existing)
    assert run_filter(plugin(h), h, make_pod().name("p").labels({"app": "web"}).obj())["n1"] == BLOCKED_EXISTING


# ----- AddPod / RemovePod -----------------------------------------------------------------------------


def test_add_and_remove_pod_flip_anti_affinity() -> None:
    h = cluster(nodes())
    pl = plugin(h)
    p = make_pod().name("p").affinity(pod_affinity(anti_required=[term(match(app="db"), HOST)])).obj()
    state = CycleState()
    assert pl.pre_filter(state, p, h.snapshot().list())[1] is None
    n1 = h.snapshot().get("n1")
    assert n1 is not None
    assert filter_nodes(pl, state, h, p)["n1"] == OK
    db = make_pod().name("db").labels({"app": "db"}).node("n1").obj()
    assert pl.add_pod(state, p, db, n1) is None
    assert filter_nodes(pl, state, h, p)["n1"] == BLOCKED_ANTI
    assert pl.remove_pod(state, p, db, n1) is None
    assert filter_nodes(pl, state, h, p)["n1"] == OK


def test_add_and_remove_pod_flip_affinity() -> None:
    """Adding a match in z2 opens n3; removing the only z1 match closes n1 (the group still exists)."""
    cache = make_pod().name("c1").labels({"app": "cache"}).node("n1").obj()
    h = cluster(nodes(), [cache])
    pl = plugin(h)
    p = make_pod().name("p").affinity(pod_affinity(required=[term(match(app="cache"), ZONE)])).obj()
    state = CycleState()
    pl.pre_filter(state, p, h.snapshot().list())
    assert filter_nodes(pl, state, h, p) == dict(n1=OK, n2=OK, n3=UNRESOLVABLE_AFF, n4=UNRESOLVABLE_AFF)
    n1, n3 = h.snapshot().get("n1"), h.snapshot().get("n3")
    assert n1 is not None and n3 is not None
    pl.add_pod(state, p, make_pod().name("c2").labels({"app": "cache"}).node("n3").obj(), n3)
    assert filter_nodes(pl, state, h, p) == dict(n1=OK, n2=OK, n3=OK, n4=UNRESOLVABLE_AFF)
    pl.remove_pod(state, p, cache, n1)
    assert filter_nodes(pl, state, h, p) == dict(n1=UNRESOLVABLE_AFF, n2=UNRESOLVABLE_AFF, n3=OK,
                                                n4=UNRESOLVABLE_AFF)


def test_pods_with_equal_terms_share_them_and_add_pod_answers_each_pods_own_terms() -> None:
    """Members made from one template share one merged terms tuple (AddPod/RemovePod remember a victim's match
    per tuple); a pod with other terms asking about the same victim in between still gets its own answer."""
    h = cluster(nodes(), [make_pod().name("c1").labels({"app": "cache"}).node("n1").obj()], NS_OBJECTS)
    pl = plugin(h)
    cache_aff = pod_affinity(required=[term(match(app="cache"), ZONE, ns_selector={})])
    m1, m2 = (make_pod().name(n).affinity(cache_aff).obj() for n in ("m1", "m2"))
    other = make_pod().name("o").affinity(pod_affinity(required=[term(match(app="db"), ZONE)])).obj()
    states = {p.name: CycleState() for p in (m1, m2, other)}
    for p in (m1, m2, other):
        pl.pre_filter(states[p.name], p, h.snapshot().list())
    shared = [states[n].get(PRE_FILTER_STATE_KEY).required_affinity for n in ("m1", "m2")]
    assert shared[0] is shared[1] and shared[0] == pl._merge_namespaces(affinity_terms(m1).required_affinity)
    n3 = h.snapshot().get("n3")
    assert n3 is not None
    victim = make_pod().name("v").labels({"app": "cache"}).node("n3").obj()
    for p in (m1, other, m2):
        assert pl.add_pod(states[p.name], p, victim, n3) is None
    for p in (m1, m2):
        assert filter_nodes(pl, states[p.name], h, p) == dict(n1=OK, n2=OK, n3=OK, n4=UNRESOLVABLE_AFF)
    assert filter_nodes(pl, states["o"], h, other) == dict(n1=UNRESOLVABLE_AFF, n2=UNRESOLVABLE_AFF,
                                                           n3=UNRESOLVABLE_AFF, n4=UNRESOLVABLE_AFF)
    for p in (m2, other, m1):
        assert pl.remove_pod(states[p.name], p, victim, n3) is None
    assert filter_nodes(pl, states["m1"], h, m1)["n3"] == UNRESOLVABLE_AFF


def test_add_pod_with_anti_affinity_blocks_symmetrically_and_clone_is_independent() -> None:
    h = cluster(nodes())
    pl = plugin(h)
    p = (make_pod().name("p").labels({"app": "web"})
         .affinity(pod_affinity(anti_required=[term(match(app="none"), HOST)])).obj())
    state = CycleState()
    assert pl.pre_filter(state, p, h.snapshot().list())[1] is None
    copy = state.clone()
    n2 = h.snapshot().get("n2")
    assert n2 is not None
    repel = make_pod().name("r").node("n2").affinity(pod_affinity(anti_required=[term(match(app="web"), ZONE)])).obj()
    assert pl.add_pod(copy, p, repel, n2) is None
    assert filter_nodes(pl, copy, h, p) == dict(n1=BLOCKED_EXISTING, n2=BLOCKED_EXISTING, n3=OK, n4=OK)
    assert filter_nodes(pl, state, h, p) == dict(n1=OK, n2=OK, n3=OK, n4=OK)


# ----- Score ------------------------------------------------------------------------------------------


def test_preferred_affinity_scores_the_zone() -> None:
    h = cluster(nodes(), [make_pod().name("e").labels({"app": "db"}).node("n1").obj()])
    p = make_pod().name("p").affinity(pod_affinity(preferred=[(5, term(match(app="db"), ZONE))])).obj()
    assert raw_scores(plugin(h), h, p) == dict(n1=5, n2=5, n3=0, n4=0)
    assert run_score(plugin(h), h, p) == dict(n1=100, n2=100, n3=0, n4=0)


def test_preferred_affinity_and_anti_affinity_min_max() -> None:
    """raw n1 = 10 (affinity, host), n3 = -5 (anti, zone), n2 = 0: min -5, max 10 → (s+5)·100/15."""
    existing = [make_pod().name("a").labels({"app": "cache"}).node("n1").obj(),
                make_pod().name("b").labels({"app": "noisy"}).node("n3").obj()]
    h = cluster(nodes(), existing)
    p = (make_pod().name("p")
         .affinity(pod_affinity(preferred=[(10, term(match(app="cache"), HOST))],
                                anti_preferred=[(5, term(match(app="noisy"), ZONE))])).obj())
    assert raw_scores(plugin(h), h, p) == dict(n1=10, n2=0, n3=-5, n4=0)
    assert run_score(plugin(h), h, p) == dict(n1=100, n2=33, n3=0, n4=33)


@pytest.mark.parametrize(("weight", "want"), [
    (1, dict(n1=33, n2=100, n3=0, n4=0)),
    (5, dict(n1=100, n2=60, n3=0, n4=0)),
])
def test_hard_pod_affinity_weight(weight: int, want: dict[str, int]) -> None:
    """Existing required affinity matching the incoming pod adds hardPodAffinityWeight at its host; an
    existing preferred affinity term (weight 3) adds 3 at n2. Normalized: 100·raw/max (min is 0)."""
    existing = [
        make_pod().name("a").node("n1").affinity(pod_affinity(required=[term(match(app="web"), HOST)])).obj(),
        make_pod().name("b").node("n2").affinity(pod_affinity(preferred=[(3, term(match(app="web"), HOST))])).obj(),
    ]
    h = cluster(nodes(), existing)
    p = make_pod().name("p").labels({"app": "web"}).obj()
    assert raw_scores(plugin(h, hardPodAffinityWeight=weight), h, p) == dict(n1=weight, n2=3, n3=0, n4=0)
    assert run_score(plugin(h, hardPodAffinityWeight=weight), h, p) == want


def test_hard_weight_zero_and_nothing_else_skips() -> None:
    existing = [make_pod().name("a").node("n1").affinity(pod_affinity(required=[term(match(app="web"), HOST)])).obj()]
    h = cluster(nodes(), existing)
    assert run_score(plugin(h, hardPodAffinityWeight=0), h, make_pod().name("p").labels({"app": "web"}).obj()) is None
    assert run_score(plugin(h), h, make_pod().name("p").labels({"app": "web"}).obj()) == dict(n1=100, n2=0, n3=0, n4=0)


def test_existing_preferred_anti_affinity_subtracts() -> None:
    existing = [make_pod().name("a").node("n3")
                .affinity(pod_affinity(anti_preferred=[(4, term(match(app="web"), ZONE))])).obj()]
    h = cluster(nodes(), existing)
    p = make_pod().name("p").labels({"app": "web"}).obj()
    assert raw_scores(plugin(h), h, p) == dict(n1=0, n2=0, n3=-4, n4=0)
    assert run_score(plugin(h), h, p) == dict(n1=100, n2=100, n3=0, n4=100)


def test_ignore_preferred_terms_of_existing_pods() -> None:
    existing = [make_pod().name("a").node("n3")
                .affinity(pod_affinity(anti_preferred=[(4, term(match(app="web"), ZONE))])).obj()]
    h = cluster(nodes(), existing)
    p = make_pod().name("p").labels({"app": "web"}).obj()
    assert run_score(plugin(h, ignorePreferredTermsOfExistingPods=True), h, p) is None


def test_no_contribution_skips_and_unlabelled_nodes_are_ignored() -> None:
    h = cluster([make_node().name("bare").obj()], [make_pod().name("a").labels({"app": "db"}).node("bare").obj()])
    p = make_pod().name("p").affinity(pod_affinity(preferred=[(5, term(match(app="db"), HOST))])).obj()
    assert run_score(plugin(h), h, p) is None


def test_zero_net_weight_still_scores() -> None:
    """+5 and -5 at the same host cancel, but a term applied: PreScore does not skip, all scores 0."""
    h = cluster(nodes(), [make_pod().name("a").labels({"app": "db"}).node("n1").obj()])
    p = (make_pod().name("p")
         .affinity(pod_affinity(preferred=[(5, term(match(app="db"), HOST))],
                                anti_preferred=[(5, term(match(app="db"), HOST))])).obj())
    assert run_score(plugin(h), h, p) == dict(n1=0, n2=0, n3=0, n4=0)


# ----- args and hints ---------------------------------------------------------------------------------


def test_args_validation() -> None:
    with pytest.raises(ValueError, match="hardPodAffinityWeight"):
        InterPodAffinity({"hardPodAffinityWeight": 101}, cluster([]))


def test_events_registered() -> None:
    """Queueing hints are on (GA in 1.34): nodes Add | UpdateNodeLabel only, no UpdateNodeTaint."""
    events = {e.event.resource: e.event.action for e in plugin(cluster([])).events_to_register()}
    assert events == {
        EventResource.POD: ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
        EventResource.NODE: ActionType.ADD | ActionType.UPDATE_NODE_LABEL,
    }


Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
AFF_POD = (make_pod().name("p")
           .affinity(pod_affinity(required=[term(labels_in("service", "securityscan", "v2"), ZONE)])).obj())
ANTI_POD = (make_pod().name("p")
            .affinity(pod_affinity(anti_required=[term(labels_in("service", "securityscan"), ZONE)])).obj())
ANTI2_POD = (make_pod().name("p")
             .affinity(pod_affinity(anti_required=[term(labels_in("service", "securityscan"), ZONE),
                                                   term(labels_in("tier", "db"), ZONE)])).obj())


@pytest.mark.parametrize(("pod", "old", "new", "want"), [
    (AFF_POD, None, make_pod().name("o").labels({"service": "securityscan"}).node("n").obj(), Q),
    (AFF_POD, None, make_pod().name("o").labels({"service": "securityscan"}).obj(), S),
    (AFF_POD, None, make_pod().name("o").labels({"aaa": "a"}).node("n").obj(), S),
    (AFF_POD, make_pod().name("o").labels({"aaa": "a"}).node("n").obj(),
     make_pod().name("o").labels({"service": "securityscan"}).node("n").obj(),
     Q),
    (AFF_POD, make_pod().name("o").labels({"service": "v2"}).node("n").obj(),
     make_pod().name("o").labels({"service": "securityscan"}).node("n").obj(), S),
    (ANTI_POD, make_pod().name("o").labels({"service": "securityscan"}).node("n").obj(),
     make_pod().name("o").labels({"s": "x"}).node("n").obj(),
     Q),
    (ANTI_POD, make_pod().name("o").labels({"service": "securityscan"}).node("n").obj(), None, Q),
    (ANTI_POD, make_pod().name("o").labels({"aaa": "a"}).node("n").obj(), None, S),
    # A deleted pod's own anti-affinity against the pending pod does not count (upstream checks only the
    # pending pod's anti-affinity terms).
    (make_pod().name("p").labels({"service": "securityscan"}).obj(),
     make_pod().name("o").node("n")
     .affinity(pod_affinity(anti_required=[term(labels_in("service", "securityscan"), ZONE)])).obj(),
     None, S),
    # Anti-affinity: the removed/relabelled pod must have matched *all* terms.
    (ANTI2_POD, make_pod().name("o").labels({"service": "securityscan"}).node("n").obj(), None, S),
    (ANTI2_POD, make_pod().name("o").labels({"service": "securityscan", "tier": "db"}).node("n").obj(), None, Q),
    (ANTI2_POD, make_pod().name("o").labels({"service": "securityscan", "tier": "db"}).node("n").obj(),
     make_pod().name("o").labels({"service": "securityscan"}).node("n").obj(), Q),
    (ANTI2_POD, make_pod().name("o").labels({"service": "securityscan"}).node("n").obj(),
     make_pod().name("o").node("n").obj(), S),
    # The pending pod's own (unassigned) update never queues through this hint.
    (AFF_POD, make_pod().name("p").obj(), make_pod().name("p").labels({"service": "securityscan"}).obj(), S),
    (make_pod().name("p").labels({"service": "foo"}).obj(),
     make_pod().name("o").node("n")
     .affinity(pod_affinity(anti_required=[term(labels_in("service", "securityscan"), ZONE)])).obj(),
     None, S),
])
def test_pod_change_hint(pod: Any, old: Any, new: Any, want: QueueingHint) -> None:
    assert plugin(cluster([])).is_schedulable_after_pod_change(pod, old, new) == want


@pytest.mark.parametrize(("pod", "old", "new", "want"), [
    (AFF_POD, None, make_node().name("a").labels({ZONE: "z1"}).obj(), Q),
    (AFF_POD, None, make_node().name("a").labels({"region": "r"}).obj(), S),
    (AFF_POD, make_node().name("a").labels({"x": "1"}).obj(), make_node().name("a").labels({"x": "2"}).obj(), S),
    (AFF_POD, make_node().name("a").labels({ZONE: "z1"}).obj(), make_node().name("a").labels({ZONE: "z2"}).obj(), Q),
    (AFF_POD, make_node().name("a").labels({"x": "1"}).obj(), make_node().name("a").labels({ZONE: "z1"}).obj(), Q),
    (ANTI_POD, None, make_node().name("a").obj(), Q),
    (ANTI_POD, make_node().name("a").labels({ZONE: "z1"}).obj(),
     make_node().name("a").labels({ZONE: "z1", "u": "v"}).obj(), S),
    (ANTI_POD, make_node().name("a").labels({"x": "1"}).obj(), make_node().name("a").labels({ZONE: "z1"}).obj(), S),
    (ANTI_POD, make_node().name("a").labels({ZONE: "z1"}).obj(), make_node().name("a").labels({"x": "1"}).obj(), Q),
])
def test_node_change_hint(pod: Any, old: Any, new: Any, want: QueueingHint) -> None:
    assert plugin(cluster([])).is_schedulable_after_node_change(pod, old, new) == want


def test_hints_queue_when_required_terms_do_not_parse() -> None:
    """GetAffinityTerms errors make upstream's hints return Queue (with the error)."""
    bad = make_pod().name("p").affinity(pod_affinity(required=[term({"matchExpressions": [
        {"key": "service", "operator": "Foo", "values": ["x"]}]}, ZONE)])).obj()
    p = plugin(cluster([]))
    assert p.is_schedulable_after_pod_change(bad, None, make_pod().name("o").node("n").obj()) == Q
    assert p.is_schedulable_after_node_change(bad, make_node().name("a").obj(),
                                              make_node().name("a").labels({"x": "1"}).obj()) == Q
