"""Fixtures for plugin tests; object builders live in util.py (imported as ``from util import ...``)."""

from __future__ import annotations

import pytest
from util import FakeHandle

from scheduler.framework.interface import CycleState


@pytest.fixture
def state() -> CycleState:
    """A fresh per-cycle state."""
    return CycleState()


@pytest.fixture
def handle() -> FakeHandle:
    """A handle over an empty snapshot, for plugins that do not read the snapshot."""
    return FakeHandle()
