"""The pod-group cycle's extension points on plugins that upstream gives them (kube-scheduler v1.37):
DefaultPreemption and DynamicResources are PodGroupPostFilter plugins, NodeResourcesFit a PlacementScore
plugin, so a configuration may list them there and the default profile does. Only a pod group's
scheduling cycle calls these points (GenericWorkload on). Until a plugin's lane implements its point, these
mixins answer as a plugin that cannot help: no placements, a zero score, Unschedulable after a group failed."""

from __future__ import annotations

from scheduler.framework.interface import CycleState
from scheduler.framework.podgroup import (
    Placement,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupPostFilterResult,
    PodGroupSchedulingFunc,
)
from scheduler.framework.status import Status, unschedulable


class PodGroupPostFilterPoint:
    """podGroupPostFilter that cannot make the group schedulable."""

    def pod_group_post_filter(
        self, state: CycleState, pod_group: PodGroupInfo, scheduling_func: PodGroupSchedulingFunc,
    ) -> tuple[PodGroupPostFilterResult | None, Status | None]:
        return None, unschedulable()


class PlacementScorePoint:
    """placementScore that scores every placement 0."""

    def score_placement(self, state: CycleState, pod_group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Status | None]:
        return 0, None


class PlacementGeneratePoint:
    """placementGenerate that proposes the parent placement itself (all nodes when none)."""

    def generate_placements(self, state: CycleState, pod_group: PodGroupInfo,
                            parent_placement: Placement | None) -> tuple[list[Placement], Status | None]:
        return ([parent_placement] if parent_placement is not None else []), None
