"""The timed wrappers of sampled cycles (framework/runtime/instrumented_plugins.py): each records its
extension point's duration under the plugin's name and status, and implements exactly the fast paths
its plugin implements, so the framework calls a timed plugin as it calls the plain one."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from scheduler.framework.interface import CycleState
from scheduler.framework.runtime.instrumented_plugins import (
    TIMED_NODES_PER_CYCLE,
    TimedFilter,
    TimedFilterFor,
    TimedScore,
    TimedScoreNodes,
    instrument,
)
from scheduler.framework.runtime.waiting_pods_map import WaitingPod, WaitingPodsMap
from scheduler.framework.status import Status, unschedulable
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod
from scheduler.testing import make_node, make_pod


def _node_info(name: str) -> NodeInfo:
    info = NodeInfo()
    info.set_node(make_node().name(name).allocatable(cpu="4").obj())
    return info


class _Logged(list[float]):
    """A series' list of durations that logs each append's labels, in order across series."""

    def __init__(self, log: list[tuple[str, str, str]], labels: tuple[str, str, str]) -> None:
        super().__init__()
        self.log, self.labels = log, labels

    def append(self, value: float) -> None:
        self.log.append(self.labels)


class Recorder:
    def __init__(self) -> None:
        self.durations: list[tuple[str, str, str]] = []
        self.sunk: list[tuple[str, str, str]] = []

    def plugin_duration_values(self, plugin: str, point: str, status: str) -> list[float]:
        return _Logged(self.durations, (plugin, point, status))

    def duration_sink(self) -> Callable[[tuple[tuple[str, str, str], float]], None]:
        return lambda sample: self.sunk.append(sample[0])

    def plugin_evaluations(self, plugins: Iterable[str], point: str, count: int) -> None: ...
    def evaluation_cell(self, plugins: tuple[str, ...], point: str) -> list[Any]:
        return [plugins, 0]
    def permit_wait(self, status: str, seconds: float) -> None: ...
    def volume_scheduling_stage_failed(self, operation: str) -> None: ...


class RejectOdd:
    """A filter with the FilterForPlugin fast path: nodes whose name ends in an odd digit are rejected."""

    name = "RejectOdd"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return unschedulable("odd") if int(node_info.name[-1]) % 2 else None

    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None] | None:
        return lambda node_info: self.filter(state, pod, node_info)


class Plain:
    name = "Plain"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return 7, None

    def score_extensions(self) -> None:
        return None


class Batch(Plain):
    name = "Batch"

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        return [len(n.name) for n in nodes], None


def test_a_wrapper_implements_the_fast_paths_of_its_plugin_and_no_others() -> None:
    rec = Recorder()
    filters = instrument("filter", [RejectOdd(), Plain()], rec)
    scores = instrument("score", [Plain(), Batch()], rec)
    assert [type(w) for w in filters] == [TimedFilterFor, TimedFilter]
    assert [type(w) for w in scores] == [TimedScore, TimedScoreNodes]
    assert not hasattr(filters[1], "filter_for") and not hasattr(scores[0], "score_nodes")
    assert [w.name for w in (*filters, *scores)] == ["RejectOdd", "Plain", "Plain", "Batch"]


def test_each_call_records_its_point_and_status() -> None:
    rec = Recorder()
    (timed_filter,) = instrument("filter", [RejectOdd()], rec)
    (timed_batch,) = instrument("score", [Batch()], rec)
    state, pod = CycleState(), make_pod().name("p").obj()
    assert timed_filter.filter(state, pod, _node_info("n1")) is not None
    assert timed_filter.filter(state, pod, _node_info("n2")) is None
    assert timed_batch.score_nodes(state, pod, [_node_info("n1"), _node_info("node-2")]) == ([2, 6], None)
    assert rec.durations == [("RejectOdd", "Filter", "Unschedulable"), ("RejectOdd", "Filter", "Success"),
                             ("Batch", "Score", "Success")]


def test_the_per_node_check_is_timed_on_the_first_nodes_only() -> None:
    rec = Recorder()
    (timed,) = instrument("filter", [RejectOdd()], rec)
    check = timed.filter_for(CycleState(), make_pod().name("p").obj())
    verdicts = [check(_node_info(f"n{i % 10}")) is None for i in range(TIMED_NODES_PER_CYCLE + 4)]
    assert verdicts == [i % 2 == 0 for i in range(TIMED_NODES_PER_CYCLE + 4)]  # the plugin's own verdicts
    assert len(rec.sunk) == TIMED_NODES_PER_CYCLE
    assert rec.sunk[:2] == [("RejectOdd", "Filter", "Success"), ("RejectOdd", "Filter", "Unschedulable")]


def test_points_run_outside_the_cycle_keep_their_plugins() -> None:
    plugin = Plain()
    assert instrument("queueSort", [plugin], Recorder()) == [plugin]


def test_the_waiting_pods_map_forgets_a_pod_only_as_the_attempt_registered_it() -> None:
    pods = WaitingPodsMap()
    first = WaitingPod(make_pod().name("p").obj(), {"Gang": 10.0}, lambda: 0.0)
    second = WaitingPod(make_pod().name("p").obj(), {"Gang": 10.0}, lambda: 0.0)
    pods.add(first)
    pods.add(second)  # a newer attempt of the same pod replaces the first
    pods.remove("uid-p", first)
    assert pods.get("uid-p") is second and pods.iterate() == [second]
    pods.remove("uid-p", second)
    assert pods.get("uid-p") is None and pods.iterate() == []
