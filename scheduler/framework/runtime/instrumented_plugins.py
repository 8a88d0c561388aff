"""Plugins as a sampled scheduling cycle sees them (upstream
``pkg/scheduler/framework/runtime/instrumented_plugins.go``, and the per-plugin timing of
``pkg/scheduler/framework/runtime/framework.go``'s run*Plugin helpers): each wrapper implements its extension point's
protocol, calls the plugin and records the call's duration (scheduler_plugin_execution_duration_seconds).

A wrapper implements the same optional fast paths as its plugin (``filter_for``, ``score_nodes``), so the
framework calls a timed plugin exactly as it calls the plain one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from scheduler.framework.interface import (
    BindPlugin,
    CycleState,
    FilterForPlugin,
    FilterPlugin,
    NodeToStatus,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScoreExtensions,
    ScoreNodesPlugin,
    ScorePlugin,
)
from scheduler.framework.status import CODE_NAMES, Status, code_name
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod

# Per-node Filter timings in a sampled cycle stop after this many nodes per plugin (upstream times all).
TIMED_NODES_PER_CYCLE = 16


class PluginMetrics(Protocol):
    """Per-plugin metrics of one profile (scheduler/metrics.py ProfileMetrics implements it)."""

    def plugin_duration_values(self, plugin: str, point: str, status: str) -> list[float]:
        """The list (plugin, point, status)'s durations are appended to (a wrapper keeps it per point and status)."""
        ...
    def duration_sink(self) -> Callable[[tuple[tuple[str, str, str], float]], None]:
        """Takes ((plugin, point, status), seconds): the per-node Filter timings skip a Python call."""
        ...
    def plugin_evaluations(self, plugins: Iterable[str], point: str, count: int) -> None:
        """Each of ``plugins`` ran ``count`` times at ``point`` (one call per extension point and cycle)."""
        ...
    def evaluation_cell(self, plugins: tuple[str, ...], point: str) -> list[Any]:
        """The counter cell of ``plugins`` at ``point``: ``cell[1] += n`` counts n evaluations of each (a caller
        that counts one fixed list every cycle keeps it)."""
        ...
    def permit_wait(self, status: str, seconds: float) -> None: ...
    def volume_scheduling_stage_failed(self, operation: str) -> None: ...


class _Timed:
    """What every wrapper shares: the plugin's name and the recorder of its durations."""

    def __init__(self, plugin: Any, metrics: PluginMetrics) -> None:
        self.name: str = plugin.name
        self._metrics = metrics
        # (point, status) -> the list its durations go to: ~28 timed calls a sampled cycle skip three Python calls
        self._lists: dict[tuple[str, str], list[float]] = {}

    def _done(self, point: str, status: Status | None, start: float) -> None:
        seconds = time.perf_counter() - start
        key = (point, code_name(status))
        values = self._lists.get(key)
        if values is None:
            values = self._lists[key] = self._metrics.plugin_duration_values(self.name, point, key[1])
        values.append(seconds)


class TimedPreFilter(_Timed):
    def __init__(self, plugin: PreFilterPlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._plugin = plugin

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        start = time.perf_counter()
        result, status = self._plugin.pre_filter(state, pod, nodes)
        self._done("PreFilter", status, start)
        return result, status

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self._plugin.pre_filter_extensions()


class TimedFilter(_Timed):
    def __init__(self, plugin: FilterPlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._plugin = plugin

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        start = time.perf_counter()
        status = self._plugin.filter(state, pod, node_info)
        self._done("Filter", status, start)
        return status


class TimedFilterFor(TimedFilter):
    """A FilterForPlugin's wrapper: the per-node check it returns is timed per node, as upstream times
    each Filter call."""

    def __init__(self, plugin: FilterPlugin, fast: FilterForPlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._fast = fast

    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None] | None:
        """The plugin's check, timed on the first TIMED_NODES_PER_CYCLE nodes it sees: enough samples for
        the distribution, while a sampled cycle over thousands of nodes stays nearly as cheap as any other."""
        check = self._fast.filter_for(state, pod)
        if check is None:
            return None
        append, name, perf = self._metrics.duration_sink(), self.name, time.perf_counter
        passed = (name, "Filter", "Success")
        left = TIMED_NODES_PER_CYCLE

        def timed(node_info: NodeInfo) -> Status | None:
            nonlocal left
            if left <= 0:
                return check(node_info)
            left -= 1
            start = perf()
            s = check(node_info)
            append((passed if s is None else (name, "Filter", CODE_NAMES[s.code]), perf() - start))
            return s

        return timed


class TimedPostFilter(_Timed):
    def __init__(self, plugin: PostFilterPlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._plugin = plugin

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        start = time.perf_counter()
        result, status = self._plugin.post_filter(state, pod, statuses)
        self._done("PostFilter", status, start)
        return result, status


class TimedPreScore(_Timed):
    def __init__(self, plugin: PreScorePlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._plugin = plugin

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        start = time.perf_counter()
        status = self._plugin.pre_score(state, pod, nodes)
        self._done("PreScore", status, start)
        return status


class TimedScore(_Timed):
    def __init__(self, plugin: ScorePlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._plugin = plugin

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        start = time.perf_counter()
        value, status = self._plugin.score(state, pod, node_info)
        self._done("Score", status, start)
        return value, status

    def score_extensions(self) -> ScoreExtensions | None:
        return self._plugin.score_extensions()


class TimedScoreNodes(TimedScore):
    """A ScoreNodesPlugin's wrapper: its one call over all nodes is one Score sample."""

    def __init__(self, plugin: ScorePlugin, batch: ScoreNodesPlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._batch = batch

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        start = time.perf_counter()
        values, status = self._batch.score_nodes(state, pod, nodes)
        self._done("Score", status, start)
        return values, status


class TimedReserve(_Timed):
    def __init__(self, plugin: ReservePlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._plugin = plugin

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = time.perf_counter()
        status = self._plugin.reserve(state, pod, node_name)
        self._done("Reserve", status, start)
        return status

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        start = time.perf_counter()
        self._plugin.unreserve(state, pod, node_name)
        self._done("Unreserve", None, start)


class TimedPermit(_Timed):
    def __init__(self, plugin: PermitPlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._plugin = plugin

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        start = time.perf_counter()
        status, timeout = self._plugin.permit(state, pod, node_name)
        self._done("Permit", status, start)
        return status, timeout


class TimedPreBind(_Timed):
    def __init__(self, plugin: PreBindPlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._plugin = plugin

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = time.perf_counter()
        status = self._plugin.pre_bind(state, pod, node_name)
        self._done("PreBind", status, start)
        return status


class TimedBind(_Timed):
    def __init__(self, plugin: BindPlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._plugin = plugin

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = time.perf_counter()
        status = self._plugin.bind(state, pod, node_name)
        self._done("Bind", status, start)
        return status


class TimedPostBind(_Timed):
    def __init__(self, plugin: PostBindPlugin, metrics: PluginMetrics) -> None:
        super().__init__(plugin, metrics)
        self._plugin = plugin

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        start = time.perf_counter()
        self._plugin.post_bind(state, pod, node_name)
        self._done("PostBind", None, start)


def _filter(plugin: FilterPlugin, metrics: PluginMetrics) -> TimedFilter:
    if isinstance(plugin, FilterForPlugin):
        return TimedFilterFor(plugin, plugin, metrics)
    return TimedFilter(plugin, metrics)


def _score(plugin: ScorePlugin, metrics: PluginMetrics) -> TimedScore:
    if isinstance(plugin, ScoreNodesPlugin):
        return TimedScoreNodes(plugin, plugin, metrics)
    return TimedScore(plugin, metrics)


# Extension point -> its wrapper (points whose plugins the framework runs inside a scheduling cycle;
# PreEnqueue and QueueSort run in the queue, outside any cycle, and are not timed per plugin).
_WRAPPERS: dict[str, Callable[[Any, PluginMetrics], _Timed]] = {
    "preFilter": TimedPreFilter,
    "filter": _filter,
    "postFilter": TimedPostFilter,
    "preScore": TimedPreScore,
    "score": _score,
    "reserve": TimedReserve,
    "permit": TimedPermit,
    "preBind": TimedPreBind,
    "bind": TimedBind,
    "postBind": TimedPostBind,
}


def instrument(point: str, plugins: Sequence[Any], metrics: PluginMetrics) -> list[Any]:
    """The timed wrappers of ``point``'s plugins, in order; a point run outside the cycle keeps its plugins."""
    wrap = _WRAPPERS.get(point)
    return list(plugins) if wrap is None else [wrap(pl, metrics) for pl in plugins]
