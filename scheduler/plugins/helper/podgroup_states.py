"""The pod-group states of this cycle's snapshot, as the placement plugins read them (upstream's
``handle.SnapshotSharedLister().PodGroupStates()``), not ``Handle.pod_group_manager()``, which is the live cache's:
a placement is built from the snapshot's nodes, so the members it pins and counts must be the snapshot's too,
including what the cycle assumed there."""

from __future__ import annotations

from typing import cast

from scheduler.framework.interface import Handle
from scheduler.framework.podgroup import PodGroupManager, PodGroupStateLister


def snapshot_pod_group_states(handle: Handle) -> PodGroupStateLister:
    """The snapshot's PodGroupStateLister (the snapshot is a PodGroupManager: cache/snapshot.py)."""
    return cast(PodGroupManager, handle.snapshot()).pod_group_states()
