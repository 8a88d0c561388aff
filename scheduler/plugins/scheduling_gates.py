"""SchedulingGates: keep pods with spec.schedulingGates out of activeQ
(``pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import Handle
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.model.pod import Pod
from scheduler.plugins.helper.hint_objects import require_pod

# Registered on Pod, as upstream (Pod covers both assigned and unscheduled pods' events).
GATES_ELIMINATED = ClusterEvent(
    EventResource.POD,
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    "PodUpdatePodSchedulingGatesEliminated",
)


class SchedulingGates:
    """PreEnqueue: a gated pod waits, UnschedulableAndUnresolvable, until its last gate is removed."""

    name = "SchedulingGates"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args, handle  # no configuration

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_gates:
            return None
        return unresolvable(f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(GATES_ELIMINATED, self.is_schedulable_after_gates_eliminated)]

    def is_schedulable_after_gates_eliminated(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """Only the gated pod's own update can un-gate it."""
        modified = require_pod(new)
        return QueueingHint.QUEUE if modified.uid == pod.uid else QueueingHint.QUEUE_SKIP
