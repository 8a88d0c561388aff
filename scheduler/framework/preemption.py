"""The preemption evaluator PostFilter plugins share (upstream ``pkg/scheduler/framework/preemption/preemption.go``).

Given the filter verdicts of a pod that fits nowhere, the evaluator

1. checks that the pod may preempt at all (the plugin decides: preemptionPolicy, victims of an
   earlier preemption still terminating on the nominated node);
2. dry-runs preemption on the nodes the filters called ``Unschedulable`` (an
   UnschedulableAndUnresolvable verdict cannot be fixed by removing pods), starting at a random
   offset and stopping once enough candidates are found;
3. picks the best candidate node (fewest PDB violations, lowest highest victim priority, lowest
   priority sum, fewest victims, latest start of the most important victims, first found);
4. evicts the victims through the handle and clears the nomination of lower-priority pods
   nominated to that node, then nominates the pod there. With asynchronous preemption the pod is
   nominated at once and the API calls run on a worker thread; until the calls for all victims but
   the last are done, ``is_pod_running_preemption`` is true and DefaultPreemption's PreEnqueue keeps
   the pod out of activeQ. The flag drops before the last victim is deleted, so that deletion's
   event finds the pod requeueable (upstream ``prepareCandidateAsync``).

Differences from upstream, on purpose:

* The dry run checks nodes one after the other in rotation order, so "enough candidates" stops it
  at a well-defined node instead of wherever 16 goroutines happened to be.
* Asynchronous preemption (SchedulerAsyncPreemption, beta and on by default in upstream 1.37) runs the API
  calls of one preemption on a worker thread of a small pool instead of a goroutine, and evicts the
  victims before the last one sequentially rather than in parallel. With the gate off the scheduling
  thread makes the calls itself (upstream's synchronous path).
* Ties that upstream breaks by Go map order (explicit node statuses, the last tie in node
  selection) are broken by snapshot order and dry-run order; the random offset still spreads
  preemption over the cluster, and a seeded rng makes it reproducible.
* Pods without status.startTime count as started "now" (upstream calls time.Now() for each
  comparison); one "now" per evaluation keeps the ordering consistent.
* Extenders with a preempt verb narrow the candidates in configuration order (ignorable ones
  last); the surviving candidates keep the dry run's order where upstream rebuilds them from a Go map.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from scheduler.framework.extender import ExtenderError
from scheduler.framework.extenderv1 import Victims
from scheduler.framework.fit_error import Diagnosis, FitError, new_default_node_to_status
from scheduler.framework.interface import CycleState, Handle, NodeToStatus, PostFilterResult
from scheduler.framework.preemptor import GroupPreemptor
from scheduler.framework.status import (
    Code,
    Status,
    code_name,
    code_of,
    error,
    success,
    unresolvable,
    unschedulable,
)
from scheduler.framework.types import NodeInfo
from scheduler.model.errors import InvalidObjectError
from scheduler.model.labels import LabelSelector, parse_label_selector
from scheduler.model.pod import Pod, parse_time

log = structlog.get_logger(__name__)

# Values upstream's PodReasonPreemptionByScheduler / DisruptionTarget condition carry.
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

NOT_HELPFUL_MSG = "Preemption is not helpful for scheduling"

_PRIORITY_OFFSET = 2**31  # math.MaxInt32 + 1: makes every priority non-negative in the sum score

# Worker threads running asynchronous preemptions (upstream: one goroutine each). Each spends its time
# waiting on API calls, so a few threads keep up with the scheduling thread.
ASYNC_PREEMPTION_WORKERS = 8


# --- victims, candidates, PDBs ------------------------------------------------------------------


# The preemptor types of the preemption metrics' labels (upstream's EntityKeyType).
POD_PREEMPTOR = "pod"
PODGROUP_PREEMPTOR = "podgroup"


def preemptor_type(group: GroupPreemptor | None) -> str:
    return POD_PREEMPTOR if group is None else PODGROUP_PREEMPTOR


@dataclass(slots=True)
class Candidate:
    """A node the pod can be nominated to once its victims are gone."""

    name: str
    victims: Victims


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """What preemption reads of a policy/v1 PodDisruptionBudget."""

    namespace: str
    name: str
    selector: LabelSelector | None  # None: the selector is invalid and matches nothing
    disruptions_allowed: int
    disrupted_pods: frozenset[str]


def pdb_from_api(obj: Mapping[str, Any]) -> PodDisruptionBudget:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    ns = meta.get("namespace") or ""
    name = meta.get("name") or ""
    selector: LabelSelector | None
    try:
        selector = parse_label_selector(spec.get("selector"), f"PodDisruptionBudget {ns}/{name}", "spec.selector")
    except InvalidObjectError:
        selector = None
    allowed = status.get("disruptionsAllowed")
    disrupted = status.get("disruptedPods") or {}
    return PodDisruptionBudget(
        namespace=ns,
        name=name,
        selector=selector,
        disruptions_allowed=allowed if isinstance(allowed, int) and not isinstance(allowed, bool) else 0,
        disrupted_pods=frozenset(disrupted) if isinstance(disrupted, Mapping) else frozenset(),
    )


def pdbs_from_objects(objs: Iterable[Mapping[str, Any]]) -> list[PodDisruptionBudget]:
    return [pdb_from_api(o) for o in objs]


def pdb_violation_check(pdbs: Sequence[PodDisruptionBudget]) -> Callable[[Pod], bool]:
    """FilterVictimsWithPDBViolation's podIsViolating over one set of budgets: called pod by pod, it spends
    each matching PDB's remaining budget and says whether the pod's eviction exceeds one. A pod stops at the
    first PDB it exceeds (v1.37; the PDBs after it keep their budget); one already listed in a PDB's
    disruptedPods has been counted by the API server and spends nothing there."""
    allowed = [p.disruptions_allowed for p in pdbs]

    def violates(pod: Pod) -> bool:
        if not pod.labels:
            return False
        for i, pdb in enumerate(pdbs):
            if pdb.namespace != pod.namespace or pdb.selector is None:
                continue
            # An empty selector matches nothing here (policy semantics), unlike label selectors elsewhere.
            if pdb.selector.empty or not pdb.selector.matches(pod.labels):
                continue
            if pod.name in pdb.disrupted_pods:
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                return True
        return False

    return violates


def filter_pods_with_pdb_violation(
    pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """Split ``pods`` (order kept) into those whose eviction would exceed a PDB's remaining budget and
    the rest (budgets spent in that order, pdb_violation_check)."""
    violates = pdb_violation_check(pdbs)
    violating: list[Pod] = []
    non_violating: list[Pod] = []
    for pod in pods:
        (violating if violates(pod) else non_violating).append(pod)
    return violating, non_violating


def pod_start_time(pod: Pod, now: float) -> float:
    """status.startTime, or ``now`` for pods that have not started (assumed, bound but not running)."""
    raw = (pod.raw.get("status") or {}).get("startTime")
    return parse_time(raw) if raw else now


def importance_key(now: float) -> Callable[[Pod], tuple[int, float]]:
    """Sort key putting the most important pod first: higher priority, then the earlier start."""
    return lambda p: (-p.priority, pod_start_time(p, now))


def earliest_start_of_most_important(victims: Victims, now: float) -> float | None:
    """util.GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    if not victims.pods:
        return None
    best = victims.pods[0].priority
    earliest = pod_start_time(victims.pods[0], now)
    for p in victims.pods:
        if p.priority == best:
            earliest = min(earliest, pod_start_time(p, now))
        elif p.priority > best:
            best, earliest = p.priority, pod_start_time(p, now)
    return earliest


def terminating_by_preemption(pod: Pod) -> bool:
    """Being deleted, with the DisruptionTarget condition a scheduler's preemption sets."""
    if pod.deletion_timestamp is None:
        return False
    for c in (pod.raw.get("status") or {}).get("conditions") or []:
        if c.get("type") == DISRUPTION_TARGET:
            return bool(c.get("status") == "True" and c.get("reason") == REASON_PREEMPTION_BY_SCHEDULER)
    return False


def aggregate_errors(messages: Sequence[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message as is, several de-duplicated in brackets."""
    if len(messages) == 1:
        return messages[0]
    seen: list[str] = []
    for m in messages:
        if m not in seen:
            seen.append(m)
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


def nodes_for_status_code(statuses: NodeToStatus, nodes: Sequence[NodeInfo], code: Code) -> list[NodeInfo]:
    """The nodes (snapshot order) whose verdict, explicit or the absent default, has ``code``."""
    if code_of(statuses.absent) == code:
        if not statuses.statuses:
            return list(nodes)
        return [n for n in nodes if code_of(statuses.get(n.name)) == code]
    return [n for n in nodes if n.name in statuses.statuses and code_of(statuses.statuses[n.name]) == code]


# --- the plugin side ----------------------------------------------------------------------------

ScoreFunc = Callable[[str], float]


class PreemptionInterface(Protocol):
    """What a preemption plugin decides; the evaluator does the rest (upstream preemption.Interface)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...
    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None) -> tuple[bool, str]: ...
    def select_victims_on_node(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[Pod], int, Status | None]: ...
    def ordered_score_funcs(self, nodes_to_victims: Mapping[str, Victims]) -> list[ScoreFunc] | None: ...


@dataclass(slots=True)
class _CandidateList:
    """Candidates up to a capacity; later additions are dropped (upstream candidateList)."""

    capacity: int
    items: list[Candidate] = field(default_factory=list)

    def add(self, c: Candidate) -> None:
        if len(self.items) < self.capacity:
            self.items.append(c)


class Evaluator:
    """Runs preemption for one plugin (``plugin_name`` is used to reject waiting victims)."""

    def __init__(
        self,
        plugin_name: str,
        handle: Handle,
        iface: PreemptionInterface,
        clock: Callable[[], float] = time.time,
        enable_async: bool = False,
    ) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.iface = iface
        self.clock = clock
        self.enable_async = enable_async
        self._mu = threading.Lock()
        self._preempting: set[str] = set()  # uids of pods whose asynchronous preemption is under way
        self._last_victims: dict[str, Pod] = {}  # preemptor uid -> the victim its preemption ends with
        self._executor: ThreadPoolExecutor | None = None
        self._evictor: ThreadPoolExecutor | None = None

    def executor(self) -> ThreadPoolExecutor:
        """The pool running asynchronous preemptions, started on first use."""
        with self._mu:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(ASYNC_PREEMPTION_WORKERS, thread_name_prefix="preemption")
            return self._executor

    def evictor(self) -> ThreadPoolExecutor:
        """The pool an asynchronous preemption evicts its victims on side by side (upstream's Parallelizer:
        ``parallelism`` workers). A pool of its own: the preemptions' workers wait on it, never the reverse."""
        with self._mu:
            if self._evictor is None:
                self._evictor = ThreadPoolExecutor(max(1, self.handle.parallelism()),
                                                   thread_name_prefix="preemption-evict")
            return self._evictor

    def is_pod_running_preemption(self, uid: str) -> bool:
        """The pod's asynchronous preemption is under way and its last victim is not gone yet (v1.37: the
        mark stays through the last eviction, but a last victim the watch no longer has frees the pod)."""
        if uid not in self._preempting:  # nearly every pod: no lock (a set or dict lookup is atomic)
            return False
        with self._mu:
            if uid not in self._preempting:
                return False
            last = self._last_victims.get(uid)
        return last is None or self.handle.pod_exists(last)

    def rng(self) -> random.Random:
        return self.handle.rng()

    # ----- the whole flow -----------------------------------------------------------------------

    def preempt(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """<None, Unschedulable>: not eligible (nomination unchanged). <PostFilterResult(""),
        Unschedulable(FitError message)>: preemption cannot help (nomination cleared). <None, Error>:
        something failed. <PostFilterResult(node), Success("found a potential placement for pod on node N,
        preempting K victims")>: victims evicted, nominate the pod there (v1.37 gives the success a message,
        which ends the FailedScheduling message; v1.34's had none)."""
        began = time.monotonic()
        chosen, result, status = self.evaluate(state, pod, statuses)
        self.handle.preemption_evaluated(POD_PREEMPTOR, code_name(status), time.monotonic() - began)
        if chosen is None:
            return result, status
        best, latest = chosen
        status = self.actuate(best, latest)
        if not success(status):
            return None, status
        return PostFilterResult(best.name), Status(Code.SUCCESS, [
            f"found a potential placement for pod on node {best.name}, preempting {len(best.victims.pods)} victims"])

    def evaluate(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[tuple[Candidate, Pod] | None, PostFilterResult | None, Status | None]:
        """The victims, without evicting them: the best candidate and the pod as the cache has it now, or why
        there is none (preempt's answers)."""
        latest = self.handle.latest_pod(pod)
        if latest is None:
            return None, None, error(f'pods "{pod.name}" not found')
        pod = latest
        ok, msg = self.iface.pod_eligible_to_preempt_others(pod, statuses.get(pod.nominated_node_name))
        if not ok:
            log.debug("pod is not eligible for preemption", pod=pod.key, reason=msg)
            return None, None, unschedulable(msg)
        all_nodes = list(self.handle.snapshot().list())
        candidates, node_statuses, errors = self.find_candidates(state, all_nodes, pod, statuses)
        if errors and not candidates:
            return None, None, error(aggregate_errors(errors))
        if not candidates:
            fit_error = FitError(pod, len(all_nodes), Diagnosis(node_to_status=node_statuses))
            node_statuses.absent = unresolvable(NOT_HELPFUL_MSG)
            return None, PostFilterResult(""), unschedulable(fit_error.message())
        candidates, status = self.call_extenders(pod, candidates)
        if not success(status):
            return None, None, status
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, None, unschedulable("no candidate node for preemption")
        log.info("preemption target chosen", pod=pod.key, node=best.name,
                 victims=[v.key for v in best.victims.pods])
        return (best, pod), None, None

    def find_candidates(
        self, state: CycleState, all_nodes: Sequence[NodeInfo], pod: Pod, statuses: NodeToStatus
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """Dry-run preemption on the nodes whose filter verdict was Unschedulable."""
        if not all_nodes:
            return [], new_default_node_to_status(), ["no nodes available"]
        potential = nodes_for_status_code(statuses, all_nodes, Code.UNSCHEDULABLE)
        if not potential:
            log.debug("preemption will not help schedule the pod on any node", pod=pod.key)
            return [], new_default_node_to_status(), []
        pdbs = pdbs_from_objects(self.handle.objects().list("PodDisruptionBudget"))
        offset, num_candidates = self.iface.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, num_candidates)

    def call_extenders(self, pod: Pod, candidates: list[Candidate]) -> tuple[list[Candidate], Status | None]:
        """Let each interested extender with a preempt verb accept, narrow or drop candidates. An
        extender's error, or a candidate it returns without victims, fails preemption unless the
        extender is ignorable (then it is skipped, or that candidate dropped)."""
        extenders = [e for e in self.handle.extenders() if e.supports_preemption() and e.is_interested(pod)]
        if not extenders or not candidates:
            return candidates, None
        victims: dict[str, Victims] = {c.name: c.victims for c in candidates}
        for ext in extenders:
            try:
                answer = ext.process_preemption(pod, victims, self.handle.snapshot())
            except ExtenderError as exc:
                if ext.is_ignorable():
                    log.info("skipped extender as it returned error and has ignorable flag set",
                             extender=ext.name(), error=str(exc))
                    continue
                return [], error(str(exc))
            for node_name, v in list(answer.items()):
                if v.pods:
                    continue
                if not ext.is_ignorable():
                    return [], error(f'expected at least one victim pod on node "{node_name}"')
                log.info("ignored node for which the extender didn't report victims", node=node_name,
                         extender=ext.name())
                del answer[node_name]
            victims = answer
            if not victims:
                break
        order = {c.name: i for i, c in enumerate(candidates)}
        names = sorted(victims, key=lambda n: order.get(n, len(order)))
        return [Candidate(n, victims[n]) for n in names], None

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: Pod,
        potential_nodes: Sequence[NodeInfo],
        pdbs: Sequence[PodDisruptionBudget],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """Select victims on copies of the nodes, from ``offset`` round the list, until at least one
        PDB-respecting candidate exists and ``num_candidates`` were found. Non-violating candidates
        come first in the result. Returns the candidates, the verdicts of the other nodes and the
        error messages met on the way."""
        non_violating = _CandidateList(num_candidates)
        violating = _CandidateList(num_candidates)
        node_statuses = new_default_node_to_status()
        errors: list[str] = []
        n = len(potential_nodes)
        for i in range(n):
            node_copy = potential_nodes[(offset + i) % n].clone()
            name = node_copy.name
            pods, num_violations, status = self.iface.select_victims_on_node(state.clone(), pod, node_copy, pdbs)
            if success(status) and pods:
                c = Candidate(name, Victims(pods, num_violations))
                (non_violating if num_violations == 0 else violating).add(c)
                nvc, vc = len(non_violating.items), len(violating.items)
                if nvc > 0 and nvc + vc >= num_candidates:
                    break
                continue
            if success(status):
                status = error(f'expected at least one victim pod on node "{name}"')
            assert status is not None
            if status.code == Code.ERROR:
                errors.append(status.message)
            node_statuses.statuses[name] = status
        return non_violating.items + violating.items, node_statuses, errors

    # ----- choosing the node --------------------------------------------------------------------

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        victims = {c.name: c.victims for c in candidates}
        funcs = self.iface.ordered_score_funcs(victims)
        chosen = pick_one_node_for_preemption(victims, funcs, self.clock())
        if chosen in victims:
            return Candidate(chosen, victims[chosen])
        log.error("no preemption candidate was selected; taking the first", candidates=list(victims))
        return candidates[0]

    # ----- acting on it (upstream pkg/scheduler/framework/preemption/executor.go)

    def actuate(self, candidate: Candidate, pod: Pod, group: GroupPreemptor | None = None) -> Status | None:
        """actuatePodPreemption / actuatePodGroupPreemption: evict the candidate's victims, on a worker thread
        with asynchronous preemption. ``group``: a pod group preempts, ``pod`` being its first member."""
        kind = preemptor_type(group)
        if group is None:  # observeVictims, before any eviction (a group's: PodGroupEvaluator)
            self.handle.victims_selected(len(candidate.victims.pods))
        self.handle.pdb_violations_caused(kind, candidate.victims.num_pdb_violations)
        if self.enable_async:
            self.prepare_candidate_async(candidate, pod, group)
            return None
        began = time.monotonic()
        status = self.prepare_candidate(candidate, pod, group)
        self.handle.preemption_executed(kind, success(status), time.monotonic() - began)
        return status

    def prepare_candidate(self, candidate: Candidate, pod: Pod, group: GroupPreemptor | None = None) -> Status | None:
        """Evict every victim not already being deleted (stop at the first failure), then clear the
        nomination of the lower-priority pods nominated to the node: they may no longer fit there."""
        for victim in candidate.victims.pods:
            if victim.terminating:  # v1.37: graceful deletion has started, another call is unnecessary
                continue
            status = self._preempt(victim, pod, candidate.name, group)
            if not success(status):
                return status
        self._clear_lower_priority_nominations(candidate.name, pod, group)
        return None

    def _preempt(self, victim: Pod, pod: Pod, node_name: str, group: GroupPreemptor | None) -> Status | None:
        if group is None:
            return self.handle.preempt(victim, pod, node_name, self.plugin_name)
        return self.handle.preempt(victim, pod, node_name, self.plugin_name, group=group)

    def prepare_candidate_async(self, candidate: Candidate, pod: Pod, group: GroupPreemptor | None = None) -> None:
        """Mark the pod (or its group) as preempting and hand the API calls to a worker thread. Victims
        already being deleted need no call (v1.37); with none left there is nothing to do and no mark."""
        victims = [v for v in candidate.victims.pods if not v.terminating]
        if not victims:
            return
        uid = pod.uid if group is None else group.uid
        with self._mu:
            self._preempting.add(uid)
        try:
            self.executor().submit(self._prepare_candidate_in_background, candidate.name, victims, pod, group)
        except RuntimeError:  # the pool was shut down: nothing will clear the mark
            with self._mu:
                self._preempting.discard(uid)
            raise

    def _prepare_candidate_in_background(
        self, node_name: str, victims: list[Pod], pod: Pod, group: GroupPreemptor | None = None
    ) -> None:
        """Clear lower-priority nominations, evict all victims but the last side by side (no new eviction
        starts after a failure), then the last one, which the preempting mark now waits for (v1.37; v1.34
        dropped the mark before it); the mark goes when its call returns. After a failure the pod (or the
        group's members) is activated, since no deletion event may come to requeue it."""
        began = time.monotonic()
        uid = pod.uid if group is None else group.uid
        ok = False
        try:
            ok = self._clear_lower_priority_nominations(node_name, pod, group)
            if not self._preempt_in_parallel(victims[:-1], pod, node_name, group):
                ok = False
            else:
                with self._mu:
                    self._last_victims[uid] = victims[-1]
                ok = self._preempt_logged(victims[-1], pod, node_name, group) and ok
        except Exception:
            log.exception("asynchronous preemption failed", preemptor=pod.key, node=node_name)
            ok = False
        finally:
            with self._mu:
                self._preempting.discard(uid)
                self._last_victims.pop(uid, None)
        log.debug("asynchronous preemption finished", preemptor=pod.key, node=node_name, ok=ok)
        seconds = time.monotonic() - began
        self.handle.async_preemption_done(ok, seconds)
        self.handle.preemption_executed(preemptor_type(group), ok, seconds)
        if not ok:
            self.handle.activate_pods([pod] if group is None else list(group.pods))

    def _preempt_in_parallel(self, victims: Sequence[Pod], pod: Pod, node_name: str,
                             group: GroupPreemptor | None) -> bool:
        """Parallelizer().Until over the victims with a cancel on the first error: up to ``parallelism``
        workers take the next victim until none is left or one eviction failed (those under way finish).
        False if any failed."""
        if len(victims) <= 1:
            return all(self._preempt_logged(v, pod, node_name, group) for v in victims)
        lock = threading.Lock()
        pending = iter(victims)
        failed = threading.Event()

        def work() -> None:
            while not failed.is_set():
                with lock:
                    victim = next(pending, None)
                if victim is None:
                    return
                try:
                    done = self._preempt_logged(victim, pod, node_name, group)
                except Exception:
                    log.exception("asynchronous preemption failed", preemptor=pod.key, victim=victim.key)
                    done = False
                if not done:
                    failed.set()

        pool = self.evictor()
        workers = [pool.submit(work) for _ in range(min(len(victims), max(1, self.handle.parallelism())))]
        for w in workers:
            w.result()
        return not failed.is_set()

    def _preempt_logged(self, victim: Pod, pod: Pod, node_name: str, group: GroupPreemptor | None = None) -> bool:
        status = self._preempt(victim, pod, node_name, group)
        if success(status):
            return True
        assert status is not None
        log.error("could not preempt a victim", preemptor=pod.key, victim=victim.key, error=status.message)
        return False

    def _clear_lower_priority_nominations(self, node_name: str, pod: Pod, group: GroupPreemptor | None = None) -> bool:
        """Lower-priority pods nominated to the node may no longer fit there; False if a clear failed. (For a
        group the node is the domain's name, "cluster", to which no pod is nominated: upstream's as well.)"""
        ok = True
        priority = pod.priority if group is None else group.priority
        for other in self.handle.nominated_pods_for(node_name):
            if other.priority < priority:
                status = self.handle.clear_nominated_node(other)
                if not success(status):
                    assert status is not None
                    log.warning("could not clear nominatedNodeName", pod=other.key, error=status.message)
                    ok = False
        return ok


def pick_one_node_for_preemption(
    nodes_to_victims: Mapping[str, Victims], score_funcs: Sequence[ScoreFunc] | None, now: float
) -> str:
    """Apply score functions in order, keeping the best-scoring nodes, until one remains; the first
    remaining node wins. Victims are assumed sorted most important first."""
    if not nodes_to_victims:
        return ""
    remaining = list(nodes_to_victims)
    if not score_funcs:
        score_funcs = _default_score_funcs(nodes_to_victims, now)
    for f in score_funcs:
        best: list[str] = []
        top = float("-inf")
        for name in remaining:
            score = f(name)
            if score > top:
                top, best = score, [name]
            elif score == top:
                best.append(name)
        if len(best) == 1:
            return best[0]
        remaining = best
    return remaining[0]


def _default_score_funcs(nodes_to_victims: Mapping[str, Victims], now: float) -> list[ScoreFunc]:
    def fewest_pdb_violations(node: str) -> float:
        return -nodes_to_victims[node].num_pdb_violations

    def lowest_highest_priority(node: str) -> float:
        return -nodes_to_victims[node].pods[0].priority

    def lowest_priority_sum(node: str) -> float:
        return -sum(p.priority + _PRIORITY_OFFSET for p in nodes_to_victims[node].pods)

    def fewest_victims(node: str) -> float:
        return -len(nodes_to_victims[node].pods)

    def latest_start(node: str) -> float:
        t = earliest_start_of_most_important(nodes_to_victims[node], now)
        return float("-inf") if t is None else t

    return [fewest_pdb_violations, lowest_highest_priority, lowest_priority_sum, fewest_victims, latest_start]
