"""ServiceAntiAffinity (legacy CalculateAntiAffinityPriority on 0-100, 1.18 multi-label form)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.plugins.legacy.service_anti_affinity import ServiceAntiAffinity, label_spread_scores
from scheduler.testing import make_node, make_pod
from tests.plugins.pod_to_pod_util import cluster, run_score, service

FOO = {"foo": "bar"}


def nodes() -> list[Any]:
    return [make_node().name("m01").labels({"zone": "z1", "rack": "r1"}).obj(),
            make_node().name("m02").labels({"zone": "z1", "rack": "r2"}).obj(),
            make_node().name("m11").labels({"zone": "z2", "rack": "r1"}).obj(),
            make_node().name("m12").labels({"zone": "z2"}).obj(),
            make_node().name("m21").labels({"zone": "z3"}).obj(), make_node().name("bare").obj()]


def foo_pods(counts: dict[str, int], ns: str = "default", deleting: bool = False) -> list[Any]:
    """``counts[node]`` pods labelled FOO bound to each node, terminating if ``deleting``."""
    pods = [make_pod().name(f"f-{n}-{i}").namespace(ns).uid(f"{ns}/f-{n}-{i}").labels(FOO).node(n)
            for n, c in counts.items() for i in range(c)]
    return [(p.terminating("2024-01-01T00:00:00Z") if deleting else p).obj() for p in pods]


def plugin(handle: Any, *labels: str, **args: Any) -> ServiceAntiAffinity:
    return ServiceAntiAffinity({"antiAffinityLabelsPreference": list(labels), **args}, handle)


def test_one_label() -> None:
    """3 service pods: z1 has 1, z2 has 2, z3 none. z1 nodes 100·2/3 = 66, z2 100·1/3 = 33, z3 100,
    the node without the label 0."""
    h = cluster(nodes(), foo_pods({"m01": 1, "m11": 1, "m12": 1}), [service("s", FOO)])
    assert run_score(plugin(h, "zone"), h, make_pod().name("p").labels(FOO).obj()) == \
        dict(m01=66, m02=66, m11=33, m12=33, m21=100, bare=0)


def test_two_labels_each_count_half() -> None:
    """zone as above (66.67 / 33.33 / 100 / 0), halved; rack: r1 has 2 of 3 pods → 33.33, r2 none → 100,
    no rack → 0, halved. m01: 33.33 + 16.67 = 49.999999999999993 in float64 (as in Go) → 49,
    m02: 33.33 + 50 = 83, m11: 16.67 + 16.67 = 33, m12: 16.67, m21: 50, bare: 0."""
    h = cluster(nodes(), foo_pods({"m01": 1, "m11": 1, "m12": 1}), [service("s", FOO)])
    assert run_score(plugin(h, "zone", "rack"), h, make_pod().name("p").labels(FOO).obj()) == \
        dict(m01=49, m02=83, m11=33, m12=16, m21=50, bare=0)


def test_without_a_service_labelled_nodes_get_100() -> None:
    h = cluster(nodes(), foo_pods({"m01": 3}))
    assert run_score(plugin(h, "zone"), h, make_pod().name("p").labels(FOO).obj()) == \
        dict(m01=100, m02=100, m11=100, m12=100, m21=100, bare=0)


def test_only_scored_nodes_count_and_dead_or_foreign_pods_do_not() -> None:
    existing = [*foo_pods({"m01": 1, "m11": 1}), *foo_pods({"m21": 5}, deleting=True),
                *foo_pods({"m21": 5}, ns="other")]
    h = cluster(nodes(), existing, [service("s", FOO)])
    got = run_score(plugin(h, "zone"), h, make_pod().name("p").labels(FOO).obj(), names=["m01", "m21"])
    assert got == dict(m01=0, m21=100)  # m11's pod is not on a scored node: N = 1


def test_first_service_selector_is_used() -> None:
    h = cluster(nodes(), [make_pod().name("x").labels({"foo": "bar", "tier": "a"}).node("m01").obj(),
                          make_pod().name("y").labels({"foo": "bar"}).node("m11").obj()],
                [service("first", {"foo": "bar", "tier": "a"}), service("second", FOO)])
    got = run_score(plugin(h, "zone"), h, make_pod().name("p").labels({"foo": "bar", "tier": "a"}).obj())
    assert got == dict(m01=0, m02=0, m11=100, m12=100, m21=100, bare=0)


@pytest.mark.parametrize(("counts", "values", "want"), [
    ([0, 0], [["a", None]], [100, 0]),
    ([1, 1], [["a", "b"]], [50, 50]),
    ([1, 2], [["a", "a"]], [0, 0]),
])
def test_reduce(counts: list[int], values: list[list[str | None]], want: list[int]) -> None:
    assert label_spread_scores(counts, values, len(values)) == want


def test_no_labels_skips_and_no_events() -> None:
    h = cluster(nodes())
    assert run_score(plugin(h), h, make_pod().name("p").obj()) is None
    assert plugin(h).events_to_register() == []
    with pytest.raises(ValueError, match="antiAffinityLabelsPreference"):
        ServiceAntiAffinity({"antiAffinityLabelsPreference": "zone"}, h)
