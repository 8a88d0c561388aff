"""GangScheduling (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go``; no
composite groups): a member of a Workload API gang waits at PreEnqueue until its PodGroup and ``minCount`` members
are known, at Permit until ``minCount`` members are assumed or bound, and the pod group's cycle asks
PlacementFeasible after each member whether ``minCount`` can still be met.

With GenericWorkload off the API server drops ``spec.schedulingGroup``, so every pod passes, and the plugin
registers no events (nothing it rejects exists). Coscheduling (``scheduler-plugins``' PodGroup) is the other gang
API (docs/gang-scheduling.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.events import make_event
from scheduler.framework.interface import CycleState, Handle
from scheduler.framework.podgroup import PlacementProgress, PodGroupInfo
from scheduler.framework.status import CODE_UNRESOLVABLE, CODE_UNSCHEDULABLE, CODE_WAIT, Status, error
from scheduler.framework.types import ActionType, ClusterEventWithHint, EventResource, QueueingHint
from scheduler.model.pod import Pod
from scheduler.model.workload import PodGroup

NAME = "GangScheduling"
PERMIT_TIMEOUT_SECONDS = 5 * 60.0  # permitTimeoutDuration
WAITING_FOR_MIN_COUNT_PODS = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_AT_PERMIT = "waiting for minCount pods from a gang to be scheduled"


def min_count(pod_group: PodGroup | None) -> int:
    """getMinCount: the gang's minCount, 1 for a basic group."""
    if pod_group is None or not pod_group.policy.is_gang:
        return 1
    return pod_group.policy.min_count


class GangScheduling:
    """PreEnqueue, Permit and PlacementFeasible for the Workload API's gangs (see the module)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args  # no configuration
        self._handle = handle
        self._enabled = handle.features().enable_generic_workload

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """preEnqueueHierarchiesDisabled: the PodGroup must be known, and for a gang, minCount of its pods."""
        if not self._enabled:
            return None
        group = pod.pod_group_name
        if not group:
            return None
        manager = self._handle.pod_group_manager()
        try:
            pg = manager.pod_groups().get(pod.namespace, group)
        except LookupError:
            return Status(CODE_UNRESOLVABLE, [f'waiting for pods\'s pod group "{group}" to appear in scheduling queue'])
        if not pg.policy.is_gang:
            return None
        try:
            state = manager.pod_group_states().get(pod.namespace, group)
        except LookupError as exc:
            return error(str(exc))
        if state.all_pods_count() < pg.policy.min_count:
            return Status(CODE_UNRESOLVABLE, [WAITING_FOR_MIN_COUNT_PODS])
        return None

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """permitPodGroup: Wait (activating the gang's unscheduled members) until minCount members are assumed or
        bound; the member that completes the quorum allows the waiting ones."""
        if not self._enabled:
            return None, 0.0
        group = pod.pod_group_name
        if not group:
            return None, 0.0
        manager = self._handle.pod_group_manager()
        try:  # the object from the cycle's snapshot, the states from the cache, as upstream's Permit
            pg = self._handle.snapshot().pod_groups().get(pod.namespace, group)
        except LookupError as exc:
            return error(f"failed to get podGroup {pod.namespace}/{group}: {exc}"), 0.0
        try:
            group_state = manager.pod_group_states().get(pod.namespace, pg.name)
        except LookupError as exc:
            return error(str(exc)), 0.0
        if not pg.policy.is_gang:
            return None, 0.0
        if group_state.scheduled_pods_count() < pg.policy.min_count:
            self._handle.activate_pods(list(group_state.unscheduled_pods().values()))
            return Status(CODE_WAIT, [WAITING_AT_PERMIT]), PERMIT_TIMEOUT_SECONDS
        for uid in list(group_state.assumed_pods()):
            waiting = self._handle.get_waiting_pod(uid)
            if waiting is not None:
                waiting.allow(NAME)
        return None, 0.0

    def placement_feasible(self, state: CycleState, pod_group: PodGroupInfo,
                           progress: PlacementProgress) -> Status | None:
        """PlacementFeasible: Unschedulable once minCount cannot be reached, Wait until it is."""
        need = min_count(pod_group.pod_group)
        if progress.remaining + progress.scheduled < need:
            return Status(CODE_UNSCHEDULABLE, [f"minCount ({need}) cannot be satisfied: {progress.scheduled} "
                                               f"scheduled, {progress.remaining} remaining"])
        if progress.scheduled < need:
            return Status(CODE_WAIT, [f"minCount ({need}) is not yet satisfied: {progress.scheduled} scheduled, "
                                      f"{progress.remaining} remaining"])
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A member or the PodGroup arriving, or minCount decreasing, may complete a gated gang. Nothing while
        GenericWorkload is off: no pod is ever rejected here then."""
        if not self._enabled:
            return []
        return [
            ClusterEventWithHint(make_event(EventResource.UNSCHEDULED_POD, ActionType.ADD), self._after_pod_added),
            ClusterEventWithHint(make_event(EventResource.POD, ActionType.ADD), self._after_pod_added),
            ClusterEventWithHint(make_event(EventResource.WORKLOAD_POD_GROUP, ActionType.ADD),
                                 self._after_pod_group_added),
            ClusterEventWithHint(make_event(EventResource.WORKLOAD_POD_GROUP, ActionType.UPDATE),
                                 self._after_pod_group_updated),
        ]

    @staticmethod
    def _after_pod_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
        group = pod.pod_group_name
        if not group or not isinstance(new, Pod) or not new.pod_group_name:
            return QueueingHint.QUEUE_SKIP
        same = (new.namespace, new.pod_group_name) == (pod.namespace, group)
        return QueueingHint.QUEUE if same else QueueingHint.QUEUE_SKIP

    @staticmethod
    def _after_pod_group_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
        group = pod.pod_group_name
        if not group or not isinstance(new, PodGroup):
            return QueueingHint.QUEUE_SKIP
        same = (new.namespace, new.name) == (pod.namespace, group)
        return QueueingHint.QUEUE if same else QueueingHint.QUEUE_SKIP

    @staticmethod
    def _after_pod_group_updated(pod: Pod, old: Any, new: Any) -> QueueingHint:
        group = pod.pod_group_name
        if not group or not isinstance(new, PodGroup) or not isinstance(old, PodGroup):
            return QueueingHint.QUEUE_SKIP
        if (new.namespace, new.name) != (pod.namespace, group):
            return QueueingHint.QUEUE_SKIP
        if not new.policy.is_gang or not old.policy.is_gang:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if new.policy.min_count < old.policy.min_count else QueueingHint.QUEUE_SKIP
