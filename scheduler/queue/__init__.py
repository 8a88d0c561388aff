"""The scheduling queue: activeQ, backoffQ, unschedulablePods, the nominator and event-driven requeueing."""

from scheduler.queue.backoff_queue import DEFAULT_POD_INITIAL_BACKOFF, DEFAULT_POD_MAX_BACKOFF, backoff_duration
from scheduler.queue.nominator import Nominator
from scheduler.queue.queued_pod_info import QueuedPodInfo
from scheduler.queue.scheduling_queue import PriorityQueue, QueueProfile
from scheduler.queue.unschedulable_pods import DEFAULT_POD_MAX_IN_UNSCHEDULABLE, SEED_POD_MAX_IN_UNSCHEDULABLE

__all__ = [
    "DEFAULT_POD_INITIAL_BACKOFF",
    "DEFAULT_POD_MAX_BACKOFF",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE",
    "SEED_POD_MAX_IN_UNSCHEDULABLE",
    "Nominator",
    "PriorityQueue",
    "QueueProfile",
    "QueuedPodInfo",
    "backoff_duration",
]
