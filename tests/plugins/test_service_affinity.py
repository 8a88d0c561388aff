"""ServiceAffinity (legacy CheckServiceAffinity / 1.18 ServiceAffinity filter)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.types import NodeInfo, QueueingHint
from scheduler.plugins.legacy.service_affinity import ERR_REASON, ServiceAffinity
from scheduler.testing import make_node, make_pod
from tests.plugins.pod_to_pod_util import cluster, filter_nodes, run_filter, run_score, service

OK = ("SUCCESS", "")
NO = ("UNSCHEDULABLE", ERR_REASON)
FOO = {"foo": "bar"}


def machines() -> list[Any]:
    return [make_node().name("m1").labels({"region": "r1", "zone": "z11"}).obj(),
            make_node().name("m2").labels({"region": "r1", "zone": "z12"}).obj(),
            make_node().name("m3").labels({"region": "r2", "zone": "z21"}).obj()]


def plugin(handle: Any, *labels: str, **args: Any) -> ServiceAffinity:
    return ServiceAffinity({"affinityLabels": list(labels), **args}, handle)


CASES = [
    pytest.param(make_pod().name("p").obj(), [], [], ("region",), dict(m1=OK, m2=OK, m3=OK), id="nothing to match"),
    pytest.param(make_pod().name("p").node_selector({"region": "r1"}).obj(), [], [], ("region",),
                 dict(m1=OK, m2=OK, m3=NO),
                 id="pod's nodeSelector pins the region"),
    pytest.param(make_pod().name("p").labels(FOO).obj(), [make_pod().name("e").labels(FOO).node("m1").obj()],
                 [service("s", FOO)], ("region",),
                 dict(m1=OK, m2=OK, m3=NO), id="region of the service's first pod"),
    pytest.param(make_pod().name("p").labels(FOO).obj(), [make_pod().name("e").labels(FOO).node("m1").obj()],
                 [service("s", FOO)],
                 ("region", "zone"), dict(m1=OK, m2=NO, m3=NO), id="region and zone back-filled"),
    pytest.param(make_pod().name("p").labels(FOO).node_selector({"zone": "z12"}).obj(),
                 [make_pod().name("e").labels(FOO).node("m1").obj()],
                 [service("s", FOO)], ("region", "zone"), dict(m1=NO, m2=OK, m3=NO),
                 id="pinned zone kept, region back-filled"),
    pytest.param(make_pod().name("p").labels(FOO).obj(), [make_pod().name("e").labels(FOO).node("m3").obj()], [],
                 ("region",),
                 dict(m1=OK, m2=OK, m3=OK), id="no service selects the pod: no back-filling"),
    pytest.param(make_pod().name("p").labels(FOO).obj(),
                 [make_pod().name("e").namespace("other").labels(FOO).node("m3").obj()],
                 [service("s", FOO)], ("region",), dict(m1=OK, m2=OK, m3=OK), id="other namespace ignored"),
    pytest.param(make_pod().name("p").labels(FOO).obj(), [make_pod().name("e").labels({"foo": "baz"}).node("m3").obj()],
                 [service("s", {})], ("region",), dict(m1=OK, m2=OK, m3=OK),
                 id="pods lacking the pod's labels are not of its service"),
    pytest.param(make_pod().name("p").labels(FOO).obj(), [make_pod().name("e").labels(FOO).node("m3").obj()],
                 [service("s", FOO)], (),
                 dict(m1=OK, m2=OK, m3=OK), id="no affinity labels"),
]


@pytest.mark.parametrize(("pod", "existing", "objects", "labels", "want"), CASES)
def test_filter(pod: Any, existing: list[Any], objects: list[Any], labels: tuple[str, ...],
                want: dict[str, tuple[str, str]]) -> None:
    h = cluster(machines(), existing, objects)
    assert run_filter(plugin(h, *labels), h, pod) == want


def test_remove_pod_forgets_the_reference_and_add_pod_sets_it() -> None:
    first = make_pod().name("e").labels(FOO).node("m3").obj()
    h = cluster(machines(), [first], [service("s", FOO)])
    pl, p, state = plugin(h, "region"), make_pod().name("p").labels(FOO).obj(), CycleState()
    assert pl.pre_filter(state, p, h.snapshot().list())[1] is None
    assert filter_nodes(pl, state, h, p) == dict(m1=NO, m2=NO, m3=OK)
    m1, m3 = h.snapshot().get("m1"), h.snapshot().get("m3")
    assert m1 is not None and m3 is not None
    pl.remove_pod(state, p, first, m3)
    assert filter_nodes(pl, state, h, p) == dict(m1=OK, m2=OK, m3=OK)
    pl.add_pod(state, p, make_pod().name("n").labels(FOO).node("m1").obj(), m1)
    assert filter_nodes(pl, state, h, p) == dict(m1=OK, m2=OK, m3=NO)


def test_pod_missing_from_its_node_info_is_skipped() -> None:
    """FilterOutPods: on a NodeInfo copy without the reference pod (preemption), the next pod decides."""
    first, second = (make_pod().name(n).labels(FOO).node(node).obj() for n, node in (("e1", "m1"), ("e2", "m3")))
    h = cluster(machines(), [first, second], [service("s", FOO)])
    pl, p, state = plugin(h, "region"), make_pod().name("p").labels(FOO).obj(), CycleState()
    pl.pre_filter(state, p, h.snapshot().list())
    m1 = h.snapshot().get("m1")
    assert m1 is not None
    assert pl.filter(state, p, m1) is None  # reference e1 on m1: region r1
    without: NodeInfo = m1.clone()
    without.remove_pod(first)
    s = pl.filter(state, p, without)  # reference e2 on m3: region r2
    assert s is not None and s.message == ERR_REASON


def test_anti_affinity_labels_make_it_score_the_1_18_way() -> None:
    h = cluster(machines(), [make_pod().name("e").labels(FOO).node("m1").obj()], [service("s", FOO)])
    got = run_score(plugin(h, antiAffinityLabelsPreference=["region"]), h, make_pod().name("p").labels(FOO).obj())
    assert got == dict(m1=0, m2=0, m3=100)
    assert run_score(plugin(h, "region"), h, make_pod().name("p").labels(FOO).obj()) is None


Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def test_hints() -> None:
    pl = plugin(cluster([]), "region")
    p = make_pod().name("p").labels(FOO).obj()
    assert pl.is_schedulable_after_node_change(p, None, make_node().name("n").labels({"region": "r"}).obj()) == Q
    assert pl.is_schedulable_after_node_change(p, None, make_node().name("n").obj()) == S
    assert pl.is_schedulable_after_node_change(p, make_node().name("n").labels({"region": "a"}).obj(),
                                               make_node().name("n").labels({"region": "b"}).obj()) == Q
    assert pl.is_schedulable_after_node_change(p, make_node().name("n").labels({"region": "a"}).obj(),
                                               make_node().name("n").labels({"region": "a", "x": "y"}).obj()) == S
    assert pl.is_schedulable_after_pod_change(p, make_pod().name("e").labels(FOO).node("n").obj(), None) == Q
    assert pl.is_schedulable_after_pod_change(p, make_pod().name("e").labels({"a": "b"}).node("n").obj(), None) == S
    assert pl.is_schedulable_after_pod_change(p, make_pod().name("e").labels(FOO).node("n").obj(),
                                              make_pod().name("e").labels({"foo": "baz"}).node("n").obj()) == Q
    assert pl.is_schedulable_after_service_change(p, None, service("s", FOO)) == Q
    assert pl.is_schedulable_after_service_change(p, None, service("s", FOO, ns="other")) == S
