"""Coscheduling (kubernetes-sigs/scheduler-plugins ``pkg/coscheduling``): all-or-nothing pod groups.

Pods join a group with the label ``scheduling.x-k8s.io/pod-group: <PodGroup name>``; the PodGroup
(``scheduling.x-k8s.io/v1alpha1``) says how many members must be placed together (``minMember``),
optionally what they need in total (``minResources``) and how long members wait for each other
(``scheduleTimeoutSeconds``, else ``permitWaitingTimeSeconds``). Same CRD, label and args as
scheduler-plugins, so jobs move between the two schedulers unchanged.

- QueueSort: priority, then the group's creation time (a lone pod's queue time), then the group and
  pod names, so a group's pods leave the queue together.
- PreFilter: a pod whose group is missing or invalid, recently failed (backoff), has fewer than
  minMember live pods, or whose minResources exceed the cluster's free capacity is rejected as
  UnschedulableAndUnresolvable, with the group and the numbers in the message.
- Permit: members wait until minMember are assumed or bound, then all are allowed at once. Members
  that were waiting for siblings are moved to activeQ when the group becomes whole (upstream
  activates them from Permit, which also wakes a member that cannot fit, in a loop).
- PostFilter: a member that fits nowhere rejects its waiting siblings (so they do not sit on nodes)
  and backs the group off, unless the group is (nearly, <= 10 % missing) complete.
- Unreserve: a member that failed after Reserve (Permit timeout or rejection, deletion while waiting,
  a failed bind) takes every waiting sibling with it, and the group backs off.

Differences from scheduler-plugins: a pod naming a missing or invalid PodGroup is rejected at
PreFilter with a message (upstream lets it reach Permit), rejection messages name the group,
Unreserve also backs the group off, and the PodGroup status is kept by this plugin (upstream runs a
separate controller), through the PodGroupWriter the scheduler injects.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import CoschedulingArgs
from scheduler.framework.interface import (
    CycleState,
    Handle,
    NodeToStatus,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterResult,
    QueuedPodInfoLike,
)
from scheduler.framework.status import Code, Status, unresolvable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.pod import Pod, parse_time
from scheduler.plugins.helper.podgroup import (
    KIND,
    POD_GROUP_LABEL,
    PodGroup,
    PodGroupManager,
    cluster_resource_gap,
    group_full_name,
    group_name,
    podgroup_from_api,
)

NAME = "Coscheduling"

# A group missing at most this share of minMember is not rejected at PostFilter (upstream's 10 %).
_NEARLY_COMPLETE = 0.1


class Coscheduling:
    name = NAME

    def __init__(self, args: CoschedulingArgs | Mapping[str, Any], handle: Handle) -> None:
        self.args = plugin_args(CoschedulingArgs, args)
        self.handle = handle
        self.manager = PodGroupManager(handle.objects, handle.podgroup_writer(), handle.activate_pods)
        # Queue timestamps are monotonic; group creation times are wall clock.
        self._wall_offset = time.time() - time.monotonic()

    # ----- QueueSort ----------------------------------------------------------------------------

    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        if pa != pb:
            return pa > pb
        ta, ka = self._sort_key(a)
        tb, kb = self._sort_key(b)
        if ta != tb:
            return ta < tb
        return ka < kb

    def _sort_key(self, qpi: QueuedPodInfoLike) -> tuple[float, tuple[str, str]]:
        """(creation time of the group, or when a lone pod was queued; (group, pod) names)."""
        pod = qpi.pod
        name = group_name(pod)
        if name:
            obj = self.handle.objects().get(KIND, pod.namespace, name)
            created = _creation(obj)
            if created is not None:
                return created, (f"{pod.namespace}/{name}", pod.key)
        return qpi.timestamp + self._wall_offset, (pod.key, pod.key)

    # ----- PreFilter ----------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """UnschedulableAndUnresolvable, as upstream, so that no preemption is attempted for it."""
        full, group = self.manager.get(pod)
        if not full:
            return None, None
        if group is None:
            return None, unresolvable(
                f'pod {pod.key} names PodGroup "{full}" (label {POD_GROUP_LABEL}), which does not exist'
            )
        if group.problem:
            self.manager.report_problem(group)
            return None, unresolvable(f'PodGroup "{full}" is invalid: {group.problem}')
        if self.manager.backed_off(full):
            return None, unresolvable(f'PodGroup "{full}" failed recently; it backs off for '
                                      f'{self.args.pod_group_backoff_seconds}s')
        members = self.manager.member_count(full)
        if members < group.min_member:
            return None, unresolvable(
                f'pre-filter pod {pod.name} cannot find enough sibling pods of PodGroup "{full}", '
                f"current pods number: {members}, minMember of group: {group.min_member}"
            )
        if group.min_resources is None or self.manager.permitted(full):
            return None, None
        gap = cluster_resource_gap(nodes, group)
        if gap:
            missing = ", ".join(f"{k} {_amount(k, v)}" for k, v in sorted(gap.items()))
            return None, unresolvable(
                f'PodGroup "{full}" minResources {dict(group.min_resources)} with minMember {group.min_member} '
                f"cannot fit in the cluster: missing {missing}"
            )
        self.manager.permit(full, self._timeout(group))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    # ----- PostFilter ---------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        full, group = self.manager.get(pod)
        if group is None:
            return None, Status(Code.UNSCHEDULABLE, ["can not find pod group"] if full else [])
        own = statuses.absent
        if own is not None and own.plugin == NAME and not statuses.statuses:
            return None, Status(Code.UNSCHEDULABLE)  # our PreFilter held it back: no sibling was placed for it
        assigned = self.manager.assigned_count(group)
        if assigned >= group.min_member:
            return None, Status(Code.UNSCHEDULABLE)
        if (group.min_member - assigned) / group.min_member <= _NEARLY_COMPLETE:
            return None, Status(Code.UNSCHEDULABLE)
        msg = f'PodGroup "{full}" gets rejected due to Pod {pod.name} is unschedulable even after PostFilter'
        self._reject_waiting(group, f'rejected with PodGroup "{full}": pod {pod.name} is unschedulable')
        if self.manager.member_count(full) >= group.min_member:
            self.manager.backoff(full, self.args.pod_group_backoff_seconds)
        self.manager.forget_permitted(full)
        self.manager.event(group, "Warning", "FailedScheduling",
                           f"{msg}; {assigned} of minMember {group.min_member} could be placed")
        return None, Status(Code.UNSCHEDULABLE, [msg])

    # ----- Reserve / Unreserve ------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if group_name(pod):
            self.manager.reserve(pod)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        if not group_name(pod):
            return
        self.manager.unreserve(pod)
        full, group = self.manager.get(pod)
        if group is None:
            return
        self._reject_waiting(group, f'rejected with PodGroup "{full}": member {pod.name} was unreserved')
        self.manager.forget_permitted(full)
        self.manager.backoff(full, self.args.pod_group_backoff_seconds)

    # ----- Permit -------------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        full, group = self.manager.get(pod)
        if not full:
            return None, 0.0
        if group is None or group.problem:
            return Status(Code.UNSCHEDULABLE, [f'PodGroup "{full}" not found or invalid']), 0.0
        siblings = [wp for wp in self.handle.iterate_over_waiting_pods() if group_full_name(wp.get_pod()) == full]
        # A sibling rejected or timed out whose binding cycle has not unreserved it yet does not count.
        gone = {wp.get_pod().uid for wp in siblings if wp.rejected()}
        waiting = {wp.get_pod().uid for wp in siblings} - gone  # also those waiting since before a reload
        assigned = self.manager.assigned_count(group, exclude=gone | {pod.uid}, waiting=waiting)
        if assigned + 1 >= group.min_member:
            for wp in siblings:
                wp.allow(NAME)
            return None, 0.0
        msg = f'waiting for PodGroup "{full}": {assigned + 1} of minMember {group.min_member} assigned'
        return Status(Code.WAIT, [msg]), float(self._timeout(group))

    def _timeout(self, group: PodGroup) -> int:
        return group.schedule_timeout_seconds or self.args.permit_waiting_time_seconds

    def _reject_waiting(self, group: PodGroup, msg: str) -> None:
        """Reject every waiting member; they stop counting as assigned now, not when their binding
        cycles get to Unreserve (a member permitted meanwhile must not count them)."""
        for wp in self.handle.iterate_over_waiting_pods():
            p = wp.get_pod()
            if p.namespace == group.namespace and group_name(p) == group.name:
                wp.reject(NAME, msg)
                self.manager.unreserve(p)

    # ----- events -------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A PodGroup created or changed, room freed or added; sibling arrivals and backoff ends
        activate the group's pods directly."""
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD_GROUP, ActionType.ADD | ActionType.UPDATE),
                                 _podgroup_changed),
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE), _other_pod_deleted),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)),
        ]

    def on_pod_event(self, deleted: bool, pod: Pod) -> None:
        self.manager.on_pod_event(deleted, pod)

    def on_object_event(self, kind: str, deleted: bool, obj: Mapping[str, Any]) -> None:
        if kind != KIND:
            return
        self.manager.on_podgroup_event(deleted, obj)
        if deleted:  # members waiting for a group that is gone would hold their nodes until the timeout
            group = podgroup_from_api(obj)
            self._reject_waiting(group, f'PodGroup "{group.full_name}" was deleted')


def _podgroup_changed(pod: Pod, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> QueueingHint:
    """Only the pod's own group, created or with a new spec: our own status writes must not requeue."""
    if new is None:
        return QueueingHint.QUEUE_SKIP
    meta = new.get("metadata") or {}
    if meta.get("namespace") != pod.namespace or meta.get("name") != group_name(pod):
        return QueueingHint.QUEUE_SKIP
    if old is not None and old.get("spec") == new.get("spec"):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def _other_pod_deleted(pod: Pod, old: Pod | None, new: Any) -> QueueingHint:
    """Room freed by another pod; a sibling released by the group's own rejection does not help it."""
    if old is not None and group_name(pod) and group_full_name(old) == group_full_name(pod):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def _creation(obj: Mapping[str, Any] | None) -> float | None:
    if obj is None:
        return None
    return parse_time((obj.get("metadata") or {}).get("creationTimestamp"))


def _amount(resource: str, value: int) -> str:
    return f"{value}m" if resource == "cpu" else str(value)
