"""DefaultPreemption (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``).

PostFilter: when a pod fits nowhere, evict lower-priority pods from one node so that it fits there,
and nominate the pod to that node. The flow (candidates, node choice, eviction) is the shared
``scheduler.framework.preemption.Evaluator``; this plugin decides who may preempt, how many nodes to
dry-run and which pods to evict on a node:

* a pod with ``preemptionPolicy: Never`` never preempts; a pod whose nominated node still has
  victims of a scheduler preemption terminating waits for them (unless that node is now
  UnschedulableAndUnresolvable for it);
* victims are the pods of lower priority. All of them are removed, the pod must then pass the
  filters (nominated pods of priority >= its own included), and victims are given back one by one,
  most important first, PDB-protected pods before the others, as long as the pod still fits.

Its messages are upstream's, prefixed with ``preemption: ``.

With SchedulerAsyncPreemption (the default) the victims are evicted on a worker thread; PreEnqueue
keeps the preemptor out of activeQ meanwhile and the plugin registers Pod/Delete (hint: Skip) so the
queue lets deletions reach the gated preemptor, whose other rejecting plugins decide. With the gate
off preemption is synchronous, PreEnqueue never holds a pod back and no event is registered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import DefaultPreemptionArgs
from scheduler.framework.interface import (
    CycleState,
    Handle,
    NodeToStatus,
    PostFilterResult,
)
from scheduler.framework.podgroup import PodGroupInfo, PodGroupPostFilterResult, PodGroupSchedulingFunc
from scheduler.framework.podgrouppreemption import PodGroupEvaluator
from scheduler.framework.preemption import (
    Evaluator,
    PodDisruptionBudget,
    ScoreFunc,
    Victims,
    filter_pods_with_pdb_violation,
    importance_key,
    terminating_by_preemption,
)
from scheduler.framework.preemption_victims import (
    PodGroupLookups,
    Victim,
    cross_nodes_victims,
    filter_victims_with_pdb_violation,
    get_pod_priority,
    victim_importance,
)
from scheduler.framework.status import Code, Status, code_name, code_of, success, unresolvable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.pod import Pod

NAME = "DefaultPreemption"

NOT_ELIGIBLE_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
WAITING_FOR_GROUP_PREEMPTION = "waiting for the preemption for this pod group to be finished"

# (node, victim, preemptor) -> may the victim be preempted, besides having a lower priority.
IsEligiblePod = Callable[[NodeInfo, Pod, Pod], bool]


def _always(node_info: NodeInfo, victim: Pod, preemptor: Pod) -> bool:
    return True


def _skip(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """isPodSchedulableAfterPodDeletion: always Skip (see events_to_register)."""
    return QueueingHint.QUEUE_SKIP


class DefaultPreemption:
    """Preempts lower-priority pods for a pod that fits nowhere, or for a pod group whose cycle failed."""

    name = NAME

    def __init__(self, args: DefaultPreemptionArgs | Mapping[str, Any], handle: Handle) -> None:
        a = plugin_args(DefaultPreemptionArgs, args)
        self.min_candidate_nodes_percentage = a.min_candidate_nodes_percentage
        self.min_candidate_nodes_absolute = a.min_candidate_nodes_absolute
        self.handle = handle
        self.enable_async_preemption = handle.features().enable_async_preemption
        self.evaluator = Evaluator(NAME, self.handle, self, enable_async=self.enable_async_preemption)
        self.enable_generic_workload = handle.features().enable_generic_workload
        self.pod_group_evaluator = PodGroupEvaluator(
            handle, self.evaluator, handle.features().enable_pod_group_preemption_policy,
        ) if self.enable_generic_workload else None
        self.lookups = PodGroupLookups(lambda: handle.pod_group_manager())
        self.is_eligible_pod: IsEligiblePod = _always

    # ----- extension points ---------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        result, status = self.evaluator.preempt(state, pod, statuses)
        if status is not None and status.message:
            return result, Status(status.code, [f"preemption: {status.message}"], error=status.error)
        return result, status

    def pod_group_post_filter(
        self, state: CycleState, pod_group: PodGroupInfo, scheduling_func: PodGroupSchedulingFunc
    ) -> tuple[PodGroupPostFilterResult | None, Status | None]:
        """Workload-aware preemption for a group whose cycle failed (podgrouppreemption.PodGroupEvaluator), on
        the cycle's snapshot, which is as it was again when this returns."""
        if self.pod_group_evaluator is None:  # no pod-group cycle runs without GenericWorkload
            return None, Status(Code.UNSCHEDULABLE, ["pod group preemption: GenericWorkload is off"])
        snapshot = self.handle.mutable_snapshot()
        try:
            snapshot.start_mutations()
        except RuntimeError as exc:
            failed = Status(Code.ERROR, [f"pod group preemption: failed to start mutations: {exc}"], error=exc)
            self.handle.workload_preemption_attempted(code_name(failed))
            return None, failed
        try:
            result, status = self.pod_group_evaluator.preempt(pod_group, scheduling_func, snapshot)
        finally:
            snapshot.end_mutations()
        self.handle.workload_preemption_attempted(code_name(status))
        if status is not None and status.message:
            return result, Status(status.code, [f"pod group preemption: {status.message}"], error=status.error)
        return result, status

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Holds a pod back while its asynchronous preemption runs, or its pod group's."""
        if not self.enable_async_preemption:
            return None
        if self.enable_generic_workload and pod.pod_group_name:
            try:
                pg = self.handle.pod_group_manager().pod_groups().get(pod.namespace, pod.pod_group_name)
            except LookupError:  # not this plugin's job to hold back the pods of an unknown group
                return None
            if self.evaluator.is_pod_running_preemption(pg.uid):
                return unresolvable(WAITING_FOR_GROUP_PREEMPTION)
            return None
        if self.evaluator.is_pod_running_preemption(pod.uid):
            return unresolvable(WAITING_FOR_PREEMPTION)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod/Delete with a Skip hint: deletions may ungate a preemptor, but the plugins that rejected
        it decide whether they help. Nothing when PreEnqueue never rejects (synchronous preemption)."""
        if not self.enable_async_preemption:
            return []
        return [ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE), _skip)]

    # ----- the preemption.Interface -------------------------------------------------------------

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """max(numNodes * percentage / 100, absolute), capped at numNodes."""
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        n = max(n, self.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.handle.rng().randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None) -> tuple[bool, str]:
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_POLICY_NEVER
        nominated = pod.nominated_node_name
        if nominated:
            # The nominated node no longer works at all for the pod: look for another one.
            if code_of(nominated_node_status) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            node_info = self.handle.snapshot().get(nominated)
            if node_info is not None:
                for p in node_info.pods.values():
                    # With GenericWorkload a group's member counts with its group's priority (NewPodVictim).
                    allowed = (self._preemption_allowed(node_info, p, pod) if not self.enable_generic_workload else
                               get_pod_priority(p, self.lookups.pod_group) < pod.priority
                               and self.is_eligible_pod(node_info, p, pod))
                    if allowed and terminating_by_preemption(p):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[Pod], int, Status | None]:
        """The fewest pods (by reprieving the most important first) whose removal lets ``pod`` pass
        the filters on ``node_info``, and how many of them violate a PDB. ``state`` and
        ``node_info`` are copies this method may change."""
        if self.enable_generic_workload:
            return self._select_victims_with_groups(state, pod, node_info, pdbs)
        h = self.handle

        def remove(p: Pod) -> Status | None:
            node_info.remove_pod(p)
            return h.run_pre_filter_extension_remove_pod(state, pod, p, node_info)

        def add(p: Pod) -> Status | None:
            node_info.add_pod(p)
            return h.run_pre_filter_extension_add_pod(state, pod, p, node_info)

        potential: list[Pod] = []
        for p in list(node_info.pods.values()):
            if self._preemption_allowed(node_info, p, pod):
                potential.append(p)
                s = remove(p)
                if not success(s):
                    return [], 0, s
        if not potential:
            return [], 0, unresolvable("No preemption victims found for incoming pod")
        # Even without every lower-priority pod the pod does not fit: this node cannot help.
        s = h.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if not success(s):
            return [], 0, s
        key = importance_key(self.evaluator.clock())
        potential.sort(key=key)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[Pod] = []
        num_violating = 0
        for group, counts in ((violating, True), (non_violating, False)):
            for p in group:
                s = add(p)
                if not success(s):
                    return [], 0, s
                if success(h.run_filter_plugins_with_nominated_pods(state, pod, node_info)):
                    continue  # reprieved: the pod fits with this one staying
                s = remove(p)
                if not success(s):
                    return [], 0, s
                victims.append(p)
                if counts:
                    num_violating += 1
        if violating and non_violating:
            victims.sort(key=key)
        return victims, num_violating, None

    def _select_victims_with_groups(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[Pod], int, Status | None]:
        """select_victims_on_node with GenericWorkload (v1.37): the victims are units (a PodGroup with
        disruptionMode all is one, with its members on other nodes), of the group's priority for a member. Only
        this node's copy changes; a member elsewhere is removed from (added to) the PreFilter state alone."""
        h = self.handle
        main = node_info.name
        snapshot = h.snapshot()
        try:
            victims = cross_nodes_victims([snapshot.get(main) or node_info], self.lookups.pod_group,
                                          self.lookups.scheduled_pods,
                                          snapshot.get, self.evaluator.clock())
        except LookupError as exc:
            return [], 0, Status(Code.ERROR, [str(exc)])

        def move(v: Victim, add: bool) -> Status | None:
            for p in v.pods:
                info = node_info if p.node_name == main else v.affected_nodes[p.node_name]
                if p.node_name == main:
                    if add:
                        node_info.add_pod(p)
                    else:
                        node_info.remove_pod(p)
                ext = h.run_pre_filter_extension_add_pod if add else h.run_pre_filter_extension_remove_pod
                s = ext(state, pod, p, info)
                if not success(s):
                    return s
            return None

        potential = [v for v in victims if v.priority < pod.priority and all(
            self.is_eligible_pod(node_info if p.node_name == main else v.affected_nodes[p.node_name], p, pod)
            for p in v.pods)]
        if not potential:
            return [], 0, unresolvable("No preemption victims found for incoming pod")
        for v in potential:
            s = move(v, add=False)
            if not success(s):
                return [], 0, s
        s = h.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if not success(s):
            return [], 0, s
        potential.sort(key=victim_importance)
        violating, non_violating = filter_victims_with_pdb_violation(potential, pdbs)
        chosen: list[Victim] = []
        num_violating = 0
        for v, count in [*violating, *((v, 0) for v in non_violating)]:
            s = move(v, add=True)
            if not success(s):
                return [], 0, s
            if success(h.run_filter_plugins_with_nominated_pods(state, pod, node_info)):
                continue  # reprieved
            s = move(v, add=False)
            if not success(s):
                return [], 0, s
            chosen.append(v)
            num_violating += count
        if violating and non_violating:
            chosen.sort(key=victim_importance)
        return [p for v in chosen for p in v.pods], num_violating, None

    def ordered_score_funcs(self, nodes_to_victims: Mapping[str, Victims]) -> list[ScoreFunc] | None:
        """None: the evaluator's default ordering."""
        return None

    # ----- helpers ------------------------------------------------------------------------------

    def _preemption_allowed(self, node_info: NodeInfo, victim: Pod, preemptor: Pod) -> bool:
        return victim.priority < preemptor.priority and self.is_eligible_pod(node_info, victim, preemptor)
