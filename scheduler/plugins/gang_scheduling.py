"""GangScheduling (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go``) with
GenericWorkload at its default, off: a profile may name it (PreEnqueue, Permit), as kube-scheduler's registry always
holds it.

Its PreEnqueue and Permit act only on a pod with ``spec.schedulingGroup``, a field the API server drops
while GenericWorkload is off, so every pod passes both. Gangs of the Workload API are not followed here;
Coscheduling (``scheduler-plugins``' PodGroup) is py-scheduler's gang scheduling (docs/gang-scheduling.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import CycleState, Handle
from scheduler.framework.status import Status
from scheduler.framework.types import ClusterEventWithHint
from scheduler.model.pod import Pod


class GangScheduling:
    """Admits every pod: none belongs to a Workload API pod group while its gate is off."""

    name = "GangScheduling"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args, handle  # no configuration

    def pre_enqueue(self, pod: Pod) -> Status | None:
        return None

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        return None, 0.0

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """It never rejects a pod, so no event can be what makes one schedulable."""
        return []
