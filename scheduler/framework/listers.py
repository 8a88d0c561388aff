"""The snapshot listers plugins read (upstream ``k8s.io/kube-scheduler/framework/listers.go``).

Kept apart from ``interface.py`` as upstream does, so that the Extender protocol can name the lister
without importing the plugin interfaces that name the Extender.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from scheduler.framework.podgroup import PodGroupLister, PodGroupStateLister
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod


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


class MutableSharedLister(SharedLister, Protocol):
    """The snapshot PodGroupPostFilter may change and put back (upstream MutableSnapshotSharedLister): one session
    at a time; every add_pod / remove_pod (pod-group states included) is undone by end_mutations. Errors as
    upstream's: RuntimeError outside a session or when stacked, KeyError for a missing node or pod."""

    def start_mutations(self) -> None: ...
    def end_mutations(self) -> None: ...
    def add_pod(self, pod: Pod, node_name: str) -> None: ...
    def remove_pod(self, pod: Pod, node_name: str) -> None: ...
