"""The pod-group scheduling cycle's framework types (kube-scheduler v1.37, GenericWorkload on): what plugins at
PlacementGenerate, PlacementScore, PlacementFeasible and PodGroupPostFilter are handed and return
(upstream ``k8s.io/kube-scheduler/framework``'s PodGroupInfo, Placement, PodGroupAssignments, ... and
``pkg/scheduler/framework``'s PlacementProgress), and the pod-group state plugins read from the snapshot
(k8s.io/kube-scheduler/framework/listers.go's PodGroupState, PodGroupStateLister, PodGroupLister, PodGroupManager).

CompositePodGroup (alpha) is not built: a PodGroupInfo is always a leaf group, with no children.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Protocol

from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod
from scheduler.model.workload import PodGroup

POD_KEY_TYPE = "pod"
POD_GROUP_KEY_TYPE = "podgroup"


@dataclass(frozen=True, slots=True)
class EntityKey:
    """fwk.EntityKey: a queued entity, a pod or a pod group. ``str()`` is upstream's ``type/namespace/name``."""

    type: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}/{self.namespace}/{self.name}"


def pod_group_key(namespace: str, name: str) -> EntityKey:
    return EntityKey(POD_GROUP_KEY_TYPE, namespace, name)


@dataclass(slots=True, eq=False)
class PodGroupInfo:
    """fwk.PodGroupInfo: the PodGroup object with the pods of this cycle, in the queue's member order (priority
    descending, attempts descending, timestamp, name). ``pod_group`` is None only while the object is unknown."""

    namespace: str
    name: str
    pod_group: PodGroup | None
    unscheduled_pods: list[Pod] = field(default_factory=list)
    type: str = POD_GROUP_KEY_TYPE

    @property
    def key(self) -> EntityKey:
        return EntityKey(self.type, self.namespace, self.name)

    @property
    def priority(self) -> int:
        """QueuedPodGroupInfo.GetPriority: the PodGroup's priority (0 without one)."""
        return self.pod_group.effective_priority if self.pod_group is not None else 0


@dataclass(slots=True, eq=False)
class Placement:
    """fwk.Placement: a candidate set of nodes for a pod group (its NodeInfos are the snapshot's own objects).
    Compared by identity, as upstream keys results by the pointer."""

    name: str
    nodes: Sequence[NodeInfo]


@dataclass(slots=True)
class PlacementProgress:
    """framework.PlacementProgress: pods not yet evaluated in this placement, and pods scheduled (assigned or
    assumed, in this cycle or before) in the group."""

    remaining: int
    scheduled: int


@dataclass(slots=True, eq=False)
class ProposedAssignment:
    """fwk.ProposedAssignment: a member's node in a candidate placement, with its per-pod CycleState (typed Any:
    framework.interface, which defines CycleState, imports this module)."""

    pod: Pod
    node_name: str
    state: Any


@dataclass(slots=True, eq=False)
class PodGroupAssignments:
    """fwk.PodGroupAssignments: a placement (None for the whole cluster) and its proposed assignments."""

    placement: Placement | None
    proposed_assignments: list[ProposedAssignment]


@dataclass(slots=True)
class PodGroupPostFilterResult:
    """fwk.PodGroupPostFilterResult: the node each member is nominated to ("namespace/name" -> node name); only
    members with a nomination are listed."""

    nominating_infos: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class PlacementScore:
    """fwk.PlacementScore: one plugin's score of one placement (NormalizePlacementScore rewrites ``score``)."""

    placement: Placement | None
    score: int


@dataclass(slots=True)
class PlacementPluginScores:
    """fwk.PlacementPluginScores: a placement's weighted scores per plugin, their total, and the tie-breaker."""

    placement: Placement | None
    scores: list[tuple[str, int]]
    total_score: int
    randomizer: int = 0


# fwk.PodGroupSchedulingFunc: runs the group's scheduling algorithm again (PodGroupPostFilter's dry run, on the
# snapshot as the plugin changed it) and returns its assignments and the group's status.
PodGroupSchedulingFunc = Callable[[], tuple[PodGroupAssignments, Status | None]]


class PodGroupState(Protocol):
    """fwk.PodGroupState: a group's pods as the scheduler's cache knows them (uids; pods where upstream gives
    pods)."""

    def all_pods(self) -> Set[str]: ...
    def all_pods_count(self) -> int: ...
    def unscheduled_pods(self) -> Mapping[str, Pod]: ...
    def assumed_pods(self) -> Set[str]: ...
    def assigned_pods(self) -> Set[str]: ...
    def scheduled_pods(self) -> list[Pod]: ...
    def scheduled_pods_count(self) -> int: ...


class PodGroupStateLister(Protocol):
    def get(self, namespace: str, name: str) -> PodGroupState:
        """Raises LookupError (upstream's message) when the snapshot holds no state for the group."""
        ...


class PodGroupLister(Protocol):
    def get(self, namespace: str, name: str) -> PodGroup:
        """Raises LookupError (upstream's message) when the PodGroup object is not in the snapshot."""
        ...


class PodGroupManager(Protocol):
    """fwk.PodGroupManager (no composite groups): the snapshot's pod-group states and objects."""

    def pod_group_states(self) -> PodGroupStateLister: ...
    def pod_groups(self) -> PodGroupLister: ...


class PodGroupStatusWriter(Protocol):
    """Where PodGroup (scheduling.k8s.io/v1beta1) status goes: the API (scheduler.kube) or a recorder offline.
    ``patch`` is the strategic-merge patch body upstream's util.PatchPodGroupStatus sends
    (``{"status": {...}}``); errors are raised and logged by the caller, never retried here."""

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, object]) -> None: ...
