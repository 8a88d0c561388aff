"""Test-wide settings for the whole suite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import structlog


@pytest.fixture(autouse=True, scope="session")
def _structlog_loggers_not_cached() -> Iterator[None]:
    """A test that runs the CLI in process configures structlog as the scheduler does, with loggers cached on
    first use; a module's logger cached then keeps that configuration's processors, so a later test's
    ``structlog.testing.capture_logs`` no longer sees its lines (an order-dependent failure). In tests,
    loggers are never cached."""
    configure = structlog.configure

    def uncached(**settings: Any) -> None:
        settings["cache_logger_on_first_use"] = False
        configure(**settings)

    structlog.configure = uncached  # type: ignore[assignment]
    yield
    structlog.configure = configure  # type: ignore[assignment]


@pytest.fixture(autouse=True)
def _structlog_defaults_after_each_test() -> Iterator[None]:
    """The same tests leave a level filter (simulate's quiet logs filter out warnings), which
    ``capture_logs`` does not undo: each test starts from structlog's defaults."""
    yield
    structlog.reset_defaults()
