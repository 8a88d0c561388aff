"""PodGroupPodsCount (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/podgrouppodscount``): a PlacementScore
plugin of a pod group's cycle (GenericWorkload on) that favours the placement holding more of the group's pods.

A placement scores the group's members already scheduled (assigned or assumed) plus those it places, so two
placements that differ by one pod score close together; NormalizePlacementScore scales by the highest count
among the candidates, not by minCount, for the same reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.config.types import MAX_NODE_SCORE
from scheduler.framework.interface import MIN_NODE_SCORE, CycleState, Handle
from scheduler.framework.podgroup import PlacementScore, PodGroupAssignments, PodGroupInfo
from scheduler.framework.status import Status, error
from scheduler.plugins.helper.podgroup_states import snapshot_pod_group_states

NAME = "PodGroupPodsCount"

NO_PODS_ASSIGNED = "no pods from pod group are assigned to any of the candidate placements"


class PodGroupPodsCount:
    """Scores a placement by the group's pod count it reaches; normalized to [0, 100] by the best one."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args  # no configuration
        self.handle = handle

    def score_placement(self, state: CycleState, pod_group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Status | None]:
        """Scheduled members plus the placement's proposed ones; an error status when the group's state is
        missing from the snapshot."""
        try:
            scheduled = snapshot_pod_group_states(self.handle).get(
                pod_group.namespace, pod_group.name).scheduled_pods_count()
        except LookupError as exc:
            return 0, error(exc)
        return scheduled + len(assignments.proposed_assignments), None

    def normalize_placement_score(self, state: CycleState, pod_group: PodGroupInfo,
                                  scores: list[PlacementScore]) -> Status | None:
        """Each count times 100 over the highest (integer division); an error when every count is 0, which the
        gang check is trusted to prevent (upstream's TODO)."""
        highest = max((s.score for s in scores), default=0)
        if highest <= 0:
            return error(NO_PODS_ASSIGNED)
        for s in scores:
            s.score = MIN_NODE_SCORE + s.score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // highest
        return None
