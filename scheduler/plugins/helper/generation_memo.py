"""GenerationMemo: values computed from one node's state, remembered by NodeInfo generation.

Generations come from one global counter and every NodeInfo change takes a new one, so a generation
names one state of one node exactly (a clone keeps it until it is changed). A value that depends only
on that state and on a key (a pod's resource requests, a selector) can be reused across cycles: pods
alike (a ReplicaSet, a Job) then recompute only the nodes changed since the last cycle, usually the one
just bound. Used by the resource scorers, NodeResourcesFit's filter and the spreading pod counts, from
the scheduling loop only (one thread).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from scheduler.framework.types import NodeInfo

V = TypeVar("V")

# Entries one key's table may hold before it starts afresh (most belong to dead generations by then).
LIMIT = 50_000


class GenerationMemo(Generic[V]):
    """Per key, a table NodeInfo generation -> value. A key's table starts afresh past LIMIT entries; a
    new key beyond ``max_keys`` drops every table (1: the memo follows the latest key only)."""

    __slots__ = ("_tables", "max_keys")

    def __init__(self, max_keys: int = 1) -> None:
        self._tables: dict[Hashable, dict[int, V]] = {}
        self.max_keys = max_keys

    def table(self, key: Hashable) -> dict[int, V]:
        """The generation -> value table of ``key``, for the caller to read and fill."""
        table = self._tables.get(key)
        if table is None or len(table) > LIMIT:
            if table is None and len(self._tables) >= self.max_keys:
                self._tables.clear()
            table = self._tables[key] = {}
        return table

    def values(
        self, key: Hashable, nodes: Sequence[NodeInfo], compute: Callable[[Sequence[NodeInfo]], list[V]]
    ) -> list[V]:
        """``compute(nodes)``, calling it only for the nodes without an entry for their generation."""
        table = self.table(key)
        get = table.get
        out = [get(ni.generation) for ni in nodes]
        if None in out:
            missing = [i for i, v in enumerate(out) if v is None]
            todo = [nodes[i] for i in missing]
            for i, ni, value in zip(missing, todo, compute(todo), strict=True):
                out[i] = value
                table[ni.generation] = value
        return out  # type: ignore[return-value]  # no None is left
