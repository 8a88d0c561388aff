"""Keyed binary heaps (upstream backend/heap): by an arbitrary less function, or by a sort key.

Python's heapq cannot take a comparator, delete by key or re-sift an updated item; the queue needs
all three (QueueSort's less, Delete(pod), Update in place). KeyedHeap does them with ``less``; when the
QueueSort plugin also gives a sort key (QueueSortRankPlugin), RankedHeap keeps heapq's C speed and
deletes lazily.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator, KeysView
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


class KeyedHeap(Generic[T]):
    """Min-heap by ``less``; each item has a unique key, so add_or_update never duplicates."""

    __slots__ = ("_index", "_items", "_key", "_less")

    def __init__(self, key: Callable[[T], str], less: Callable[[T, T], bool]) -> None:
        self._key = key
        self._less = less
        self._items: list[T] = []
        self._index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[T]:
        """Items in heap (not sorted) order."""
        return iter(list(self._items))

    def keys(self) -> KeysView[str]:
        """The keys held, as a live view: ``key in`` it is a C-level test, where ``in`` the heap is a call."""
        return self._index.keys()

    def get(self, key: str) -> T | None:
        i = self._index.get(key)
        return None if i is None else self._items[i]

    def peek(self) -> T | None:
        return self._items[0] if self._items else None

    def add_or_update(self, item: T, key: str | None = None) -> None:
        """Insert, or replace the item with the same key and restore heap order around it. ``key``: the
        item's key, when the caller has it."""
        k = self._key(item) if key is None else key
        i = self._index.get(k)
        if i is None:
            self._items.append(item)
            self._index[k] = len(self._items) - 1
            self._up(len(self._items) - 1)
            return
        self._items[i] = item
        self._fix(i)

    def pop(self) -> T | None:
        if not self._items:
            return None
        return self._remove_at(0)

    def delete(self, key: str) -> T | None:
        i = self._index.get(key)
        return None if i is None else self._remove_at(i)

    def _remove_at(self, i: int) -> T:
        last = len(self._items) - 1
        if i != last:
            self._swap(i, last)
        item = self._items.pop()
        del self._index[self._key(item)]
        if i < len(self._items):
            self._fix(i)
        return item

    def _fix(self, i: int) -> None:
        if not self._down(i):
            self._up(i)

    def _swap(self, i: int, j: int) -> None:
        items = self._items
        items[i], items[j] = items[j], items[i]
        self._index[self._key(items[i])] = i
        self._index[self._key(items[j])] = j

    def _up(self, i: int) -> None:
        while i > 0:
            parent = (i - 1) // 2
            if not self._less(self._items[i], self._items[parent]):
                break
            self._swap(i, parent)
            i = parent

    def _down(self, i: int) -> bool:
        """Sift down; True if the item moved."""
        start, n = i, len(self._items)
        while True:
            smallest = i
            for child in (2 * i + 1, 2 * i + 2):
                if child < n and self._less(self._items[child], self._items[smallest]):
                    smallest = child
            if smallest == i:
                return i != start
            self._swap(i, smallest)
            i = smallest


class RankedHeap(Generic[T]):
    """KeyedHeap's interface for an order given by a sort key (``rank``), over heapq: its pushes and pops
    run in C, where KeyedHeap calls ``less`` in Python about 2·log2(n) times a pop. Entries are ``[rank, seq,
    item]``: ``seq`` keeps equal ranks in insertion order and items from ever being compared. A deleted or
    replaced entry is marked
    dead (item None) and dropped when it reaches the top, or when the dead outnumber the live."""

    __slots__ = ("_entries", "_heap", "_key", "_rank", "_seq")

    def __init__(self, key: Callable[[T], str], rank: Callable[[T], Any]) -> None:
        self._key = key
        self._rank = rank
        self._heap: list[list[Any]] = []
        self._entries: dict[str, list[Any]] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[T]:
        """Items in no particular order."""
        return iter([e[2] for e in self._entries.values()])

    def get(self, key: str) -> T | None:
        e = self._entries.get(key)
        return None if e is None else cast(T, e[2])

    def peek(self) -> T | None:
        self._drop_dead_top()
        return cast(T, self._heap[0][2]) if self._heap else None

    def add_or_update(self, item: T, key: str | None = None) -> None:
        """Insert, or replace the item with the same key (its rank is read again). ``key``: the item's key,
        when the caller has it (a pod's is formatted anew on every read)."""
        k = self._key(item) if key is None else key
        old = self._entries.get(k)
        if old is not None:
            old[2] = None
        entry = [self._rank(item), next(self._seq), item]
        self._entries[k] = entry
        heapq.heappush(self._heap, entry)
        if old is not None:
            self._compact()

    def pop(self) -> T | None:
        self._drop_dead_top()
        if not self._heap:
            return None
        item = heapq.heappop(self._heap)[2]
        del self._entries[self._key(item)]
        return item  # a live entry's item (no typing.cast call: once a pod)

    def delete(self, key: str) -> T | None:
        e = self._entries.pop(key, None)
        if e is None:
            return None
        item, e[2] = e[2], None
        self._compact()
        return cast(T, item)

    def _drop_dead_top(self) -> None:
        heap = self._heap
        while heap and heap[0][2] is None:
            heapq.heappop(heap)

    def _compact(self) -> None:
        if len(self._heap) > 2 * len(self._entries) + 64:
            self._heap = [e for e in self._heap if e[2] is not None]
            heapq.heapify(self._heap)
