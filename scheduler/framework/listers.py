"""The snapshot listers plugins read (upstream ``k8s.io/kube-scheduler/framework/listers.go``).

Kept apart from ``interface.py`` as upstream does, so that the Extender protocol can name the lister
without importing the plugin interfaces that name the Extender.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from scheduler.framework.podgroup import PodGroupLister, PodGroupStateLister
from scheduler.framework.types import NodeInfo


class SharedLister(Protocol):
    """Read access to this cycle's snapshot (upstream SharedLister: NodeInfos() and StorageInfos())."""

    def list(self) -> Sequence[NodeInfo]: ...
    def get(self, name: str) -> NodeInfo | None: ...
    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]: ...
    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]: ...

    def is_pvc_used_by_pods(self, key: str) -> bool:
        """Some scheduled pod uses the claim ``namespace/name`` (upstream StorageInfos().IsPVCUsedByPods)."""
        ...

    def pod_group_states(self) -> PodGroupStateLister:
        """This cycle's pod-group states (upstream SharedLister.PodGroupStates(); empty while GenericWorkload is
        off); in a pod group's cycle they count the members assumed so far."""
        ...

    def pod_groups(self) -> PodGroupLister:
        """This cycle's PodGroup objects (upstream SharedLister.PodGroups())."""
        ...
