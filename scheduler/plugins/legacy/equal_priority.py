"""EqualPriority: the seed-era (v1.16) priority ``EqualPriorityMap``, as a Score plugin.

v1.16 gave every node the score 1 (on its 0..10 scale), times the configured weight. The 0..100
scale of v1.17+ kept ``EqualPriorityMap`` returning 1 (it is not a fraction of the maximum, so there
is nothing to rescale), and the v1.18 legacy registry dropped the priority altogether when reading a
Policy. This plugin returns 1 for every node — v1.16/v1.17's value, unchanged on the 0..100 scale —
and has no NormalizeScore. A constant added to every node never changes which node wins, so this
choice only shows in reported scores; weights are applied by the framework as for any plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import CycleState, Handle
from scheduler.framework.status import Status
from scheduler.framework.types import ClusterEventWithHint, NodeInfo
from scheduler.model.pod import Pod

NAME = "EqualPriority"
EQUAL_SCORE = 1


class EqualPriority:
    """Every node scores the same (1)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return EQUAL_SCORE, None

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A score-only plugin never rejects a pod, so no event can make one schedulable."""
        return []
