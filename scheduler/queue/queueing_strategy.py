"""Where a hint evaluation sends an unschedulable entity (upstream queueingStrategy), shared by the pod and the
pod-group paths of the PriorityQueue."""

from __future__ import annotations

from enum import Enum


class Strategy(Enum):
    """Ordered by strength: an entity takes the strongest of its pods' strategies."""

    SKIP = 0  # stay in unschedulablePods
    AFTER_BACKOFF = 1  # backoffQ if still backing off, else activeQ
    IMMEDIATELY = 2  # activeQ now (a Pending plugin said Queue)


# The queue each strategy names (v1.37 strategyToQueueLabel), as the incoming metrics label queues.
STRATEGY_QUEUE = {Strategy.SKIP: "unschedulable", Strategy.AFTER_BACKOFF: "backoff", Strategy.IMMEDIATELY: "active"}
