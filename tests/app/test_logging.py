"""scheduler/app/logging.py: the direct rendering of a plain line writes what structlog's chain writes, and every
other call (context, contextvars, an exception, positional arguments, a chain configured by a user) takes the chain."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator

import pytest
import structlog

from scheduler.app import logging as sched_logging
from scheduler.model import timefmt

STAMP = "2026-11-27T10:00:00.000001Z"


@pytest.fixture
def stamped(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every timestamp the same; structlog's defaults back afterwards."""
    monkeypatch.setattr(sched_logging, "micro_time", lambda: STAMP)
    monkeypatch.setattr(timefmt, "micro_time", lambda: STAMP)
    yield
    structlog.reset_defaults()


def capture(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """sys.stderr as a StringIO (not line-buffered: the logger flushes it), set in the test itself: pytest's
    own capture sets sys.stderr again between a fixture's set-up and the test."""
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    return out


def through_chain(level: str, json_lines: bool) -> None:
    """configure()'s chain with structlog's own filtering logger: the lines as structlog renders them."""
    sched_logging.configure(level, json_lines=json_lines)
    config = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(level.lower()),
                        processors=config["processors"])


def calls() -> list[Callable[[structlog.typing.FilteringBoundLogger], None]]:
    def exc(log: structlog.typing.FilteringBoundLogger) -> None:
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("crashed", pod="ns/p")

    return [
        lambda log: log.info("bound", pod="ns/p", node="n1", profile="py-scheduler", cycle=3, attempts=1,
                             latency_ms=12.3),
        lambda log: log.debug("hidden", pod="ns/p"),
        lambda log: log.warning("pod %s waits", "ns/p", node="n1"),
        lambda log: log.error("failed", error="x", level="ignored", timestamp="ignored"),
        lambda log: log.bind(profile="p").info("bound", pod="ns/p"),
        lambda log: log.info("odd", big=2**70, keys={1: "a"}),
        lambda log: log.critical("down", exc_info=False),
        exc,
    ]


@pytest.mark.parametrize("json_lines", [True, False])
@pytest.mark.usefixtures("stamped")
def test_direct_lines_are_the_chains_lines(monkeypatch: pytest.MonkeyPatch, json_lines: bool) -> None:
    stderr = capture(monkeypatch)
    through_chain("INFO", json_lines)
    for call in calls():
        call(structlog.get_logger("t"))
    expected = stderr.getvalue()
    stderr.seek(0)
    stderr.truncate()
    sched_logging.configure("INFO", json_lines=json_lines)
    for call in calls():
        call(structlog.get_logger("t"))
    assert stderr.getvalue() == expected
    assert "hidden" not in expected and "pod ns/p waits" in expected and "boom" in expected and "odd" in expected


@pytest.mark.usefixtures("stamped")
def test_a_bound_contextvar_or_a_users_chain_takes_the_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = capture(monkeypatch)
    sched_logging.configure("INFO", json_lines=True)
    structlog.contextvars.bind_contextvars(request="r1")
    try:
        structlog.get_logger("t").info("bound", pod="ns/p")
    finally:
        structlog.contextvars.clear_contextvars()
    assert stderr.getvalue() == (
        f'{{"pod":"ns/p","event":"bound","request":"r1","level":"info","timestamp":"{STAMP}"}}\n')
    stderr.seek(0)
    stderr.truncate()
    structlog.configure(processors=[structlog.processors.KeyValueRenderer(key_order=["event"])])
    structlog.get_logger("t").info("bound", pod="ns/p")
    assert stderr.getvalue() == "event='bound' pod='ns/p'\n"
