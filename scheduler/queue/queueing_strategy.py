"""Where a hint evaluation sends an unschedulable entity (upstream queueingStrategy), shared by the pod and the
pod-group paths of the PriorityQueue."""

from __future__ import annotations

from enum import Enum


class Strategy(Enum):
    """Ordered by strength: an entity takes the strongest of its pods' strategies."""

    SKIP = 0  # stay in unschedulablePods
    AFTER_BACKOFF = 1  # backoffQ if still backing off, else activeQ
    IMMEDIATELY = 2  # activeQ now (a Pending plugin said Queue)
