"""`run --record-results`: kube-scheduler-simulator's result annotations on each pod py-scheduler tries.

One JSON merge patch per attempt, on a single background thread so neither the scheduling loop nor
the binding workers wait for it. The patch carries the pod's uid (a recreated pod is not touched)
and is skipped when the pod already shows the same results, so an unschedulable pod that fails the
same way again does not get a new write (nor another update event) per retry.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog

from scheduler.framework.interface import NodeToStatus
from scheduler.framework.results import (
    MAX_ANNOTATION_BYTES,
    RESULT_HISTORY,
    AttemptResult,
    ResultRecorder,
    go_json,
    with_history,
)
from scheduler.kube.client import ApiWriter, status_of
from scheduler.model.apierrors import NotFoundError
from scheduler.model.pod import Pod
from scheduler.plugins.helper.dynamicresources.claims import allocated_devices

log = structlog.get_logger(__name__)

HISTORY_CAP = 5  # attempts kept in result-history (the simulator keeps all; a pod's annotations are bounded)
# py-scheduler's own addition (the simulator has no DRA result): the devices a bound pod's claims got.
ALLOCATED_DEVICES = "py-scheduler/allocated-devices"


def annotation_patch(pod: Pod, result: AttemptResult, cap: int = HISTORY_CAP,
                     devices: list[dict[str, str]] | None = None) -> dict[str, Any] | None:
    """The merge patch for one attempt, or None when the pod already carries these results or they
    are too large for annotations (thousands of nodes): the API server would refuse them. ``devices``
    (a bound pod with claims) goes to ALLOCATED_DEVICES, outside the history."""
    current = result.annotations()
    if devices is not None:
        current[ALLOCATED_DEVICES] = go_json(devices)
    existing = (pod.raw.get("metadata") or {}).get("annotations") or {}
    if all(existing.get(k) == v for k, v in current.items()):
        return None
    if sum(len(k) + len(v) for k, v in current.items()) > MAX_ANNOTATION_BYTES:
        log.warning("scheduling results too large for annotations; not recorded", pod=pod.key)
        return None
    annotations = with_history({k: v for k, v in current.items() if k != ALLOCATED_DEVICES},
                               existing.get(RESULT_HISTORY), cap)
    if ALLOCATED_DEVICES in current:
        annotations[ALLOCATED_DEVICES] = current[ALLOCATED_DEVICES]
    return {"metadata": {"uid": pod.uid, "annotations": annotations}}


class ResultWriter:
    """The ScheduleObserver of `run --record-results`: when an attempt ends (bound, or failed) it takes
    the attempt's results from ``recorder`` (the frameworks' CycleObserver) and writes them."""

    MAX_PENDING = 10_000  # writes queued at once; beyond, results are dropped (counted) rather than held in memory

    def __init__(self, writer: ApiWriter, cap: int = HISTORY_CAP, max_pending: int = MAX_PENDING) -> None:
        self._writer = writer
        self._cap = cap
        self._pool = ThreadPoolExecutor(1, "record-results")
        self._room = threading.BoundedSemaphore(max_pending)
        self.dropped = 0
        self.recorder = ResultRecorder()

    def scheduled(self, pod: Pod, node: str, statuses: NodeToStatus) -> None:
        """Not the end yet: the binding cycle's plugins are still to be recorded."""

    def bound(self, pod: Pod, node: str) -> None:
        self._submit(pod, bound=True)

    def failed(self, pod: Pod, message: str, statuses: NodeToStatus | None) -> None:
        self._submit(pod, bound=False)

    def preempted(self, victim: Pod, preemptor: Pod, node: str) -> None:
        """The preemptor's own results say it (postfilter-result)."""

    def _submit(self, pod: Pod, bound: bool) -> None:
        """Queue the write; when the API server is slower than the attempts (the queue was unbounded: each
        entry holds a pod and its results), the results are dropped and counted instead."""
        result = self.recorder.take(pod.uid)
        if result is None:
            return
        if not self._room.acquire(blocking=False):
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("scheduling results not recorded: too many writes pending", pod=pod.key,
                            dropped=self.dropped)
            return
        self._pool.submit(self._write, pod, result, bound)

    def _write(self, pod: Pod, result: AttemptResult, bound: bool) -> None:
        try:
            self._write_one(pod, result, bound)
        finally:
            self._room.release()

    def _write_one(self, pod: Pod, result: AttemptResult, bound: bool) -> None:
        try:
            patch = annotation_patch(pod, result, self._cap, self._devices(pod) if bound else None)
            if patch is None:
                return
            self._writer.patch_pod(pod.namespace, pod.name, patch)
        except Exception as exc:  # a lost annotation must never affect scheduling
            log.warning("could not record scheduling results", pod=pod.key, error=str(exc),
                        status=status_of(exc))

    def _devices(self, pod: Pod) -> list[dict[str, str]] | None:
        """A bound pod's allocated devices, read from the API server: PreBind wrote the claims before
        the binding, and the watch may not have delivered them yet. None for pods without claims."""
        if not (pod.raw.get("spec") or {}).get("resourceClaims"):
            return None

        def get(namespace: str, name: str) -> dict[str, Any] | None:
            try:
                return self._writer.get_object("ResourceClaim", namespace, name)
            except NotFoundError:
                return None

        return allocated_devices(pod, get)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
