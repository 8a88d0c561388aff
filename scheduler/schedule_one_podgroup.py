"""Scheduling one pod group (upstream pkg/scheduler/schedule_one_podgroup.go, GenericWorkload on; CompositePodGroup is
not built, so a group is always a leaf PodGroup).

The queue pops a group whole (queue/pod_group_paths.py). Its members are placed one by one on the cycle's snapshot:
each is assumed there (``Snapshot.assume_pod``) and reserved, with a revert function that undoes both; GangScheduling's
PlacementFeasible ends a hopeless attempt early. Every simulated assumption is reverted when the algorithm ends;
only if the group's status is success do the members that found a node go through prepareForBindingCycle (the
cache's assume, Reserve, Permit) and their binding cycles. With TopologyAwareWorkloadScheduling the algorithm runs
once per generated placement and the PlacementScore plugins pick the best. A failed group runs the
PodGroupPostFilter plugins (preemption), then every member not bound gets its FailureHandler with upstream's
status, and the PodGroup its PodGroupInitiallyScheduled condition.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from scheduler.framework.fit_error import FitError, FrameworkError, NoNodesAvailableError
from scheduler.framework.interface import CycleState
from scheduler.framework.podgroup import (
    Placement,
    PlacementProgress,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupPostFilterResult,
    ProposedAssignment,
)
from scheduler.framework.runtime import Framework
from scheduler.framework.status import (
    CODE_ERROR,
    CODE_SUCCESS,
    CODE_UNSCHEDULABLE,
    CODE_WAIT,
    Code,
    Status,
)
from scheduler.model.pod import Pod
from scheduler.model.timefmt import rfc3339
from scheduler.model.workload import (
    POD_GROUP_INITIALLY_SCHEDULED,
    PREEMPT_LOWER_PRIORITY,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    PodGroup,
)
from scheduler.queue.pod_group_queue import QueuedPodGroupInfo
from scheduler.queue.queued_pod_info import QueuedPodInfo
from scheduler.schedule_one import ScheduleResult, SchedulerState

if TYPE_CHECKING:
    from scheduler.framework.interface import NodeToStatus
    from scheduler.framework.podgroup import PodGroupStatusWriter

log = structlog.get_logger(__name__)

# errPodGroupUnschedulable: upstream wraps a group's rejection in it, so its text leads the status message.
ERR_POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"


def with_error(code: Code, err: str, *reasons: str) -> Status:
    """fwk.NewStatus(code, reasons...).WithError(err): Go's Message() puts the error's text before the reasons."""
    return Status(code, [err, *reasons], error=RuntimeError(err))


def as_error(status: Status | None) -> str:
    """Status.AsError().Error(): the error's own text when it has one, else the message."""
    if status is None:
        return ""
    return str(status.error) if status.error is not None else status.message


def _clone(status: Status | None) -> Status | None:
    return None if status is None else Status(status.code, list(status.reasons), status.plugin, status.error)


def _code(status: Status | None) -> Code:
    return CODE_SUCCESS if status is None else status.code


RevertFns = list[Callable[[], None]]


def revert(fns: RevertFns) -> None:
    """revertFns.revert: last in, first out, then cleared."""
    while fns:
        fns.pop()()


@dataclass(slots=True, eq=False)
class MemberResult:
    """algorithmResult: one member's outcome in the group's cycle. ``nominated``: None leaves its nomination alone,
    "" clears it, a name sets it (upstream's nominatingInfo)."""

    qpi: QueuedPodInfo
    state: CycleState
    status: Status | None
    result: ScheduleResult | None = None
    nominated: str | None = None
    seconds: float = 0.0
    statuses: NodeToStatus | None = None

    @property
    def node_name(self) -> str:
        return self.result.suggested_host if self.result is not None else ""


@dataclass(slots=True, eq=False)
class GroupResult:
    """podGroupAlgorithmResult."""

    info: PodGroupInfo
    status: Status | None
    members: list[MemberResult] = field(default_factory=list)
    waiting_on_preemption: bool = False
    placement_state: CycleState | None = None
    any_scheduled: bool = False


def proposed_assignments(result: GroupResult) -> list[ProposedAssignment]:
    """makeProposedAssignments: the members that found a node."""
    return [ProposedAssignment(m.qpi.pod, m.node_name, m.state)
            for m in result.members if _code(m.status) == CODE_SUCCESS and m.node_name]


class SchedulePodGroup(SchedulerState):
    """The pod-group scheduling cycle of the Scheduler (mixed in like ScheduleOne)."""

    pod_group_status_writer: PodGroupStatusWriter | None

    if TYPE_CHECKING:  # ScheduleOne's
        def handle_scheduling_failure(
            self, fwk: Framework, qpi: QueuedPodInfo, st: Status, cycle: int, start: float, *, message: str,
            plugins: set[str], pending_plugins: set[str] | None = None, nominated: str | None = None,
            clear_nominated: bool = False, statuses: NodeToStatus | None = None,
        ) -> None: ...

        def prepare_for_binding_cycle(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo,
                                      result: ScheduleResult, cycle: int, start: float) -> bool: ...

    # ----- scheduleOnePodGroup, validatePodGroup, skipPodGroupPodSchedule

    def schedule_one_pod_group(self, entity: QueuedPodGroupInfo) -> None:
        """scheduleOnePodGroup."""
        start = self.clock()
        cycle = self.queue.scheduling_cycle
        try:
            self.cache.update_snapshot(self.snapshot)
        except Exception as exc:
            self._failure_before_scheduling(entity, str(exc), cycle, start)
            return
        try:
            entity.info.pod_group = self.snapshot.pod_groups().get(*entity.key)
        except LookupError as exc:
            entity.info.pod_group = None  # no condition is written for it
            self._failure_before_scheduling(entity, str(exc), cycle, start)
            return
        err = self.validate_pod_group(entity)
        if err is not None:
            self._failure_before_scheduling(entity, err, cycle, start)
            return
        fwk = self.frameworks[entity.members[0].pod.scheduler_name]
        self._skip_members(entity)
        if not entity.members:
            self._add_attempted(entity, None)
            return
        log.debug("Attempting to schedule pod group", podGroup=f"{entity.key[0]}/{entity.key[1]}")
        self.pod_group_cycle(fwk, CycleState(), entity, start, cycle)

    def validate_pod_group(self, entity: QueuedPodGroupInfo) -> str | None:
        """validatePodGroup: one scheduler name, the group's priority and one preemption policy for every member,
        queued or scheduled (with PodGroupPreemptionPolicy the PodGroup's own policy, else the first member's);
        upstream's messages."""
        scheduler_name = ""
        group_priority = entity.priority
        group_policy = self.features.enable_pod_group_preemption_policy
        pg = entity.pod_group
        policy = ""  # without the gate: the first member's
        if group_policy:
            policy = pg.effective_preemption_policy if pg is not None else PREEMPT_LOWER_PRIORITY

        def check(pod: Pod) -> str | None:
            nonlocal policy
            if pod.scheduler_name != scheduler_name:
                return ("all pods in a single pod group should have the same .spec.schedulerName set, got: "
                        f'"{pod.scheduler_name}" and "{scheduler_name}"')
            if pod.priority != group_priority:
                return ("all pods in a single pod group should have the same priority as the pod group's priority, "
                        f"got {pod.priority} and {group_priority}")
            if group_policy:
                if pod.preemption_policy != policy:
                    return ("all pods in a single pod group should have the same preemption policy as the pod "
                            f"group's preemption policy, got {pod.preemption_policy} and {policy}")
            elif not policy:
                policy = pod.preemption_policy
            elif pod.preemption_policy != policy:
                return (f"all pods in a single pod group should have the same preemption policy, got "
                        f"{pod.preemption_policy} and {policy}")
            return None

        for m in entity.members:
            if not scheduler_name:
                scheduler_name = m.pod.scheduler_name
            err = check(m.pod)
            if err is not None:
                return err
        try:
            state = self.snapshot.pod_group_states().get(*entity.key)
        except LookupError as exc:
            return f"failed to get pod group state: {exc}"
        for pod in state.scheduled_pods():
            err = check(pod)
            if err is not None:
                return err
        if scheduler_name not in self.frameworks:
            return f'profile not found for scheduler name "{scheduler_name}"'
        return None

    def _skip_members(self, entity: QueuedPodGroupInfo) -> None:
        """skipPodGroupPodSchedule: members being deleted or already assumed leave the attempt."""
        kept = []
        for m in entity.members:
            if m.pod.terminating or self.cache.is_assumed(m.pod.uid):
                self.queue.done(m.pod.uid)
                continue
            kept.append(m)
        if len(kept) != len(entity.members):
            entity.set_members(kept)

    def _failure_before_scheduling(self, entity: QueuedPodGroupInfo, err: str, cycle: int, start: float) -> None:
        """handlePodGroupFailureBeforeScheduling: every member fails with the error; the PodGroup says
        SchedulerError."""
        status = Status(CODE_ERROR, [err], error=RuntimeError(err))
        for m in entity.members:
            fwk = self.frameworks.get(m.pod.scheduler_name)
            if fwk is None:
                log.error("Error occurred", error=f'profile not found for scheduler name "{m.pod.scheduler_name}"')
                self.queue.done(m.pod.uid)
                continue
            self._fail(fwk, MemberResult(m, CycleState(), None), _clone(status), "", cycle, start)
        if entity.pod_group is not None:
            self.update_pod_group_condition(entity.pod_group, "False", REASON_SCHEDULER_ERROR, err)
        self._add_attempted(entity, status)

    # ----- podGroupCycle

    def pod_group_cycle(self, fwk: Framework, group_state: CycleState, entity: QueuedPodGroupInfo, start: float,
                        cycle: int) -> None:
        """podGroupCycle: the algorithm, PodGroupPostFilter after an Unschedulable result, then the result
        submitted."""
        result = self.run_root_scheduling_algorithm(fwk, group_state, entity)
        root_status = result.status
        complete_pod_group_algorithm_result(entity, group_state, result)
        if self.metrics is not None:
            self.metrics.pod_group_algorithm_done(self.clock() - start)
        if _code(root_status) == CODE_UNSCHEDULABLE:
            def scheduling_func() -> tuple[PodGroupAssignments, Status | None]:
                again = self.run_root_scheduling_algorithm(fwk, CycleState(), entity)
                return PodGroupAssignments(None, proposed_assignments(again)), again.status

            pf_result, pf_status = fwk.run_pod_group_post_filter_plugins(group_state, entity.info, scheduling_func)
            apply_pod_group_post_filter_result(result, pf_result, pf_status)
        self.submit_pod_group_algorithm_result(fwk, entity, result, start, cycle, root_status)

    def run_root_scheduling_algorithm(self, fwk: Framework, group_state: CycleState,
                                      entity: QueuedPodGroupInfo) -> GroupResult:
        """runRootSchedulingAlgorithm: the algorithm's simulated assumptions are all reverted before it returns;
        success with no member scheduled is Unschedulable."""
        fns: RevertFns = []
        try:
            result, fns = self.pod_group_scheduling_algorithm(fwk, group_state, entity)
            if _code(result.status) == CODE_SUCCESS and not result.any_scheduled:
                result.status = with_error(CODE_UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE)
            return result
        finally:
            revert(fns)

    def pod_group_scheduling_algorithm(self, fwk: Framework, group_state: CycleState,
                                       entity: QueuedPodGroupInfo) -> tuple[GroupResult, RevertFns]:
        """podGroupSchedulingAlgorithm: placements with TopologyAwareWorkloadScheduling, else the default
        algorithm in one implicit placement."""
        if self.features.enable_topology_aware_workload_scheduling:
            return self.pod_group_scheduling_placement_algorithm(fwk, group_state, entity), []
        placement_state = CycleState()
        placement_state.set_pod_group_scheduling_cycle(group_state)
        return self.pod_group_scheduling_default_algorithm(fwk, placement_state, entity)

    # ----- the default algorithm, member by member

    def pod_group_scheduling_default_algorithm(self, fwk: Framework, placement_state: CycleState,
                                               entity: QueuedPodGroupInfo) -> tuple[GroupResult, RevertFns]:
        """podGroupSchedulingDefaultAlgorithm: PlacementFeasible before the first member and after each; an
        Unschedulable verdict stops early; a member's error stops with an error. Not success: reverted here."""
        info = entity.info
        result = GroupResult(info, with_error(CODE_UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE),
                             placement_state=placement_state)
        fns: RevertFns = []
        try:
            state = self.snapshot.pod_group_states().get(*entity.key)
        except LookupError as exc:
            key = f"{entity.key[0]}/{entity.key[1]}"
            msg = f"failed to get podGroup state for podGroup {key} to compute gang feasibility: {exc}"
            result.status = Status(CODE_ERROR, [msg], error=RuntimeError(msg))
            return result, fns
        progress = PlacementProgress(len(info.unscheduled_pods), state.scheduled_pods_count())
        feasible = fwk.run_placement_feasible_plugins(placement_state, info, progress)
        result.status = feasible
        if _code(feasible) == CODE_ERROR:
            result.status = _error(f"failed to evaluate placement feasibility: {as_error(feasible)}")
            return result, fns
        if _code(feasible) == CODE_UNSCHEDULABLE:
            assert feasible is not None
            result.status = with_error(CODE_UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE, *feasible.reasons)
            return result, fns
        any_scheduled = False
        for qpi in entity.members:
            member, fn = self.pod_group_pod_scheduling_algorithm(fwk, placement_state, qpi)
            result.members.append(member)
            if fn is not None:
                fns.append(fn)
            code = _code(member.status)
            if code != CODE_SUCCESS and not (member.status is not None and member.status.is_rejected()):
                result.status = _error(f"failed to schedule other pod from a pod group: {as_error(member.status)}")
                break
            progress.remaining -= 1
            if code == CODE_SUCCESS:
                progress.scheduled += 1
            feasible = fwk.run_placement_feasible_plugins(placement_state, info, progress)
            if _code(feasible) == CODE_ERROR:
                result.status = _error(f"failed to evaluate placement feasibility: {as_error(feasible)}")
                break
            result.status = feasible
            if _code(feasible) == CODE_UNSCHEDULABLE:
                break
            any_scheduled = any_scheduled or code == CODE_SUCCESS
        if _code(result.status) == CODE_WAIT:
            assert result.status is not None
            result.status = with_error(CODE_UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE, *result.status.reasons)
        result.any_scheduled = any_scheduled
        if _code(result.status) != CODE_SUCCESS:
            revert(fns)
            result.any_scheduled = False
        return result, fns

    def pod_group_pod_scheduling_algorithm(self, fwk: Framework, placement_state: CycleState,
                                           qpi: QueuedPodInfo) -> tuple[MemberResult, Callable[[], None] | None]:
        """podGroupPodSchedulingAlgorithm: the pod's algorithm without PostFilter (PodGroupPostFilter comes after
        the group), then assume and Reserve on the snapshot, with the revert function."""
        pod = qpi.pod
        began = self.clock()
        state = CycleState()
        state.record_plugin_metrics = self.metrics is not None and self.metrics.sample_plugin_metrics()
        state.set_pod_group_scheduling_cycle(placement_state.get_pod_group_scheduling_cycle())
        state.set_placement_cycle_state(placement_state)
        member = MemberResult(qpi, state, None)
        try:
            member.result = self.algorithm.schedule_pod(fwk, state, pod, self.snapshot, self.queue.nominator)
        except Exception as exc:
            member.status, member.nominated, member.statuses = _algorithm_failure(exc, pod)
            member.seconds = self.clock() - began
            return member, None
        finally:
            if self.metrics is not None:
                self.metrics.algorithm_done(self.clock() - began)
        status, fn = self._assume_and_reserve_with_revert(fwk, state, pod, member.result.suggested_host)
        member.seconds = self.clock() - began
        if status is not None:
            member.status, member.result, member.nominated = status, None, ""
            return member, None
        return member, fn

    def _assume_and_reserve_with_revert(self, fwk: Framework, state: CycleState, pod: Pod,
                                        host: str) -> tuple[Status | None, Callable[[], None] | None]:
        """assumeAndReserveWithRevert on the snapshot (the pod-group cycle's assume): the revert runs Unreserve,
        forgets the pod there and restores the nomination assume removed."""
        assumed = pod.with_node(host)
        try:
            self.snapshot.assume_pod(assumed)
        except Exception as exc:
            return Status(CODE_ERROR, [str(exc)], error=exc), None
        self.queue.nominator.delete_nominated_pod_if_exists(pod)

        def undo() -> None:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            try:
                self.snapshot.forget_pod(assumed)
            except KeyError as exc:
                log.error("ForgetPod failed", pod=pod.key, error=str(exc))
            if pod.nominated_node_name:
                self.queue.nominator.add_nominated_pod(pod, pod.nominated_node_name)

        reserve = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if reserve is not None and reserve.code != CODE_SUCCESS:
            undo()
            return reserve, None
        return None, undo

    # ----- the placement algorithm (TopologyAwareWorkloadScheduling)

    def pod_group_scheduling_placement_algorithm(self, fwk: Framework, group_state: CycleState,
                                                 entity: QueuedPodGroupInfo) -> GroupResult:
        """podGroupSchedulingPlacementAlgorithm: each generated placement runs the default algorithm on its nodes
        (reverted after each); the PlacementScore plugins pick among the feasible ones."""
        info = entity.info
        snapshot = self.snapshot
        all_nodes = list(snapshot.list_nodes_in_placement())
        group_state.record_plugin_metrics = True
        placements, status = fwk.run_placement_generate_plugins(group_state, info, all_nodes)
        if _code(status) != CODE_SUCCESS:
            return GroupResult(info, status)
        if self.metrics is not None:
            self.metrics.generated_placements(fwk.profile_name, len(placements))
        parent = snapshot.get_placement()
        first: GroupResult | None = None
        feasible: list[tuple[Placement, GroupResult]] = []
        try:
            for placement in placements:
                began = self.clock()
                try:
                    snapshot.assume_placement(placement)
                except ValueError as exc:
                    return GroupResult(info, _error(f"failed to assume pod group placement: {exc}"))
                placement_state = CycleState()
                placement_state.set_pod_group_scheduling_cycle(group_state)
                self._limit_to_placement(snapshot.get_placement())
                result, fns = self.pod_group_scheduling_default_algorithm(fwk, placement_state, entity)
                revert(fns)
                if _code(result.status) == CODE_ERROR:
                    return result
                first = first or result
                ok = _code(result.status) == CODE_SUCCESS
                if ok:
                    feasible.append((placement, result))
                if self.metrics is not None:
                    self.metrics.placement_evaluated(fwk.profile_name, ok, self.clock() - began)
        finally:
            snapshot.forget_placement()
            self._limit_to_placement(None)
            try:
                snapshot.assume_placement(parent)
            except ValueError as exc:
                log.error("failed to restore parent pod group placement", error=str(exc))
        if not feasible:
            assert first is not None
            first.status = with_error(
                CODE_UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE,
                f"0/{len(placements)} placements are available, first placement status: {as_error(first.status)}")
            return first
        best, status = self.find_best_pod_group_placement(fwk, group_state, info, feasible)
        if best is None:
            return GroupResult(info, status)
        return best

    def _limit_to_placement(self, placement: Placement | None) -> None:
        """The algorithm's candidates for the next members: the placement's nodes (None: every node)."""
        if placement is None:
            self.algorithm.placement_nodes, self.algorithm.placement_names = None, frozenset()
        else:
            self.algorithm.placement_nodes = placement.nodes
            self.algorithm.placement_names = frozenset(n.name for n in placement.nodes)

    def find_best_pod_group_placement(
        self, fwk: Framework, group_state: CycleState, info: PodGroupInfo,
        feasible: list[tuple[Placement, GroupResult]],
    ) -> tuple[GroupResult | None, Status | None]:
        """findBestPodGroupPlacement: the only one, or the highest total score (random among ties)."""
        if len(feasible) == 1:
            return feasible[0][1], None
        assignments = [PodGroupAssignments(p, proposed_assignments(r)) for p, r in feasible]
        states = [r.placement_state or CycleState() for _, r in feasible]
        scores, status = fwk.run_placement_score_plugins(group_state, info, assignments, states)
        if _code(status) != CODE_SUCCESS:
            return None, status
        rng = self.rng if self.rng is not None else random
        for row in scores:
            row.randomizer = rng.randrange(1 << 62)
        best = 0
        for i, row in enumerate(scores[1:], start=1):
            top = scores[best]
            if row.total_score > top.total_score or (row.total_score == top.total_score
                                                     and row.randomizer > top.randomizer):
                best = i
        return feasible[best][1], None

    # ----- submitPodGroupAlgorithmResult

    def submit_pod_group_algorithm_result(self, fwk: Framework, entity: QueuedPodGroupInfo, result: GroupResult,
                                          start: float, cycle: int, root_status: Status | None) -> None:
        """Success: members with a node go to their binding cycles; the rest (and every member otherwise) get
        the FailureHandler with upstream's status; the PodGroup gets its condition; the group is requeued."""
        if len(result.members) != len(entity.members):
            log.error("scheduling error for pod group", podGroup=f"{entity.key[0]}/{entity.key[1]}",
                      error="some pods were not processed")
            result.status = Status(CODE_ERROR, ["scheduling error for pod group, some pods were not processed"])
            result.members = []
            complete_pod_group_algorithm_result(entity, CycleState(), result)
        group_code = _code(result.status)
        group_rejected = result.status is not None and result.status.is_rejected()
        scheduled = unschedulable = 0
        for qpi, member in zip(entity.members, result.members, strict=True):
            member_start = self.clock() - member.seconds
            if group_code == CODE_ERROR:
                st = member.status if _code(member.status) == CODE_ERROR else result.status
                self._fail(fwk, member, _clone(st), "", cycle, member_start)
                continue
            if _code(member.status) == CODE_SUCCESS:
                if group_code == CODE_SUCCESS:
                    member.state.set_pod_group_scheduling_cycle(None)
                    assert member.result is not None
                    if self.prepare_for_binding_cycle(fwk, member.state, qpi, member.result, cycle, member_start):
                        scheduled += 1
                    else:
                        unschedulable += 1
                elif group_rejected:
                    if result.waiting_on_preemption:
                        self._fail(fwk, member, _clone(result.status), member.nominated, cycle, member_start)
                    else:
                        assert result.status is not None
                        st = with_error(CODE_UNSCHEDULABLE, ERR_POD_GROUP_UNSCHEDULABLE, result.status.message)
                        self._fail(fwk, member, st, "", cycle, member_start)
                    unschedulable += 1
                else:
                    msg = f"received unexpected pod group scheduling algorithm status code: {group_code.name}"
                    self._fail(fwk, member, _error(msg), "", cycle, member_start)
                    unschedulable += 1
            else:
                self._fail(fwk, member, member.status, member.nominated, cycle, member_start)
                unschedulable += 1
        pg = entity.pod_group
        if group_code == CODE_SUCCESS:
            message = result.status.message if result.status is not None else ""
            log.info("Successfully scheduled a pod group", podGroup=f"{entity.key[0]}/{entity.key[1]}",
                     scheduledPods=scheduled, unschedulablePods=unschedulable)
            reason, cond_status = REASON_SCHEDULED, "True"
        elif group_rejected:
            assert result.status is not None
            message, reason, cond_status = result.status.message, REASON_UNSCHEDULABLE, "False"
        else:
            message, reason, cond_status = as_error(result.status), REASON_SCHEDULER_ERROR, "False"
            log.error("Error scheduling pod group", podGroup=f"{entity.key[0]}/{entity.key[1]}", error=message)
        if pg is not None:
            self.update_pod_group_condition(pg, cond_status, reason, message)
        if self.metrics is not None:
            outcome = ("scheduled" if group_code == CODE_SUCCESS else
                       ("waiting_on_preemption" if result.waiting_on_preemption else "unschedulable")
                       if group_rejected else "error")
            self.metrics.pod_group_attempt(fwk.profile_name, outcome, self.clock() - start)
        self._add_attempted(entity, root_status)

    def _fail(self, fwk: Framework, member: MemberResult, status: Status | None, nominated: str | None, cycle: int,
              start: float) -> None:
        """FailureHandler for a member (nominated: None keeps, "" clears, a name sets its nomination)."""
        st = status if status is not None else _error("unexpected success")
        exc = st.error
        diagnosis = exc.diagnosis if isinstance(exc, FitError) else None
        latest = self._pending.get(member.qpi.pod.uid)
        if nominated is not None and latest is not None:
            self.queue.nominator.add_nominated_pod(latest, nominated)
        self.handle_scheduling_failure(
            fwk, member.qpi, st, cycle, start, message=st.message,
            # handleSchedulingFailure clears the rejectors and takes them only from a FitError's diagnosis.
            plugins=set(diagnosis.unschedulable_plugins) if diagnosis else set(),
            pending_plugins=set(diagnosis.pending_plugins) if diagnosis else set(),
            nominated=nominated, statuses=diagnosis.node_to_status if diagnosis else member.statuses)

    def _add_attempted(self, entity: QueuedPodGroupInfo, status: Status | None) -> None:
        err = self.queue.add_attempted_pod_group_if_needed(entity, status)
        if err is not None:
            log.error("Failed to add attempted pod group to scheduling queue", error=err)

    # ----- updatePodGroupCondition

    def update_pod_group_condition(self, pg: PodGroup, status: str, reason: str, message: str) -> None:
        """updatePodGroupCondition: never regress a True PodGroupInitiallyScheduled; nothing written when the
        condition would not change (apimeta.SetStatusCondition's answer). Both checks and the patch read the
        cached PodGroup, as upstream's do: a cycle that runs before the watch brought back the previous write
        sends only what differs from the stale copy (util.PatchPodGroupStatus's two-way merge patch)."""
        existing = pg.condition(POD_GROUP_INITIALLY_SCHEDULED)
        if existing is not None and existing.status == "True" and status != "True":
            return
        if (existing is not None and existing.status == status and existing.reason == reason
                and existing.message == message and existing.observed_generation == pg.generation):
            return
        transition = existing.last_transition_time if existing is not None and existing.status == status else ""
        condition: dict[str, Any] = {
            "type": POD_GROUP_INITIALLY_SCHEDULED, "status": status, "observedGeneration": pg.generation,
            "lastTransitionTime": transition or rfc3339(), "reason": reason, "message": message,
        }
        conditions = list((pg.raw.get("status") or {}).get("conditions") or [])
        patch = condition_status_patch(conditions, condition)
        writer = self.pod_group_status_writer
        if writer is None:
            return
        try:
            writer.patch_pod_group_status(pg.namespace, pg.name, patch)
        except Exception as exc:
            log.error("Failed to update PodGroup status", podGroup=pg.key, error=str(exc))


# metav1.Condition's fields as Go marshals an unset one (observedGeneration is omitempty).
_CONDITION_ZERO: dict[str, Any] = {"status": "", "observedGeneration": None, "lastTransitionTime": "",
                                   "reason": "", "message": ""}


def _condition_field(c: Mapping[str, Any], key: str) -> Any:
    value = c.get(key)
    if key == "observedGeneration":
        return value or None
    return _CONDITION_ZERO[key] if value is None else value


def condition_status_patch(conditions: list[Mapping[str, Any]], condition: Mapping[str, Any]) -> dict[str, Any]:
    """strategicpatch.CreateTwoWayMergePatch from a status with ``conditions`` to the same status with
    ``condition`` set (conditions merge by type): a new condition whole, a changed one as its type and the
    fields that differ (a field gone as null), with the order directive."""
    kind = condition["type"]
    old = next((c for c in conditions if c.get("type") == kind), None)
    order = [{"type": c.get("type")} for c in conditions]
    if old is None:
        order.append({"type": kind})
        entry = dict(condition)
    else:
        entry = {"type": kind}
        for key in _CONDITION_ZERO:
            value = _condition_field(condition, key)
            if _condition_field(old, key) != value:
                entry[key] = value
    return {"status": {"$setElementOrder/conditions": order, "conditions": [entry]}}


def _error(message: str) -> Status:
    """fwk.AsStatus(fmt.Errorf(...))."""
    return Status(CODE_ERROR, [message], error=RuntimeError(message))


def _algorithm_failure(exc: Exception, pod: Pod) -> tuple[Status, str | None, NodeToStatus | None]:
    """schedulingAlgorithm's failure in a pod group's cycle: no PostFilter, the nomination left to
    PodGroupPostFilter (None) for a FitError, cleared otherwise."""
    if isinstance(exc, NoNodesAvailableError):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [str(exc)], error=exc), "", None
    if isinstance(exc, FitError):
        return Status(CODE_UNSCHEDULABLE, [str(exc)], error=exc), None, exc.diagnosis.node_to_status
    if isinstance(exc, FrameworkError):
        return exc.status, "", None
    log.exception("Error selecting node for pod", pod=pod.key)
    return Status(CODE_ERROR, [str(exc)], error=exc), "", None


def complete_pod_group_algorithm_result(entity: QueuedPodGroupInfo, group_state: CycleState,
                                        result: GroupResult) -> None:
    """completePodGroupAlgorithmResult: members the algorithm did not reach get the group's status."""
    for qpi in entity.members[len(result.members):]:
        placement_state = CycleState()
        placement_state.set_pod_group_scheduling_cycle(group_state)
        state = CycleState()
        state.set_pod_group_scheduling_cycle(group_state)
        state.set_placement_cycle_state(placement_state)
        result.members.append(MemberResult(qpi, state, _clone(result.status)))


def apply_pod_group_post_filter_result(result: GroupResult, pf_result: PodGroupPostFilterResult | None,
                                       status: Status) -> None:
    """applyPodGroupPostFilterResult: success marks the group waiting on preemption and gives members their
    nominations; an error replaces the group's status; otherwise the plugins' message is appended."""
    if status.code == CODE_SUCCESS:
        result.waiting_on_preemption = True
        infos = pf_result.nominating_infos if pf_result is not None else {}
        for m in result.members:
            node = infos.get(m.qpi.pod.key)
            if node is not None:
                m.nominated = node
    if status.code == CODE_ERROR:
        result.status = status
    elif result.status is not None:
        result.status.reasons.append(status.message)
