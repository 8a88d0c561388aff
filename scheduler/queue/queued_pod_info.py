"""QueuedPodInfo: a pending pod plus the bookkeeping the scheduling queue keeps for it."""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

from scheduler.framework.types import ClusterEvent
from scheduler.model.pod import Pod


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """One pod in the queue (upstream framework.QueuedPodInfo); satisfies QueuedPodInfoLike.

    ``timestamp`` is when the pod was (re)added; it orders equal priorities in activeQ and starts
    the backoff. ``backoff_expiration`` caches the window-aligned expiry; it is cleared whenever the
    counts or the timestamp change.

    The rejector sets and the gating events start as shared empty ones and are replaced, never written in
    place: a new pod allocates no containers (three fewer objects a pod for the collector to track).
    """

    pod: Pod
    timestamp: float
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: Set[str] = frozenset()
    pending_plugins: Set[str] = frozenset()
    gating_plugin: str | None = None
    gating_message: str = ""  # the gating plugin's status message, e.g. "waiting for scheduling gates: [a]"
    # Events the gating plugin registered: only these can un-gate the pod.
    gating_plugin_events: Sequence[ClusterEvent] = ()
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    backoff_expiration: float | None = None
    # Moved by the unschedulable flush (UnschedulableTimeout) since its last attempt.
    was_flushed_from_unschedulable: bool = False
    # When the unschedulable flush last moved it: the next flush waits a full period from the later of
    # this and ``timestamp`` (upstream FlushTimestamp), so a pod gated again is not flushed every 30 s.
    flush_timestamp: float | None = None

    @property
    def gated(self) -> bool:
        """Rejected by a PreEnqueue plugin: waits in unschedulablePods, flagged as gated."""
        return self.gating_plugin is not None

    @property
    def rejector_plugins(self) -> Set[str]:
        """UnschedulablePlugins | PendingPlugins: the plugins whose hints may requeue the pod."""
        return self.unschedulable_plugins | self.pending_plugins
