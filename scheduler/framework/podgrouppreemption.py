"""Workload-aware preemption: the PodGroupEvaluator (kube-scheduler v1.37
``pkg/scheduler/framework/preemption/podgrouppreemption.go``), run by DefaultPreemption's PodGroupPostFilter when a
pod group's cycle found no room for it (GenericWorkload on).

The domain is the whole cluster. Every victim of lower priority than the group (a pod, or a whole PodGroup whose
``disruptionMode`` is ``all``) is removed from the cycle's snapshot at once, and the group's own scheduling
algorithm is run again (``PodGroupSchedulingFunc``). If the group then fits, victims are given back one at a
time, most important first and PDB-protected ones before the rest: a victim stays if every proposed member still
passes the filters on its node with the victim back (the members before it assumed and reserved there). The
victims left are evicted as the single-pod path evicts (DisruptionTarget condition, delete, Preempted event, with
the pod group as the preemptor), and each placed member is nominated to its node.

Messages are upstream's; DefaultPreemption prefixes them with ``pod group preemption: ``.

Differences from upstream, on purpose: see ``preemption_victims`` (stable ordering of equal victims, one "now"
per evaluation). The evaluation's duration is not a metric here (``scheduler_preemption_evaluation_duration``
is not exported by py-scheduler for pods either).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from scheduler.framework.extenderv1 import Victims
from scheduler.framework.interface import Handle
from scheduler.framework.listers import MutableSharedLister
from scheduler.framework.podgroup import (
    PodGroupInfo,
    PodGroupPostFilterResult,
    PodGroupSchedulingFunc,
    ProposedAssignment,
)
from scheduler.framework.preemption import (
    PODGROUP_PREEMPTOR,
    Candidate,
    Evaluator,
    PodDisruptionBudget,
    pdbs_from_objects,
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
from scheduler.framework.preemptor import GroupPreemptor
from scheduler.framework.status import Code, Status, code_name, success, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod
from scheduler.model.workload import PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER, PodGroup

log = structlog.get_logger(__name__)

NOT_ELIGIBLE_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
ONGOING_PREEMPTION = "ongoing preemption on nominated nodes"
NO_VICTIMS = "No preemption victims found for incoming preemptor"
CLUSTER_DOMAIN = "cluster"  # the candidate's name: the domain, where a pod's candidate is a node


def resolve_preemption_policy(pg: PodGroup | None, pods: Sequence[Pod], enable_pod_group_policy: bool) -> str:
    """resolvePreemptionPolicy: the PodGroup's spec.preemptionPolicy with PodGroupPreemptionPolicy (alpha, off by
    default); without it, Never as soon as one member's pod says Never."""
    if enable_pod_group_policy:
        if pg is not None and pg.preemption_policy is not None:
            return pg.preemption_policy
        return PREEMPT_LOWER_PRIORITY
    if any(p.preemption_policy == PREEMPT_NEVER for p in pods):
        return PREEMPT_NEVER
    return PREEMPT_LOWER_PRIORITY


@dataclass(slots=True)
class _Selection:
    """selectVictimsResult."""

    nominations: dict[str, str]  # member "namespace/name" -> node
    victims: list[Victim]
    num_pdb_violations: int

    @property
    def pods(self) -> list[Pod]:
        return [p for v in self.victims for p in v.pods]

    @property
    def num_pod_group_disruptions(self) -> int:
        return sum(1 for v in self.victims if v.is_group)


class PodGroupEvaluator:
    """Preemption for a pod group over the whole cluster. ``evaluator`` is the plugin's pod Evaluator, whose
    executor (synchronous or asynchronous evictions, the preempting marks PreEnqueue reads) it shares."""

    def __init__(self, handle: Handle, evaluator: Evaluator, enable_pod_group_preemption_policy: bool = False) -> None:
        self.handle = handle
        self.evaluator = evaluator
        self.enable_pod_group_preemption_policy = enable_pod_group_preemption_policy
        self.lookups = PodGroupLookups(lambda: handle.pod_group_manager())

    # ----- the whole flow -----------------------------------------------------------------------

    def preempt(
        self, pg_info: PodGroupInfo, scheduling_func: PodGroupSchedulingFunc, mutations: MutableSharedLister
    ) -> tuple[PodGroupPostFilterResult | None, Status | None]:
        """<None, Unschedulable>: the group may not preempt. <its members' current nominations, Success("ongoing
        preemption on nominated nodes")>: victims of an earlier preemption are still terminating. <None, status>:
        no victims (UnschedulableAndUnresolvable), the group does not fit even without them (the algorithm's
        status), or an error. <nominations, Success("found a placement for podgroup, preempting K victims")>:
        victims evicted (or being evicted), members nominated. The caller runs it in a mutation session of the
        cycle's snapshot (``mutations``) and ends it afterwards."""
        members = list(pg_info.unscheduled_pods)
        pg = pg_info.pod_group
        if pg is None or not members:
            return None, Status(Code.ERROR, [f"pod group {pg_info.namespace}/{pg_info.name} has no object or pods"])
        priority = pg_info.priority
        if resolve_preemption_policy(pg, members, self.enable_pod_group_preemption_policy) == PREEMPT_NEVER:
            log.debug("preemptor is not eligible for preemption", preemptor=pg.key, reason=NOT_ELIGIBLE_POLICY_NEVER)
            return None, unschedulable(NOT_ELIGIBLE_POLICY_NEVER)
        if self._is_ongoing_preemption(members, priority, mutations.get):
            return PodGroupPostFilterResult({p.key: p.nominated_node_name for p in members}), Status(
                Code.SUCCESS, [ONGOING_PREEMPTION])
        now = self.evaluator.clock()
        try:
            victims = cross_nodes_victims(self.handle.snapshot().list(), self.lookups.pod_group,
                                          self.lookups.scheduled_pods, mutations.get, now)
        except LookupError as exc:
            return None, Status(Code.ERROR, [f"failed to create domain: {exc}"])
        began = time.monotonic()
        selection, status = self.evaluate(priority, victims, scheduling_func, mutations, now)
        self.handle.preemption_evaluated(PODGROUP_PREEMPTOR, code_name(status), time.monotonic() - began)
        if selection is None:
            return None, status
        pods = selection.pods
        log.info("pod group preemption victims chosen", preemptor=pg.key, victims=[p.key for p in pods])
        self.handle.workload_victims_selected(len(pods), selection.num_pod_group_disruptions)
        status = self.evaluator.actuate(Candidate(CLUSTER_DOMAIN, Victims(pods, selection.num_pdb_violations)),
                                        members[0], GroupPreemptor(pg, members, priority))
        if success(status):
            status = Status(Code.SUCCESS, [f"found a placement for podgroup, preempting {len(pods)} victims"])
        return PodGroupPostFilterResult(selection.nominations), status

    def evaluate(
        self,
        priority: int,
        victims: Sequence[Victim],
        scheduling_func: PodGroupSchedulingFunc,
        mutations: MutableSharedLister,
        now: float,
    ) -> tuple[_Selection | None, Status | None]:
        """The victims on the cluster's domain, without evicting them, or why there are none."""
        pdbs = pdbs_from_objects(self.handle.objects().list("PodDisruptionBudget"))
        try:
            return self.select_victims_on_domain(priority, victims, pdbs, scheduling_func, mutations, now)
        except PreemptionSimulationError as exc:
            return None, Status(Code.ERROR, [str(exc)])
        except KeyError as exc:  # the snapshot's AddPod / RemovePod: a node or pod missing
            return None, Status(Code.ERROR, [str(exc.args[0]) if exc.args else str(exc)])

    def select_victims_on_domain(
        self,
        priority: int,
        all_victims: Sequence[Victim],
        pdbs: Sequence[PodDisruptionBudget],
        scheduling_func: PodGroupSchedulingFunc,
        mutations: MutableSharedLister,
        now: float,
    ) -> tuple[_Selection | None, Status | None]:
        """selectVictimsOnDomain: the fewest victims (reprieving the most important first) whose removal lets
        the group's algorithm place its members, with the members' nodes."""
        potential = [v for v in all_victims if v.priority < priority]
        if not potential:
            return None, unresolvable(NO_VICTIMS)
        for v in potential:
            for p in v.pods:
                mutations.remove_pod(p, p.node_name)
        assignments, status = scheduling_func()
        if not success(status):
            return None, status
        potential.sort(key=victim_importance)
        violating, non_violating = filter_victims_with_pdb_violation(potential, pdbs)
        valid = [a for a in assignments.proposed_assignments if a.node_name]
        placed = [a.pod.with_node(a.node_name) for a in valid]  # what each member adds to its node, made once
        to_preempt: list[Victim] = []
        num_violations = 0
        for v, count in violating:
            if not self._reprieve(v, valid, placed, mutations):
                to_preempt.append(v)
                num_violations += count
        for v in non_violating:
            if not self._reprieve(v, valid, placed, mutations):
                to_preempt.append(v)
        to_preempt.sort(key=victim_importance)
        return _Selection({a.pod.key: a.node_name for a in valid}, to_preempt, num_violations), None

    def _reprieve(self, victim: Victim, assignments: Sequence[ProposedAssignment], placed: Sequence[Pod],
                  mutations: MutableSharedLister) -> bool:
        """Give the victim back (snapshot and every member's PreFilter state) and check each member on its node
        in the algorithm's order, assuming (``placed``: the member bound to its node) and reserving the members
        checked so far (the states of the later ones were built with them assumed); undo those at the end. A
        victim that does not fit is removed again."""
        h = self.handle
        self._move(victim, assignments, mutations, add=True)
        undo: list[ProposedAssignment] = []
        try:
            for a, member in zip(assignments, placed, strict=True):
                if not success(h.run_filter_plugins_with_nominated_pods(a.state, a.pod, _node(mutations, a.node_name))):
                    self._move(victim, assignments, mutations, add=False)
                    log.debug("pods are potential preemption victims on domain",
                              pods=[p.key for p in victim.pods], domain=CLUSTER_DOMAIN)
                    return False
                mutations.add_pod(member, a.node_name)
                h.run_reserve_plugins_reserve(a.state, a.pod, a.node_name)
                undo.append(a)
            return True
        finally:
            for a in reversed(undo):
                h.run_reserve_plugins_unreserve(a.state, a.pod, a.node_name)
                mutations.remove_pod(a.pod, a.node_name)

    def _move(self, victim: Victim, assignments: Sequence[ProposedAssignment], mutations: MutableSharedLister,
              add: bool) -> None:
        """Put the victim's pods back on (or take them off) their nodes, telling every member's PreFilter state
        (upstream's addVictimPodsWithPreFilter / removeVictimPodsWithPreFilter)."""
        h = self.handle
        move = mutations.add_pod if add else mutations.remove_pod
        ext = h.run_pre_filter_extension_add_pod if add else h.run_pre_filter_extension_remove_pod
        for p in victim.pods:
            move(p, p.node_name)
            info = _node(mutations, p.node_name)
            for a in assignments:
                s = ext(a.state, a.pod, p, info)
                if not success(s):
                    assert s is not None
                    raise PreemptionSimulationError(s.message)

    def _is_ongoing_preemption(self, members: Sequence[Pod], priority: int,
                               node: Callable[[str], NodeInfo | None]) -> bool:
        """isOngoingPreemption: a member's nominated node holds a lower-priority pod that a scheduler's
        preemption is terminating."""
        for name in dict.fromkeys(p.nominated_node_name for p in members if p.nominated_node_name):
            info = node(name)
            if info is None:
                continue
            for p in info.pods.values():
                if get_pod_priority(p, self.lookups.pod_group) < priority and terminating_by_preemption(p):
                    return True
        return False


class PreemptionSimulationError(Exception):
    """Moving a pod in the simulation failed (a PreFilter extension's error, a node or pod missing): upstream
    returns it as an Error status."""


def _node(mutations: MutableSharedLister, name: str) -> NodeInfo:
    info = mutations.get(name)
    if info is None:
        raise PreemptionSimulationError(f'node "{name}" not found in the snapshot')
    return info
