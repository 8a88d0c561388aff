"""SelectorSpread (1.19-1.28 framework form, 0-100), including a worked example on the v1.16 0-10 scale."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.plugins.legacy.selector_spread import SelectorSpread, spread_scores
from scheduler.testing import make_node, make_pod
from tests.plugins.pod_to_pod_util import cluster, run_score, service, spread, workload

ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
WEB = {"app": "web"}


def web_pods(counts: dict[str, int], labels: dict[str, str] | None = None, ns: str = "default",
             deleting: bool = False) -> list[Any]:
    """``counts[node]`` pods bound to each node, labelled app=web unless ``labels`` says, terminating if
    ``deleting``."""
    pods = [make_pod().name(f"w-{node}-{i}").namespace(ns).uid(f"{ns}/w-{node}-{i}").labels(labels or WEB).node(node)
            for node, n in counts.items() for i in range(n)]
    return [(p.terminating("2024-01-01T00:00:00Z") if deleting else p).obj() for p in pods]


def plugin(handle: Any) -> SelectorSpread:
    return SelectorSpread({}, handle)


def test_worked_example_on_both_scales() -> None:
    """Matching pods 3, 5 and 10 on node1..node3, each node its own zone.

    Node part 100·(10 - c)/10 = 70, 50, 0; zone part the same; 70·(1 - 2/3) + 70·2/3 = 70 (no float loss).
    On the v1.16 0-10 scale that is 7, 5, 0, for both the node and the final scores.
    """
    nodes = [make_node().name(f"node{i}").labels({ZONE: f"zone{i}"}).obj() for i in (1, 2, 3)]
    h = cluster(nodes, web_pods({"node1": 3, "node2": 5, "node3": 10}), [service("web", WEB)])
    got = run_score(plugin(h), h, make_pod().name("p").labels(WEB).obj())
    assert got == {"node1": 70, "node2": 50, "node3": 0}
    assert {n: s // 10 for n, s in (got or {}).items()} == {"node1": 7, "node2": 5, "node3": 0}


@pytest.mark.parametrize(("counts", "zones", "want"), [
    ([3, 5, 10], ["", "", ""], [70, 50, 0]),  # no zones: node part only
    ([2, 0, 1], ["z1", "z1", "z2"], [0, 33, 50]),  # n2: 100/3 + 0; n3: 50/3 + 2/3·50 = 50
    ([0, 0, 0], ["z1", "z2", ""], [100, 100, 100]),  # maxNode = maxZone = 0
    ([1, 0, 0], ["z1", "", "z2"], [0, 100, 100]),  # zoneless n2 keeps its node score; n3: 100/3 + 2/3·100
])
def test_reduce(counts: list[int], zones: list[str], want: list[int]) -> None:
    assert spread_scores(counts, zones) == want


def test_zones_dominate_nodes() -> None:
    """z1 = {n1: 2, n2: 0}, z2 = {n3: 1}: the empty n2 loses to n3 because its zone is fuller."""
    nodes = [make_node().name("n1").labels({ZONE: "z1"}).obj(), make_node().name("n2").labels({ZONE: "z1"}).obj(),
             make_node().name("n3").labels({BETA_ZONE: "z2"}).obj()]
    h = cluster(nodes, web_pods({"n1": 2, "n3": 1}), [service("web", WEB)])
    assert run_score(plugin(h), h, make_pod().name("p").labels(WEB).obj()) == {"n1": 0, "n2": 33, "n3": 50}


def test_counts_only_live_pods_of_the_namespace() -> None:
    nodes = [make_node().name("n1").obj(), make_node().name("n2").obj()]
    existing = [*web_pods({"n1": 2}, deleting=True), *web_pods({"n1": 2}, ns="other"), *web_pods({"n2": 1})]
    h = cluster(nodes, existing, [service("web", WEB)])
    assert run_score(plugin(h), h, make_pod().name("p").labels(WEB).obj()) == {"n1": 100, "n2": 0}


def test_all_selectors_must_match() -> None:
    """Two services (app=web, tier=fe): only pods carrying both labels belong to the group."""
    nodes = [make_node().name("n1").obj(), make_node().name("n2").obj()]
    existing = [*web_pods({"n1": 3}, {"app": "web"}), *web_pods({"n2": 1}, {"app": "web", "tier": "fe"})]
    objects = [service("a", {"app": "web"}), service("b", {"tier": "fe"})]
    h = cluster(nodes, existing, objects)
    assert run_score(plugin(h), h, make_pod().name("p").labels({"app": "web", "tier": "fe"}).obj()) == {"n1": 100,
                                                                                                        "n2": 0}


@pytest.mark.parametrize(("owner", "obj"), [
    (("v1", "ReplicationController", "rc"), workload("ReplicationController", "rc", {"app": "web"})),
    (("apps/v1", "ReplicaSet", "rs"), workload("ReplicaSet", "rs", {"matchLabels": {"app": "web"}})),
    (("apps/v1", "StatefulSet", "ss"), workload("StatefulSet", "ss", {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["web"]}]})),
])
def test_controller_selector(owner: tuple[str, str, str], obj: dict[str, Any]) -> None:
    nodes = [make_node().name("n1").obj(), make_node().name("n2").obj()]
    h = cluster(nodes, web_pods({"n1": 1}), [obj])
    assert run_score(plugin(h), h,
                     make_pod().name("p").labels(WEB).owner_reference(owner[2], owner[1],
                                                                      owner[0]).obj()) == {"n1": 0, "n2": 100}


@pytest.mark.parametrize("objects", [
    [],  # nothing selects the pod
    [service("nil-selector", None)],  # a nil selector selects nothing
    [service("empty-selector", {})],  # selects everything but adds no requirement
    [workload("ReplicaSet", "rs", {"matchLabels": {"app": "web"}})],  # not the pod's controller
])
def test_no_workload_selector_scores_everyone_100(objects: list[dict[str, Any]]) -> None:
    nodes = [make_node().name("n1").obj(), make_node().name("n2").obj()]
    h = cluster(nodes, web_pods({"n1": 2}), objects)
    assert run_score(plugin(h), h, make_pod().name("p").labels(WEB).obj()) == {"n1": 100, "n2": 100}


def test_pods_with_spread_constraints_are_skipped() -> None:
    h = cluster([make_node().name("n1").obj()], web_pods({"n1": 2}), [service("web", WEB)])
    p = make_pod().name("p").labels(WEB).spec_field("topologySpreadConstraints",
                                                    [spread(1, ZONE, {"matchLabels": WEB}, "ScheduleAnyway")]).obj()
    assert run_score(plugin(h), h, p) is None


def test_no_events() -> None:
    assert plugin(cluster([])).events_to_register() == []
