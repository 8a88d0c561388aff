"""A SIGTERM that arrives while `run` is still starting (before kopf installs its handlers) asks for the same
clean stop as one that arrives later, instead of killing the process (exit -15, no drain, no Lease release)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from scheduler.app.server import stop_on_signals


@pytest.fixture
def saved_handlers() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.usefixtures("saved_handlers")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_starting_sets_the_stop_flag(sig: signal.Signals) -> None:
    stop = threading.Event()
    stop_on_signals(stop)
    os.kill(os.getpid(), sig)
    assert stop.wait(5)
