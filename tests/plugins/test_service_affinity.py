"""ServiceAffinity (legacy CheckServiceAffinity / 1.18 ServiceAffinity filter)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.types import NodeInfo, QueueingHint
from scheduler.plugins.legacy.service_affinity import ERR_REASON, ServiceAffinity
from tests.plugins.pod_to_pod_util import cluster, filter_nodes, make_node, make_pod, run_filter, run_score, service

OK = ("SUCCESS", "")
NO = ("UNSCHEDULABLE", ERR_REASON)
FOO = {"foo": "bar"}


def machines() -> list[Any]:
    return [make_node("m1", {"region": "r1", "zone": "z11"}), make_node("m2", {"region": "r1", "zone": "z12"}),
            make_node("m3", {"region": "r2", "zone": "z21"})]


def plugin(handle: Any, *labels: str, **args: Any) -> ServiceAffinity:
    return ServiceAffinity({"affinityLabels": list(labels), **args}, handle)


CASES = [
    pytest.param(make_pod("p"), [], [], ("region",), dict(m1=OK, m2=OK, m3=OK), id="nothing to match"),
    pytest.param(make_pod("p", node_selector={"region": "r1"}), [], [], ("region",), dict(m1=OK, m2=OK, m3=NO),
                 id="pod's nodeSelector pins the region"),
    pytest.param(make_pod("p", labels=FOO), [make_pod("e", labels=FOO, node="m1")], [service("s", FOO)], ("region",),
                 dict(m1=OK, m2=OK, m3=NO), id="region of the service's first pod"),
    pytest.param(make_pod("p", labels=FOO), [make_pod("e", labels=FOO, node="m1")], [service("s", FOO)],
                 ("region", "zone"), dict(m1=OK, m2=NO, m3=NO), id="region and zone back-filled"),
    pytest.param(make_pod("p", labels=FOO, node_selector={"zone": "z12"}), [make_pod("e", labels=FOO, node="m1")],
                 [service("s", FOO)], ("region", "zone"), dict(m1=NO, m2=OK, m3=NO),
                 id="pinned zone kept, region back-filled"),
    pytest.param(make_pod("p", labels=FOO), [make_pod("e", labels=FOO, node="m3")], [], ("region",),
                 dict(m1=OK, m2=OK, m3=OK), id="no service selects the pod: no back-filling"),
    pytest.param(make_pod("p", labels=FOO), [make_pod("e", ns="other", labels=FOO, node="m3")],
                 [service("s", FOO)], ("region",), dict(m1=OK, m2=OK, m3=OK), id="other namespace ignored"),
    pytest.param(make_pod("p", labels=FOO), [make_pod("e", labels={"foo": "baz"}, node="m3")],
                 [service("s", {})], ("region",), dict(m1=OK, m2=OK, m3=OK),
                 id="pods lacking the pod's labels are not of its service"),
    pytest.param(make_pod("p", labels=FOO), [make_pod("e", labels=FOO, node="m3")], [service("s", FOO)], (),
                 dict(m1=OK, m2=OK, m3=OK), id="no affinity labels"),
]


@pytest.mark.parametrize(("pod", "existing", "objects", "labels", "want"), CASES)
def test_filter(pod: Any, existing: list[Any], objects: list[Any], labels: tuple[str, ...],
                want: dict[str, tuple[str, str]]) -> None:
    h = cluster(machines(), existing, objects)
    assert run_filter(plugin(h, *labels), h, pod) == want


def test_remove_pod_forgets_the_reference_and_add_pod_sets_it() -> None:
    first = make_pod("e", labels=FOO, node="m3")
    h = cluster(machines(), [first], [service("s", FOO)])
    pl, p, state = plugin(h, "region"), make_pod("p", labels=FOO), CycleState()
    assert pl.pre_filter(state, p, h.snapshot().list())[1] is None
    assert filter_nodes(pl, state, h, p) == dict(m1=NO, m2=NO, m3=OK)
    m1, m3 = h.snapshot().get("m1"), h.snapshot().get("m3")
    assert m1 is not None and m3 is not None
    pl.remove_pod(state, p, first, m3)
    assert filter_nodes(pl, state, h, p) == dict(m1=OK, m2=OK, m3=OK)
    pl.add_pod(state, p, make_pod("n", labels=FOO, node="m1"), m1)
    assert filter_nodes(pl, state, h, p) == dict(m1=OK, m2=OK, m3=NO)


def test_pod_missing_from_its_node_info_is_skipped() -> None:
    """FilterOutPods: on a NodeInfo copy without the reference pod (preemption), the next pod decides."""
    first, second = make_pod("e1", labels=FOO, node="m1"), make_pod("e2", labels=FOO, node="m3")
    h = cluster(machines(), [first, second], [service("s", FOO)])
    pl, p, state = plugin(h, "region"), make_pod("p", labels=FOO), CycleState()
    pl.pre_filter(state, p, h.snapshot().list())
    m1 = h.snapshot().get("m1")
    assert m1 is not None
    assert pl.filter(state, p, m1) is None  # reference e1 on m1: region r1
    without: NodeInfo = m1.clone()
    without.remove_pod(first)
    s = pl.filter(state, p, without)  # reference e2 on m3: region r2
    assert s is not None and s.message == ERR_REASON


def test_anti_affinity_labels_make_it_score_the_1_18_way() -> None:
    h = cluster(machines(), [make_pod("e", labels=FOO, node="m1")], [service("s", FOO)])
    got = run_score(plugin(h, antiAffinityLabelsPreference=["region"]), h, make_pod("p", labels=FOO))
    assert got == dict(m1=0, m2=0, m3=100)
    assert run_score(plugin(h, "region"), h, make_pod("p", labels=FOO)) is None


Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def test_hints() -> None:
    pl = plugin(cluster([]), "region")
    p = make_pod("p", labels=FOO)
    assert pl.is_schedulable_after_node_change(p, None, make_node("n", {"region": "r"})) == Q
    assert pl.is_schedulable_after_node_change(p, None, make_node("n")) == S
    assert pl.is_schedulable_after_node_change(p, make_node("n", {"region": "a"}), make_node("n", {"region": "b"})) == Q
    assert pl.is_schedulable_after_node_change(p, make_node("n", {"region": "a"}),
                                               make_node("n", {"region": "a", "x": "y"})) == S
    assert pl.is_schedulable_after_pod_change(p, make_pod("e", labels=FOO, node="n"), None) == Q
    assert pl.is_schedulable_after_pod_change(p, make_pod("e", labels={"a": "b"}, node="n"), None) == S
    assert pl.is_schedulable_after_pod_change(p, make_pod("e", labels=FOO, node="n"),
                                              make_pod("e", labels={"foo": "baz"}, node="n")) == Q
    assert pl.is_schedulable_after_service_change(p, None, service("s", FOO)) == Q
    assert pl.is_schedulable_after_service_change(p, None, service("s", FOO, ns="other")) == S
