"""The scheduling algorithm for one pod: sampling, PreFilter narrowing, rotation, fast path, host selection."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pytest

from scheduler.cache.objects import ObjectStore
from scheduler.cache.snapshot import Snapshot
from scheduler.config.types import PluginRef, Profile
from scheduler.framework.fit_error import FitError, FrameworkError, NoNodesAvailableError
from scheduler.framework.interface import CycleState, NodeToStatus, PostFilterResult, PreFilterResult
from scheduler.framework.results import ResultRecorder
from scheduler.framework.runtime import Framework, FrameworkOptions
from scheduler.framework.status import Code, Status, error, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo
from scheduler.model.node import node_from_api
from scheduler.model.pod import Pod
from scheduler.schedule_one import (
    SchedulingAlgorithm,
    handle_schedule_error,
    heap_preorder,
    heap_preorder_key,
    num_feasible_nodes_to_find,
    select_host,
)
from scheduler.testing import make_node, make_pod

# ----- helpers ---------------------------------------------------------------------------------


def scored(recorder: ResultRecorder, uid: str = "uid-p") -> list[str]:
    """The nodes the last cycle of pod ``uid`` scored, as the observer saw them."""
    result = recorder.result(uid)
    return list(result.raw_score) if result is not None else []


def make_nodes(count: int, cpu: str = "4") -> list[NodeInfo]:
    out = []
    for i in range(count):
        ni = NodeInfo()
        ni.set_node(make_node().name(f"n{i}").allocatable(cpu=cpu).obj())
        out.append(ni)
    return out


class Lister:
    def __init__(self, nodes: list[NodeInfo]) -> None:
        self.nodes = nodes

    def list(self) -> Sequence[NodeInfo]:
        return self.nodes

    def get(self, name: str) -> NodeInfo | None:
        return next((n for n in self.nodes if n.name == name), None)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return []

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return []


class FakeScheduler:
    """The SchedulerActions a framework may reach here: no nominated pods, binding succeeds."""

    def nominated_pods_for(self, node_name: str) -> Sequence[Pod]:
        return []

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return None


class Nominator:
    def __init__(self, by_node: Mapping[str, list[Pod]]) -> None:
        self.by_node = by_node

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        return self.by_node.get(node_name, [])

    def nodes_with_nominated_pods(self) -> set[str]:
        return {name for name, pods in self.by_node.items() if pods}


def build(points: Mapping[str, list[Any]], percentage: int | None = None) -> Framework:
    registry: dict[str, Any] = {}
    plugins: dict[str, list[PluginRef]] = {}
    for point, instances in points.items():
        plugins[point] = [PluginRef(p.name) for p in instances]
        for p in instances:
            registry[p.name] = lambda args, h, p=p: p
    profile = Profile("default-scheduler", plugins, percentage_of_nodes_to_score=percentage)
    options = FrameworkOptions(scheduler=cast(Any, FakeScheduler()), snapshot=Snapshot(), objects=ObjectStore())
    return Framework(profile, registry, options)


class Reject:
    """Filter rejecting the named nodes with a fixed status; records which nodes it saw."""

    def __init__(self, name: str, nodes: Mapping[str, Status]) -> None:
        self.name, self.nodes = name, nodes
        self.seen: list[str] = []

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self.seen.append(node_info.name)
        s = self.nodes.get(node_info.name)
        return Status(s.code, list(s.reasons)) if s is not None else None


class CpuFit:
    name = "CpuFit"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.requested.milli_cpu + pod.requests.milli_cpu > node_info.allocatable.milli_cpu:
            return unschedulable("Insufficient cpu")
        return None


class PreF:
    def __init__(self, name: str, result: PreFilterResult | None = None, status: Status | None = None) -> None:
        self.name, self.result, self.status = name, result, status

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return self.result, self.status

    def pre_filter_extensions(self) -> None:
        return None


class Scorer:
    """Score from a table (default 0 for unknown nodes); counts Score calls."""

    def __init__(self, table: Mapping[str, int] | None = None, name: str = "Scorer") -> None:
        self.name, self.table = name, table or {}
        self.scored: list[str] = []

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        self.scored.append(node_info.name)
        return self.table.get(node_info.name, 0), None

    def score_extensions(self) -> None:
        return None


# ----- numFeasibleNodesToFind ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (0, 50, 50),  # fewer than 100 nodes: all of them
        (0, 99, 99),
        (0, 100, 100),  # 50 % of 100 = 50, raised to the minimum 100
        (None, 200, 100),  # 49 % → 98 → 100
        (0, 1000, 420),  # 50 - 8 = 42 %
        (0, 5000, 500),  # 10 %
        (0, 6000, 300),  # 50 - 48 = 2 %, floored at 5 %
        (30, 1000, 300),  # configured percentage
        (5, 1000, 100),  # 50 → minimum 100
        (100, 1000, 1000),
    ],
)
def test_num_feasible_nodes_to_find(percentage: int | None, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes, True) == expected


@pytest.mark.parametrize("nodes", [3, 50, 5000])
def test_without_scoring_one_feasible_node_is_enough(nodes: int) -> None:
    assert num_feasible_nodes_to_find(0, nodes, False) == 1


def test_the_algorithms_count_to_find_follows_nodes_percentages_and_scoring() -> None:
    algo = SchedulingAlgorithm()
    scoring, bare = build({"score": [Scorer({}, "S")]}), build({})
    assert algo._num_to_find(scoring, 1000) == 420
    assert algo._num_to_find(scoring, 1000) == 420  # the kept answer
    assert algo._num_to_find(scoring, 5000) == 500
    assert algo._num_to_find(bare, 5000) == 1  # no score plugin: the first feasible node will do
    algo.configure(30, [])
    assert algo._num_to_find(scoring, 5000) == 1500
    assert algo._num_to_find(build({"score": [Scorer({}, "S")]}, percentage=5), 5000) == 250


# ----- the algorithm ---------------------------------------------------------------------------


def test_no_nodes() -> None:
    with pytest.raises(NoNodesAvailableError, match=r"^no nodes available to schedule pods$"):
        SchedulingAlgorithm().schedule_pod(build({}), CycleState(), make_pod().obj(), Lister([]))


def test_prefilter_rejection_gives_every_node_that_status() -> None:
    fwk = build({"preFilter": [PreF("Spread", status=unschedulable("node(s) didn't match pod topology spread"))]})
    with pytest.raises(FitError) as info:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), make_pod().obj(), Lister(make_nodes(3)))
    err = info.value
    assert str(err) == "0/3 nodes are available: node(s) didn't match pod topology spread."
    absent = err.diagnosis.node_to_status.get("n2")
    assert absent is not None and absent.plugin == "Spread"
    assert err.diagnosis.unschedulable_plugins == {"Spread"}


def test_prefilter_result_narrows_nodes_and_explains_the_others() -> None:
    busy = Reject("Busy", {"n1": unschedulable("busy")})
    fwk = build({"preFilter": [PreF("Narrow", PreFilterResult({"n1", "ghost"}))], "filter": [busy]})
    with pytest.raises(FitError) as info:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), make_pod().obj(), Lister(make_nodes(3)))
    assert busy.seen == ["n1"]  # "ghost" is not in the snapshot and is dropped
    assert str(info.value) == "0/3 nodes are available: 1 busy, 2 node(s) didn't satisfy plugin(s) [Narrow]."
    assert info.value.diagnosis.unschedulable_plugins == {"Narrow", "Busy"}


def test_prefilter_result_message_names_plugins_that_rejected_the_nominated_node() -> None:
    """The absent nodes' reason lists diagnosis.UnschedulablePlugins, which by then also holds the
    plugins that rejected the nominated node (its status stays in the diagnosis too)."""
    busy = Reject("Busy", {"n0": unschedulable("busy"), "n1": unschedulable("busy")})
    fwk = build({"preFilter": [PreF("Narrow", PreFilterResult({"n1"}))], "filter": [busy]})
    with pytest.raises(FitError) as info:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), make_pod().nominated_node_name("n0").obj(),
                                           Lister(make_nodes(3)))
    assert str(info.value) == (
        "0/3 nodes are available: 1 node(s) didn't satisfy plugin(s) [Busy Narrow], 2 busy."
    )


def test_prefilter_result_restricts_the_choice() -> None:
    fwk = build(
        {
            "preFilter": [PreF("Narrow", PreFilterResult({"n1", "n3"}))],
            "filter": [Reject("R", {})],
            "score": [Scorer({"n1": 10, "n3": 20, "n0": 100})],
        }
    )
    fwk.observer = recorder = ResultRecorder()  # the scored nodes are seen by the observer
    result = SchedulingAlgorithm().schedule_pod(fwk, CycleState(), make_pod().obj(), Lister(make_nodes(4)))
    assert result.suggested_host == "n3"
    assert scored(recorder) == ["n1", "n3"]


def test_start_index_rotates_across_cycles() -> None:
    # No score plugins → one feasible node is enough, so each cycle stops early.
    fwk = build({"filter": [Reject("R", {"n1": unschedulable("no")})]})
    algo = SchedulingAlgorithm()
    lister = Lister(make_nodes(5))
    hosts, evaluated, starts = [], [], []
    for _ in range(5):
        r = algo.schedule_pod(fwk, CycleState(), make_pod().obj(), lister)
        hosts.append(r.suggested_host)
        evaluated.append(r.evaluated_nodes)
        starts.append(algo.next_start_node_index)
    assert hosts == ["n0", "n2", "n3", "n4", "n0"]
    assert evaluated == [1, 2, 1, 1, 1]
    assert starts == [1, 3, 4, 0, 1]


def test_filtering_stops_at_the_sampling_limit_and_resumes_there() -> None:
    filt = Reject("R", {})
    fwk = build({"filter": [filt], "score": [Scorer()]}, percentage=50)
    fwk.observer = recorder = ResultRecorder()
    algo = SchedulingAlgorithm(rng=random.Random(1))
    lister = Lister(make_nodes(120))
    first = algo.schedule_pod(fwk, CycleState(), make_pod().obj(), lister)
    assert (first.feasible_nodes, first.evaluated_nodes, algo.next_start_node_index) == (100, 100, 100)
    filt.seen.clear()
    algo.schedule_pod(fwk, CycleState(), make_pod().obj(), lister)
    assert filt.seen == [f"n{i}" for i in [*range(100, 120), *range(80)]]
    assert set(scored(recorder)) == set(filt.seen)
    assert algo.next_start_node_index == 80


def test_nominated_node_is_tried_first_and_chosen_without_scoring() -> None:
    scorer = Scorer({"n0": 100})
    filt = Reject("R", {})
    fwk = build({"filter": [filt], "score": [scorer]})
    algo = SchedulingAlgorithm()
    r = algo.schedule_pod(fwk, CycleState(), make_pod().nominated_node_name("n2").obj(), Lister(make_nodes(4)))
    assert (r.suggested_host, r.evaluated_nodes, r.feasible_nodes) == ("n2", 1, 1)
    assert filt.seen == ["n2"] and scorer.scored == []
    assert algo.next_start_node_index == 0


def test_failed_nominated_node_falls_back_to_all_nodes() -> None:
    filt = Reject("R", {"n2": unschedulable("gone")})
    fwk = build({"filter": [filt], "score": [Scorer({"n3": 5})]})
    r = SchedulingAlgorithm().schedule_pod(fwk, CycleState(), make_pod().nominated_node_name("n2").obj(),
                                           Lister(make_nodes(4)))
    assert r.suggested_host == "n3"
    assert filt.seen == ["n2", "n0", "n1", "n2", "n3"]
    assert r.diagnosis.node_to_status.statuses["n2"].message == "gone"
    assert (r.evaluated_nodes, r.feasible_nodes) == (4, 3)


def test_nominated_pods_from_the_nominator_take_room() -> None:
    fwk = build({"filter": [CpuFit()], "score": [Scorer()]})
    nominator = Nominator({"n0": [make_pod().name("preemptor").priority(100).req(cpu="3").obj()]})
    algo = SchedulingAlgorithm(tie_break="name")
    r = algo.schedule_pod(fwk, CycleState(), make_pod().req(cpu="2").obj(), Lister(make_nodes(2)), nominator)
    assert r.suggested_host == "n1"
    assert r.diagnosis.node_to_status.statuses["n0"].message == "Insufficient cpu"


def test_single_feasible_node_is_chosen_without_scoring() -> None:
    scorer = Scorer()
    fwk = build({"filter": [Reject("R", {"n0": unschedulable("a"), "n2": unresolvable("b")})], "score": [scorer]})
    r = SchedulingAlgorithm().schedule_pod(fwk, CycleState(), make_pod().obj(), Lister(make_nodes(3)))
    assert (r.suggested_host, r.evaluated_nodes, r.feasible_nodes) == ("n1", 3, 1)
    assert scorer.scored == []


def test_malformed_node_is_reported() -> None:
    nodes = make_nodes(1)
    bad = NodeInfo()
    bad.set_node(node_from_api({"metadata": {"name": "bad"}, "status": {"allocatable": {"cpu": "lots"}}}))
    fwk = build({"filter": [Reject("R", {"n0": unschedulable("no")})]})
    with pytest.raises(FitError) as info:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), make_pod().obj(), Lister([*nodes, bad]))
    bad_status = info.value.diagnosis.node_to_status.statuses["bad"]
    assert bad_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert bad_status.message.startswith("node bad: status.allocatable.cpu")


def test_filter_error_aborts_but_still_advances_the_index() -> None:
    fwk = build({"filter": [Reject("R", {"n0": unschedulable("no"), "n1": error("broken")})], "score": [Scorer()]})
    algo = SchedulingAlgorithm()
    with pytest.raises(FrameworkError) as info:
        algo.schedule_pod(fwk, CycleState(), make_pod().obj(), Lister(make_nodes(3)))
    assert info.value.status.message == 'running "R" filter plugin: broken'
    assert algo.next_start_node_index == 1  # only n0's rejection was recorded


def test_without_filter_plugins_nodes_are_taken_from_the_start_index() -> None:
    algo = SchedulingAlgorithm()
    algo.next_start_node_index = 2
    r = algo.schedule_pod(build({}), CycleState(), make_pod().obj(), Lister(make_nodes(4)))
    assert r.suggested_host == "n2" and algo.next_start_node_index == 3


# ----- host selection --------------------------------------------------------------------------


def test_select_host_ties_fall_as_go_heap_init_leaves_them() -> None:
    """kube-scheduler v1.37 pops the top of heap.Init over (total, randomizer): among equal totals the
    first node in pre-order of the heap's tree (0; 1, 3, 7, ..., 4; 2, 5, 6) wins."""
    assert select_host([5, 9, 9, 9]) == 1
    assert select_host([9, 5, 9, 9]) == 0
    # 1 (left of the root) and its subtree 3, 4 come before 2: 3 beats 2 although 2 is earlier
    assert select_host([1, 1, 9, 9]) == 3
    assert select_host([1, 1, 9, 1, 9]) == 4
    assert select_host([1, 1, 9, 1, 1, 9, 9]) == 2
    # 7 is the leftmost grandchild of 1: it comes before 1's right subtree and before 2's
    assert select_host([0, 0, 5, 0, 5, 0, 0, 5]) == 7


def test_select_host_matches_heapify_on_random_rows() -> None:
    """The pre-order rule equals running Go's heap.Init (sift-down from n/2-1 to 0, left child unless the
    right one is strictly greater, swap only when strictly greater) and taking the root."""
    rng = random.Random(7)
    for _ in range(500):
        n = rng.randint(1, 40)
        row = [rng.randint(0, 3) for _ in range(n)]
        assert select_host(row) == go_heap_init_root(row)


def test_select_host_matches_heapify_on_large_uniform_rows() -> None:
    """Thousands of ties (a uniform cluster), where the ties' pre-order is found without a key per tie."""
    rng = random.Random(11)
    for _ in range(30):
        n = rng.randint(100, 6000)
        row = [rng.choice((7, 7, 7, 6)) for _ in range(n)]
        assert select_host(row) == go_heap_init_root(row)


def test_select_host_matches_heapify_with_few_ties_deep_in_the_tree() -> None:
    """Few ties, all in the tree's lower half: a deep one can still come first in pre-order."""
    rng = random.Random(13)
    for _ in range(200):
        n = rng.randint(60, 3000)
        row = [0] * n
        for i in rng.sample(range(n // 2, n), rng.randint(1, 4)):
            row[i] = 1
        assert select_host(row) == go_heap_init_root(row)


def test_select_host_matches_heapify_with_ties_in_a_band() -> None:
    """Ties of any density within a band of positions (a cluster whose emptier nodes the walk met late)."""
    rng = random.Random(17)
    for _ in range(300):
        n = rng.randint(2, 5000)
        lo = rng.randrange(n)
        hi = rng.randint(lo + 1, n)
        density = rng.random()
        row = [1 if lo <= i < hi and rng.random() < density else 0 for i in range(n)]
        assert select_host(row) == go_heap_init_root(row)


def test_heap_preorder_is_the_order_of_the_path_keys() -> None:
    """The cached permutation select_host gathers the scores by: pre-order of the implicit tree, at every
    length (across power-of-two boundaries, past the cache's size) and read-only, as every cycle shares it."""
    for n in [*range(1, 70), 127, 128, 129, 500, 4097]:
        order = heap_preorder(n)
        assert order.tolist() == sorted(range(n), key=heap_preorder_key)
        assert not order.flags.writeable
    assert heap_preorder(500) is heap_preorder(500)


def test_select_host_ties_at_scores_beyond_32_bits() -> None:
    big = 3 * 10**12
    assert select_host([big - 1, big, big, big]) == 1
    assert select_host([big] * 9) == 0


def go_heap_init_root(totals: list[int]) -> int:
    """container/heap.Init with Less(i, j) = totals[i] > totals[j], written out; the index left at the root."""
    h = list(range(len(totals)))
    n = len(h)
    for i0 in range(n // 2 - 1, -1, -1):
        i = i0
        while 2 * i + 1 < n:
            j = 2 * i + 1
            if j + 1 < n and totals[h[j + 1]] > totals[h[j]]:
                j += 1
            if not totals[h[j]] > totals[h[i]]:
                break
            h[i], h[j] = h[j], h[i]
            i = j
    return h[0]


def test_select_host_randomizer_breaks_ties_among_extender_scored_nodes() -> None:
    """Extenders give the nodes they scored a random randomizer; the highest wins among equal totals."""
    assert select_host([9, 9, 9], randomizers=[0, 5, 7]) == 2
    assert select_host([9, 9, 9], randomizers=[0, 0, 0]) == 0


def test_select_host_name_tie_break() -> None:
    assert select_host([9, 9, 1], "name", ["z", "m", "a"]) == 1


def test_select_host_prefers_the_highest_total() -> None:
    assert select_host([1, 300, 299]) == 1
    with pytest.raises(ValueError):
        select_host([])


def test_without_score_plugins_every_node_scores_one() -> None:
    fwk = build({"filter": [Reject("R", {})]})
    assert SchedulingAlgorithm().prioritize_nodes(fwk, CycleState(), make_pod().obj(),
                                                  make_nodes(3)).tolist() == [1, 1, 1]


def test_score_errors_abort() -> None:
    class Bad(Scorer):
        def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
            return 0, error("no metrics")

    fwk = build({"score": [Bad(name="Bad")]})
    with pytest.raises(FrameworkError, match='running Score plugins: plugin "Bad" failed with: no metrics'):
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), make_pod().obj(), Lister(make_nodes(2)))


# ----- failure handling ------------------------------------------------------------------------


class Preempt:
    name = "Preempt"

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        return PostFilterResult("n1"), None


class NoVictims:
    name = "NoVictims"

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        return PostFilterResult(""), unschedulable("preemption: 0/2 nodes are available: 2 No victims.")


def _fit_error(fwk: Framework) -> FitError:
    with pytest.raises(FitError) as info:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), make_pod().obj(), Lister(make_nodes(2)))
    return info.value


def test_postfilter_message_is_appended_and_nomination_returned() -> None:
    reject_all = Reject("R", {"n0": unschedulable("Insufficient cpu"), "n1": unschedulable("Insufficient cpu")})
    fwk = build({"filter": [reject_all], "postFilter": [NoVictims()]})
    failure = handle_schedule_error(fwk, CycleState(), make_pod().obj(), _fit_error(fwk))
    assert failure.status.code == Code.UNSCHEDULABLE
    assert failure.status.message == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No victims."
    )
    assert failure.nominated_node_name == ""
    assert isinstance(failure.status.error, FitError)

    fwk = build({"filter": [reject_all], "postFilter": [Preempt()]})
    failure = handle_schedule_error(fwk, CycleState(), make_pod().obj(), _fit_error(fwk))
    assert failure.nominated_node_name == "n1"
    assert failure.status.message == "0/2 nodes are available: 2 Insufficient cpu."


def test_failure_without_postfilter_and_other_errors() -> None:
    fwk = build({"filter": [Reject("R", {"n0": unresolvable("x"), "n1": unresolvable("x")})]})
    failure = handle_schedule_error(fwk, CycleState(), make_pod().obj(), _fit_error(fwk))
    assert (failure.status.code, failure.status.message, failure.nominated_node_name) == (
        Code.UNSCHEDULABLE,
        "0/2 nodes are available: 2 x.",
        "",
    )
    none_left = handle_schedule_error(fwk, CycleState(), make_pod().obj(), NoNodesAvailableError())
    assert none_left.status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    broken = handle_schedule_error(fwk, CycleState(), make_pod().obj(), FrameworkError(error("boom")))
    assert (broken.status.code, broken.status.message) == (Code.ERROR, "boom")
