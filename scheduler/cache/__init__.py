"""Scheduler cache: NodeInfos with bound and assumed pods, incremental snapshots, other objects."""

from scheduler.cache.cache import Cache, CacheError, SnapshotInconsistentError, new_cache_and_snapshot, new_snapshot
from scheduler.cache.node_tree import NodeTree
from scheduler.cache.objects import ObjectStore
from scheduler.cache.snapshot import Snapshot

__all__ = [
    "Cache", "CacheError", "NodeTree", "ObjectStore", "Snapshot", "SnapshotInconsistentError",
    "new_cache_and_snapshot", "new_snapshot",
]
