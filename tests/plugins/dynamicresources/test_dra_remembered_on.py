"""Filter's look-up of the allocator's remembered outcomes (``Allocator.remembered_on``): it answers only what
``allocate`` would answer from its memo, and MISS otherwise."""

from __future__ import annotations

from typing import Any

from scheduler.plugins.helper.dynamicresources.allocator import MISS, AllocatedState, Allocator, PoolDeviceSet
from scheduler.plugins.helper.dynamicresources.cel import CelCache
from scheduler.plugins.helper.dynamicresources.pools import SliceIndex
from scheduler.testing import make_node
from tests.plugins.dynamicresources.dra_objects import DRIVER, claim, device, device_class, slice_

GPU = device_class()
POOL = (DRIVER, "pool-1")
DeviceIDs = frozenset[tuple[str, str, str]]


def _devices_of(result: Any) -> list[list[str]]:
    return [[f"{r.pool}/{r.device}" for r in a.results] for a in result]


def test_remembered_on_answers_what_allocate_remembered() -> None:
    """MISS until allocate has searched the node with these devices taken, then that outcome; MISS again for
    another Node object, a device taken since, or a state with shared devices (nothing is remembered there)."""
    index = SliceIndex([slice_("s", [device(f"dev-{i}") for i in range(3)])])
    n = make_node().name("node-1").obj()

    def allocator(taken: DeviceIDs, **fields: Any) -> Allocator:
        return Allocator(AllocatedState(PoolDeviceSet({POOL: taken}), **fields), {"gpu": GPU}, index, CelCache())

    one: DeviceIDs = frozenset({(DRIVER, "pool-1", "dev-0")})
    claims = (claim("a"),)
    first = allocator(one)
    remembered = first.remembered_on(claims)
    assert remembered(n) is MISS
    assert _devices_of(first.allocate(n, claims)) == [["pool-1/dev-1"]]
    assert _devices_of(remembered(n)) == [["pool-1/dev-1"]]
    assert remembered(make_node().name("node-1").obj()) is MISS
    again = allocator(frozenset(set(one)))  # an equal set, another object: allocate finds it, then the look-up does
    assert again.remembered_on(claims)(n) is MISS
    assert _devices_of(again.allocate(n, claims, deadline=0.0)) == [["pool-1/dev-1"]]
    assert _devices_of(again.remembered_on(claims)(n)) == [["pool-1/dev-1"]]
    assert allocator(one | {(DRIVER, "pool-1", "dev-1")}).remembered_on(claims)(n) is MISS
    shared = allocator(one, shared_device_ids={((DRIVER, "pool-1", "dev-2"), "share-1")})
    assert shared.remembered_on(claims)(n) is MISS


def test_devices_by_pool_are_a_set() -> None:
    """The manager's devices in use, one frozenset a pool: membership, iteration and set operators as a set's."""
    held = PoolDeviceSet({POOL: frozenset({(DRIVER, "pool-1", "a")}), ("other", "p"): frozenset({("other", "p", "b")})})
    assert (DRIVER, "pool-1", "a") in held and ("other", "p", "a") not in held and "text" not in held
    assert set(held) == {(DRIVER, "pool-1", "a"), ("other", "p", "b")} and len(held) == 2
    assert held | {("x", "y", "z")} == {(DRIVER, "pool-1", "a"), ("other", "p", "b"), ("x", "y", "z")}
    assert AllocatedState(held).allocated_by_pool() is held.by_pool
    assert AllocatedState({("x", "y", "z")}).allocated_by_pool() == {("x", "y"): frozenset({("x", "y", "z")})}
