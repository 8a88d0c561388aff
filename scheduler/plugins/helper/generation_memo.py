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

# A key's table starts afresh past PER_NODE entries a node of the cluster (live generations are one a
# node; the rest belong to dead ones), and never below LIMIT. A fixed cap of 50,000 let every table grow
# to ~3 MB on any cluster, which a 30-minute churn soak of 50 nodes read as RSS creeping up.
LIMIT = 4096
PER_NODE = 2


class GenerationMemo(Generic[V]):
    """Per key, a table NodeInfo generation -> value. A key's table starts afresh past
    max(LIMIT, PER_NODE x the most nodes it was told of) entries; a new key beyond ``max_keys`` drops
    every table (1: the memo follows the latest key only)."""

    __slots__ = ("_tables", "max_keys", "nodes")

    def __init__(self, max_keys: int = 1) -> None:
        self._tables: dict[Hashable, dict[int, V]] = {}
        self.max_keys = max_keys
        self.nodes = 0  # the largest cluster size a caller has passed

    def table(self, key: Hashable, nodes: int = 0) -> dict[int, V]:
        """The generation -> value table of ``key``, for the caller to read and fill; ``nodes``: the
        number of nodes in the cluster (it sizes the bound)."""
        if nodes > self.nodes:
            self.nodes = nodes
        table = self._tables.get(key)
        if table is None or len(table) > max(LIMIT, PER_NODE * self.nodes):
            if table is None and len(self._tables) >= self.max_keys:
                self._tables.clear()
            table = self._tables[key] = {}
        return table

    def values(
        self, key: Hashable, nodes: Sequence[NodeInfo], compute: Callable[[Sequence[NodeInfo]], list[V]]
    ) -> list[V]:
        """``compute(nodes)``, calling it only for the nodes without an entry for their generation."""
        table = self.table(key, len(nodes))
        get = table.get
        out = [get(ni.generation) for ni in nodes]
        if None in out:
            missing = [i for i, v in enumerate(out) if v is None]
            todo = [nodes[i] for i in missing]
            for i, ni, value in zip(missing, todo, compute(todo), strict=True):
                out[i] = value
                table[ni.generation] = value
        return out  # type: ignore[return-value]  # no None is left
