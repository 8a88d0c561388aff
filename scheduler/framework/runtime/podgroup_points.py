"""The Framework's runners of the pod-group cycle's points (upstream pkg/scheduler/framework/runtime/framework.go's
RunPlacementGeneratePlugins, RunPlacementScorePlugins, RunPlacementFeasiblePlugins, RunPodGroupPostFilterPlugins),
kept apart from framework.py, which the Framework class mixes this into. Placement scores are computed serially: a
handful of placements per group, where upstream's parallelizer buys nothing on a 2-core machine."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from scheduler.config.types import MAX_NODE_SCORE
from scheduler.framework.interface import (
    MIN_NODE_SCORE,
    CycleState,
    PlacementScoreExtensions,
    implements,
)
from scheduler.framework.podgroup import (
    Placement,
    PlacementPluginScores,
    PlacementProgress,
    PlacementScore,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupPostFilterResult,
    PodGroupSchedulingFunc,
)
from scheduler.framework.status import (
    CODE_ERROR,
    CODE_SUCCESS,
    CODE_UNRESOLVABLE,
    CODE_UNSCHEDULABLE,
    CODE_WAIT,
    Status,
    success,
)
from scheduler.framework.types import NodeInfo

GANG_SCHEDULING = "GangScheduling"


class PodGroupPoints:
    """Mixed into Framework: reads its plugin lists, weights and metrics hook."""

    if TYPE_CHECKING:  # the Framework's
        _by_point: dict[str, list[Any]]
        plugins_by_name: dict[str, Any]
        placement_score_plugin_weight: dict[str, int]

        def _observe_since(self, extension_point: str, status: Status | None, start: float) -> None: ...

    def placement_feasible_plugins(self) -> list[Any]:
        """GangScheduling, when the profile has it: upstream's only PlacementFeasible plugin."""
        gang = self.plugins_by_name.get(GANG_SCHEDULING)
        return [gang] if gang is not None and hasattr(gang, "placement_feasible") else []

    def run_placement_generate_plugins(self, state: CycleState, pod_group: PodGroupInfo,
                                       nodes: list[NodeInfo]) -> tuple[list[Placement], Status | None]:
        """The first PlacementGenerate plugin's placements within the given nodes; those nodes as the one placement
        when none is configured."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            parent = Placement("", nodes)
            plugins = self._by_point["placementGenerate"]
            if not plugins:
                return [parent], None
            plugin = plugins[0]
            placements, status = plugin.generate_placements(state, pod_group, parent)
            if not success(status):
                assert status is not None
                status.plugin = plugin.name
                return [], status
            if not placements:
                status = Status(CODE_UNSCHEDULABLE, ["no feasible placements found"], plugin=plugin.name)
                return [], status
            return placements, None
        finally:
            self._observe_since("PlacementGenerate", status, start)

    def run_placement_score_plugins(
        self, state: CycleState, pod_group: PodGroupInfo, assignments: list[PodGroupAssignments],
        placement_states: list[CycleState],
    ) -> tuple[list[PlacementPluginScores], Status | None]:
        """Score each placement with each plugin, normalize per plugin, check [0, 100], weight and sum."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            out, status = self._placement_scores(state, pod_group, assignments, placement_states)
            return out, status
        finally:
            self._observe_since("PlacementScore", status, start)

    def _placement_scores(
        self, state: CycleState, pod_group: PodGroupInfo, assignments: list[PodGroupAssignments],
        placement_states: list[CycleState],
    ) -> tuple[list[PlacementPluginScores], Status | None]:
        if len(assignments) != len(placement_states):
            return [], _error(f"expected one PlacementCycleState per PodGroupAssignments, got {len(placement_states)} "
                              f"placement states for {len(assignments)} assignments")
        plugins = self._by_point["placementScore"]
        per_plugin: dict[str, list[PlacementScore]] = {}
        for pl in plugins:
            scores = []
            for pga, pstate in zip(assignments, placement_states, strict=True):
                s, st = pl.score_placement(pstate, pod_group, pga)
                if not success(st):
                    assert st is not None
                    return [], _error(f'running PlacementScore plugins: plugin "{pl.name}" failed with: {st.message}')
                scores.append(PlacementScore(pga.placement, s))
            per_plugin[pl.name] = scores
        for pl in plugins:
            if implements(pl, PlacementScoreExtensions):
                st = pl.normalize_placement_score(state, pod_group, per_plugin[pl.name])
                if not success(st):
                    assert st is not None
                    return [], _error("running NormalizePlacementScore on PlacementScore plugins: "
                                      f'plugin "{pl.name}" failed with: {st.message}')
        out = []
        for i, pga in enumerate(assignments):
            row = PlacementPluginScores(pga.placement, [], 0)
            for pl in plugins:
                score = per_plugin[pl.name][i].score
                if score > MAX_NODE_SCORE or score < MIN_NODE_SCORE:
                    return [], _error(
                        "applying score defaultWeights on PlacementScore plugins: "
                        f'plugin "{pl.name}" returns an invalid score {score}, it should in the range of '
                        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")
                weighted = score * self.placement_score_plugin_weight.get(pl.name, 1)
                row.scores.append((pl.name, weighted))
                row.total_score += weighted
            out.append(row)
        return out, None

    def run_placement_feasible_plugins(self, state: CycleState, pod_group: PodGroupInfo,
                                       progress: PlacementProgress) -> Status | None:
        """Success if all succeed; Unschedulable at the first that says so; Wait if any waits; Error otherwise."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            for pl in self.placement_feasible_plugins():
                st = pl.placement_feasible(state, pod_group, progress)
                if success(st):
                    continue
                assert st is not None
                st.plugin = pl.name
                if st.code == CODE_WAIT:
                    status = st
                    continue
                if st.code == CODE_UNSCHEDULABLE:
                    status = st
                    return status
                if st.code == CODE_ERROR:
                    status = Status(CODE_ERROR, [f"running PlacementFeasible plugin: {st.message}"], plugin=pl.name)
                    return status
                status = Status(CODE_ERROR, [f"unexpected status from PlacementFeasible plugin: {st.code.name}"],
                                plugin=pl.name)
                return status
            return status
        finally:
            self._observe_since("PlacementFeasible", status, start)

    def run_pod_group_post_filter_plugins(
        self, state: CycleState, pod_group: PodGroupInfo, scheduling_func: PodGroupSchedulingFunc,
    ) -> tuple[PodGroupPostFilterResult | None, Status]:
        """Until one succeeds (its result) or is unresolvable; Unschedulable with every plugin's reasons; any
        other status is an Error."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            reasons: list[str] = []
            rejector = ""
            for pl in self._by_point["podGroupPostFilter"]:
                res, st = pl.pod_group_post_filter(state, pod_group, scheduling_func)
                if success(st):
                    status = st if st is not None else Status(CODE_SUCCESS)
                    return res, status
                assert st is not None
                if st.code == CODE_UNRESOLVABLE:
                    st.plugin = pl.name
                    status = st
                    return res, st
                if st.code == CODE_UNSCHEDULABLE:
                    reasons.extend(st.reasons)
                    rejector = rejector or pl.name
                    continue
                status = Status(CODE_ERROR, [f'error in "{pl.name}" PodGroupPostFilter plugins: {st.message}'],
                                plugin=pl.name)
                return None, status
            status = Status(CODE_UNSCHEDULABLE, reasons, plugin=rejector)
            return None, status
        finally:
            self._observe_since("PodGroupPostFilter", status, start)


def _error(message: str) -> Status:
    return Status(CODE_ERROR, [message])
