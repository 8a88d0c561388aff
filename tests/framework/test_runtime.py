"""Framework runtime: construction checks and every extension point's loop semantics."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any, cast

import pytest

from scheduler.cache.objects import ObjectStore
from scheduler.cache.snapshot import Snapshot
from scheduler.config.types import PluginRef, Profile
from scheduler.framework.interface import (
    CycleState,
    NodeScore,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    ScoreRow,
)
from scheduler.framework.results import ResultRecorder
from scheduler.framework.runtime import WILDCARD_EVENT, Framework, FrameworkOptions
from scheduler.framework.status import Code, Status, error, skip, unresolvable, unschedulable
from scheduler.framework.types import NODE_ADD, ClusterEventWithHint, NodeInfo
from scheduler.model.apierrors import NotFoundError
from scheduler.model.node import node_from_api
from scheduler.model.pod import Pod
from scheduler.plugins.priority_sort import PrioritySort
from scheduler.testing import make_node, make_pod

# ----- helpers ---------------------------------------------------------------------------------


def make_node_info(name: str, cpu: str = "4", *pods: Pod) -> NodeInfo:
    ni = NodeInfo()
    ni.set_node(make_node().name(name).allocatable(cpu=cpu, pods="110").obj())
    for p in pods:
        ni.add_pod(p)
    return ni


class FakeScheduler:
    """The SchedulerActions these tests reach (nominated pods, bind)."""

    def __init__(self, nominated: Mapping[str, Sequence[Pod]] | None = None) -> None:
        self.nominated = dict(nominated or {})
        self.bound: list[tuple[str, str]] = []

    def nominated_pods_for(self, node_name: str) -> Sequence[Pod]:
        return self.nominated.get(node_name, [])

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        self.bound.append((pod.name, node_name))
        return None


def options(scheduler: FakeScheduler | None = None) -> FrameworkOptions:
    return FrameworkOptions(scheduler=cast(Any, scheduler or FakeScheduler()), snapshot=Snapshot(),
                            objects=ObjectStore())


def build(
    points: Mapping[str, list[Any]],
    weights: Mapping[str, int] | None = None,
    scheduler: FakeScheduler | None = None,
    **kw: Any,
) -> Framework:
    """A framework whose registry hands out the given plugin instances."""
    registry: dict[str, Any] = {}
    plugins: dict[str, list[PluginRef]] = {}
    for point, instances in points.items():
        plugins[point] = [PluginRef(p.name, (weights or {}).get(p.name, 0)) for p in instances]
        for p in instances:
            registry[p.name] = lambda args, h, p=p: p
    return Framework(Profile("test-profile", plugins), registry, options(scheduler), **kw)


class CpuFit:
    """Test-local resource filter: the pod's cpu request must fit in what the node has left."""

    name = "CpuFit"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.requested.milli_cpu + pod.requests.milli_cpu > node_info.allocatable.milli_cpu:
            return unschedulable("Insufficient cpu")
        return None


class NeedsLabelX:
    """Test-local affinity-like filter: the node must already run a pod labelled x=y."""

    name = "NeedsLabelX"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if any(p.labels.get("x") == "y" for p in node_info.pods.values()):
            return None
        return unschedulable("no pod with x=y")


class Fixed:
    """Filter returning a fixed status and counting calls."""

    def __init__(self, name: str, status: Status | None = None) -> None:
        self.name = name
        self.status = status
        self.calls = 0

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self.calls += 1
        return self.status


class CountingExtensions:
    def __init__(self) -> None:
        self.added: list[str] = []

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        self.added.append(pod_to_add.name)
        state.write("added", [*state.get("added", []), pod_to_add.name])
        return None

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo) -> Status | None:
        return error("boom")


class PreF:
    """PreFilter returning a fixed (result, status); optional extensions."""

    def __init__(
        self,
        name: str,
        result: PreFilterResult | None = None,
        status: Status | None = None,
        ext: CountingExtensions | None = None,
    ) -> None:
        self.name = name
        self.result = result
        self.status = status
        self.ext = ext
        self.calls = 0

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        self.calls += 1
        return self.result, self.status

    def pre_filter_extensions(self) -> CountingExtensions | None:
        return self.ext

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return unschedulable(f"{self.name} filter ran")


# ----- construction ----------------------------------------------------------------------------


def test_unregistered_plugin_is_a_clear_error() -> None:
    profile = Profile("p1", {"filter": [PluginRef("Missing")]})
    with pytest.raises(ValueError, match=r"profile 'p1': plugin 'Missing' is not registered"):
        Framework(profile, {}, options())


def test_plugin_listed_at_a_point_it_does_not_implement() -> None:
    fit = CpuFit()
    with pytest.raises(ValueError, match=r"profile 'test-profile': plugin 'CpuFit' is enabled at score"):
        build({"filter": [fit], "score": [fit]})


def test_plugin_instantiated_once_across_points() -> None:
    made: list[int] = []

    def factory(args: Mapping[str, Any], handle: Any) -> PreF:
        made.append(1)
        return PreF("Both")

    profile = Profile("p", {"preFilter": [PluginRef("Both")], "filter": [PluginRef("Both")]})
    fwk = Framework(profile, {"Both": factory}, options())
    assert len(made) == 1
    assert fwk.list_plugins() == {"preFilter": ["Both"], "filter": ["Both"]}


def test_factory_gets_plugin_args_and_the_framework_as_handle() -> None:
    seen: dict[str, Any] = {}

    def factory(args: Mapping[str, Any], handle: Any) -> CpuFit:
        seen["args"], seen["handle"] = args, handle
        return CpuFit()

    base = FakeScheduler({"n1": [make_pod().name("nom").obj()]})
    profile = Profile("p", {"filter": [PluginRef("CpuFit")]}, plugin_config={"CpuFit": {"k": 1}})
    fwk = Framework(profile, {"CpuFit": factory}, options(base))
    assert seen["args"] == {"k": 1}
    assert seen["handle"] is fwk  # upstream: the framework is the plugins' Handle
    assert [p.name for p in seen["handle"].nominated_pods_for("n1")] == ["nom"]
    assert seen["handle"].bind(make_pod().name("p").obj(), "n1") is None  # Handle methods reach the scheduler's actions
    assert base.bound == [("p", "n1")]
    assert not hasattr(seen["handle"], "bound")  # the scheduler's other attributes do not leak through


# ----- PreFilter -------------------------------------------------------------------------------


def test_prefilter_skip_disables_the_plugins_filter() -> None:
    pf = PreF("Skipper", status=skip())
    fwk = build({"preFilter": [pf], "filter": [pf]})
    state = CycleState()
    result, status, narrowed = fwk.run_pre_filter_plugins(state, make_pod().name("p").obj(), [])
    assert (result, status, narrowed) == (None, None, set())
    assert state.skip_filter_plugins == {"Skipper"}
    assert fwk.run_filter_plugins(state, make_pod().name("p").obj(), make_node_info("n1")) is None


def test_prefilter_unschedulable_keeps_running_the_others() -> None:
    first = PreF("First", status=unschedulable("first says no"))
    second = PreF("Second")
    fwk = build({"preFilter": [first, second]})
    _, status, _ = fwk.run_pre_filter_plugins(CycleState(), make_pod().name("p").obj(), [])
    assert second.calls == 1
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert (status.plugin, status.message) == ("First", "first says no")


def test_prefilter_unresolvable_stops_at_once() -> None:
    first = PreF("First", status=unresolvable("never"))
    second = PreF("Second")
    fwk = build({"preFilter": [first, second]})
    _, status, _ = fwk.run_pre_filter_plugins(CycleState(), make_pod().name("p").obj(), [])
    assert second.calls == 0
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and status.plugin == "First"


def test_prefilter_error_is_wrapped() -> None:
    fwk = build({"preFilter": [PreF("Bad", status=Status(Code.WAIT, ["odd"]))]})
    _, status, _ = fwk.run_pre_filter_plugins(CycleState(), make_pod().name("p").obj(), [])
    assert status is not None and status.code == Code.ERROR
    assert status.message == 'running PreFilter plugin "Bad": odd'


def test_prefilter_results_intersect() -> None:
    a = PreF("A", result=PreFilterResult({"n1", "n2"}))
    b = PreF("B", result=PreFilterResult({"n2", "n3"}))
    c = PreF("C", result=PreFilterResult(None))
    fwk = build({"preFilter": [a, b, c]})
    result, status, narrowed = fwk.run_pre_filter_plugins(CycleState(), make_pod().name("p").obj(), [])
    assert status is None
    assert result is not None and result.node_names == {"n2"}
    assert narrowed == {"A", "B"}


def test_prefilter_empty_intersection_messages() -> None:
    a = PreF("A", result=PreFilterResult({"n1"}))
    b = PreF("B", result=PreFilterResult({"n2"}))
    fwk = build({"preFilter": [a, b]})
    _, status, _ = fwk.run_pre_filter_plugins(CycleState(), make_pod().name("p").obj(), [])
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == "node(s) didn't satisfy plugin(s) [A B] simultaneously"

    single = build({"preFilter": [PreF("Only", result=PreFilterResult(set()))]})
    _, status, _ = single.run_pre_filter_plugins(CycleState(), make_pod().name("p").obj(), [])
    assert status is not None and status.message == "node(s) didn't satisfy plugin Only"


def test_prefilter_remove_pod_extension_error_is_wrapped() -> None:
    pf = PreF("Ext", ext=CountingExtensions())
    fwk = build({"preFilter": [pf]})
    p, q = make_pod().name("p").obj(), make_pod().name("q").obj()
    s = fwk.run_pre_filter_extension_remove_pod(CycleState(), p, q, make_node_info("n1"))
    assert s is not None and s.code == Code.ERROR
    assert s.message == 'running RemovePod on PreFilter plugin "Ext": boom'


# ----- Filter ----------------------------------------------------------------------------------


def test_first_rejecting_filter_wins() -> None:
    a = Fixed("A", unschedulable("a no"))
    b = Fixed("B", unresolvable("b no"))
    fwk = build({"filter": [a, b]})
    s = fwk.run_filter_plugins(CycleState(), make_pod().name("p").obj(), make_node_info("n1"))
    assert s is not None and (s.plugin, s.message, s.code) == ("A", "a no", Code.UNSCHEDULABLE)
    assert b.calls == 0


def test_filter_unexpected_code_is_error() -> None:
    fwk = build({"filter": [Fixed("Odd", Status(Code.SKIP, ["skipped?"]))]})
    s = fwk.run_filter_plugins(CycleState(), make_pod().name("p").obj(), make_node_info("n1"))
    assert s is not None and s.code == Code.ERROR and s.plugin == "Odd"
    assert s.message == 'running "Odd" filter plugin: skipped?'


def test_malformed_node_is_unresolvable_with_its_parse_error() -> None:
    ni = NodeInfo()
    ni.set_node(node_from_api({"metadata": {"name": "bad"}, "spec": {"taints": ["not-an-object"]}}))
    fwk = build({"filter": [Fixed("A")]})
    s = fwk.run_filter_plugins(CycleState(), make_pod().name("p").obj(), ni)
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.message == "node bad: spec.taints[0]: must be an object"


# ----- two-pass filtering with nominated pods ----------------------------------------------------


def test_node_that_only_fits_without_the_nominated_pod_is_rejected() -> None:
    fwk = build({"filter": [CpuFit()]})
    node = make_node_info("n1", "4")
    incoming = make_pod().name("incoming").priority(10).req(cpu="2").obj()
    nominated = make_pod().name("nominated").priority(10).req(cpu="3").obj()
    # Without the nominated pod 2 of 4 cpus fit; with it (3 + 2 > 4) they do not.
    assert fwk.run_filter_plugins(CycleState(), incoming, node) is None
    s = fwk.run_filter_plugins_with_nominated_pods(CycleState(), incoming, node, [nominated])
    assert s is not None and s.message == "Insufficient cpu" and s.plugin == "CpuFit"
    assert list(node.pods) == [] and node.requested.milli_cpu == 0  # the snapshot's NodeInfo is untouched


def test_lower_priority_nominated_pods_are_ignored() -> None:
    fwk = build({"filter": [CpuFit()]})
    node = make_node_info("n1", "4")
    incoming = make_pod().name("incoming").priority(10).req(cpu="2").obj()
    lower = make_pod().name("lower").priority(9).req(cpu="3").obj()
    assert fwk.run_filter_plugins_with_nominated_pods(CycleState(), incoming, node, [lower]) is None


def test_the_pod_itself_is_not_added_as_nominated() -> None:
    fwk = build({"filter": [CpuFit()]})
    incoming = make_pod().name("incoming").priority(10).req(cpu="3").obj()
    assert fwk.run_filter_plugins_with_nominated_pods(CycleState(), incoming, make_node_info("n1"), [incoming]) is None


def test_affinity_like_filter_must_hold_on_both_passes() -> None:
    fwk = build({"filter": [NeedsLabelX()]})
    incoming = make_pod().name("incoming").priority(0).obj()
    nominated_x = make_pod().name("nom").priority(5).labels({"x": "y"}).obj()
    # Pass 1 (with the nominated x=y pod) passes, pass 2 (without it) fails → rejected.
    s = fwk.run_filter_plugins_with_nominated_pods(CycleState(), incoming, make_node_info("n1"), [nominated_x])
    assert s is not None and s.message == "no pod with x=y"
    # A node that really runs an x=y pod passes both passes.
    running = make_node_info("n2", "4", make_pod().name("running").labels({"x": "y"}).obj())
    assert fwk.run_filter_plugins_with_nominated_pods(CycleState(), incoming, running, [nominated_x]) is None


def test_nominated_pods_default_to_the_handle_and_run_add_pod_on_a_cloned_state() -> None:
    ext = CountingExtensions()
    pf = PreF("Ext", ext=ext)
    nominated = make_pod().name("nom").priority(1).req(cpu="1").obj()
    fwk = build({"preFilter": [pf], "filter": [CpuFit()]}, scheduler=FakeScheduler({"n1": [nominated]}))
    state = CycleState()
    pod = make_pod().name("p").req(cpu="1").obj()
    assert fwk.run_filter_plugins_with_nominated_pods(state, pod, make_node_info("n1")) is None
    assert ext.added == ["nom"]
    assert state.get("added") is None  # AddPod wrote into the clone only


def test_second_pass_skipped_when_first_fails() -> None:
    counting = Fixed("Counting", unschedulable("no"))
    fwk = build({"filter": [counting]})
    p, n = make_pod().name("p").obj(), make_pod().name("n").obj()
    fwk.run_filter_plugins_with_nominated_pods(CycleState(), p, make_node_info("n1"), [n])
    assert counting.calls == 1


# ----- PostFilter ------------------------------------------------------------------------------


class Post:
    def __init__(self, name: str, status: Status | None, result: PostFilterResult | None = None) -> None:
        self.name, self.status, self.result = name, status, result

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        return self.result, self.status


def test_post_filter_gathers_reasons_until_one_succeeds_or_is_unresolvable() -> None:
    a = Post("A", unschedulable("a1"), PostFilterResult(""))
    b = Post("B", unschedulable("b1", "b2"))
    fwk = build({"postFilter": [a, b]})
    result, status = fwk.run_post_filter_plugins(CycleState(), make_pod().name("p").obj(), NodeToStatus())
    assert result == PostFilterResult("")
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert (status.reasons, status.plugin) == (["a1", "b1", "b2"], "A")

    ok = build({"postFilter": [Post("Win", None, PostFilterResult("n3")), b]})
    p = make_pod().name("p").obj()
    assert ok.run_post_filter_plugins(CycleState(), p, NodeToStatus()) == (PostFilterResult("n3"), None)


# ----- PreScore / Score ------------------------------------------------------------------------


class Scorer:
    """Scores from a table; optional normalization to max 100 (integer arithmetic)."""

    def __init__(self, name: str, table: Mapping[str, int], normalize: bool = False, pre: Status | None = None):
        self.name, self.table, self.normalize, self.pre = name, table, normalize, pre
        self.scored: list[str] = []

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        return self.pre

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        self.scored.append(node_info.name)
        return self.table[node_info.name], None

    def score_extensions(self) -> Scorer | None:
        return self if self.normalize else None

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        top = max(s.score for s in scores)
        for s in scores:
            s.score = s.score * 100 // top
        return None


def test_scores_are_normalized_weighted_and_summed() -> None:
    a = Scorer("A", {"n1": 3, "n2": 6}, normalize=True)  # normalized: 50, 100
    b = Scorer("B", {"n1": 40, "n2": 10})  # weight 0 means 1
    fwk = build({"score": [a, b]}, weights={"A": 2})
    nodes = [make_node_info("n1"), make_node_info("n2")]
    scores, status = fwk.run_score_plugins(CycleState(), make_pod().name("p").obj(), nodes)
    assert status is None
    assert [(s.name, s.total_score) for s in scores] == [("n1", 2 * 50 + 40), ("n2", 2 * 100 + 10)]
    fwk.observer = recorder = ResultRecorder()  # the per-plugin scores go to the observer
    scores, status = fwk.run_score_plugins(CycleState(), make_pod().name("p").obj(), nodes)
    assert status is None
    assert [(s.name, s.total_score) for s in scores] == [("n1", 2 * 50 + 40), ("n2", 2 * 100 + 10)]
    result = recorder.result("uid-p")
    assert result is not None
    assert result.score_details()["n1"] == {"A": {"raw": 3, "normalized": 50, "weighted": 100},
                                            "B": {"raw": 40, "normalized": 40, "weighted": 40}}
    assert result.total("n2") == 2 * 100 + 10


def test_score_out_of_range_after_normalize_is_an_error() -> None:
    fwk = build({"score": [Scorer("Big", {"n1": 101})]})
    scores, status = fwk.run_score_plugins(CycleState(), make_pod().name("p").obj(), [make_node_info("n1")])
    assert scores == []
    assert status is not None and status.code == Code.ERROR
    assert status.message == (
        'applying score defaultWeights on Score plugins: plugin "Big" returns an invalid score 101, '
        "it should in the range of [0, 100] after normalizing"
    )


def test_invalid_score_reported_is_the_first_in_node_order() -> None:
    fwk = build({"score": [Scorer("Bad", {"n1": 50, "n2": -3, "n3": 140})]})
    nodes = [make_node_info(n) for n in ("n1", "n2", "n3")]
    _, status = fwk.run_score_plugins(CycleState(), make_pod().name("p").obj(), nodes)
    assert status is not None and 'returns an invalid score -3,' in status.message


class ValuesScorer(Scorer):
    """Normalizes on the score row; its NodeScore method must not be used."""

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        raise AssertionError("normalize_values should have been used")

    def normalize_values(self, state: CycleState, pod: Pod, values: ScoreRow) -> Status | None:
        values[:] = 100 - values
        return None


def test_normalize_values_is_preferred_and_works_in_place() -> None:
    fwk = build({"score": [ValuesScorer("V", {"n1": 30, "n2": 90}, normalize=True)]})
    nodes = [make_node_info("n1"), make_node_info("n2")]
    scores, status = fwk.run_score_plugins(CycleState(), make_pod().name("p").obj(), nodes)
    assert status is None
    assert [(s.name, s.total_score) for s in scores] == [("n1", 70), ("n2", 10)]


def test_prescore_skip_skips_that_plugins_score() -> None:
    skipped = Scorer("Skipped", {"n1": 5}, pre=skip())
    kept = Scorer("Kept", {"n1": 7})
    fwk = build({"preScore": [skipped, kept], "score": [skipped, kept]})
    state = CycleState()
    nodes = [make_node_info("n1")]
    assert fwk.run_pre_score_plugins(state, make_pod().name("p").obj(), nodes) is None
    assert state.skip_score_plugins == {"Skipped"}
    scores, _ = fwk.run_score_plugins(state, make_pod().name("p").obj(), nodes)
    assert skipped.scored == [] and scores[0].total_score == 7


def test_prescore_error_is_wrapped() -> None:
    fwk = build({"preScore": [Scorer("Bad", {}, pre=unschedulable("nope"))]})
    s = fwk.run_pre_score_plugins(CycleState(), make_pod().name("p").obj(), [])
    assert s is not None and s.code == Code.ERROR and s.message == 'running PreScore plugin "Bad": nope'


# ----- Reserve / Permit ------------------------------------------------------------------------


class Reserver:
    def __init__(self, name: str, log: list[str], status: Status | None = None) -> None:
        self.name, self.log, self.status = name, log, status

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.log.append(f"reserve {self.name}")
        return self.status

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.log.append(f"unreserve {self.name}")


def test_reserve_stops_at_rejection_and_unreserve_runs_in_reverse() -> None:
    log: list[str] = []
    fwk = build({"reserve": [Reserver("A", log), Reserver("B", log, unschedulable("full")), Reserver("C", log)]})
    s = fwk.run_reserve_plugins_reserve(CycleState(), make_pod().name("p").obj(), "n1")
    assert s is not None and s.plugin == "B" and s.code == Code.UNSCHEDULABLE
    fwk.run_reserve_plugins_unreserve(CycleState(), make_pod().name("p").obj(), "n1")
    assert log == ["reserve A", "reserve B", "unreserve C", "unreserve B", "unreserve A"]


class Permitter:
    def __init__(self, name: str, status: Status | None, timeout: float = 0.0) -> None:
        self.name, self.status, self.timeout = name, status, timeout

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        return self.status, self.timeout


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_permit_rejection_names_the_plugin() -> None:
    fwk = build({"permit": [Permitter("No", unschedulable("denied"))]})
    s = fwk.run_permit_plugins(CycleState(), make_pod().name("p").obj(), "n1")
    assert s is not None and (s.code, s.plugin, s.message) == (Code.UNSCHEDULABLE, "No", "denied")
    assert fwk.wait_on_permit(make_pod().name("p").obj()) is None  # nothing registered


def test_permit_wait_then_all_plugins_allow() -> None:
    fwk = build({"permit": [Permitter("W1", Status(Code.WAIT), 60), Permitter("W2", Status(Code.WAIT), 60)]})
    pod = make_pod().name("p").obj()
    s = fwk.run_permit_plugins(CycleState(), pod, "n1")
    assert s is not None and s.code == Code.WAIT
    assert s.message == 'one or more plugins asked to wait and no plugin rejected pod "p"'
    wp = fwk.get_waiting_pod(pod.uid)
    assert wp is not None and wp.get_pending_plugins() == ["W1", "W2"]
    wp.allow("W1")
    assert wp.get_pending_plugins() == ["W2"]
    releaser = threading.Thread(target=wp.allow, args=("W2",))
    releaser.start()
    assert fwk.wait_on_permit(pod) is None
    releaser.join()
    assert fwk.get_waiting_pod(pod.uid) is None


def test_permit_wait_then_reject() -> None:
    fwk = build({"permit": [Permitter("W", Status(Code.WAIT), 60)]})
    pod = make_pod().name("p").obj()
    fwk.run_permit_plugins(CycleState(), pod, "n1")
    wp = fwk.get_waiting_pod(pod.uid)
    assert wp is not None
    rejecter = threading.Thread(target=wp.reject, args=("Gang", "gang incomplete"))
    rejecter.start()
    s = fwk.wait_on_permit(pod)
    rejecter.join()
    assert s is not None and (s.code, s.plugin, s.message) == (Code.UNSCHEDULABLE, "Gang", "gang incomplete")


def test_permit_timeout_rejects_with_upstream_message() -> None:
    clock = FakeClock()
    fwk = build(
        {"permit": [Permitter("Slow", Status(Code.WAIT), 10), Permitter("Slower", Status(Code.WAIT), 90)]}, clock=clock
    )
    pod = make_pod().name("p").obj()
    fwk.run_permit_plugins(CycleState(), pod, "n1")
    clock.now += 10
    wp = fwk.get_waiting_pod(pod.uid)
    assert wp is not None
    wp.allow("Slow")  # too late: the deadline passed first
    s = fwk.wait_on_permit(pod)
    assert s is not None and s.code == Code.UNSCHEDULABLE and s.plugin == "Slow"
    assert s.message == "rejected due to timeout after waiting 10s at plugin Slow"


def test_permit_timeout_is_capped_at_fifteen_minutes() -> None:
    clock = FakeClock()
    fwk = build({"permit": [Permitter("Long", Status(Code.WAIT), 3600)]}, clock=clock)
    pod = make_pod().name("p").obj()
    fwk.run_permit_plugins(CycleState(), pod, "n1")
    clock.now += 900
    s = fwk.wait_on_permit(pod)
    assert s is not None and s.message == "rejected due to timeout after waiting 15m0s at plugin Long"


def test_reject_waiting_pod_by_uid() -> None:
    fwk = build({"permit": [Permitter("W", Status(Code.WAIT), 60)]})
    pod = make_pod().name("p").obj()
    fwk.run_permit_plugins(CycleState(), pod, "n1")
    assert fwk.reject_waiting_pod(pod.uid) is True
    s = fwk.wait_on_permit(pod)
    assert s is not None and s.code == Code.UNSCHEDULABLE and s.message == "removed"
    assert fwk.reject_waiting_pod(pod.uid) is False


# ----- PreBind / Bind / PostBind ---------------------------------------------------------------


class Binder:
    def __init__(self, name: str, status: Status | None) -> None:
        self.name, self.status, self.calls = name, status, 0

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.calls += 1
        return self.status


def test_bind_runs_until_a_plugin_does_not_skip() -> None:
    first, second, third = Binder("First", skip()), Binder("Second", None), Binder("Third", None)
    fwk = build({"bind": [first, second, third]})
    assert fwk.run_bind_plugins(CycleState(), make_pod().name("p").obj(), "n1") is None
    assert (first.calls, second.calls, third.calls) == (1, 1, 0)


def test_bind_all_skip_is_an_error_and_failures_are_wrapped() -> None:
    fwk = build({"bind": [Binder("A", skip()), Binder("B", skip())]})
    s = fwk.run_bind_plugins(CycleState(), make_pod().name("p").obj(), "n1")
    assert s is not None and s.code == Code.ERROR
    failing = build({"bind": [Binder("A", skip()), Binder("B", error("conflict"))]})
    s = failing.run_bind_plugins(CycleState(), make_pod().name("p").obj(), "n1")
    assert s is not None and s.message == 'running Bind plugin "B": conflict'


class Gone(NotFoundError):
    """The API's 404 as the edge raises it."""


def test_wrapped_bind_and_prebind_errors_keep_their_cause() -> None:
    """Like Go's %w: the binding cycle must still see the API's 404 (pod deleted before binding) through
    the framework's wrapping, or it reports a scheduling error for a pod that is simply gone."""
    gone = Gone("pods \"p\" not found")
    fwk = build({"bind": [Binder("B", error(gone))], "preBind": []})
    s = fwk.run_bind_plugins(CycleState(), make_pod().name("p").obj(), "n1")
    assert s is not None and s.error is gone and s.message == 'running Bind plugin "B": pods "p" not found'
    pre = build({"preBind": [PreBinder("P", error(gone))], "bind": [Binder("B", None)]})
    s = pre.run_pre_bind_plugins(CycleState(), make_pod().name("p").obj(), "n1")
    assert s is not None and s.error is gone


class PreBinder:
    def __init__(self, name: str, status: Status | None) -> None:
        self.name, self.status = name, status

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self.status


# ----- events, metrics, helpers ----------------------------------------------------------------


class WithEvents(Fixed):
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(NODE_ADD)]


def test_events_to_register_defaults_to_wildcard() -> None:
    fwk = build({"filter": [WithEvents("Known"), Fixed("Unknown")], "bind": [Binder("B", None)]})
    assert fwk.events_to_register() == {"Known": [ClusterEventWithHint(NODE_ADD)], "Unknown": [WILDCARD_EVENT]}


def test_metrics_hook_gets_extension_point_and_code() -> None:
    seen: list[tuple[str, str]] = []
    fwk = build(
        {"preFilter": [PreF("P", status=unschedulable("x"))], "bind": [Binder("B", None)]},
        metrics=lambda point, code, secs: seen.append((point, code)),
    )
    fwk.run_pre_filter_plugins(CycleState(), make_pod().name("p").obj(), [])
    fwk.run_bind_plugins(CycleState(), make_pod().name("p").obj(), "n1")
    assert seen == [("PreFilter", "Unschedulable"), ("Bind", "Success")]


def test_successes_go_to_the_kept_lists_and_the_rest_to_the_hook() -> None:
    seen: list[tuple[str, str]] = []
    lists: dict[tuple[str, str], list[float]] = {}
    fwk = build(
        {"preFilter": [PreF("P", status=unschedulable("x"))], "bind": [Binder("B", None)]},
        metrics=lambda point, code, secs: seen.append((point, code)),
        success_values=lambda point, code: lists.setdefault((point, code), []),
    )
    fwk.run_pre_filter_plugins(CycleState(), make_pod().name("p").obj(), [])
    for _ in range(2):
        fwk.run_bind_plugins(CycleState(), make_pod().name("p").obj(), "n1")
    fwk.observe("Filter", None, 0.5)
    fwk.observe("Filter", unschedulable("y"), 0.25)
    assert seen == [("PreFilter", "Unschedulable"), ("Filter", "Unschedulable")]
    assert sorted(lists) == [("Bind", "Success"), ("Filter", "Success")]
    assert len(lists[("Bind", "Success")]) == 2 and lists[("Filter", "Success")] == [0.5]


def test_the_queue_gets_a_sort_key_only_from_a_queue_sort_plugin_that_gives_one() -> None:
    """PrioritySort declares rank (activeQ then runs on heapq); a QueueSort plugin with only ``less`` leaves
    the queue on its comparator."""

    class LessOnly:
        name = "LessOnly"

        def less(self, a: Any, b: Any) -> bool:
            return bool(a.timestamp < b.timestamp)

    ranked = build({"queueSort": [PrioritySort({}, cast(Any, None))]})
    rank = ranked.queue_sort_rank()
    assert rank is not None
    assert build({"queueSort": [LessOnly()]}).queue_sort_rank() is None
    early = SimpleNamespace(pod=make_pod().name("a").obj(), timestamp=1.0)
    late = SimpleNamespace(pod=make_pod().name("b").obj(), timestamp=2.0)
    assert rank(early) < rank(late) and ranked.queue_sort_less(early, late)


# ----- per-cycle memos -------------------------------------------------------------------------


class Signer:
    """A filter that signs pods: by template (``by_template``) or per pod, counting the calls."""

    def __init__(self, name: str, by_template: bool, fragment: Any = ()) -> None:
        self.name = name
        self.by_template = by_template
        self.fragment = fragment
        self.calls = 0

    def sign_pod(self, pod: Pod) -> Any:
        self.calls += 1
        return self.fragment(pod) if callable(self.fragment) else self.fragment

    def signs_by_template(self) -> bool:
        return self.by_template

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None


def test_template_signers_are_asked_once_per_template_and_keep_their_place() -> None:
    from scheduler.framework.batch import template_key

    fixed = Signer("Fixed", True, ("t",))
    per_pod = Signer("PerPod", False, lambda pod: pod.name)
    later = Signer("Later", True, ("u",))
    fwk = build({"filter": [fixed, per_pod, later]})
    a, b = make_pod().name("a").obj(), make_pod().name("b").obj()
    assert fwk.sign_pod(a) == ("test-profile", template_key(a), ("t",), "a", ("u",))
    assert fwk.sign_pod(b) == ("test-profile", template_key(b), ("t",), "b", ("u",))
    assert (fixed.calls, per_pod.calls, later.calls) == (1, 2, 1)


def test_a_template_signer_that_refuses_refuses_every_pod_of_the_template() -> None:
    refusing = Signer("Refusing", True, None)
    per_pod = Signer("PerPod", False)
    fwk = build({"filter": [per_pod, refusing]})
    assert fwk.sign_pod(make_pod().name("a").obj()) is None
    assert fwk.sign_pod(make_pod().name("b").obj()) is None
    assert refusing.calls == 1
    assert fwk.sign_pod(make_pod().name("c").req(cpu="1").obj()) is None  # another template: asked again
    assert refusing.calls == 2


def test_active_score_plugins_are_one_list_per_skipped_set() -> None:
    a, b = Scorer("A", {}), Scorer("B", {})
    fwk = build({"score": [a, b]})
    first, second, other = CycleState(), CycleState(), CycleState()
    first.skip_score_plugins, second.skip_score_plugins, other.skip_score_plugins = {"A"}, {"A"}, set()
    assert fwk.active_score_plugins(first) == [b]
    assert fwk.active_score_plugins(second) is fwk.active_score_plugins(first)
    assert fwk.active_score_plugins(other) == [a, b]
    assert fwk.score_plugin_names(fwk.active_score_plugins(first)) == ("B",)
    assert fwk.score_plugin_names(fwk.active_score_plugins(other)) == ("A", "B")
    assert fwk.score_plugin_names([a]) == ("A",)  # a list of the caller's own
