"""NodeAffinity: selector and required terms, PreFilterResult, addedAffinity, preferred scoring, malformed input."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.framework.interface import CycleState, NodeScore
from scheduler.framework.status import Code
from scheduler.framework.types import ActionType, EventResource, QueueingHint
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.node_affinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
)
from tests.builders import make_node, make_pod
from tests.plugins.util import FakeHandle, node_info

UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
N1 = make_node("n1", labels={"zone": "a", "gen": "5", "disk": "ssd", "weird": "x"})


def plugin(**args: Any) -> NodeAffinity:
    return NodeAffinity(args, FakeHandle())


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def term(*exprs: dict[str, Any], fields: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if exprs:
        t["matchExpressions"] = list(exprs)
    if fields:
        t["matchFields"] = list(fields)
    return t


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": w, "preference": t} for w, t in weighted]
        }
    }


def run_filter(p: NodeAffinity, pod: Pod, node: Node = N1) -> tuple[Code | None, list[str]]:
    state = CycleState()
    _, s = p.pre_filter(state, pod, [])
    if s is not None and s.code != Code.SKIP:
        return s.code, s.reasons
    s = p.filter(state, pod, node_info(node))
    return (None, []) if s is None else (s.code, s.reasons)


FAIL = (UNRES, [ERR_REASON_POD])
OK: tuple[Code | None, list[str]] = (None, [])

FILTER_CASES: list[tuple[str, Pod, tuple[Code | None, list[str]]]] = [
    ("nothing required", make_pod(), OK),
    ("nodeSelector matches", make_pod(node_selector={"zone": "a"}), OK),
    ("nodeSelector mismatch", make_pod(node_selector={"zone": "b"}), FAIL),
    ("In", make_pod(affinity=required(term(expr("zone", "In", "a", "b")))), OK),
    ("NotIn", make_pod(affinity=required(term(expr("zone", "NotIn", "a")))), FAIL),
    ("NotIn on a missing key matches", make_pod(affinity=required(term(expr("gpu", "NotIn", "x")))), OK),
    ("Exists", make_pod(affinity=required(term(expr("disk", "Exists")))), OK),
    ("DoesNotExist present", make_pod(affinity=required(term(expr("disk", "DoesNotExist")))), FAIL),
    ("DoesNotExist absent", make_pod(affinity=required(term(expr("gpu", "DoesNotExist")))), OK),
    ("Gt below", make_pod(affinity=required(term(expr("gen", "Gt", "4")))), OK),
    ("Gt equal fails", make_pod(affinity=required(term(expr("gen", "Gt", "5")))), FAIL),
    ("Lt", make_pod(affinity=required(term(expr("gen", "Lt", "6")))), OK),
    ("Gt on missing label", make_pod(affinity=required(term(expr("cores", "Gt", "1")))), FAIL),
    ("Gt on non-integer label", make_pod(affinity=required(term(expr("weird", "Gt", "1")))), FAIL),
    ("terms are ORed", make_pod(affinity=required(term(expr("zone", "In", "b")), term(expr("disk", "Exists")))), OK),
    (
        "expressions are ANDed",
        make_pod(affinity=required(term(expr("zone", "In", "a"), expr("disk", "DoesNotExist")))),
        FAIL,
    ),
    ("empty term matches nothing", make_pod(affinity=required(term())), FAIL),
    ("empty term next to a matching one", make_pod(affinity=required(term(), term(expr("zone", "In", "a")))), OK),
    ("matchFields name In", make_pod(affinity=required(term(fields=[expr("metadata.name", "In", "n1")]))), OK),
    ("matchFields name In other", make_pod(affinity=required(term(fields=[expr("metadata.name", "In", "n2")]))), FAIL),
    ("matchFields name NotIn", make_pod(affinity=required(term(fields=[expr("metadata.name", "NotIn", "n1")]))), FAIL),
    (
        "fields and expressions ANDed",
        make_pod(affinity=required(term(expr("zone", "In", "b"), fields=[expr("metadata.name", "In", "n1")]))),
        FAIL,
    ),
    (
        "nodeSelector AND affinity",
        make_pod(node_selector={"zone": "a"}, affinity=required(term(expr("disk", "DoesNotExist")))),
        FAIL,
    ),
    ("no terms at all matches nothing", make_pod(affinity=required()), FAIL),
    # a malformed term never matches but does not spoil a valid one (upstream's lazy matcher)
    (
        "malformed term next to a matching one",
        make_pod(affinity=required(term(expr("zone", "Foo", "a")), term(expr("zone", "In", "a")))),
        OK,
    ),
    (
        "malformed term next to a failing one",
        make_pod(affinity=required(term(expr("zone", "Foo", "a")), term(expr("zone", "In", "b")))),
        FAIL,
    ),
]


@pytest.mark.parametrize(("pod", "expected"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_filter(pod: Pod, expected: tuple[Code | None, list[str]]) -> None:
    assert run_filter(plugin(), pod) == expected


MALFORMED: list[tuple[str, dict[str, Any]]] = [
    ("unknown operator", required(term(expr("zone", "Foo", "a")))),
    ("non-integer Gt", required(term(expr("gen", "Gt", "abc")))),
    ("Gt with an underscore (strconv.ParseInt rejects it)", required(term(expr("gen", "Gt", "1_0")))),
    ("Lt with two values", required(term(expr("gen", "Lt", "1", "2")))),
    ("In without values", required(term(expr("zone", "In")))),
    ("matchFields Exists", required(term(fields=[expr("metadata.name", "Exists")]))),
    ("every term malformed", required(term(expr("a", "Foo")), term(expr("b", "Gt", "x")))),
]


@pytest.mark.parametrize("affinity", [c[1] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_required_terms_fail_filter_with_the_generic_reason(affinity: dict[str, Any]) -> None:
    """Upstream's PreFilter does not look at parse errors (the lazy matcher only reports them from Match,
    which Filter ignores): every node fails with ErrReasonPod. ``Gt "abc"`` passes API validation."""
    state = CycleState()
    pod = make_pod(affinity=affinity)
    assert plugin().pre_filter(state, pod, []) == (None, None)
    s = plugin().filter(state, pod, node_info(N1))
    assert s is not None and (s.code, s.reasons) == FAIL


def test_malformed_name_field_still_narrows_in_prefilter() -> None:
    """PreFilter reads matchFields metadata.name In values raw, even from a term that does not parse."""
    state = CycleState()
    pod = make_pod(affinity=required(term(fields=[expr("metadata.name", "In", "n1", "n2")])))
    result, s = plugin().pre_filter(state, pod, [])
    assert s is None and result is not None and result.node_names == {"n1", "n2"}
    f = plugin().filter(state, pod, node_info(N1))
    assert f is not None and (f.code, f.reasons) == FAIL


def test_node_selector_that_is_not_a_map_is_named() -> None:
    pod = make_pod()
    pod.node_selector = ["zone=a"]  # what a malformed object would parse into
    pod.raw["spec"]["nodeSelector"] = ["zone=a"]
    _, s = plugin().pre_filter(CycleState(), pod, [])
    assert s is not None and s.code == UNRES and "spec.nodeSelector" in s.message


# --- PreFilter ------------------------------------------------------------------------------------------


def names(*values: str) -> dict[str, Any]:
    return expr("metadata.name", "In", *values)


PREFILTER_CASES: list[tuple[str, Pod, set[str] | None]] = [
    ("nodeSelector only: all nodes", make_pod(node_selector={"zone": "a"}), None),
    # matchFields take exactly one value each; several names come from several terms (ORed)
    ("one term naming a node", make_pod(affinity=required(term(fields=[names("n1")]))), {"n1"}),
    (
        "union over terms",
        make_pod(affinity=required(term(fields=[names("n1")]), term(fields=[names("n3")]))),
        {"n1", "n3"},
    ),
    ("intersection within a term", make_pod(affinity=required(term(fields=[names("n2"), names("n2")]))), {"n2"}),
    (
        "a term without names allows all nodes",
        make_pod(affinity=required(term(fields=[names("n1")]), term(expr("zone", "In", "a")))),
        None,
    ),
    ("NotIn does not narrow", make_pod(affinity=required(term(fields=[expr("metadata.name", "NotIn", "n1")]))), None),
]


@pytest.mark.parametrize(("pod", "expected"), [c[1:] for c in PREFILTER_CASES], ids=[c[0] for c in PREFILTER_CASES])
def test_prefilter_result(pod: Pod, expected: set[str] | None) -> None:
    result, s = plugin().pre_filter(CycleState(), pod, [])
    assert s is None
    assert (None if result is None else result.node_names) == expected


def test_prefilter_skips_pod_without_requirements() -> None:
    result, s = plugin().pre_filter(CycleState(), make_pod(), [])
    assert result is None and s is not None and s.code == Code.SKIP


def test_prefilter_conflicting_names() -> None:
    pod = make_pod(affinity=required(term(fields=[names("n1"), names("n2")])))
    result, s = plugin().pre_filter(CycleState(), pod, [])
    assert result is None and s is not None and (s.code, s.reasons) == (UNRES, [ERR_REASON_CONFLICT])


# --- addedAffinity --------------------------------------------------------------------------------------


def test_added_affinity_is_enforced_even_for_pods_without_requirements() -> None:
    p = plugin(
        addedAffinity={
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term(expr("zone", "In", "b"))]}
        }
    )
    assert run_filter(p, make_pod()) == (UNRES, [ERR_REASON_ENFORCED])
    assert run_filter(p, make_pod(), make_node("n2", labels={"zone": "b"})) == OK


def test_added_affinity_checked_before_the_pods_own() -> None:
    p = plugin(
        addedAffinity={
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term(expr("zone", "In", "b"))]}
        }
    )
    assert run_filter(p, make_pod(node_selector={"zone": "c"})) == (UNRES, [ERR_REASON_ENFORCED])


def test_malformed_added_affinity_is_a_config_error() -> None:
    with pytest.raises(ValueError, match=r"addedAffinity.*unknown operator"):
        plugin(
            addedAffinity={
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(expr("zone", "Near", "b"))]
                }
            }
        )


# --- scoring --------------------------------------------------------------------------------------------


def scored(p: NodeAffinity, pod: Pod, nodes: Sequence[Node]) -> list[int]:
    state = CycleState()
    assert p.pre_score(state, pod, []) is None
    scores = []
    for n in nodes:
        s, status = p.score(state, pod, node_info(n))
        assert status is None
        scores.append(NodeScore(n.name, s))
    raw = [s.score for s in scores]
    ext = p.score_extensions()
    assert ext.normalize_score(state, pod, scores) is None
    return raw + [s.score for s in scores]


NODES = [
    make_node("a", labels={"zone": "a", "disk": "ssd"}),
    make_node("b", labels={"zone": "a"}),
    make_node("c"),
    make_node("d", labels={"zone": "b"}),
]
PREFS = preferred(
    (10, term(expr("zone", "In", "a"))),
    (5, term(expr("disk", "Exists"))),
    (0, term(expr("zone", "In", "a"))),  # weight 0: ignored
    (3, term()),  # empty preference: ignored
)


def test_preferred_weights_summed_and_normalized() -> None:
    # raw 15, 10, 0, 0; normalized 100*s/15: 100, 66, 0, 0
    assert scored(plugin(), make_pod(affinity=PREFS), NODES) == [15, 10, 0, 0, 100, 66, 0, 0]


def test_added_preferred_terms_add_to_the_pods() -> None:
    p = plugin(
        addedAffinity={
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 20, "preference": term(expr("zone", "In", "b"))}
            ]
        }
    )
    # raw 15, 10, 0, 20; normalized 100*s/20: 75, 50, 0, 100
    assert scored(p, make_pod(affinity=PREFS), NODES) == [15, 10, 0, 20, 75, 50, 0, 100]


def test_all_zero_scores_stay_zero() -> None:
    pod = make_pod(affinity=preferred((7, term(expr("zone", "In", "z")))))
    assert scored(plugin(), pod, NODES) == [0] * 8


def test_prescore_skips_without_preferences() -> None:
    s = plugin().pre_score(CycleState(), make_pod(), [])
    assert s is not None and s.code == Code.SKIP


def test_malformed_preferred_term_is_an_error_worded_as_upstream() -> None:
    """NewPreferredSchedulingTerms' error: field.Error strings under paths rooted at the term index
    (the API server accepts Gt "five", a valid label value, so this text reaches the pod's condition)."""
    pod = make_pod(affinity=preferred((5, term(expr("gen", "Gt", "five")))))
    s = plugin().pre_score(CycleState(), pod, [])
    assert s is not None and s.code == Code.ERROR
    assert s.message == (
        "[0].matchExpressions[0].values[0]: Invalid value: \"five\": for 'Gt', 'Lt' operators, the value must be "
        "an integer"
    )
    two = make_pod(affinity=preferred((5, term(expr("gen", "Gt", "five"))), (0, term(expr("x", "Lt", "y"))),
                                      (3, term(expr("gen", "Lt", "1_0"), expr("zone", "Foo", "a")))))
    s = plugin().pre_score(CycleState(), two, [])
    assert s is not None and s.message == (
        "[[0].matchExpressions[0].values[0]: Invalid value: \"five\": for 'Gt', 'Lt' operators, the value must be "
        "an integer, [2].matchExpressions[0].values[0]: Invalid value: \"1_0\": for 'Gt', 'Lt' operators, the "
        'value must be an integer, [2].matchExpressions[1].operator: Unsupported value: "Foo": supported values: '
        '"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]'
    )


# --- queueing -------------------------------------------------------------------------------------------


def test_registers_node_add_and_label_update() -> None:
    [ev] = plugin().events_to_register()
    assert (ev.event.resource, ev.event.action) == (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)


WANTS_A = make_pod(node_selector={"zone": "a"})
HINTS: list[tuple[str, dict[str, Any], Pod, Node | None, Node, QueueingHint]] = [
    ("added matching node", {}, WANTS_A, None, make_node(labels={"zone": "a"}), Q),
    ("added other node", {}, WANTS_A, None, make_node(labels={"zone": "b"}), SKIP),
    ("label now matches", {}, WANTS_A, make_node(labels={"zone": "b"}), make_node(labels={"zone": "a"}), Q),
    ("already matched", {}, WANTS_A, make_node(labels={"zone": "a"}), make_node(labels={"zone": "a", "x": "y"}), SKIP),
    (
        "added affinity excludes the node",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term(expr("pool", "Exists"))]}
            }
        },
        WANTS_A,
        None,
        make_node(labels={"zone": "a"}),
        SKIP,
    ),
    (
        "malformed terms: cannot judge, queue",
        {},
        make_pod(affinity=required(term(expr("zone", "Foo", "a")))),
        make_node(),
        make_node(labels={"zone": "a"}),
        Q,
    ),
]


@pytest.mark.parametrize(("args", "pod", "old", "new", "expected"), [c[1:] for c in HINTS], ids=[c[0] for c in HINTS])
def test_node_hint(args: dict[str, Any], pod: Pod, old: Node | None, new: Node, expected: QueueingHint) -> None:
    assert plugin(**args).is_schedulable_after_node_change(pod, old, new) == expected
