"""The pod-group cycle's extension points on plugins that upstream gives them (kube-scheduler v1.37):
DefaultPreemption and DynamicResources are PodGroupPostFilter plugins, NodeResourcesFit a PlacementScore
plugin, so a configuration may list them there and the default profile does. Only a pod group's
scheduling cycle calls these points; it needs GenericWorkload (beta, off), which py-scheduler refuses to
turn on, so the methods exist for the configuration and are never called."""

from __future__ import annotations

from typing import Any

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Status

NO_POD_GROUP_CYCLE = "pod-group scheduling cycles need GenericWorkload, which is off"


class PodGroupPostFilterPoint:
    """Implements podGroupPostFilter for the configuration (see the module)."""

    def pod_group_post_filter(self, state: CycleState, pod_group: Any, scheduling_func: Any) -> Any:
        raise NotImplementedError(NO_POD_GROUP_CYCLE)


class PlacementScorePoint:
    """Implements placementScore for the configuration (see the module)."""

    def score_placement(self, state: CycleState, pod_group: Any, placement: Any) -> tuple[int, Status | None]:
        raise NotImplementedError(NO_POD_GROUP_CYCLE)


class PlacementGeneratePoint:
    """Implements placementGenerate for the configuration (see the module)."""

    def generate_placements(self, state: CycleState, pod_group: Any, parent_placement: Any) -> Any:
        raise NotImplementedError(NO_POD_GROUP_CYCLE)
