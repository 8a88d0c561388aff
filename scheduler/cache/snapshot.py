"""The per-cycle, read-only view of the cluster's nodes (upstream pkg/scheduler/backend/cache/snapshot.go).

A Snapshot is owned by the scheduling thread and refreshed in place by `Cache.update_snapshot` at
the start of every cycle; only NodeInfos that changed since the previous refresh are replaced (by
fresh clones), so a cycle costs O(changed nodes). Plugins read it through the SharedLister methods.
"""

from __future__ import annotations

import builtins
from bisect import bisect_left
from collections.abc import Sequence, Set

from scheduler.framework.types import NodeInfo


class Snapshot:
    """Node name -> cloned NodeInfo plus the zone-interleaved node list and the affinity sub-lists.

    The `_pos` maps give each NodeInfo's index in its list so a changed node's clone can replace the
    old one in O(1) without rebuilding the lists.
    """

    __slots__ = (
        "_affinity",
        "_affinity_at",
        "_anti_affinity",
        "_anti_affinity_at",
        "_changed",
        "_epoch",
        "_infos",
        "_list",
        "_pos",
        "_pvc_users",
        "generation",
    )

    def __init__(self) -> None:
        self._infos: dict[str, NodeInfo] = {}
        self._list: list[NodeInfo] = []
        self._pos: dict[str, int] = {}
        # The affinity sub-lists and, in step, their entries' positions in the node list (sorted).
        self._affinity: list[NodeInfo] = []
        self._affinity_at: list[int] = []
        self._anti_affinity: list[NodeInfo] = []
        self._anti_affinity_at: list[int] = []
        self._pvc_users: dict[str, int] = {}  # "ns/claim" -> number of snapshot nodes whose pods use it
        self.generation = 0  # highest NodeInfo generation already copied in
        # Positions in the node list whose NodeInfo was replaced, in order, since the list was last rebuilt
        # (epoch): opportunistic batching re-evaluates just those.
        self._epoch = 0
        self._changed: builtins.list[int] = []

    # --- SharedLister -------------------------------------------------------------------------

    def list(self) -> Sequence[NodeInfo]:
        """Nodes in zone-interleaved order. The caller must not mutate the returned list."""
        return self._list

    def get(self, name: str) -> NodeInfo | None:
        return self._infos.get(name)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return self._affinity

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return self._anti_affinity

    def num_nodes(self) -> int:
        return len(self._list)

    def position(self, name: str) -> int | None:
        """The node's index in ``list()``, None if it is not there."""
        return self._pos.get(name)

    def change_mark(self) -> tuple[int, int, int]:
        """Where the change log stands now, for ``changed_since``."""
        return id(self), self._epoch, len(self._changed)

    def changed_since(self, mark: tuple[int, int, int]) -> builtins.list[int] | None:
        """Positions in ``list()`` whose NodeInfo was replaced since ``mark``; None when the list was rebuilt
        (positions moved, nodes came or went) or the mark is another snapshot's."""
        snapshot, epoch, length = mark
        if snapshot != id(self) or epoch != self._epoch:
            return None
        return builtins.list(dict.fromkeys(self._changed[length:]))

    def _log_change(self, name: str) -> None:
        if len(self._changed) > 2 * len(self._list) + 1000:  # bounded: old marks then rebuild from scratch
            self._epoch += 1
            self._changed = []
        self._changed.append(self._pos[name])

    # --- volumes ------------------------------------------------------------------------------

    @property
    def used_pvc_set(self) -> Set[str]:
        """"ns/claim" keys used by at least one pod on a node of this snapshot (a live view)."""
        return self._pvc_users.keys()

    def is_pvc_used_by_pods(self, key: str) -> bool:
        return key in self._pvc_users

    # --- building (called by Cache.update_snapshot under the cache lock) ------------------------

    def node_names(self) -> builtins.list[str]:
        """Names in the node map (including nodes the cache has since removed)."""
        return builtins.list(self._infos)

    def map_size(self) -> int:
        """Entries in the node map; more than the tree's node count means deleted nodes linger."""
        return len(self._infos)

    def put(self, name: str, info: NodeInfo) -> NodeInfo | None:
        """Replace (or insert) a node's NodeInfo in the map; return the previous one. The lists are
        brought up to date by `patch` or `rebuild_list`."""
        old = self._infos.get(name)
        self._infos[name] = info
        if old is not None and old.pvc_ref_counts:  # most nodes' pods use no claim: no call
            self._count_pvcs(old, -1)
        if info.pvc_ref_counts:
            self._count_pvcs(info, 1)
        return old

    def drop(self, name: str) -> None:
        """Remove a deleted node from the map (the lists follow with `rebuild_list`)."""
        self._count_pvcs(self._infos.pop(name, None), -1)

    def _count_pvcs(self, info: NodeInfo | None, delta: int) -> None:
        if info is None:
            return
        users = self._pvc_users
        for key in info.pvc_ref_counts:
            n = users.get(key, 0) + delta
            if n > 0:
                users[key] = n
            else:
                users.pop(key, None)

    def patch(self, name: str, info: NodeInfo) -> None:
        """Put a replaced NodeInfo at its position in the node list; it joins, stays in or leaves each
        affinity sub-list by what its pods now have (O(log n) and a memmove, not a rebuild)."""
        pos = self._pos[name]
        self._list[pos] = info
        self._log_change(name)
        # Each sub-list is looked at only where the node may be in it (it is, or was: it is not empty).
        if info.pods_with_affinity or self._affinity_at:
            _place(self._affinity, self._affinity_at, pos, info, bool(info.pods_with_affinity))
        if info.pods_with_required_anti_affinity or self._anti_affinity_at:
            _place(self._anti_affinity, self._anti_affinity_at, pos, info,
                   bool(info.pods_with_required_anti_affinity))

    def rebuild_list(self, names: Sequence[str]) -> builtins.list[str]:
        """Rebuild the node list in the given (tree) order; returns names missing from the map."""
        missing: builtins.list[str] = []
        self._list = []
        self._pos = {}
        self._epoch += 1
        self._changed = []
        for name in names:
            info = self._infos.get(name)
            if info is None:
                missing.append(name)
                continue
            self._pos[name] = len(self._list)
            self._list.append(info)
        return missing

    def rebuild_affinity_lists(self) -> None:
        """Affinity sub-lists in node-list order, as upstream rebuilds them from nodeInfoList."""
        self._affinity, self._affinity_at = [], []
        self._anti_affinity, self._anti_affinity_at = [], []
        for pos, info in enumerate(self._list):
            if info.pods_with_affinity:
                self._affinity_at.append(pos)
                self._affinity.append(info)
            if info.pods_with_required_anti_affinity:
                self._anti_affinity_at.append(pos)
                self._anti_affinity.append(info)


def _place(infos: list[NodeInfo], at: list[int], pos: int, info: NodeInfo, member: bool) -> None:
    """Keep ``infos`` (node-list order, positions in ``at``) holding ``info`` at ``pos`` iff ``member``."""
    i = bisect_left(at, pos)
    present = i < len(at) and at[i] == pos
    if member and present:
        infos[i] = info
    elif member:
        at.insert(i, pos)
        infos.insert(i, info)
    elif present:
        del at[i]
        del infos[i]
