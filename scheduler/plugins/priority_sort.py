"""PrioritySort: the default QueueSort plugin (``pkg/scheduler/framework/plugins/queuesort/priority_sort.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import Handle, QueuedPodInfoLike
from scheduler.framework.types import ClusterEventWithHint


class PrioritySort:
    """Orders activeQ: higher spec.priority first, then the pod queued earlier (FIFO within a priority)."""

    name = "PrioritySort"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args, handle  # no configuration

    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool:
        p1, p2 = a.pod.priority, b.pod.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)

    def rank(self, qpi: QueuedPodInfoLike) -> tuple[int, float]:
        """``less`` as a sort key (QueueSortRankPlugin): higher priority, then earlier timestamp, first."""
        return -qpi.pod.priority, qpi.timestamp

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Sorting never rejects a pod, so no event can make one schedulable."""
        return []
