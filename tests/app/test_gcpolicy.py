"""The garbage-collector policy: old objects frozen after each full collection, thawed once per period."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from scheduler.app import gcpolicy


class Node:
    """A tracked object that can be part of a cycle and watched by a weak reference."""

    def __init__(self) -> None:
        self.other: Node | None = None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def policy() -> Iterator[tuple[gcpolicy.FreezeSurvivors, Clock]]:
    clock = Clock()
    p = gcpolicy.FreezeSurvivors(full_scan_seconds=60.0, clock=clock)
    gc.collect()
    gc.callbacks.append(p)
    try:
        yield p, clock
    finally:
        gcpolicy.uninstall(p)


def _cycle() -> weakref.ref[Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_a_full_collection_freezes_what_survived_it(policy: tuple[gcpolicy.FreezeSurvivors, Clock]) -> None:
    p, _ = policy
    kept = [Node() for _ in range(1000)]
    garbage = _cycle()
    gc.collect()
    assert garbage() is None  # garbage of the collection is reclaimed, never frozen
    assert p.freezes == 1
    assert gc.get_freeze_count() >= len(kept)


def test_the_youngest_generation_is_not_frozen_the_middle_one_is(
        policy: tuple[gcpolicy.FreezeSurvivors, Clock]) -> None:
    p, _ = policy
    kept = [Node() for _ in range(1000)]
    gc.collect(0)
    assert p.freezes == 0
    assert gc.get_freeze_count() == 0
    gc.collect(1)
    assert p.freezes == 1
    assert gc.get_freeze_count() >= len(kept)


def test_once_per_period_frozen_cycles_are_reclaimed(policy: tuple[gcpolicy.FreezeSurvivors, Clock]) -> None:
    p, clock = policy
    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    gc.collect()  # frozen while reachable
    del a, b
    gc.collect()
    assert ref() is not None, "a frozen cycle is left alone within the period"
    clock.now = 61.0
    gc.collect()  # the period is over: this one thaws
    assert gc.get_freeze_count() == 0
    gc.collect(1)  # a middle collection neither walks nor freezes what was thawed
    assert gc.get_freeze_count() == 0
    gc.collect()  # this one walks everything, then freezes again
    assert ref() is None
    assert p.full_scans == 1
    assert gc.get_freeze_count() > 0


def test_install_freezes_the_initial_heap() -> None:
    p = gcpolicy.install(60.0)
    try:
        assert gc.get_freeze_count() > 0
        assert p in gc.callbacks
    finally:
        gcpolicy.uninstall(p)
    assert p not in gc.callbacks
    assert gc.get_freeze_count() == 0
