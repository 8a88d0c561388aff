from __future__ import annotations

import random

from scheduler.queue.heap import KeyedHeap


def test_random_operations_match_a_sorted_reference() -> None:
    rng = random.Random(7)
    heap: KeyedHeap[tuple[str, int]] = KeyedHeap(lambda x: x[0], lambda a, b: a[1] < b[1])
    ref: dict[str, int] = {}
    for _ in range(2000):
        op = rng.random()
        key = f"k{rng.randrange(60)}"
        if op < 0.5:
            value = rng.randrange(1000)
            heap.add_or_update((key, value))
            ref[key] = value
        elif op < 0.75:
            got = heap.delete(key)
            assert (got is None) == (key not in ref)
            ref.pop(key, None)
        else:
            got = heap.pop()
            if not ref:
                assert got is None
                continue
            assert got is not None
            assert got[1] == min(ref.values())
            del ref[got[0]]
        assert len(heap) == len(ref)
        assert all(heap.get(k) == (k, v) for k, v in ref.items())
