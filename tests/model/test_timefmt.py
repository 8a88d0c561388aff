"""metav1.Time / MicroTime formatting, and the JSON log lines that use it."""

from __future__ import annotations

import io
import re
import sys
from datetime import UTC, datetime

import orjson
import pytest
import structlog

from scheduler.app import logging as sched_logging
from scheduler.model import timefmt
from scheduler.model.timefmt import micro_time, rfc3339

MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def test_given_times_match_datetime() -> None:
    for ts in (0.0, 1.5, 1_795_000_000.25, 1_795_000_059.999):
        assert rfc3339(ts) == datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert micro_time(ts) == datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_now_is_current_and_well_formed() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    stamp = micro_time()
    after = datetime.now(UTC)
    assert MICRO.match(stamp)
    parsed = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert before <= parsed <= after
    assert rfc3339().endswith("Z") and len(rfc3339()) == len("2026-11-24T16:23:28Z")


def test_the_cached_second_moves_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-second prefix is reused within a second and rebuilt for the next one."""
    second = 1_795_000_000
    this, next_ = (datetime.fromtimestamp(s, UTC).strftime("%Y-%m-%dT%H:%M:%S") for s in (second, second + 1))
    ns = [second * 10**9 + 999_999_000]
    monkeypatch.setattr(timefmt.time, "time_ns", lambda: ns[0])
    assert micro_time() == f"{this}.999999Z"
    assert micro_time() == f"{this}.999999Z"
    ns[0] += 1000
    assert micro_time() == f"{next_}.000000Z"
    assert rfc3339(second) == f"{this}Z"


def test_json_log_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """One JSON object per line, with a microsecond timestamp; what orjson cannot encode still renders."""
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    sched_logging.configure("INFO", json_lines=True)
    try:
        log = structlog.get_logger("t")
        log.info("bound", pod="ns/p", node="n1", attempts=1, latency_ms=1.5)
        log.info("odd", big=2**70, keys={1: "a"}, obj=object())
        log.debug("hidden")
    finally:
        structlog.reset_defaults()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    first, second = (orjson.loads(line) for line in lines)
    assert first["event"] == "bound" and first["pod"] == "ns/p" and first["latency_ms"] == 1.5
    assert first["level"] == "info" and MICRO.match(first["timestamp"])
    assert second["big"] == 2**70 and second["keys"] == {"1": "a"} and second["obj"].startswith("<object")
