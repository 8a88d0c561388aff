"""One thread for the timeouts of every pod waiting at Permit.

Upstream parks each waiting pod's binding cycle in a goroutine, and a goroutine costs next to nothing. A
thread per waiting pod did not: gang members can wait up to 15 minutes each and tenants choose a group's
``scheduleTimeoutSeconds``, so a thousand waiting members were a thousand OS threads, and a thread that could
not start left its pod assumed, its node's capacity lost. Now a waiting pod holds no thread at all: its
binding cycle is handed to the binding pool when the pod is decided (``WaitingPod.when_decided``: a plugin
allows or rejects it), and this timer decides the pods whose plugin timeouts pass first.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

import structlog

from scheduler.framework.runtime.waiting_pods_map import WaitingPod

log = structlog.get_logger(__name__)


class PermitTimer:
    """Wakes at the earliest pending deadline and expires the pods whose timeout has passed. The
    deadlines are on ``clock`` (the framework's, time.monotonic live); the thread starts at the first watch."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int, WaitingPod]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def watch(self, pod: WaitingPod) -> None:
        """Expire ``pod`` when its earliest plugin timeout passes (nothing if it is decided by then)."""
        deadline = pod.next_deadline()
        if deadline is None:
            return
        with self._cond:
            if self._stopped:
                return
            heapq.heappush(self._heap, (deadline, next(self._seq), pod))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="permit-timer", daemon=True)
                self._thread.start()
            self._cond.notify()

    def watched(self) -> int:
        with self._cond:
            return len(self._heap)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            due: list[WaitingPod] = []
            with self._cond:
                while not self._stopped:
                    now = self._clock()
                    while self._heap and self._heap[0][0] <= now:
                        due.append(heapq.heappop(self._heap)[2])
                    if due:
                        break
                    self._cond.wait(self._heap[0][0] - now if self._heap else None)
                if self._stopped:
                    return
            for pod in due:  # outside the lock: expiring runs the pod's callbacks (its binding cycle's start)
                try:
                    pod.expire()
                except Exception:
                    log.exception("expiring a pod waiting at Permit failed", pod=pod.get_pod().key)
                self.watch(pod)  # a later plugin timeout of the same pod, if it is still undecided
