"""Keep the cyclic garbage collector's pauses short once the cache is large.

CPython's full (generation 2) collection walks every tracked object. With the cache of a 1000-node cluster
(~110,000 objects) one takes ~100 ms, and it comes whenever a quarter more objects than the last one found
have survived into the old generation: in a long run, a pause of that size every few thousand pods, which
is the scheduler's whole p99 latency under a paced load. The scheduler's objects hardly ever form cycles
(a 3000-pod run leaves 55 cyclic objects to collect, all found in the youngest generation), so whatever
survives a collection of the middle or the old generation is frozen (``gc.freeze``: left out of later
collections, still freed by reference counting): no collection walks more than what aged since the
last one. Once per ``full_scan_seconds`` the frozen objects are given back for one full collection, so
that a cycle among them is still reclaimed, at the cost of one long pause per period.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

FULL_SCAN_SECONDS = 3600.0
OLDEST = 2


class FreezeSurvivors:
    """A ``gc.callbacks`` entry: freeze after each collection but the youngest's; thaw once per period."""

    def __init__(self, full_scan_seconds: float = FULL_SCAN_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.full_scan_seconds = full_scan_seconds
        self.clock = clock
        self._last_full_scan = clock()
        self._thawed = False
        self.freezes = 0
        self.full_scans = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        generation = info.get("generation", 0)
        if phase != "stop" or generation == 0:
            return
        now = self.clock()
        if self._thawed:
            if generation != OLDEST:  # wait for the full collection that walks what was thawed
                return
            self._thawed = False
            self._last_full_scan = now
            self.full_scans += 1
        elif now - self._last_full_scan >= self.full_scan_seconds:
            gc.unfreeze()  # back into the old generation: the next full collection walks every object once
            self._thawed = True
            return
        gc.freeze()  # callbacks run after the collection has finished: the generation lists are whole
        self.freezes += 1


def install(full_scan_seconds: float = FULL_SCAN_SECONDS) -> FreezeSurvivors:
    """Collect (after the initial sync, so the cache is in), freeze, and keep freezing.

    The second, empty collection resets the collector's count of long-lived objects, the base of its 25 %
    rule: without it the next full collection would wait for a quarter of the frozen heap.
    """
    policy = FreezeSurvivors(full_scan_seconds)
    gc.collect()
    gc.freeze()
    gc.collect()
    gc.callbacks.append(policy)
    return policy


def uninstall(policy: FreezeSurvivors) -> None:
    """Undo ``install`` (tests): the callback removed, the frozen objects given back."""
    if policy in gc.callbacks:
        gc.callbacks.remove(policy)
    gc.unfreeze()
