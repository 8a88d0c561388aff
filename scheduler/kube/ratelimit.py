"""A thread-safe token bucket: the client-side QPS/burst limit kube-scheduler applies to API writes.

Reservations queue: a caller takes its tokens now (the count may go below zero) and waits until the bucket has
refilled that debt, so a burst of Bindings and Events reserved ahead of a write holds it for seconds. A reservation
made ``first`` goes ahead of that queue: it adds to the debt (the reservations made after it wait for its token)
but waits only behind earlier ``first`` ones, which alone are paced at ``qps``. The Workload API's PodGroup status
patch goes so: upstream sends it from the scheduling goroutine, whose next cycle waits for it, so its lag behind
the group's cycle is one request; py's cycle does not wait, and behind a shared queue the patch lagged seconds (a
SIGKILL lost every patch still queued, leaving fully bound gangs without their condition)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucket:
    """`qps` tokens per second, at most `burst` saved up. qps <= 0 disables limiting."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()
        self._first_next = self._last  # when the next ``first`` reservation may go
        self._lock = threading.Lock()

    def reserve(self, tokens: int = 1, first: bool = False) -> float:
        """Take ``tokens``; return how long the caller must wait before using the last of them (``first``: ahead
        of the reservations not made ``first``)."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= tokens
            if self._tokens >= 0:
                return 0.0
            if first:
                start = max(now, self._first_next)
                self._first_next = start + tokens / self.qps
                return min(start - now, -self._tokens / self.qps)
            return -self._tokens / self.qps

    def wait(self, tokens: int = 1, first: bool = False) -> None:
        """Wait until ``tokens`` requests may go (several sent together: one lock, one wait for the last)."""
        delay = self.reserve(tokens, first)
        if delay > 0:
            time.sleep(delay)
