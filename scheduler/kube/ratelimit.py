"""A thread-safe token bucket: the client-side QPS/burst limit kube-scheduler applies to API writes."""

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
        self._lock = threading.Lock()

    def reserve(self, tokens: int = 1) -> float:
        """Take ``tokens``; return how long the caller must wait before using the last of them."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= tokens
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def wait(self, tokens: int = 1) -> None:
        """Wait until ``tokens`` requests may go (several sent together: one lock, one wait for the last)."""
        delay = self.reserve(tokens)
        if delay > 0:
            time.sleep(delay)
