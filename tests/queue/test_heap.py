from __future__ import annotations

import random

from scheduler.queue.heap import KeyedHeap, RankedHeap


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


def test_ranked_heap_matches_the_less_heap_under_random_operations() -> None:
    """RankedHeap (heapq, lazy deletion) and KeyedHeap (less) pop the same items in the same order when
    ranks are distinct, through adds, updates of queued items and deletes; dead entries are compacted."""
    rng = random.Random(11)
    less_heap: KeyedHeap[tuple[str, int]] = KeyedHeap(lambda x: x[0], lambda a, b: a[1] < b[1])
    ranked: RankedHeap[tuple[str, int]] = RankedHeap(lambda x: x[0], lambda x: x[1])
    values = rng.sample(range(100_000), 5000)  # distinct ranks: ties are the one place the two may differ
    for _ in range(4000):
        op = rng.random()
        key = f"k{rng.randrange(300)}"
        if op < 0.55:
            item = (key, values.pop())
            less_heap.add_or_update(item)
            ranked.add_or_update(item)
        elif op < 0.75:
            assert ranked.delete(key) == less_heap.delete(key)
        else:
            assert ranked.peek() == less_heap.peek()
            assert ranked.pop() == less_heap.pop()
        assert len(ranked) == len(less_heap)
        assert key in ranked if key in less_heap else key not in ranked
        assert ranked.get(key) == less_heap.get(key)
        assert sorted(ranked) == sorted(less_heap)
        assert len(ranked._heap) <= 2 * len(ranked) + 65
    while less_heap.peek() is not None:
        assert ranked.pop() == less_heap.pop()
    assert ranked.pop() is None and len(ranked) == 0


def test_ranked_heap_keeps_equal_ranks_in_insertion_order() -> None:
    ranked: RankedHeap[tuple[str, int]] = RankedHeap(lambda x: x[0], lambda x: x[1])
    for key in ("a", "b", "c"):
        ranked.add_or_update((key, 1))
    ranked.add_or_update(("a", 1))  # an update is a new entry: it goes behind the others of its rank
    assert [ranked.pop(), ranked.pop(), ranked.pop()] == [("b", 1), ("c", 1), ("a", 1)]
