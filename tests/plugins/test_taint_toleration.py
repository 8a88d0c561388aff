"""TaintToleration: filter on NoSchedule/NoExecute, PreferNoSchedule counting, reverse normalization, hints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from scheduler.framework.interface import CycleState, NodeScore
from scheduler.framework.status import Code
from scheduler.framework.types import ActionType, EventResource, QueueingHint
from scheduler.model.node import Node, node_from_api
from scheduler.plugins.taint_toleration import TaintToleration
from tests.builders import make_node, make_pod, taint
from tests.plugins.util import FakeHandle, node_info

UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def plugin() -> TaintToleration:
    return TaintToleration({}, FakeHandle())


def tol(key: str = "", op: str = "Equal", value: str = "", effect: str = "") -> dict[str, str]:
    t = {"operator": op}
    if key:
        t["key"] = key
    if value:
        t["value"] = value
    if effect:
        t["effect"] = effect
    return t


GPU_NS = taint("dedicated", "gpu", "NoSchedule")

FILTER_CASES: list[tuple[str, list[dict[str, str]], list[dict[str, str]], str | None]] = [
    ("no taints", [], [], None),
    ("untolerated NoSchedule", [GPU_NS], [], "node(s) had untolerated taint(s)"),
    ("Equal with matching value and effect", [GPU_NS], [tol("dedicated", "Equal", "gpu", "NoSchedule")], None),
    (
        "Equal with another value",
        [GPU_NS],
        [tol("dedicated", "Equal", "cpu", "NoSchedule")],
        "node(s) had untolerated taint(s)",
    ),
    ("Exists on the key", [GPU_NS], [tol("dedicated", "Exists")], None),
    ("empty key with Exists tolerates everything", [GPU_NS, taint("x", "y", "NoExecute")], [tol(op="Exists")], None),
    (
        "empty effect matches NoExecute",
        [taint("dedicated", "gpu", "NoExecute")],
        [tol("dedicated", "Equal", "gpu")],
        None,
    ),
    (
        "other effect does not tolerate",
        [GPU_NS],
        [tol("dedicated", "Exists", effect="NoExecute")],
        "node(s) had untolerated taint(s)",
    ),
    ("PreferNoSchedule never filters", [taint("soft", "x", "PreferNoSchedule")], [], None),
    (
        "first untolerated taint is reported",
        [taint("a", "1"), taint("b", "2", "NoExecute"), taint("c", "3")],
        [tol("a", "Equal", "1")],
        "node(s) had untolerated taint(s)",
    ),
    (
        "taint without value",
        [taint("node-role.kubernetes.io/control-plane")],
        [],
        "node(s) had untolerated taint(s)",
    ),
]


@pytest.mark.parametrize(
    ("taints", "tolerations", "reason"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(taints: list[dict[str, str]], tolerations: list[dict[str, str]], reason: str | None) -> None:
    s = plugin().filter(CycleState(), make_pod(tolerations=tolerations), node_info(make_node(taints=taints)))
    if reason is None:
        assert s is None
    else:
        assert s is not None and (s.code, s.reasons) == (UNRES, [reason])


def test_unknown_toleration_operator_tolerates_nothing() -> None:
    """core/v1 ToleratesTaint: an operator other than "", Equal or Exists matches no taint; it is not an
    error (the pod still fits untainted nodes)."""
    pod = make_pod(tolerations=[tol("k", "Foo"), tol(op="Foo")])
    assert pod.parse_error is None
    assert plugin().filter(CycleState(), pod, node_info(make_node())) is None
    s = plugin().filter(CycleState(), pod, node_info(make_node(taints=[taint("k")])))
    assert s is not None and (s.code, s.reasons) == (UNRES, ["node(s) had untolerated taint(s)"])


def test_malformed_node_taints_reject_rather_than_pass() -> None:
    bad = node_from_api({"metadata": {"name": "n"}, "spec": {"taints": ["not-a-taint"]}})
    s = plugin().filter(CycleState(), make_pod(), node_info(bad))
    assert s is not None and s.code == UNRES and "spec.taints[0]" in s.message


def normalized(tolerations: Sequence[Mapping[str, str]], nodes: Sequence[Node]) -> list[int]:
    p = plugin()
    pod = make_pod(tolerations=tolerations)
    state = CycleState()
    assert p.pre_score(state, pod, []) is None
    scores = []
    for n in nodes:
        s, status = p.score(state, pod, node_info(n))
        assert status is None
        scores.append(NodeScore(n.name, s))
    ext = p.score_extensions()
    assert ext.normalize_score(state, pod, scores) is None
    return [s.score for s in scores]


P1 = taint("p1", "a", "PreferNoSchedule")
P2 = taint("p2", "b", "PreferNoSchedule")
P3 = taint("p3", "c", "PreferNoSchedule")
NODES = [make_node("n1", taints=[P1, P2]), make_node("n2", taints=[P1, taint("hard", "x")]), make_node("n3")]

SCORE_CASES: list[tuple[str, list[dict[str, str]], list[Node], list[int]]] = [
    # counts 2, 1, 0 -> 100 - 100*c/2: 0, 50, 100 (the NoSchedule taint on n2 does not count)
    ("counts reversed", [], NODES, [0, 50, 100]),
    # p2 tolerated with effect PreferNoSchedule: counts 1, 1, 0 -> 0, 0, 100
    ("PreferNoSchedule toleration counts", [tol("p2", "Exists", effect="PreferNoSchedule")], NODES, [0, 0, 100]),
    # a NoSchedule toleration is ignored for scoring: counts stay 2, 1, 0
    ("NoSchedule toleration ignored for scoring", [tol("p1", "Exists", effect="NoSchedule")], NODES, [0, 50, 100]),
    # an empty-effect toleration counts: p1 tolerated -> counts 1, 0, 0 -> 0, 100, 100
    ("empty-effect toleration counts", [tol("p1", "Equal", "a")], NODES, [0, 100, 100]),
    ("all zero gives everyone 100", [tol(op="Exists")], NODES, [100, 100, 100]),
    # counts 3, 1, 0: 100 - 100*3/3 = 0, 100 - 33 = 67, 100
    (
        "integer division in normalization",
        [],
        [make_node("a", taints=[P1, P2, P3]), make_node("b", taints=[P1]), make_node("c")],
        [0, 67, 100],
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "nodes", "expected"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score_and_normalize(tolerations: list[dict[str, str]], nodes: list[Node], expected: list[int]) -> None:
    assert normalized(tolerations, nodes) == expected


def test_score_without_prescore_state_is_an_error() -> None:
    _, status = plugin().score(CycleState(), make_pod(), node_info(make_node()))
    assert status is not None and status.code == Code.ERROR


def test_events_registered() -> None:
    node_ev, pod_ev = plugin().events_to_register()
    assert (node_ev.event.resource, node_ev.event.action) == (
        EventResource.NODE,
        ActionType.ADD | ActionType.UPDATE_NODE_TAINT,
    )
    assert (pod_ev.event.resource, pod_ev.event.action) == (EventResource.POD, ActionType.UPDATE_POD_TOLERATION)


NODE_HINTS: list[tuple[str, Node | None, Node, QueueingHint]] = [
    ("added node without taints", None, make_node(), Q),
    ("added node with untolerated taint", None, make_node(taints=[GPU_NS]), SKIP),
    ("taint removed", make_node(taints=[GPU_NS]), make_node(), Q),
    ("was already tolerated", make_node(), make_node(taints=[taint("soft", "x", "PreferNoSchedule")]), SKIP),
    ("still untolerated", make_node(taints=[GPU_NS]), make_node(taints=[taint("other")]), SKIP),
]


@pytest.mark.parametrize(("old", "new", "expected"), [c[1:] for c in NODE_HINTS], ids=[c[0] for c in NODE_HINTS])
def test_node_hint(old: Node | None, new: Node, expected: QueueingHint) -> None:
    assert plugin().is_schedulable_after_node_change(make_pod(), old, new) == expected


@pytest.mark.parametrize(("uid", "expected"), [("me", Q), ("someone-else", SKIP)])
def test_pod_toleration_hint(uid: str, expected: QueueingHint) -> None:
    pending = make_pod("me", uid="me")
    updated = make_pod("x", uid=uid, tolerations=[tol(op="Exists")])
    assert plugin().is_schedulable_after_pod_toleration_change(pending, make_pod("x", uid=uid), updated) == expected
