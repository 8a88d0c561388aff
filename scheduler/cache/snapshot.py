"""The per-cycle, read-only view of the cluster's nodes (upstream backend/cache/snapshot.go).

A Snapshot is owned by the scheduling thread and refreshed in place by `Cache.update_snapshot` at
the start of every cycle; only NodeInfos that changed since the previous refresh are replaced (by
fresh clones), so a cycle costs O(changed nodes). Plugins read it through the SharedLister methods.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence, Set

from scheduler.framework.types import NodeInfo


class Snapshot:
    """Node name -> cloned NodeInfo plus the zone-interleaved node list and the affinity sub-lists.

    The `_pos` maps give each NodeInfo's index in its list so a changed node's clone can replace the
    old one in O(1) without rebuilding the lists.
    """

    __slots__ = (
        "_affinity",
        "_affinity_pos",
        "_anti_affinity",
        "_anti_affinity_pos",
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
        self._affinity: list[NodeInfo] = []
        self._affinity_pos: dict[str, int] = {}
        self._anti_affinity: list[NodeInfo] = []
        self._anti_affinity_pos: dict[str, int] = {}
        self._pvc_users: dict[str, int] = {}  # "ns/claim" -> number of snapshot nodes whose pods use it
        self.generation = 0  # highest NodeInfo generation already copied in

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
        brought up to date by `patch`, `replace_in_list` or `rebuild_list`."""
        old = self._infos.get(name)
        self._infos[name] = info
        self._count_pvcs(old, -1)
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
        """Put a replaced NodeInfo at its existing positions (membership of every list unchanged)."""
        self._list[self._pos[name]] = info
        if name in self._affinity_pos:
            self._affinity[self._affinity_pos[name]] = info
        if name in self._anti_affinity_pos:
            self._anti_affinity[self._anti_affinity_pos[name]] = info

    def replace_in_list(self, name: str, info: NodeInfo) -> None:
        """Put a replaced NodeInfo at its position in the node list only (the affinity lists are
        rebuilt next, since its affinity membership changed)."""
        self._list[self._pos[name]] = info

    def rebuild_list(self, names: Sequence[str]) -> builtins.list[str]:
        """Rebuild the node list in the given (tree) order; returns names missing from the map."""
        missing: builtins.list[str] = []
        self._list = []
        self._pos = {}
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
        self._affinity, self._affinity_pos = [], {}
        self._anti_affinity, self._anti_affinity_pos = [], {}
        for info in self._list:
            name = info.name
            if info.pods_with_affinity:
                self._affinity_pos[name] = len(self._affinity)
                self._affinity.append(info)
            if info.pods_with_required_anti_affinity:
                self._anti_affinity_pos[name] = len(self._anti_affinity)
                self._anti_affinity.append(info)
