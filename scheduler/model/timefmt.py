"""metav1.Time and metav1.MicroTime as the API server writes them (RFC 3339 in UTC, seconds or
microseconds), and the log lines' timestamps.

Every scheduled pod stamps two of them (its Scheduled event's eventTime and its log line), from the binding
and event threads. ``datetime.strftime`` is costly a call, and more so under those threads' contention;
the date and time up to the second are formatted once a second here instead.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

_SECOND: tuple[int, str] = (-1, "")  # the last second formatted and its "YYYY-MM-DDTHH:MM:SS" (one atomic swap)


def _second_prefix(second: int) -> str:
    global _SECOND
    cached = _SECOND
    if cached[0] == second:
        return cached[1]
    prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
    _SECOND = (second, prefix)
    return prefix


def rfc3339(ts: float | None = None) -> str:
    """metav1.Time: seconds precision ("2026-11-24T16:23:28Z"), now unless ``ts`` is given."""
    return _second_prefix(int(time.time() if ts is None else ts)) + "Z"


def micro_time(ts: float | None = None) -> str:
    """metav1.MicroTime ("2026-11-24T16:23:28.122587Z"), now unless ``ts`` (epoch seconds) is given."""
    if ts is not None:
        return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    second, micro = divmod(time.time_ns() // 1000, 1_000_000)
    # the digits of 1_000_000 + micro less the leading 1: cheaper than formatting f"{micro:06d}"
    return f"{_second_prefix(second)}.{str(1_000_000 + micro)[1:]}Z"
