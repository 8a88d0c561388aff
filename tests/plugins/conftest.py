"""Fixtures for plugin tests; object builders come from scheduler.testing and tests/plugins/util.py."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from tests.plugins.util import FakeHandle


@pytest.fixture
def state() -> CycleState:
    """A fresh per-cycle state."""
    return CycleState()


@pytest.fixture
def handle() -> FakeHandle:
    """A handle over an empty snapshot, for plugins that do not read the snapshot."""
    return FakeHandle()
