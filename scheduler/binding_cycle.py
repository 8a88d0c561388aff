"""The binding cycle of one pod (upstream pkg/scheduler/schedule_one.go, bindingCycle and what it calls).

The scheduling cycle (schedule_one.py) hands each pod it assumed on a node to ``start_binding_cycle`` as an
``AssumedPod``. The binding cycle (the nomination for expectation, wait on Permit, PreBind, Bind, PostBind) runs
on a bounded pool of binding workers, or inline with synchronous binding (simulate), so that the next pod is
scheduled while earlier ones are being bound. Plain pods' Bindings are posted side by side from one thread
(``binding_batch``). A pod waiting at Permit is parked, holding no worker, until it is decided.
handle_binding_cycle_error undoes the assumption and hands the pod to the scheduling cycle's failure handling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import structlog

from scheduler.edge import BatchBinder, BoundElsewhereError, NotLeaderError
from scheduler.framework.expectation import run_pre_flights
from scheduler.framework.extender import Extender, ExtenderError
from scheduler.framework.interface import CycleState, NodeToStatus
from scheduler.framework.runtime import Framework
from scheduler.framework.runtime.permit_timer import PermitTimer
from scheduler.framework.status import CODE_ERROR, CODE_SKIP, CODE_SUCCESS, Status
from scheduler.framework.status import error as error_status
from scheduler.framework.types import ASSIGNED_POD_DELETE
from scheduler.model.apierrors import NotFoundError
from scheduler.model.pod import Pod
from scheduler.plugins.names import DEFAULT_BINDER
from scheduler.queue.queued_pod_info import QueuedPodInfo
from scheduler.schedule_one import SchedulerState
from scheduler.workerpool import BatchWorker, Slots, WorkerPool

log = structlog.get_logger(__name__)


# ----- extendersBinding, and what bindingCycle is handed


def extenders_binding(
    extenders: Sequence[Extender], pod: Pod, node_name: str, leading: Callable[[], bool] | None = None
) -> tuple[bool, Status | None]:
    """The binding extender interested in the pod binds it instead of the Bind plugins. Returns
    (whether an extender took the binding, its failure). An ignorable binder that fails hands the
    binding on. ``leading``: an extender binds only while this replica leads, as the Bind plugins' binder."""
    for ext in extenders:
        if not ext.is_binder() or not ext.is_interested(pod):
            continue
        if leading is not None and not leading():
            return True, error_status(NotLeaderError(f"not the leader: binding of {pod.key} by extender skipped"))
        try:
            ext.bind(pod, node_name)
        except ExtenderError as exc:
            if ext.is_ignorable():
                log.info("skipping extender in bind as it returned error and has ignorable flag set",
                         extender=ext.name(), error=str(exc))
                continue
            return True, error_status(str(exc))
        return True, None
    return False, None


@dataclass(slots=True, eq=False)
class AssumedPod:
    """A pod its scheduling cycle assumed on ``host``: what its binding cycle needs (upstream hands
    bindingCycle the same: cycle state, framework, schedule result, assumed pod info, start). Never changed
    once built, but not frozen: a frozen dataclass's __init__ sets each field through object.__setattr__,
    several times the cost of this one, once a pod on the scheduling thread. Equal only to itself."""

    fwk: Framework
    state: CycleState
    qpi: QueuedPodInfo
    assumed: Pod
    host: str
    cycle: int
    start: float

    def permit_decided(self) -> bool:
        """Not waiting at Permit, or allowed, rejected or timed out there."""
        wp = self.fwk.get_waiting_pod(self.assumed.uid)
        return wp is None or wp.decided()


class BindingCycle(SchedulerState):
    """The binding cycle of the Scheduler, and the fields only it uses."""

    # Binding cycles run on this pool (None: inline, synchronous binding); the slots bound how many wait for it.
    _bind_pool: WorkerPool | None
    _bind_slots: Slots
    # Plain pods' binding cycles (batchable_binding): their Bindings posted side by side from one thread.
    _bind_batch: BatchWorker | None
    # The first POST's outcome of a batched Binding, by pod uid, with its node: DefaultBinder's Bind takes it.
    _posted: dict[str, tuple[str, Exception | None]]
    # Binding cycles of pods waiting at Permit (synchronous binding).
    parked: list[AssumedPod]
    permit_timer: PermitTimer
    leading: Callable[[], bool] | None  # None: no leader election (every replica binds)

    if TYPE_CHECKING:  # ScheduleOne's (the Scheduler has both)

        def _undo(self, fwk: Framework, state: CycleState, assumed: Pod, host: str) -> None: ...

        def handle_scheduling_failure(
            self, fwk: Framework, qpi: QueuedPodInfo, st: Status, cycle: int, start: float, *, message: str,
            plugins: set[str], pending_plugins: set[str] | None = None, nominated: str | None = None,
            clear_nominated: bool = False, statuses: NodeToStatus | None = None,
        ) -> None: ...

    # ----- ScheduleOne's hand-over: the goroutine that runs bindingCycle; WaitingPod parked at Permit

    def start_binding_cycle(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, assumed: Pod, host: str,
                            cycle: int, start: float, waits: bool) -> None:
        """The binding cycle of a pod its scheduling cycle assumed on ``host`` (``waits``: at Permit): parked
        while it waits, inline with synchronous binding, else on the pool, or in the batch for plain pods, once
        it holds a binding slot."""
        bound = AssumedPod(fwk, state, qpi, assumed, host, cycle, start)
        if waits:
            self._park(bound)
        elif self._bind_pool is None:
            self.binding_cycle(bound)
        else:
            self._bind_slots.acquire()
            if self._bind_batch is not None and self.batchable_binding(fwk):
                self._bind_batch.submit(bound)
            else:
                self._bind_pool.submit(self._binding_cycle_guarded, bound)

    def _park(self, pod: AssumedPod) -> None:
        """A pod waiting at Permit must not hold a binding worker or slot: a gang larger than the
        pool would wait for members the blocked loop can never schedule. Live, it holds no thread either
        (upstream parks a goroutine): its binding cycle goes to the pool once the pod is decided, and the
        one permit timer decides those whose timeout passes (framework/runtime/permit_timer.py). With
        synchronous binding its binding cycle runs once decided."""
        if self._bind_pool is None:
            self.parked.append(pod)
            return
        waiting = pod.fwk.get_waiting_pod(pod.assumed.uid)
        if waiting is None:  # decided and gone already: its binding cycle returns from WaitOnPermit at once
            self._start_decided(pod)
            return
        self.permit_timer.watch(waiting)
        waiting.when_decided(lambda: self._start_decided(pod))

    def _start_decided(self, pod: AssumedPod) -> None:
        """The binding cycle of a pod that was waiting at Permit, on the pool; if it cannot start there (the
        pool is shut down), the pod is unreserved and forgotten rather than left assumed."""
        assert self._bind_pool is not None
        try:
            self._bind_pool.submit(self._binding_cycle_logged, pod)
        except RuntimeError as exc:
            log.warning("binding cycle of a pod that waited at Permit could not start", pod=pod.assumed.key,
                        error=str(exc))
            self.handle_binding_cycle_error(pod.fwk, pod.state, pod.qpi, pod.assumed, pod.host,
                                            error_status(f"binding cycle not started: {exc}"), pod.cycle,
                                            pod.start)

    def run_decided_parked(self) -> None:
        """Synchronous binding: run the binding cycles of parked pods that were allowed or rejected."""
        while True:
            ready = [a for a in self.parked if a.permit_decided()]
            if not ready:
                return
            for a in ready:
                self.parked.remove(a)
                self.binding_cycle(a)

    # ----- bindingCycle: nominatedNodeNameForExpectation, WaitOnPermit, RunPreBindPlugins, bind
    # (extendersBinding, RunBindPlugins), finishBinding, RunPostBindPlugins

    def _binding_cycle_guarded(self, pod: AssumedPod) -> None:
        if self.metrics is not None:
            self.metrics.binding_started()
        self._slot_guarded(pod, lambda: self.binding_cycle(pod))

    def _binding_cycle_logged(self, pod: AssumedPod) -> None:
        try:
            self.binding_cycle(pod)
        except Exception:
            log.exception("binding cycle crashed")

    def binding_cycle(self, pod: AssumedPod) -> None:
        """bindingCycle: the nomination for expectation, WaitOnPermit, PreBind, Bind, then the cache confirms
        the binding and PostBind runs."""
        self.bind_and_finish(pod, self.before_bind(pod))

    def before_bind(self, pod: AssumedPod, nominate: bool = True) -> Status | None:
        """The binding cycle up to Bind: the nomination for expectation (``nominate``: unless the pod is known
        to need none), WaitOnPermit, PreBind."""
        fwk, state, assumed, host = pod.fwk, pod.state, pod.assumed, pod.host
        st = self._nominate_for_expectation(fwk, state, assumed, host) if nominate else None
        if st is None or st.code == CODE_SUCCESS:
            st = fwk.wait_on_permit(assumed)
        if st is None or st.code == CODE_SUCCESS:
            st = fwk.run_pre_bind_plugins(state, assumed, host)
        return st

    def bind_and_finish(self, pod: AssumedPod, st: Status | None) -> None:
        """The binding cycle from Bind (``st``: how the steps before it ended): the cache confirms the binding,
        the pod is reported and PostBind runs; or the failure is handled."""
        fwk, state, qpi, assumed, host, cycle, start = (
            pod.fwk, pod.state, pod.qpi, pod.assumed, pod.host, pod.cycle, pod.start)
        if st is None or st.code == CODE_SUCCESS:
            extenders = self.algorithm.extenders
            bound = False  # no extender to ask (the common case): no call
            if extenders:
                bound, st = extenders_binding(extenders, assumed, host, self.leading)
            if not bound:
                st = fwk.run_bind_plugins(state, assumed, host)
        if st is not None and st.code != CODE_SUCCESS:
            self.handle_binding_cycle_error(fwk, state, qpi, assumed, host, st, cycle, start)
            return
        self.queue.done(assumed.uid)  # upstream defers Done to the end of the binding cycle
        self.cache.finish_binding(assumed)
        elapsed = self.clock() - start
        if self.metrics is not None:
            first = qpi.initial_attempt_timestamp
            self.metrics.pod_scheduled(fwk.profile_name, elapsed, qpi.attempts,
                                       None if first is None else self.clock() - first,
                                       qpi.was_flushed_from_unschedulable)
        # bind(): what the lazy logger's __getattr__ does, without the failed lookup before it (an AttributeError
        # formatted and dropped each call)
        log.bind().info("bound", pod=assumed.key, node=host, profile=fwk.profile_name, cycle=cycle,
                        attempts=qpi.attempts, latency_ms=round(elapsed * 1000, 1))
        if self.observer is not None:
            self.observer.bound(assumed, host)
        self.recorder.event(assumed, "Normal", "Scheduled", "Binding",
                            f"Successfully assigned {assumed.key} to {host}", fwk.profile_name)
        fwk.run_post_bind_plugins(state, assumed, host)

    def _nominate_for_expectation(self, fwk: Framework, state: CycleState, assumed: Pod, host: str) -> Status | None:
        """NominatedNodeNameForExpectation (v1.37, beta on): when a PreBind plugin has work to do or the pod
        waits at Permit, write the chosen node into status.nominatedNodeName before that wait (expectation.py).
        A PreBindPreFlight error fails the binding cycle; a failed write does not."""
        verdict = run_pre_flights(fwk.pre_bind_pre_flights(), state, assumed, host)
        if verdict is not None and verdict.code == CODE_ERROR:
            return verdict
        if verdict is None or fwk.get_waiting_pod(assumed.uid) is not None:
            self.nominate_for_expectation(assumed, host)
        return None

    def nominate_for_expectation(self, pod: Pod, node_name: str) -> None:
        """Write status.nominatedNodeName = node_name (the Scheduler does it through its API writer)."""

    # ----- the batch of plain pods' Bindings (no upstream counterpart: its Binding POSTs overlap in goroutines)

    def batchable_binding(self, fwk: Framework) -> bool:
        """Whether this profile's binding cycles may post their Bindings in a batch: DefaultBinder alone
        binds, no extender binds, and PreBind can tell when it has nothing to do (per pod, the batch then
        checks that it has nothing and that the pod does not wait at Permit)."""
        return (fwk.bind_plugin_names() == (DEFAULT_BINDER,) and fwk.pre_bind_plugins_say_when_idle()
                and not any(ext.is_binder() for ext in self.algorithm.extenders))

    def binding_batch(self, pods: list[AssumedPod]) -> None:
        """The binding cycles of a batch of plain pods, on one thread. A pod that waits at Permit or has PreBind
        work takes its whole binding cycle on the pool. For the others PreBind runs (it has nothing to do), then
        their Bindings are posted side by side (BatchBinder.bind_batch), and each binding cycle ends as usual,
        its Bind taking that POST's outcome; one whose POST failed ends on the pool, where its retries may wait.
        The binding gauge moves once for the batch's pods, and once for those that ended here."""
        pool, binder, metrics = self._bind_pool, cast(BatchBinder, self.binder), self.metrics
        assert pool is not None
        posting: list[AssumedPod] = []
        for p in pods:
            if not self._nothing_before_bind(p):
                pool.submit(self._binding_cycle_guarded, p)
                continue
            posting.append(p)
        if metrics is not None and posting:
            metrics.binding_started(len(posting))
        ended = 0
        ready: list[AssumedPod] = []
        for p in posting:
            st = self._pre_bind_logged(p)
            if st is None or st.code == CODE_SUCCESS:
                ready.append(p)
            else:
                self._end_batched(p, st)
                ended += 1
        posting = ready
        if posting:
            try:
                outcomes = binder.bind_batch([(p.assumed, p.host) for p in posting])
            except Exception as exc:  # a bug in the batch: each binding goes on from this error
                log.exception("batched Bindings failed")
                outcomes = [exc] * len(posting)
            for p, outcome in zip(posting, outcomes, strict=True):
                self._posted[p.assumed.uid] = (p.host, outcome)
                if outcome is None:
                    self._end_batched(p, None)
                    ended += 1
                else:
                    pool.submit(self._end_guarded, p)
        if metrics is not None and ended:
            metrics.binding_finished(ended)

    def _nothing_before_bind(self, pod: AssumedPod) -> bool:
        """No nomination to write, no wait at Permit, no PreBind work: the pod's Binding may join a batch."""
        idle = run_pre_flights(pod.fwk.pre_bind_pre_flights(), pod.state, pod.assumed, pod.host)
        return idle is not None and idle.code == CODE_SKIP and pod.fwk.get_waiting_pod(pod.assumed.uid) is None

    def _pre_bind_logged(self, pod: AssumedPod) -> Status | None:
        """PreBind of a pod that waits at no Permit (``_nothing_before_bind``); a crash is its error status."""
        try:
            return pod.fwk.run_pre_bind_plugins(pod.state, pod.assumed, pod.host)
        except Exception as exc:
            log.exception("binding cycle crashed")
            return error_status(exc)

    def _end_guarded(self, pod: AssumedPod, st: Status | None = None) -> None:
        """The rest of a batched pod's binding cycle from its Bind (``st``: how PreBind ended), on the pool."""
        self._slot_guarded(pod, lambda: self.bind_and_finish(pod, st))

    def _end_batched(self, pod: AssumedPod, st: Status | None) -> None:
        """``_end_guarded`` on the batch's thread, which moves the binding gauge for all it ended at once."""
        self._slot_guarded(pod, lambda: self.bind_and_finish(pod, st), gauge=False)

    def _slot_guarded(self, pod: AssumedPod, run: Callable[[], None], gauge: bool = True) -> None:
        """Run a binding cycle (or its end) that holds a binding slot: a crash is logged, and the slot, the
        batch's posted outcome and (``gauge``) the binding gauge are given back however it ends."""
        try:
            run()
        except Exception:
            log.exception("binding cycle crashed")
        finally:
            self._posted.pop(pod.assumed.uid, None)
            self._bind_slots.release()
            if gauge and self.metrics is not None:
                self.metrics.binding_finished()

    def take_posted(self, pod: Pod, node_name: str) -> tuple[bool, Exception | None]:
        """Whether this pod's Binding to ``node_name`` was posted by its batch already, and with what error."""
        posted = self._posted.pop(pod.uid, None)
        if posted is None or posted[0] != node_name:
            return False, None
        return True, posted[1]

    # ----- handleBindingCycleError

    def handle_binding_cycle_error(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, assumed: Pod, host: str, st: Status,
        cycle: int, start: float,
    ) -> None:
        """handleBindingCycleError: unreserve and forget, wake the pods the assumed one kept out, and
        report, unless the pod was deleted meanwhile (404) or another binder bound it: neither is a
        failure of this pod, and a FailedScheduling event or PodScheduled=False would be false."""
        self._undo(fwk, state, assumed, host)
        self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)
        if st.code == CODE_ERROR and isinstance(st.error, NotFoundError):
            log.info("pod deleted before it could be bound", pod=assumed.key, node=host, profile=fwk.profile_name,
                     cycle=cycle)
            self.queue.done(assumed.uid)
            return
        if isinstance(st.error, BoundElsewhereError):
            log.info("pod bound by another binder", pod=assumed.key, node=st.error.node, chosen=host)
            self.queue.done(assumed.uid)
            return
        if isinstance(st.error, NotLeaderError):  # handed over: the new leader binds it, nothing failed
            log.info("not the leader any more; binding left to the new leader", pod=assumed.key, node=host,
                     profile=fwk.profile_name, cycle=cycle)
            self.queue.done(assumed.uid)
            return
        # A Permit rejection names its plugin: the pod waits for that plugin's events (upstream wraps
        # it in a FitError with that plugin unschedulable); a plugin without events (e.g. preemption
        # rejecting a victim) leaves it to backoff. The failure handling marks the pod done.
        rejector = {st.plugin} & set(fwk.events_to_register()) if st.is_rejected() else set()
        self.handle_scheduling_failure(fwk, qpi, st, cycle, start, message=st.message, plugins=rejector,
                                       clear_nominated=True)
