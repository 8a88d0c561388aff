"""Store for the other kinds plugins read (Services, ReplicaSets, PVCs, PDBs, ...).

Objects are kept as the watch delivers them (API dicts), indexed by kind and namespace so that
`list(kind, namespace)` costs O(matching objects). Cluster-scoped kinds use the namespace "".
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

Obj = Mapping[str, Any]


def object_key(obj: Obj) -> tuple[str, str]:
    """(namespace, name) of an API object; "" namespace for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


class ObjectStore:
    """kind -> namespace -> name -> object. Thread-safe; implements the framework's ObjectLister.

    Returned objects are shared, not copied: callers must treat them as read-only.
    """

    __slots__ = ("_data", "_lock", "generation")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, dict[str, dict[str, Obj]]] = {}
        # Moves after every change (once the change is in): what a reader derived from the objects at one
        # generation holds until it moves (PodTopologySpread's default selectors are remembered by it).
        self.generation = 0

    def upsert(self, kind: str, obj: Obj) -> Obj | None:
        """Add or replace an object; returns the previous version (None if it was new)."""
        ns, name = object_key(obj)
        with self._lock:
            by_name = self._data.setdefault(kind, {}).setdefault(ns, {})
            old = by_name.get(name)
            by_name[name] = obj
            self.generation += 1
            return old

    def delete(self, kind: str, obj: Obj) -> Obj | None:
        """Remove an object by its namespace/name; returns the stored version (None if absent)."""
        ns, name = object_key(obj)
        with self._lock:
            old = self._pop(kind, ns, name)
            self.generation += 1
            return old

    def _pop(self, kind: str, ns: str, name: str) -> Obj | None:
        by_ns = self._data.get(kind)
        if by_ns is None:
            return None
        by_name = by_ns.get(ns)
        if by_name is None:
            return None
        old = by_name.pop(name, None)
        if not by_name:
            del by_ns[ns]
        return old

    def reconcile(self, kind: str, present_keys: set[tuple[str, str]]) -> list[Obj]:
        """After a relist: drop objects of `kind` whose (namespace, name) the relist no longer has
        (their DELETED events were never delivered). Returns the removed objects."""
        with self._lock:
            by_ns = self._data.get(kind, {})
            gone = [(ns, name) for ns, by_name in by_ns.items() for name in by_name if (ns, name) not in present_keys]
            removed = [self._pop(kind, ns, name) for ns, name in gone]
            self.generation += 1
            return [o for o in removed if o is not None]

    def list(self, kind: str, namespace: str | None = None) -> Iterable[Obj]:
        """Objects of a kind, in one namespace or (None) in all. A list copy: safe to iterate while
        the watch thread writes."""
        with self._lock:
            by_ns = self._data.get(kind)
            if not by_ns:
                return []
            if namespace is not None:
                return list(by_ns.get(namespace, {}).values())
            return [o for by_name in by_ns.values() for o in by_name.values()]

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        with self._lock:
            return self._data.get(kind, {}).get(namespace or "", {}).get(name)

    def kinds(self) -> tuple[str, ...]:
        """The kinds that have objects (replayed to plugins that keep state, after a reload)."""
        with self._lock:
            return tuple(k for k, by_ns in self._data.items() if by_ns)

    def count(self, kind: str) -> int:
        with self._lock:
            return sum(len(by_name) for by_name in self._data.get(kind, {}).values())
