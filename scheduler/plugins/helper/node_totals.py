"""NodeTotals: sums over every node of what each node's pods contribute, kept current across cycles.

Why: the plugins that look at other pods (InterPodAffinity, PodTopologySpread) sum, in PreFilter and
PreScore, something over every node of the cluster for the incoming pod: a walk over all nodes and their
pods, per pod. Pods alike (one template) ask for the same sums, and between two of their cycles usually
one node changed (the one the previous pod went to). The snapshot's change log (``NodeChangeLog``) names
the positions whose NodeInfo was replaced since the last refresh; only those are taken out and added
again, so a cycle costs O(changed nodes) and the walk is paid once per template. Without a change log,
when the node list was rebuilt, or when the caller's node list is not the snapshot's, the sums are
computed afresh, exactly as the walk would.

A contribution is a list of ``(slot, key, n)``; the totals are one dict per slot, key -> sum, without
zero entries (upstream's counting maps delete a key that drops to zero).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from operator import is_
from typing import cast

from scheduler.framework.interface import NodeChangeLog, SharedLister, implements
from scheduler.framework.types import NodeInfo

Contribution = list[tuple[int, Hashable, int]]
Contribute = Callable[[NodeInfo], Contribution]


class NodeTotals:
    """``totals[slot][key]`` = Σ over nodes of ``contribute(node)``'s entries."""

    __slots__ = ("_contribute", "_mark", "_nodes", "_parts", "totals")

    def __init__(self, slots: int, contribute: Contribute) -> None:
        self._contribute = contribute
        self._nodes: list[NodeInfo] = []  # the NodeInfo each position's part was computed on
        self._parts: list[Contribution] = []
        self._mark: Hashable = None
        self.totals: list[dict[Hashable, int]] = [{} for _ in range(slots)]

    def refresh(self, nodes: Sequence[NodeInfo], snapshot: SharedLister | None) -> list[dict[Hashable, int]]:
        """The totals over ``nodes``. ``snapshot`` is the one ``nodes`` came from: when it keeps a change
        log and ``nodes`` is its node list, only the positions changed since the last refresh are redone.
        The caller must not mutate the returned dicts."""
        changed: Sequence[int] | None = None
        mark: Hashable = None
        if snapshot is not None and implements(snapshot, NodeChangeLog) and _same_nodes(nodes, snapshot):
            changes = cast(NodeChangeLog, snapshot)
            if self._mark is not None and len(nodes) == len(self._nodes):
                changed = changes.changed_since(self._mark)
            mark = changes.change_mark()
        if changed is None:
            self._rebuild(nodes)
        else:
            for p in changed:
                info = nodes[p]
                if info is not self._nodes[p]:
                    self._add(self._parts[p], -1)
                    self._parts[p] = part = self._contribute(info)
                    self._add(part, 1)
                    self._nodes[p] = info
        self._mark = mark
        return self.totals

    def _rebuild(self, nodes: Sequence[NodeInfo]) -> None:
        self.totals = [{} for _ in self.totals]
        self._nodes = list(nodes)
        self._parts = [self._contribute(info) for info in self._nodes]
        for part in self._parts:
            self._add(part, 1)

    def _add(self, part: Contribution, sign: int) -> None:
        totals = self.totals
        for slot, key, n in part:
            table = totals[slot]
            v = table.get(key, 0) + sign * n
            if v:
                table[key] = v
            else:
                table.pop(key, None)


def _same_nodes(nodes: Sequence[NodeInfo], snapshot: SharedLister) -> bool:
    """``nodes`` holds the very NodeInfos of the snapshot's list, in its order (a C loop)."""
    listed = snapshot.list()
    return nodes is listed or (len(nodes) == len(listed) and all(map(is_, nodes, listed)))


class NodeTotalsCache:
    """NodeTotals by key (a pod template and what it was asked for), the most recent ``size`` kept."""

    __slots__ = ("_entries", "size")

    def __init__(self, size: int = 8) -> None:
        self._entries: dict[Hashable, NodeTotals] = {}
        self.size = size

    def get(self, key: Hashable, slots: int, make: Callable[[], Contribute]) -> NodeTotals:
        """The key's NodeTotals; for a new key ``make()`` gives its contribution function (which must depend
        on nothing but the key and the NodeInfo it is given). Built only then: callers ask every cycle."""
        entry = self._entries.pop(key, None)
        if entry is None:
            entry = NodeTotals(slots, make())
            while len(self._entries) >= self.size:
                del self._entries[next(iter(self._entries))]
        self._entries[key] = entry  # most recent last
        return entry
