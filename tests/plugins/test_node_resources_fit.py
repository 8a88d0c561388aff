"""NodeResourcesFit: filter verdicts and reasons, the three scoring strategies, args and queueing hints.

Expected scores are worked out by hand from upstream's integer formulas (see each case's comment).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.config.types_pluginargs import ResourceSpec
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import ActionType, EventResource, QueueingHint
from scheduler.model.node import Node
from scheduler.model.pod import Pod, pod_from_api
from scheduler.plugins.node_resources_fit import NodeResourcesFit, fit_request, pod_resource_requests
from tests.builders import container, make_node, make_pod
from tests.plugins.util import FakeHandle, node_info

UNSCHED = Code.UNSCHEDULABLE
UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
GPU = "example.com/gpu"


def plugin(**args: Any) -> NodeResourcesFit:
    return NodeResourcesFit(args, FakeHandle())


def bound(cpu: str | None = None, memory: str | None = None, **kw: Any) -> Pod:
    """An existing pod on the node (one container)."""
    return make_pod("existing", [container(cpu, memory, **kw)], node="n")


def run_filter(p: NodeResourcesFit, pod: Pod, node: Node, existing: list[Pod]) -> tuple[Code | None, list[str]]:
    state = CycleState()
    result, s = p.pre_filter(state, pod, [])
    assert result is None and s is None
    s = p.filter(state, pod, node_info(node, existing))
    return (None, []) if s is None else (s.code, s.reasons)


FILTER_CASES: list[tuple[str, dict[str, Any], Pod, Node, list[Pod], Code | None, list[str]]] = [
    ("fits", {}, make_pod(containers=[container("2", "2Gi")]), make_node(), [bound("1", "1Gi")], None, []),
    # 2 cpu wanted, 4 - 3 = 1 free; 2 <= 4 so preemption could help -> Unschedulable
    (
        "cpu short",
        {},
        make_pod(containers=[container("2", "1Gi")]),
        make_node(),
        [bound("3")],
        UNSCHED,
        ["Insufficient cpu"],
    ),
    (
        "cpu and memory short, both listed",
        {},
        make_pod(containers=[container("2", "2Gi")]),
        make_node(),
        [bound("3", "7Gi")],
        UNSCHED,
        ["Insufficient cpu", "Insufficient memory"],
    ),
    # 5 cpu > 4 allocatable: no preemption can help
    (
        "request larger than node",
        {},
        make_pod(containers=[container("5")]),
        make_node(),
        [],
        UNRES,
        ["Insufficient cpu"],
    ),
    (
        "memory larger than node, cpu merely short",
        {},
        make_pod(containers=[container("2", "9Gi")]),
        make_node(),
        [bound("3")],
        UNRES,
        ["Insufficient cpu", "Insufficient memory"],
    ),
    (
        "too many pods",
        {},
        make_pod(containers=[container("1")]),
        make_node(pods="1"),
        [bound()],
        UNSCHED,
        ["Too many pods"],
    ),
    (
        "pod requesting nothing: only the pod count",
        {},
        make_pod(),
        make_node(cpu="0", memory="0", pods="1"),
        [bound()],
        UNSCHED,
        ["Too many pods"],
    ),
    (
        "pod requesting nothing fits a zero-allocatable node",
        {},
        make_pod(),
        make_node(cpu="0", memory="0"),
        [],
        None,
        [],
    ),
    (
        "zero allocatable cpu",
        {},
        make_pod(containers=[container("100m")]),
        make_node(cpu="0"),
        [],
        UNRES,
        ["Insufficient cpu"],
    ),
    (
        "ephemeral storage short",
        {},
        make_pod(containers=[container(ephemeral="3Gi")]),
        make_node(ephemeral="10Gi"),
        [bound(ephemeral="8Gi")],
        UNSCHED,
        ["Insufficient ephemeral-storage"],
    ),
    (
        "extended resource short",
        {},
        make_pod(containers=[container(extra={GPU: "2"})]),
        make_node(extra={GPU: "2"}),
        [bound(extra={GPU: "1"})],
        UNSCHED,
        [f"Insufficient {GPU}"],
    ),
    (
        "extended resource beyond node",
        {},
        make_pod(containers=[container(extra={GPU: "3"})]),
        make_node(extra={GPU: "2"}),
        [],
        UNRES,
        [f"Insufficient {GPU}"],
    ),
    (
        "extended resource absent from node",
        {},
        make_pod(containers=[container(extra={"example.com/fpga": "1"})]),
        make_node(),
        [],
        UNRES,
        ["Insufficient example.com/fpga"],
    ),
    (
        "ignoredResources skips an extended resource",
        {"ignoredResources": [GPU]},
        make_pod(containers=[container(extra={GPU: "3"})]),
        make_node(extra={GPU: "2"}),
        [],
        None,
        [],
    ),
    (
        "ignoredResourceGroups skips by prefix",
        {"ignoredResourceGroups": ["example.com"]},
        make_pod(containers=[container(extra={GPU: "3"})]),
        make_node(extra={GPU: "2"}),
        [],
        None,
        [],
    ),
    (
        "ignored group does not cover other prefixes",
        {"ignoredResourceGroups": ["example.org"]},
        make_pod(containers=[container(extra={GPU: "3"})]),
        make_node(extra={GPU: "2"}),
        [],
        UNRES,
        [f"Insufficient {GPU}"],
    ),
    # hugepages are native, not extended: ignoredResources cannot skip them
    (
        "hugepages cannot be ignored",
        {"ignoredResources": ["hugepages-2Mi"]},
        make_pod(containers=[container(extra={"hugepages-2Mi": "4Mi"})]),
        make_node(),
        [],
        UNRES,
        ["Insufficient hugepages-2Mi"],
    ),
    (
        "every failing reason in one status",
        {},
        make_pod(containers=[container("2", "2Gi", ephemeral="3Gi", extra={GPU: "2"})]),
        make_node(pods="1", ephemeral="10Gi", extra={GPU: "2"}),
        [bound("3", "7Gi", ephemeral="8Gi", extra={GPU: "1"})],
        UNSCHED,
        [
            "Too many pods",
            "Insufficient cpu",
            "Insufficient memory",
            "Insufficient ephemeral-storage",
            f"Insufficient {GPU}",
        ],
    ),
    # init container 3 cpu > container 1 cpu: the pod needs 3; 4 - 1.5 = 2.5 free
    (
        "init container dominates",
        {},
        make_pod(containers=[container("1")], init_containers=[container("3")]),
        make_node(),
        [bound("1500m")],
        UNSCHED,
        ["Insufficient cpu"],
    ),
    (
        "init container fits when 3 are free",
        {},
        make_pod(containers=[container("1")], init_containers=[container("3")]),
        make_node(),
        [bound("1")],
        None,
        [],
    ),
    # sidecar 1 + container 1 = 2 running; init 2 + sidecar 1 = 3 while initializing -> 3
    (
        "sidecar adds to the init need",
        {},
        make_pod(
            containers=[container("1")],
            init_containers=[container("1", restart_policy="Always", name="side"), container("2", name="init")],
        ),
        make_node(),
        [bound("1500m")],
        UNSCHED,
        ["Insufficient cpu"],
    ),
    (
        "sidecar case fits with 3 free",
        {},
        make_pod(
            containers=[container("1")],
            init_containers=[container("1", restart_policy="Always", name="side"), container("2", name="init")],
        ),
        make_node(),
        [bound("1")],
        None,
        [],
    ),
]


@pytest.mark.parametrize(
    ("args", "pod", "node", "existing", "code", "reasons"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(
    args: dict[str, Any], pod: Pod, node: Node, existing: list[Pod], code: Code | None, reasons: list[str]
) -> None:
    assert run_filter(plugin(**args), pod, node, existing) == (code, reasons)


def test_bad_quantity_is_unresolvable_and_named() -> None:
    pod = make_pod(containers=[container("lots")])
    result, s = plugin().pre_filter(CycleState(), pod, [])
    assert result is None and s is not None
    assert s.code == UNRES
    assert "spec.containers[0].resources.requests.cpu" in s.message and "'lots'" in s.message


def test_filter_without_prefilter_state_is_an_error() -> None:
    s = plugin().filter(CycleState(), make_pod(), node_info(make_node()))
    assert s is not None and s.code == Code.ERROR


# --- scoring ------------------------------------------------------------------------------------------


def score(p: NodeResourcesFit, pod: Pod, node: Node, existing: Sequence[Pod] = ()) -> int:
    state = CycleState()
    assert p.pre_score(state, pod, []) is None
    s, status = p.score(state, pod, node_info(node, existing))
    assert status is None
    return s


# node n1: 4 cpu / 8Gi with a 1 cpu / 2Gi pod; incoming 1 cpu / 1Gi -> requested 2000m, 3Gi
N1 = (make_node(), [bound("1", "2Gi")])
INCOMING = make_pod(containers=[container("1", "1Gi")])

SCORE_CASES: list[tuple[str, dict[str, Any], Pod, Node, list[Pod], int]] = [
    # least: cpu (4000-2000)*100/4000 = 50; mem (8-3)*100/8 = 62 (62.5 truncated); (50+62)/2 = 56
    ("least allocated", {}, INCOMING, *N1, 56),
    # least on 2 cpu / 8Gi empty: cpu 50, mem 87 (87.5); (50+87)/2 = 68
    ("least allocated, smaller node", {}, INCOMING, make_node(cpu="2"), [], 68),
    # no requests -> 100m / 200Mi: cpu (1000-100)*100/1000 = 90, mem (1024-200)*100/1024 = 80 (80.47); 85
    ("least uses non-zero defaults", {}, make_pod(), make_node(cpu="1", memory="1Gi"), [], 85),
    # cpu weight 3: (50*3 + 62*1) / 4 = 212 / 4 = 53
    (
        "least with weights",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
            }
        },
        INCOMING,
        *N1,
        53,
    ),
    # memory allocatable 0 is skipped: cpu only, (4000-1000)*100/4000 = 75
    ("zero allocatable resource skipped", {}, INCOMING, make_node(memory="0"), [], 75),
    # cpu over capacity scores 0; mem (8-1)*100/8 = 87; (0+87)/2 = 43
    ("request larger than node scores 0", {}, make_pod(containers=[container("5", "1Gi")]), make_node(), [], 43),
    # gpu not requested by the pod: (0, 0) -> ignored, same as cpu+memory only (50+62)/2
    (
        "unrequested extended resource ignored",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [
                    {"name": "cpu", "weight": 1},
                    {"name": "memory", "weight": 1},
                    {"name": GPU, "weight": 5},
                ],
            }
        },
        INCOMING,
        make_node(extra={GPU: "4"}),
        [bound("1", "2Gi")],
        56,
    ),
    # gpu requested 1 + 1 in use of 4: (4-2)*100/4 = 50 (x5); cpu 75, mem 87 on an empty node:
    # (75 + 87 + 250) / 7 = 412 / 7 = 58
    (
        "requested extended resource weighted",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [
                    {"name": "cpu", "weight": 1},
                    {"name": "memory", "weight": 1},
                    {"name": GPU, "weight": 5},
                ],
            }
        },
        make_pod(containers=[container("1", "1Gi", extra={GPU: "1"})]),
        make_node(extra={GPU: "4"}),
        [make_pod("gpu-user", [container(extra={GPU: "1"}, cpu="0", memory="0")], node="n")],
        58,
    ),
    # most: cpu 2000*100/4000 = 50, mem 3*100/8 = 37 (37.5); (50+37)/2 = 43
    ("most allocated", {"scoringStrategy": {"type": "MostAllocated"}}, INCOMING, *N1, 43),
    # most caps an over-capacity request: cpu 100, mem 1*100/8 = 12; (100+12)/2 = 56
    (
        "most allocated caps at capacity",
        {"scoringStrategy": {"type": "MostAllocated"}},
        make_pod(containers=[container("5", "1Gi")]),
        make_node(),
        [],
        56,
    ),
]


@pytest.mark.parametrize(
    ("args", "pod", "node", "existing", "expected"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score(args: dict[str, Any], pod: Pod, node: Node, existing: list[Pod], expected: int) -> None:
    assert score(plugin(**args), pod, node, existing) == expected


def rtcr(shape: list[tuple[int, int]], resources: list[str] | None = None) -> NodeResourcesFit:
    strategy: dict[str, Any] = {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": s} for u, s in shape]},
    }
    if resources is not None:
        strategy["resources"] = [{"name": r, "weight": 1} for r in resources]
    return plugin(scoringStrategy=strategy)


DECREASING = [(0, 10), (30, 5), (100, 0)]  # x10: 0 -> 100, 30 -> 50, 100 -> 0

RTCR_CASES: list[tuple[str, list[tuple[int, int]], list[str] | None, Pod, Node, int]] = [
    # util 10: 100 + (50-100)*(10-0)/30 = 100 + trunc(-16.67) = 84 (Go truncation, not floor 83)
    (
        "interpolation truncates toward zero",
        DECREASING,
        ["cpu"],
        make_pod(containers=[container("100m")]),
        make_node(cpu="1"),
        84,
    ),
    # util 65: 50 + (0-50)*(65-30)/70 = 50 - 25 = 25
    ("second segment", DECREASING, ["cpu"], make_pod(containers=[container("650m")]), make_node(cpu="1"), 25),
    # util exactly on a point (30) -> 50
    ("on a shape point", DECREASING, ["cpu"], make_pod(containers=[container("300m")]), make_node(cpu="1"), 50),
    # util 100 scores 0 and resources scoring 0 do not count -> weightSum 0 -> 0
    (
        "zero-scoring resource does not count",
        DECREASING,
        ["cpu"],
        make_pod(containers=[container("1")]),
        make_node(cpu="1"),
        0,
    ),
    # over capacity is utilization 100
    (
        "over capacity is utilization 100",
        [(0, 0), (100, 10)],
        ["cpu"],
        make_pod(containers=[container("2")]),
        make_node(cpu="1"),
        100,
    ),
    # flat before the first point: util 0 < 10 -> 2*10 = 20
    (
        "flat before first point",
        [(10, 2), (100, 10)],
        ["cpu"],
        make_pod(containers=[container("0")]),
        make_node(cpu="1"),
        20,
    ),
    # flat after the last point: util 80 > 50 -> 100
    (
        "flat after last point",
        [(0, 0), (50, 10)],
        ["cpu"],
        make_pod(containers=[container("800m")]),
        make_node(cpu="1"),
        100,
    ),
    # bin packing on cpu 50 and memory 35: round((50 + 35) / 2) = round(42.5) = 43 (half away from zero)
    (
        "weighted mean rounds half up",
        [(0, 0), (100, 10)],
        None,
        make_pod(containers=[container("500m", "350Mi")]),
        make_node(cpu="1", memory="1000Mi"),
        43,
    ),
    # a resource scoring 0 is dropped from the mean: cpu 0% -> 0, memory 35% -> 35; 35 / 1
    (
        "zero-scoring resource dropped from mean",
        [(0, 0), (100, 10)],
        None,
        make_pod(containers=[container("0", "350Mi")]),
        make_node(cpu="1", memory="1000Mi"),
        35,
    ),
]


@pytest.mark.parametrize(
    ("shape", "resources", "pod", "node", "expected"), [c[1:] for c in RTCR_CASES], ids=[c[0] for c in RTCR_CASES]
)
def test_requested_to_capacity_ratio(
    shape: list[tuple[int, int]], resources: list[str] | None, pod: Pod, node: Node, expected: int
) -> None:
    assert score(rtcr(shape, resources), pod, node) == expected


def _pod_level(requests: dict[str, str], *containers: dict[str, Any], node: str = "", name: str = "p") -> Pod:
    """A pod with spec.resources.requests (pod-level resources) and the given containers."""
    spec: dict[str, Any] = {"containers": list(containers) or [container()], "resources": {"requests": requests}}
    if node:
        spec["nodeName"] = node
    return pod_from_api({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec})


def test_score_ignores_pod_level_requests() -> None:
    """Upstream v1.34 builds NodeResourcesFit's scorer without the PodLevelResources flag (fit.go), so its
    score reads the containers only (found by the differential test against kube-scheduler): one container
    without requests counts 100m / 200Mi, cpu (4000-100)*100/4000 = 97, memory (8192-200)*100/8192 = 97."""
    assert score(plugin(), _pod_level({"cpu": "2", "memory": "4Gi"}), make_node(), []) == 97


def test_score_defaults_each_container_missing_a_request_even_with_pod_level_requests() -> None:
    """Pod-level memory is not read: cpu 500m + the 100m default, (4000-600)*100/4000 = 85; memory two
    200Mi defaults, (8192-400)*100/8192 = 95; (85+95)/2 = 90."""
    pod = _pod_level({"memory": "4Gi"}, container("500m", name="a"), container(name="b"))
    assert score(plugin(), pod, make_node(), []) == 90


def test_node_non_zero_requested_counts_pod_level_requests() -> None:
    """An existing pod with pod-level requests counts them in NonZeroRequested: node 4 cpu / 8Gi holding
    2 cpu / 4Gi; incoming 1 cpu / 1Gi -> cpu (4000-3000)*100/4000 = 25, mem (8-5)*100/8 = 37; 31."""
    existing = _pod_level({"cpu": "2", "memory": "4Gi"}, node="n", name="e")
    assert score(plugin(), INCOMING, make_node(), [existing]) == 31


def test_score_without_prescore_state_computes_requests() -> None:
    s, status = plugin().score(CycleState(), INCOMING, node_info(*N1))
    assert (s, status) == (56, None)


def test_scores_differ_across_nodes_as_least_allocated_prefers_emptier() -> None:
    p = plugin()
    busy = score(p, INCOMING, *N1)
    empty = score(p, INCOMING, make_node(), [])
    # empty: cpu 75, mem 87 -> 81
    assert (busy, empty) == (56, 81)


# --- args ---------------------------------------------------------------------------------------------


BAD_ARGS: list[tuple[str, dict[str, Any], str]] = [
    ("unknown strategy", {"scoringStrategy": {"type": "Fanciest"}}, "scoringStrategy.type"),
    ("rtcr without shape", {"scoringStrategy": {"type": "RequestedToCapacityRatio"}}, "requestedToCapacityRatio"),
    ("weight above 100", {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 101}]}}, "weight"),
    (
        "shape not increasing",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                },
            }
        },
        "increasing",
    ),
    (
        "shape score above 10",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 11}]},
            }
        },
        "score",
    ),
    ("group with a slash", {"ignoredResourceGroups": ["example.com/gpu"]}, "can't contain '/'"),
]


@pytest.mark.parametrize(("args", "needle"), [c[1:] for c in BAD_ARGS], ids=[c[0] for c in BAD_ARGS])
def test_invalid_args_are_rejected_with_the_field_named(args: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        plugin(**args)


def test_weight_zero_defaults_to_one() -> None:
    # upstream defaults no strategy type (an empty one is invalid), only the weights
    resources = [{"name": "cpu", "weight": 0}, {"name": "memory"}]
    p = plugin(scoringStrategy={"type": "LeastAllocated", "resources": resources})
    assert [(r.name, r.weight) for r in p.resources] == [("cpu", 1), ("memory", 1)]


# --- queueing hints -----------------------------------------------------------------------------------


def test_events_registered() -> None:
    pod_ev, node_ev = plugin().events_to_register()
    assert pod_ev.event.resource == EventResource.POD
    assert pod_ev.event.action == ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN
    assert node_ev.event.resource == EventResource.NODE
    assert node_ev.event.action == ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
    assert pod_ev.hint is not None and node_ev.hint is not None


PENDING = make_pod("pending", [container("2")], uid="pending")
Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

POD_HINTS: list[tuple[str, Pod | None, Pod | None, QueueingHint]] = [
    ("bound pod deleted", make_pod("x", node="n"), None, Q),
    ("unbound pod deleted", make_pod("x"), None, SKIP),
    ("nominated pod deleted", make_pod("x", nominated="n"), None, Q),
    ("bound pod shrinks cpu", make_pod("x", [container("3")], node="n"), make_pod("x", [container("1")], node="n"), Q),
    (
        "bound pod shrinks memory only",
        make_pod("x", [container("1", "2Gi")], node="n"),
        make_pod("x", [container("1", "1Gi")], node="n"),
        SKIP,
    ),
    ("unbound pod shrinks", make_pod("x", [container("3")]), make_pod("x", [container("1")]), SKIP),
    (
        "the pending pod itself shrinks",
        make_pod("pending", [container("3")], uid="pending"),
        make_pod("pending", [container("1")], uid="pending"),
        Q,
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), [c[1:] for c in POD_HINTS], ids=[c[0] for c in POD_HINTS])
def test_pod_event_hint(old: Pod | None, new: Pod | None, expected: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pod_event(PENDING, old, new) == expected


NODE_HINTS: list[tuple[str, Node | None, Node, QueueingHint]] = [
    ("added node fits", None, make_node(cpu="2"), Q),
    ("added node too small", None, make_node(cpu="1"), SKIP),
    ("added node with no pod room", None, make_node(pods="0"), SKIP),
    ("cpu grew and now fits", make_node(cpu="1"), make_node(cpu="2"), Q),
    ("fits but only memory grew", make_node(memory="1Gi"), make_node(memory="2Gi"), SKIP),
    ("pod count grew", make_node(pods="10"), make_node(pods="11"), Q),
    ("grew but still too small", make_node(cpu="1"), make_node(cpu="1500m"), SKIP),
]


@pytest.mark.parametrize(("old", "new", "expected"), [c[1:] for c in NODE_HINTS], ids=[c[0] for c in NODE_HINTS])
def test_node_change_hint(old: Node | None, new: Node, expected: QueueingHint) -> None:
    assert plugin().is_schedulable_after_node_change(PENDING, old, new) == expected


def test_pods_with_identical_resource_fields_share_their_request_lists() -> None:
    """The request lists are parsed once per set of resource fields: a second pod of the template reads the
    first one's, and a pod whose requests or status resources differ gets its own, with its own values."""
    resources = (ResourceSpec("cpu"), ResourceSpec("memory"))
    first = make_pod("a", [container("250m", "1Gi")])
    second = make_pod("b", [container("250m", "1Gi")])
    other = make_pod("c", [container("500m", "1Gi")])
    resized = pod_from_api({**second.raw, "metadata": {"name": "d", "namespace": "default", "uid": "d"},
                            "status": {"containerStatuses": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}})
    assert fit_request(first) is fit_request(second)
    assert pod_resource_requests(first, resources, True) == pod_resource_requests(second, resources, True)
    assert first.resource_memo is second.resource_memo
    assert other.resource_memo is not first.resource_memo and resized.resource_memo is not first.resource_memo
    assert [fit_request(p).milli_cpu for p in (first, other, resized)] == [250, 500, 250]
    assert pod_resource_requests(other, resources, True) == (500, 1024**3)
    assert pod_resource_requests(resized, resources, True) == (1000, 1024**3)  # status resources: the scorer's view
    assert pod_resource_requests(resized, resources, False) == (250, 1024**3)
