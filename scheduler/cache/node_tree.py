"""Nodes grouped by zone, listed round-robin across zones (upstream pkg/scheduler/backend/cache/node_tree.go).

The snapshot's node list comes from `NodeTree.list()`: node #0 of every zone, then #1 of every zone,
and so on. With the scheduler's rotating start index this spreads the nodes examined in one cycle
over all zones, which is why the order must match upstream.
"""

from __future__ import annotations

import structlog

from scheduler.model.node import Node

log = structlog.get_logger(__name__)


class NodeTree:
    """Node names per zone key; zones and the nodes inside a zone keep insertion order.

    Not thread-safe on its own: the cache calls it under its lock.
    """

    __slots__ = ("_zone_of", "_zones")

    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}  # zone key -> node names; dict order = zone order
        self._zone_of: dict[str, str] = {}  # node name -> zone key

    @property
    def num_nodes(self) -> int:
        return len(self._zone_of)

    def __len__(self) -> int:
        return len(self._zone_of)

    def __contains__(self, name: object) -> bool:
        return name in self._zone_of

    def zone_of(self, name: str) -> str | None:
        return self._zone_of.get(name)

    def zones(self) -> list[str]:
        """Zone keys in tree order (insertion order of their first node)."""
        return list(self._zones)

    def add(self, node: Node) -> bool:
        """Add a node at the end of its zone. An already-present node is treated as an update
        (a relist re-adds every node). Returns True when the tree changed."""
        if node.name in self._zone_of:
            return self.update(node)
        zone = node.zone_key
        self._zones.setdefault(zone, []).append(node.name)
        self._zone_of[node.name] = zone
        return True

    def update(self, node: Node) -> bool:
        """Move the node to the end of its new zone if its zone key changed; True if it moved.

        Upstream compares the old and new objects' zone keys; we compare with the zone recorded at
        add time, which is the same for consistent events and robust to a missing old object.
        """
        old_zone = self._zone_of.get(node.name)
        if old_zone is None:
            return self.add(node)
        if old_zone == node.zone_key:
            return False
        self.remove(node.name)
        return self.add(node)

    def remove(self, name: str) -> bool:
        """Remove a node; the zone disappears with its last node. False if the node was unknown."""
        zone = self._zone_of.pop(name, None)
        if zone is None:
            log.warning("node not found in node tree", node=name)
            return False
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]
        return True

    def list(self) -> list[str]:
        """All node names, interleaved across zones: #0 of each zone, then #1 of each zone, ...

        Cost O(nodes + zones): exhausted zones are dropped from the round instead of re-checked.
        """
        out: list[str] = []
        active = list(self._zones.values())
        depth = 0
        while active:
            still = []
            for names in active:
                out.append(names[depth])
                if depth + 1 < len(names):
                    still.append(names)
            active = still
            depth += 1
        return out
