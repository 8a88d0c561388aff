"""Scheduling one pod (upstream pkg/scheduler/schedule_one.go).

``ScheduleOne`` holds the Scheduler's scheduling cycle: schedule_one pops a pod and runs it (snapshot,
algorithm, assume, reserve, permit), then hands the pod to its binding cycle (binding_cycle.py);
handle_scheduling_failure reports and requeues. ``SchedulerState`` declares the fields the Scheduler's
methods share, for all the files they live in.

``SchedulingAlgorithm`` is the algorithm (schedulePod, findNodesThatFitPod, prioritizeNodes, selectHost,
numFeasibleNodesToFind): pure with respect to the cluster, it reads a snapshot and runs the framework.
Filtering and scoring run sequentially on the calling thread. Upstream checks nodes with 16
goroutines, but in CPython the filters are CPU-bound Python code that threads would only interleave
under the GIL, so ``parallelism`` is accepted in the configuration and ignored here. Sequential
filtering also makes the set of examined nodes deterministic: exactly the nodes up to the k-th
feasible one, in rotation order.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

import numpy as np
import structlog

from scheduler.cache.cache import Cache, SnapshotInconsistentError
from scheduler.cache.objects import ObjectStore
from scheduler.cache.snapshot import Snapshot
from scheduler.config.types import SchedulerConfiguration
from scheduler.edge import (
    APIWriter,
    Binder,
    EventRecorder,
    ScheduleObserver,
)
from scheduler.framework.batch import NodesAt, OpportunisticBatch, OpportunisticBatches
from scheduler.framework.extender import EXTENDER_NAME, Extender, ExtenderError
from scheduler.framework.extenderv1 import MAX_EXTENDER_PRIORITY
from scheduler.framework.features import Features
from scheduler.framework.fit_error import (
    Diagnosis,
    FitError,
    FrameworkError,
    NoNodesAvailableError,
    new_diagnosis,
)
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleObserver,
    CycleState,
    NodeToStatus,
    PodGroupWriter,
    ScoreMatrix,
    ScorePlugin,
    ScoreRow,
    SharedLister,
)
from scheduler.framework.runtime import Framework, RawScores, score_matrix
from scheduler.framework.status import Code, Status, success, unresolvable
from scheduler.framework.status import error as error_status
from scheduler.framework.types import NodeInfo
from scheduler.metrics import Metrics
from scheduler.model.pod import Pod
from scheduler.queue.pod_group_queue import QueuedPodGroupInfo
from scheduler.queue.queued_pod_info import QueuedPodInfo
from scheduler.queue.scheduling_queue import PriorityQueue

log = structlog.get_logger(__name__)

# ----- the algorithm's results and inputs: ScheduleResult, numFeasibleNodesToFind, selectHost

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5

TieBreak = Literal["heap", "name"]
_maximum = np.maximum.reduce  # ndarray.max() without numpy's Python layer (_methods._amax) in between


class NominatedPods(Protocol):
    """Where nominated pods come from (the queue's Nominator)."""

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]: ...

    def nodes_with_nominated_pods(self) -> set[str]:
        """Nodes with at least one nominated pod: every other node needs one plain filter pass."""
        ...


@dataclass(slots=True)
class ScheduleResult:
    """The chosen node plus what the cycle saw; ``diagnosis`` holds the statuses of the nodes that were
    rejected. (Per-plugin scores go to the framework's CycleObserver.)"""

    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    diagnosis: Diagnosis = field(default_factory=Diagnosis)


def num_feasible_nodes_to_find(
    percentage: int | None, num_all_nodes: int, has_score_plugins_or_extenders: bool = True
) -> int:
    """How many feasible nodes to find before filtering stops.

    ``percentage`` is the profile's percentageOfNodesToScore if set, else the global one; 0/None
    means adaptive (50 % minus 1 % per 125 nodes, at least 5 %). Fewer than 100 nodes → all of them;
    never fewer than 100 otherwise. ``has_score_plugins_or_extenders`` is false only when there is
    no score plugin, no prioritizing extender and no filtering extender: then the first feasible
    node is as good as any, so 1 is enough whatever the cluster size."""
    if not has_score_plugins_or_extenders:
        return 1
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num_nodes = num_all_nodes * pct // 100
    return max(num_nodes, MIN_FEASIBLE_NODES_TO_FIND)


def select_host(totals: Sequence[int] | ScoreRow, tie_break: TieBreak = "heap", names: Sequence[str] = (),
                randomizers: Sequence[int] | None = None) -> int:
    """The index of a node with the highest total score.

    "heap": as kube-scheduler v1.37, whose winner is the top of a max-heap built by Go's heap.Init over
    the scored nodes in feasible order, keyed (total, randomizer); the randomizer is a random draw for
    the nodes an extender scored, 0 otherwise (``randomizers``, parallel to ``totals``; None: all 0).
    Among equal keys heap.Init keeps the first one in pre-order of the implicit binary tree (index i's
    children are 2i+1, 2i+2): a node stays put unless a child is strictly greater, and the left child
    wins unless the right is strictly greater. So without extenders ties fall to a fixed node given the
    feasible order, which upstream's parallel filters make racy and py's sequential walk makes the
    order the nodes were examined in. "name": the tie whose name (``names``, parallel to ``totals``) is
    lexicographically smallest, for `simulate` runs that should not depend on the walk."""
    scores = np.asarray(totals, dtype=np.int64)
    if not scores.size:
        raise ValueError("empty priority list")
    if randomizers is None and tie_break == "heap":
        # The first top score in pre-order is the heap's winner. Found with a fancy index, a reduction, a
        # comparison and a byte search: argmax and take would each release the GIL (to a waiting thread, live).
        order = heap_preorder(len(scores))
        in_preorder = scores[order]
        return order.item((in_preorder == _maximum(in_preorder)).tobytes().find(1))
    ties = (scores == _maximum(scores)).nonzero()[0].tolist()
    if randomizers is not None:
        top = max(randomizers[i] for i in ties)
        ties = [i for i in ties if randomizers[i] == top]
    if len(ties) == 1:
        return ties[0]
    if tie_break == "name":
        return min(ties, key=names.__getitem__)
    return min(ties, key=heap_preorder_key)


# heap_preorder's permutations by row length (a cluster's cycles score a few lengths, mostly one).
_PREORDERS: dict[int, np.ndarray] = {}
_PREORDERS_KEPT = 32


def heap_preorder(n: int) -> np.ndarray:
    """The positions 0..n-1 of the implicit binary tree (children of i: 2i+1, 2i+2) in pre-order, as the
    order of heap_preorder_key: the path bits left-aligned to the deepest level, then the depth, so that an
    ancestor (a prefix) comes first. Remembered per length: select_host then pays a gather and a search for
    the tie-break, whatever the number of ties or where they lie (a Python walk grew with the tree's depth)."""
    order = _PREORDERS.get(n)
    if order is None:
        ones = np.arange(1, n + 1, dtype=np.int64)  # heap position + 1: a 1 then the path's bits
        depth = np.frexp(ones.astype(np.float64))[1].astype(np.int64) - 1  # exact below 2**53
        levels = n.bit_length()
        order = np.argsort(((ones << (levels - 1 - depth)) << 6) + depth, kind="stable")
        order.flags.writeable = False  # shared by every cycle of this length
        if len(_PREORDERS) >= _PREORDERS_KEPT:
            _PREORDERS.clear()
        _PREORDERS[n] = order
    return order


def heap_preorder_key(index: int) -> str:
    """Sorts heap positions in pre-order: the path from the root as bits (0 left, 1 right), which
    compares as strings with an ancestor (a prefix) first and the left subtree before the right."""
    return bin(index + 1)[3:]


# ----- schedulePod, findNodesThatFitPod, findNodesThatPassFilters, evaluateNominatedNode, prioritizeNodes


class SchedulingAlgorithm:
    """Finds a node for one pod at a time; keeps the rotating start index between pods so every
    node gets examined across cycles even when filtering stops early."""

    def __init__(
        self,
        percentage_of_nodes_to_score: int = 0,
        rng: random.Random | None = None,
        tie_break: TieBreak = "heap",
        extenders: Sequence[Extender] = (),
        batching: bool = True,
    ) -> None:
        self.rng = rng if rng is not None else random.Random()
        self.tie_break: TieBreak = tie_break
        self.next_start_node_index = 0
        # False: a batched walk that found a feasible node leaves the rejected nodes out of the diagnosis' map
        # (only counted): the pod fits, so no message, requeue or preemption reads their statuses.
        self.list_rejections_on_success = True
        # A pod group's cycle evaluating a placement (TopologyAwareWorkloadScheduling): the nodes it may use, whose
        # positions are not the snapshot's (so the batch, which remembers by position, stays out); None: all nodes.
        self.placement_nodes: Sequence[NodeInfo] | None = None
        self.placement_names: frozenset[str] = frozenset()
        self._latest_num_to_find: tuple[tuple[int | None, int, bool] | None, int] = (None, 0)
        self.configure(percentage_of_nodes_to_score, extenders, batching)

    def configure(
        self, percentage_of_nodes_to_score: int, extenders: Sequence[Extender], batching: bool = True
    ) -> None:
        """The configuration's global settings (at start and on reload, between cycles). The batch starts
        afresh: a reloaded profile's plugins may decide differently under the same name."""
        self.batching = batching  # opportunistic batching (framework/batch.py); decisions are the same
        self.batches = OpportunisticBatches()
        self.batch = OpportunisticBatch()  # the one that answered the latest batched cycle
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.extenders = list(extenders)
        self._extenders_filter_or_score = any(e.is_filter() or e.is_prioritizer() for e in self.extenders)

    def schedule_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: SharedLister,
        nominator: NominatedPods | None = None,
    ) -> ScheduleResult:
        """Choose a node. Raises NoNodesAvailableError, FitError (no node fits; the diagnosis
        says why per node) or FrameworkError (a plugin errored)."""
        # read-only; the snapshot changes only at the next cycle start (a pod group's cycle: its placement's nodes)
        all_nodes = snapshot.list() if self.placement_nodes is None else self.placement_nodes
        if not all_nodes:
            raise NoNodesAvailableError()
        feasible, diagnosis, positions = self.find_nodes_that_fit_pod(fwk, state, pod, snapshot, all_nodes, nominator)
        if not feasible:
            raise FitError(pod, len(all_nodes), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status.statuses) + diagnosis.unlisted_rejections
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, evaluated, 1, diagnosis=diagnosis)
        totals, randomizers = self.prioritize(fwk, state, pod, feasible, positions)
        names = [n.name for n in feasible] if self.tie_break == "name" else ()
        chosen = feasible[select_host(totals, self.tie_break, names, randomizers)]
        return ScheduleResult(chosen.name, evaluated, len(feasible), diagnosis)

    def find_nodes_that_fit_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: SharedLister,
        all_nodes: Sequence[NodeInfo],
        nominator: NominatedPods | None = None,
    ) -> tuple[Sequence[NodeInfo], Diagnosis, list[int] | None]:
        """PreFilter, the nominated-node fast path, then Filter over the (narrowed) node list. Also returns
        the feasible nodes' positions in ``all_nodes`` when the batch answered the walk (its remembered
        scores then serve prioritize_nodes), else None."""
        diagnosis = new_diagnosis()
        pre_result, status, narrowing = fwk.run_pre_filter_plugins(state, pod, all_nodes)
        diagnosis.unschedulable_plugins = set(narrowing)
        if not success(status):
            assert status is not None
            if not status.is_rejected():
                raise FrameworkError(status)
            # Every node gets the PreFilter verdict, so preemption sees the same status everywhere.
            diagnosis.node_to_status.absent = status
            diagnosis.pre_filter_msg = status.message
            diagnosis.add_plugin_status(status)
            return [], diagnosis, None
        if pod.nominated_node_name:
            feasible = self._evaluate_nominated_node(fwk, state, pod, snapshot, diagnosis, nominator)
            if feasible:
                return feasible, diagnosis, None
        if pre_result is None or pre_result.node_names is None:
            positions = self._batched_filter(fwk, state, pod, snapshot, diagnosis, all_nodes, nominator)
            if positions is not None:
                return NodesAt(all_nodes, positions), diagnosis, positions
        nodes: Sequence[NodeInfo] = all_nodes
        if pre_result is not None and pre_result.node_names is not None:
            # Upstream walks the result's name set (Go map order, i.e. random); snapshot order keeps
            # the zone interleaving and makes runs reproducible. Names not in the snapshot are dropped.
            wanted = pre_result.node_names
            nodes = [n for n in all_nodes if n.name in wanted]
            # Upstream formats diagnosis.UnschedulablePlugins, the very set the narrowing plugins were put
            # in: it also holds the plugins that rejected the nominated node just above.
            diagnosis.node_to_status.absent = unresolvable(
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(diagnosis.unschedulable_plugins))}]"
            )
        feasible, failure = self._filter_nodes(fwk, state, pod, diagnosis, nodes, nominator)
        # Advance even on error, so every node keeps its chance of being examined.
        processed = len(feasible) + len(diagnosis.node_to_status.statuses)
        self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        if failure is not None:
            raise FrameworkError(failure)
        passed = find_nodes_that_pass_extenders(self.extenders, pod, feasible, diagnosis.node_to_status)
        if len(passed) != len(feasible):
            # Extenders register no cluster events: a pod they rejected requeues on any event.
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        return passed, diagnosis, None

    def _batched_filter(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: SharedLister,
        diagnosis: Diagnosis,
        all_nodes: Sequence[NodeInfo],
        nominator: NominatedPods | None,
    ) -> list[int] | None:
        """The filter walk answered by the batch: positions of the feasible nodes, rejections recorded in
        the diagnosis, start index advanced, as _filter_nodes would. None: the pod is not batched (no
        signature, extenders, first pod of its signature, a filter error).

        Nodes holding nominated pods that count for this pod (priority >= its own) get the two-pass
        filter afresh, as in the per-node walk; the batch answers for every other node."""
        if not self.batching or self.extenders or not fwk.has_filter_plugins() or self.placement_nodes is not None:
            return None
        signature = fwk.sign_pod(pod)
        if signature is None:
            return None
        nominated = self._nominated_positions(pod, snapshot, nominator)
        if nominated is None:
            return None
        began = time.perf_counter()
        key = (signature, frozenset(state.skip_filter_plugins))
        run_filters = fwk.filter_runner(state, pod, observe=True)

        def delta(old: Hashable, new: Hashable) -> Callable[[NodeInfo], bool] | None:
            old_signature, old_skipped = cast(tuple[Hashable, frozenset[str]], old)
            return fwk.signature_delta(old_signature, signature) if old_skipped == key[1] else None

        if isinstance(snapshot, Snapshot):
            batch = self.batches.refresh(key, all_nodes, run_filters, snapshot.changed_since, snapshot.change_mark(),
                                         delta)
        else:
            batch = self.batches.refresh(key, all_nodes, run_filters, delta=delta)
        if batch is None:
            return None
        overrides: dict[int, Status | None] = {}
        for p, pods in nominated.items():
            status = fwk.run_filter_plugins_with_nominated_pods(state, pod, all_nodes[p], pods, observe=True)
            if status is not None and status.code == Code.ERROR:
                return None  # the per-node walk decides whether it gets that far
            overrides[p] = status
        self.batch = batch
        chosen, rejected = batch.walk(self.next_start_node_index, self._num_to_find(fwk, len(all_nodes)), overrides)
        # C loops over the rejected nodes; the diagnosis needs each (plugin, code) once.
        verdicts = batch.verdicts
        if overrides:
            verdicts = verdicts.copy()
            for p, status in overrides.items():
                verdicts[p] = status
        rejections: list[Status] = list(map(verdicts.__getitem__, rejected))  # type: ignore[arg-type]  # no cast call
        if chosen and not self.list_rejections_on_success and fwk.observer is None:
            diagnosis.unlisted_rejections = len(rejected)
        else:
            diagnosis.node_to_status.statuses.update(
                zip(map(attrgetter("name"), map(all_nodes.__getitem__, rejected)), rejections, strict=True))
            for status in {(st.plugin, st.code): st for st in rejections}.values():
                diagnosis.add_plugin_status(status)
        self.next_start_node_index = (self.next_start_node_index + len(chosen) + len(rejected)) % len(all_nodes)
        fwk.observe("Filter", None, time.perf_counter() - began)
        # Counted as the per-node walk would (the batch re-ran the filters on changed nodes only).
        fwk.count_filter_evaluations(state, len(chosen) + len(rejected), rejections)
        return chosen

    @staticmethod
    def _nominated_positions(
        pod: Pod, snapshot: SharedLister, nominator: NominatedPods | None
    ) -> dict[int, Sequence[Pod]] | None:
        """Positions of the nodes whose nominated pods the two-pass filter adds for ``pod`` (priority >= its
        own, not the pod itself), with those pods; None: positions cannot be told (not a Snapshot)."""
        names = nominator.nodes_with_nominated_pods() if nominator is not None else None
        if not names:
            return {}
        if not isinstance(snapshot, Snapshot):
            return None
        assert nominator is not None
        out: dict[int, Sequence[Pod]] = {}
        for name in names:
            p = snapshot.position(name)
            if p is None:
                continue
            pods = nominator.nominated_pods_for_node(name)
            if any(o.priority >= pod.priority and o.uid != pod.uid for o in pods):
                out[p] = pods
        return out

    def _num_to_find(self, fwk: Framework, num_nodes: int) -> int:
        percentage = fwk.percentage_of_nodes_to_score
        if percentage is None:
            percentage = self.percentage_of_nodes_to_score
        key = (percentage, num_nodes, fwk.has_score_plugins() or self._extenders_filter_or_score)
        latest = self._latest_num_to_find  # the same three inputs cycle after cycle: the answer kept
        if latest[0] != key:
            latest = self._latest_num_to_find = (key, num_feasible_nodes_to_find(*key))
        return latest[1]

    def _evaluate_nominated_node(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: SharedLister,
        diagnosis: Diagnosis,
        nominator: NominatedPods | None,
    ) -> list[NodeInfo]:
        """Try status.nominatedNodeName alone first: after preemption it is likely the only fit.
        Errors here are ignored (upstream logs them) and the full search runs instead."""
        node_info = snapshot.get(pod.nominated_node_name)
        if node_info is None or (self.placement_nodes is not None and node_info.name not in self.placement_names):
            return []
        feasible, failure = self._filter_nodes(fwk, state, pod, diagnosis, [node_info], nominator)
        if failure is not None:
            return []
        try:
            return find_nodes_that_pass_extenders(self.extenders, pod, feasible, diagnosis.node_to_status)
        except FrameworkError:
            return []

    def _filter_nodes(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        nodes: Sequence[NodeInfo],
        nominator: NominatedPods | None = None,
    ) -> tuple[list[NodeInfo], Status | None]:
        """Visit nodes[(start + i) % n] until enough feasible nodes are found; record rejections in
        the diagnosis. Returns the feasible nodes and the Error status that stopped the walk, if any."""
        n = len(nodes)
        k = self._num_to_find(fwk, n)
        start = self.next_start_node_index
        if not fwk.has_filter_plugins():
            return [nodes[(start + i) % n] for i in range(min(k, n))], None
        began = time.perf_counter()
        rejected_before = len(diagnosis.node_to_status.statuses)
        feasible: list[NodeInfo] = []
        failure: Status | None = None
        # Nodes without nominated pods need one plain filter pass; find them once per cycle.
        nominated_nodes = nominator.nodes_with_nominated_pods() if nominator is not None else None
        run_filters = fwk.filter_runner(state, pod, observe=True)
        for i in range(n):
            if len(feasible) >= k:
                break
            node_info = nodes[(start + i) % n]
            if nominated_nodes is not None and node_info.name not in nominated_nodes:
                status = run_filters(node_info)
            else:
                pods = nominator.nominated_pods_for_node(node_info.name) if nominator is not None else None
                status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node_info, pods, observe=True)
            if success(status):
                feasible.append(node_info)
            elif status is not None and status.code == Code.ERROR:
                failure = status
                break
            elif status is not None:
                diagnosis.node_to_status.statuses[node_info.name] = status
                diagnosis.add_plugin_status(status)
        fwk.observe("Filter", failure, time.perf_counter() - began)
        rejected = list(itertools.islice(diagnosis.node_to_status.statuses.values(), rejected_before, None))
        fwk.count_filter_evaluations(state, len(feasible) + len(diagnosis.node_to_status.statuses) - rejected_before,
                                     rejected)
        return feasible, failure

    def prioritize_nodes(
        self, fwk: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo],
        positions: Sequence[int] | None = None,
    ) -> ScoreRow:
        """The totals of ``prioritize``."""
        return self.prioritize(fwk, state, pod, nodes, positions)[0]

    def prioritize(
        self, fwk: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo],
        positions: Sequence[int] | None = None,
    ) -> tuple[ScoreRow, list[int] | None]:
        """PreScore + Score, then the extenders' scores: the totals in ``nodes`` order, and the tie-break
        randomizers when an extender scored a node (None otherwise). Without score plugins and extenders
        every node scores 1. ``positions`` (the nodes' places in the batch) lets the batch supply the raw
        scores it has."""
        if not fwk.has_score_plugins() and not self.extenders:
            return np.ones(len(nodes), dtype=np.int64), None
        status = fwk.run_pre_score_plugins(state, pod, nodes)
        if not success(status):
            assert status is not None
            raise FrameworkError(status)
        raw_scores = self._batched_raw_scores(fwk, positions) if positions is not None else None
        totals, status = fwk.score_totals(state, pod, nodes, raw_scores)
        if not success(status):
            assert status is not None
            raise FrameworkError(status)
        scored = add_extender_scores(self.extenders, pod, nodes, totals, fwk.observer)
        if not scored:
            return totals, None
        randomizers = [0] * len(nodes)
        for i in sorted(scored):  # rand.Int(): a non-negative 63-bit draw per node an extender scored
            randomizers[i] = self.rng.getrandbits(63)
        return totals, randomizers

    def _batched_raw_scores(self, fwk: Framework, positions: Sequence[int]) -> RawScores:
        batch = self.batch

        def raw_scores(
            state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], plugins: list[ScorePlugin]
        ) -> tuple[ScoreMatrix, Status | None]:
            rescored = fwk.rescored_plugins(pod)
            if rescored:
                kept_rows = [i for i, pl in enumerate(plugins) if pl.name not in rescored]
                kept = [plugins[i] for i in kept_rows]
            else:
                kept = plugins
            names = fwk.score_plugin_names(kept)
            matrix, status = batch.scores(positions, names, lambda todo: fwk.score_nodes(state, pod, todo, kept))
            if status is not None or len(kept) == len(plugins):
                return matrix, status
            fresh_rows = [i for i, pl in enumerate(plugins) if pl.name in rescored]
            fresh = [plugins[i] for i in fresh_rows]
            raw, status = fwk.score_nodes(state, pod, nodes, fresh)
            if status is not None:
                return matrix, status
            rows = np.empty((len(plugins), len(nodes)), dtype=np.int64)  # in ``plugins`` order
            rows[kept_rows] = matrix
            rows[fresh_rows] = score_matrix(raw, fresh, len(nodes))
            return rows, None

        return raw_scores


# ----- findNodesThatPassExtenders, the extenders' part of prioritizeNodes


def find_nodes_that_pass_extenders(
    extenders: Sequence[Extender], pod: Pod, feasible: list[NodeInfo], statuses: NodeToStatus
) -> list[NodeInfo]:
    """Filter extenders, one after the other on the survivors of the previous one. Their rejections go
    into ``statuses`` (unresolvable ones win when a node is in both maps). An error fails the cycle
    (FrameworkError) unless the extender is ignorable."""
    for ext in extenders:
        if not feasible:
            break
        if not ext.is_filter() or not ext.is_interested(pod):
            continue
        try:
            result = ext.filter(pod, feasible)
        except ExtenderError as exc:
            if ext.is_ignorable():
                log.info("skipping extender as it returned error and has ignorable flag set",
                         extender=ext.name(), error=str(exc))
                continue
            raise FrameworkError(error_status(str(exc))) from exc
        for name, reason in result.failed_and_unresolvable_nodes.items():
            statuses.statuses[name] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [reason])
        for name, reason in result.failed_nodes.items():
            if name not in result.failed_and_unresolvable_nodes:
                statuses.statuses[name] = Status(Code.UNSCHEDULABLE, [reason])
        feasible = result.nodes
    return feasible


def add_extender_scores(
    extenders: Sequence[Extender], pod: Pod, nodes: Sequence[NodeInfo], totals: ScoreRow,
    observer: CycleObserver | None = None,
) -> set[int]:
    """Add each prioritizing extender's score x weight, scaled from [0, 10] to [0, 100], to ``totals``
    (and tell the observer, if any, as it is told a score plugin's). An extender that fails contributes
    nothing, whether ignorable or not, as upstream. The extenders are asked one after the other where
    upstream asks them concurrently; the sums are the same. Returns the positions of the nodes some
    extender listed (upstream draws their tie-break randomizer)."""
    scored: set[int] = set()
    if not extenders:
        return scored
    index = {n.name: i for i, n in enumerate(nodes)}
    for ext in extenders:
        if not ext.is_prioritizer() or not ext.is_interested(pod):
            continue
        try:
            priorities, weight = ext.prioritize(pod, nodes)
        except ExtenderError as exc:
            log.info("extender's prioritize failed; no score given by this extender", extender=ext.name(),
                     pod=pod.key, error=str(exc))
            continue
        raw = [0] * len(nodes)
        for hp in priorities:
            i = index.get(hp.host)
            if i is not None:
                raw[i] = hp.score
                totals[i] += hp.score * weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
                scored.add(i)
        if observer is not None:  # its own 0-10 score; the weight carries the scaling to 0-100
            observer.scores(pod, [n.name for n in nodes],
                            {ext.name(): (raw, raw, weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY))})
    return scored


# ----- the failure branch of schedulingCycle (RunPostFilterPlugins)


@dataclass(slots=True)
class SchedulingFailure:
    """How a failed scheduling attempt is reported: the status (reason Unschedulable when rejected,
    SchedulerError otherwise; the FitError travels in ``status.error``) and what to write to
    status.nominatedNodeName: None leaves it alone, "" clears it, a name sets it."""

    status: Status
    nominated_node_name: str | None


def handle_schedule_error(fwk: Framework, state: CycleState, pod: Pod, exc: Exception) -> SchedulingFailure:
    """The failure branch of schedulingCycle: PostFilter (preemption) runs only for a FitError and
    only when PostFilter plugins are enabled; its message is appended to the FitError's."""
    if isinstance(exc, NoNodesAvailableError):
        return SchedulingFailure(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [str(exc)], error=exc), "")
    if not isinstance(exc, FitError):
        status = exc.status if isinstance(exc, FrameworkError) else Status(Code.ERROR, [str(exc)], error=exc)
        return SchedulingFailure(status, "")
    if not fwk.has_post_filter_plugins():
        return SchedulingFailure(_unschedulable(exc), "")
    result, post_status = fwk.run_post_filter_plugins(state, pod, exc.diagnosis.node_to_status)
    exc.diagnosis.post_filter_msg = post_status.message if post_status is not None else ""
    nominated = result.nominated_node_name if result is not None else None
    return SchedulingFailure(_unschedulable(exc), nominated)


def _unschedulable(exc: FitError) -> Status:
    return Status(Code.UNSCHEDULABLE, [str(exc)], error=exc)


# ----- the Scheduler's fields (pkg/scheduler/scheduler.go's Scheduler struct)


# When a pod (by uid) or node (by name) was last heard of, and its object as then.
Seen = dict[str, tuple[float, Mapping[str, Any]]]


class SchedulerState:
    """The Scheduler's fields (upstream pkg/scheduler/scheduler.go's Scheduler struct), declared once. Its methods live
    where upstream has them: ScheduleOne here, BindingCycle in binding_cycle.py (which declares the fields
    only it uses), EventHandlers in eventhandlers.py, Reconfigure in reconfigure.py, the rest in scheduler.py,
    whose ``__init__`` sets every field. It is declared in this module because SchedulingAlgorithm, one of the
    fields, is defined here."""

    config: SchedulerConfiguration
    features: Features
    frameworks: dict[str, Framework]
    algorithm: SchedulingAlgorithm
    cache: Cache
    queue: PriorityQueue
    snapshot: Snapshot
    objects: ObjectStore
    binder: Binder
    writer: APIWriter | None
    recorder: EventRecorder
    podgroup_writer: PodGroupWriter | None
    observer: ScheduleObserver | None
    cycle_observer: CycleObserver | None
    metrics: Metrics | None
    rng: random.Random
    clock: Callable[[], float]
    # Unassigned pods this scheduler is responsible for, as last seen (the podLister re-read on failure).
    _pending: dict[str, Pod]
    # When each pod and node was last heard of, for the periodic resync.
    _pod_seen: Seen
    _node_seen: Seen
    # A validated configuration waiting to be swapped in between two scheduling cycles (reload).
    _next_config: tuple[SchedulerConfiguration, dict[str, Framework]] | None
    _next_config_lock: threading.Lock


# ----- ScheduleOne, schedulingCycle, handleSchedulingFailure


class ScheduleOne(SchedulerState):
    """The scheduling cycle of the Scheduler; its binding cycle is BindingCycle's (binding_cycle.py)."""

    if TYPE_CHECKING:  # Reconfigure's and BindingCycle's (the Scheduler has all three)
        parked: list[Any]  # BindingCycle's AssumedPods, waiting at Permit

        def apply_next_config(self) -> None: ...

        def start_binding_cycle(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, assumed: Pod,
                                host: str, cycle: int, start: float, waits: bool) -> None: ...

        def run_decided_parked(self) -> None: ...

        def schedule_one_pod_group(self, entity: QueuedPodGroupInfo) -> None: ...

    def schedule_one(self, timeout: float | None = None) -> bool:
        """ScheduleOne: pop one pod and run its scheduling cycle. False when nothing was popped.

        A configuration accepted while the pop waited is swapped in before the cycle: its
        ConfigurationReloaded Event was already written, so a pod created after that Event must not be
        scheduled under the configuration it replaced."""
        qpi = self.queue.pop(timeout)
        if qpi is None:
            return False
        self.apply_next_config()
        if isinstance(qpi, QueuedPodGroupInfo):
            self.schedule_one_pod_group(qpi)
            if self.parked:
                self.run_decided_parked()
            return True
        pod = qpi.pod
        fwk = self.frameworks.get(pod.scheduler_name)
        if fwk is None:
            log.error("no profile for pod", pod=pod.key, scheduler_name=pod.scheduler_name)
            self.queue.done(pod.uid)
            return True
        if pod.terminating or self.cache.is_assumed(pod.uid):
            self.queue.done(pod.uid)
            return True
        self.scheduling_cycle(fwk, qpi, self.queue.scheduling_cycle)
        if self.parked:
            self.run_decided_parked()
        return True

    def scheduling_cycle(self, fwk: Framework, qpi: QueuedPodInfo, cycle: int) -> None:
        """schedulingCycle: find a node, assume the pod there, Reserve and Permit; then hand the pod
        to the binding cycle."""
        pod = qpi.pod
        start = self.clock()
        state = CycleState()
        state.record_plugin_metrics = self.metrics is not None and self.metrics.sample_plugin_metrics()
        try:
            self.cache.update_snapshot(self.snapshot)
        except SnapshotInconsistentError as exc:
            self.handle_scheduling_failure(fwk, qpi, error_status(exc), cycle, start, message=str(exc), plugins=set())
            return
        if pod.parse_error is not None:
            st = unresolvable(str(pod.parse_error))
            self.handle_scheduling_failure(fwk, qpi, st, cycle, start, message=f"0/{self.snapshot.num_nodes()} "
                                           f"nodes are available: {pod.parse_error}.", plugins=set())
            return
        try:
            result = self.algorithm.schedule_pod(fwk, state, pod, self.snapshot, self.queue.nominator)
        except Exception as exc:
            self._schedule_error(fwk, state, qpi, exc, cycle, start)
            return
        if self.metrics is not None:
            self.metrics.algorithm_done(self.clock() - start)
        self.prepare_for_binding_cycle(fwk, state, qpi, result, cycle, start)

    def prepare_for_binding_cycle(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, result: ScheduleResult,
                                  cycle: int, start: float) -> bool:
        """prepareForBindingCycle: assume the pod on the chosen node, Reserve and Permit, then hand it to the binding
        cycle (True); a failure is handled (handleSchedulingFailure) and False returned. A pod group's members come
        here once their group's cycle succeeded."""
        pod = qpi.pod
        host = result.suggested_host
        assumed = pod.with_node(host)
        self.queue.nominator.delete_nominated_pod_if_exists(pod)
        try:
            self.cache.assume_pod(assumed)
        except Exception as exc:
            self.handle_scheduling_failure(fwk, qpi, error_status(exc), cycle, start, message=str(exc), plugins=set())
            return False
        reserve = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if reserve is not None and reserve.code != Code.SUCCESS:
            self._undo(fwk, state, assumed, host)
            self.handle_scheduling_failure(fwk, qpi, reserve, cycle, start, message=reserve.message,
                                           plugins={reserve.plugin} - {""})
            return False
        permit = fwk.run_permit_plugins(state, assumed, host)
        if permit is not None and permit.code not in (Code.SUCCESS, Code.WAIT):
            self._undo(fwk, state, assumed, host)
            self.handle_scheduling_failure(fwk, qpi, permit, cycle, start, message=permit.message,
                                           plugins={permit.plugin} - {""})
            return False
        if self.observer is not None:
            self.observer.scheduled(pod, host, result.diagnosis.node_to_status)
        self.start_binding_cycle(fwk, state, qpi, assumed, host, cycle, start,
                                 permit is not None and permit.code == Code.WAIT)
        return True

    def _undo(self, fwk: Framework, state: CycleState, assumed: Pod, host: str) -> None:
        fwk.run_reserve_plugins_unreserve(state, assumed, host)
        try:
            self.cache.forget_pod(assumed)
        except Exception as exc:
            log.warning("forget failed", pod=assumed.key, error=str(exc))

    def _schedule_error(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, exc: Exception, cycle: int, start: float
    ) -> None:
        """The failure branch of the scheduling cycle: PostFilter (preemption) for a FitError, then
        handleSchedulingFailure."""
        if not isinstance(exc, FitError | NoNodesAvailableError | FrameworkError):
            log.exception("scheduling algorithm failed", pod=qpi.pod.key)
        failure = handle_schedule_error(fwk, state, qpi.pod, exc)
        if self.metrics is not None and isinstance(exc, FitError) and fwk.has_post_filter_plugins():
            self.metrics.preemption_ran(fwk)
        latest = self._pending.get(qpi.pod.uid)
        if failure.nominated_node_name is not None and latest is not None:
            # Set (preemption) or clear ("") the nomination now, not when the status patch comes back.
            self.queue.nominator.add_nominated_pod(latest, failure.nominated_node_name)
        diagnosis = exc.diagnosis if isinstance(exc, FitError) else None
        self.handle_scheduling_failure(
            fwk, qpi, failure.status, cycle, start,
            message=failure.status.message,
            plugins=set(diagnosis.unschedulable_plugins) if diagnosis else set(),
            pending_plugins=set(diagnosis.pending_plugins) if diagnosis else set(),
            nominated=failure.nominated_node_name,
            statuses=diagnosis.node_to_status if diagnosis else None,
        )

    def handle_scheduling_failure(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        st: Status,
        cycle: int,
        start: float,
        *,
        message: str,
        plugins: set[str],
        pending_plugins: set[str] | None = None,
        nominated: str | None = None,
        clear_nominated: bool = False,
        statuses: NodeToStatus | None = None,
    ) -> None:
        """handleSchedulingFailure: event, PodScheduled=False, and back to the queue unless gone or bound."""
        pod = qpi.pod
        if self.observer is not None:
            self.observer.failed(pod, message, statuses)
        rejected = st.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)
        reason = "Unschedulable" if rejected else "SchedulerError"
        if self.metrics is not None:
            self.metrics.attempt_failed(fwk.profile_name, rejected, self.clock() - start)
        latest = self._pending.get(pod.uid)
        if latest is None or latest.node_name:
            self.queue.done(pod.uid)
            return
        qpi.pod = latest
        qpi.unschedulable_plugins = set(plugins)
        qpi.pending_plugins = set(pending_plugins or ())
        self.queue.add_unschedulable_if_not_present(qpi, cycle)
        log_attempt_failure(pod.key, fwk.profile_name, cycle, qpi.attempts, rejected, message)
        self.recorder.event(latest, "Warning", "FailedScheduling", "Scheduling", message, fwk.profile_name)
        self.recorder.pod_condition(latest, reason, message, "" if clear_nominated else nominated)


def log_attempt_failure(pod: str, profile: str, cycle: int, attempts: int, rejected: bool, message: str) -> None:
    """One line per failed attempt: errors at warning, a pod's first unschedulable verdict at info,
    its retries (the same pod failing again after a requeue) at debug, so a stuck pod does not flood."""
    fields = {"pod": pod, "node": None, "profile": profile, "cycle": cycle, "attempts": attempts, "message": message}
    if not rejected:
        log.warning("scheduling error", **fields)
    elif attempts <= 1:
        log.info("unschedulable", **fields)
    else:
        log.debug("unschedulable", **fields)
