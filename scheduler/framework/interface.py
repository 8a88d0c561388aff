"""Plugin interfaces (extension points), their optional fast paths, CycleState and the Handle plugins get.

A plugin is any object with a ``name`` attribute and the methods of the extension points it
implements; the runtime checks with isinstance against these runtime-checkable protocols, once per
profile, and finds the optional fast paths (FilterForPlugin, ScoreNodesPlugin, NormalizeValuesExtension, SignPlugin)
the same way. Nothing else is looked up on a plugin or a handle.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from scheduler.config.types import EXTENSION_POINT_METHODS, MAX_NODE_SCORE
from scheduler.framework.extender import Extender
from scheduler.framework.features import Features
from scheduler.framework.listers import MutableSharedLister, SharedLister
from scheduler.framework.podgroup import (
    Placement,
    PlacementProgress,
    PlacementScore,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupManager,
    PodGroupPostFilterResult,
    PodGroupSchedulingFunc,
)
from scheduler.framework.status import Status
from scheduler.framework.types import ClusterEventWithHint, NodeInfo
from scheduler.model.node import Node
from scheduler.model.pod import Pod

if TYPE_CHECKING:
    from scheduler.framework.preemptor import GroupPreemptor

MIN_NODE_SCORE = 0

# Scores as the framework keeps them between Score, NormalizeScore and the weighted totals: int64 numpy
# arrays in node order (a row per plugin), so that the per-node arithmetic runs without a Python loop.
ScoreRow = npt.NDArray[np.int64]
ScoreMatrix = npt.NDArray[np.int64]  # several plugins' scores: a row per plugin, a column per node


_IMPLEMENTS: dict[tuple[type, type], bool] = {}


def implements(value: object, protocol: type) -> bool:
    """isinstance(value, protocol) for a runtime-checkable Protocol, remembered per type: a Protocol check
    is slow, and the hot paths ask it per cycle (normalize) or per node (state clones in preemption)."""
    key = (type(value), protocol)
    known = _IMPLEMENTS.get(key)
    if known is None:
        known = _IMPLEMENTS[key] = isinstance(value, protocol)
    return known


_NO_PLUGINS: frozenset[str] = frozenset()
_new_state = object.__new__


class CycleState:
    """Per-cycle plugin scratch space. Cloned for the nominated-pods pass and preemption dry runs."""

    __slots__ = ("_data", "_placement_state", "_pod_group_cycle", "record_plugin_metrics", "skip_filter_plugins",
                 "skip_pre_bind_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # The PreBind plugins whose PreBindPreFlight returned Skip (upstream's SetSkipPreBindPlugins): PreBind
        # passes them over. Read-only, replaced whole.
        self.skip_pre_bind_plugins: frozenset[str] = _NO_PLUGINS
        # This cycle times every plugin call (upstream samples 10 % of cycles for plugin durations).
        self.record_plugin_metrics = False
        # The pod-group cycle (GenericWorkload): upstream's framework.CycleState is also the PodGroupCycleState and
        # the PlacementCycleState, so these are CycleStates too; None outside a pod group's cycle.
        self._pod_group_cycle: CycleState | None = None
        self._placement_state: CycleState | None = None

    def read(self, key: str) -> Any:
        """Raise KeyError when a plugin's PreFilter/PreScore did not run (an Error status upstream)."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def clone(self) -> CycleState:
        """Values that have a ``clone`` method are cloned, the rest shared (they are read-only)."""
        c = _new_state(CycleState)  # every slot is set below: __init__'s empty containers would be dropped
        data = self._data.copy()
        for k, v in data.items():
            if implements(v, StateData):
                data[k] = v.clone()
        c._data = data
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.skip_pre_bind_plugins = self.skip_pre_bind_plugins
        c.record_plugin_metrics = self.record_plugin_metrics
        c._pod_group_cycle = self._pod_group_cycle
        c._placement_state = self._placement_state
        return c

    # ----- the pod-group cycle's accessors (fwk.CycleState's IsPodGroupSchedulingCycle ...)

    def is_pod_group_scheduling_cycle(self) -> bool:
        """This pod is being placed in its pod group's cycle (not yet in its binding cycle)."""
        return self._pod_group_cycle is not None

    def get_pod_group_scheduling_cycle(self) -> CycleState | None:
        """The group's PodGroupCycleState (of a pod's state, or of a placement's)."""
        return self._pod_group_cycle

    def set_pod_group_scheduling_cycle(self, state: CycleState | None) -> None:
        self._pod_group_cycle = state

    def get_placement_cycle_state(self) -> CycleState | None:
        """The PlacementCycleState of the placement this pod is evaluated in."""
        return self._placement_state

    def set_placement_cycle_state(self, state: CycleState | None) -> None:
        self._placement_state = state


# upstream's fwk.PodGroupCycleState and fwk.PlacementCycleState: the same type as CycleState there and here.
PodGroupCycleState = CycleState
PlacementCycleState = CycleState


@dataclass(slots=True)
class PreFilterResult:
    """A set of node names the pod may go to; None means all nodes."""

    node_names: set[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return PreFilterResult(set(other.node_names))
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str = ""


@dataclass(slots=True)
class NodeToStatus:
    """Filter verdicts per node; nodes not in the map get ``absent`` (e.g. outside PreFilterResult)."""

    statuses: dict[str, Status] = field(default_factory=dict)
    absent: Status | None = None

    def get(self, name: str) -> Status | None:
        return self.statuses.get(name, self.absent)


class ObjectLister(Protocol):
    """Objects other than pods and nodes that plugins read (services, replica sets, namespaces, ...).

    ``kind`` is the API kind (``Service``, ``ReplicaSet``, ``Namespace``, ``PersistentVolumeClaim`` ...).
    Objects are API dicts.
    """

    def list(self, kind: str, namespace: str | None = None) -> Iterable[Mapping[str, Any]]: ...
    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...


class ClusterHandle(Protocol):
    """The cluster part of the plugins' Handle: the cluster as the scheduler sees it and the writes
    plugins may make. The Framework implements it (framework/runtime/framework.py) from what its scheduler
    gives it (FrameworkOptions, SchedulerActions)."""

    def snapshot(self) -> SharedLister: ...

    def mutable_snapshot(self) -> MutableSharedLister:
        """The same snapshot, changeable in a mutation session (upstream MutableSnapshotSharedLister; only
        PodGroupPostFilter uses it)."""
        ...

    def objects(self) -> ObjectLister: ...

    def pod_group_manager(self) -> PodGroupManager:
        """This cycle's pod-group states and PodGroup objects (upstream Handle.PodGroupManager); empty while
        GenericWorkload is off."""
        ...

    def nominated_pods_for(self, node_name: str) -> Sequence[Pod]: ...
    def bind(self, pod: Pod, node_name: str) -> Status | None: ...
    def parallelism(self) -> int: ...

    def extenders(self) -> Sequence[Extender]:
        """The configured extenders (shared by all profiles); those with a preempt verb narrow the
        preemption candidates."""
        ...

    def rng(self) -> random.Random:
        """The scheduler's random source (seedable), e.g. for preemption's start offset."""
        ...

    def latest_pod(self, pod: Pod) -> Pod | None:
        """The most recent version of a pending pod the scheduler has seen; None if it is gone."""
        ...

    def preempt(
        self, victim: Pod, preemptor: Pod, node_name: str, plugin: str, *, group: GroupPreemptor | None = None
    ) -> Status | None:
        """Evict one victim: reject it if it waits at Permit, else set DisruptionTarget and delete
        it; record the Preempted event. A victim already gone is a success. ``group``: the preemptor is a
        pod group (``preemptor`` its first member)."""
        ...

    def victims_selected(self, count: int) -> None:
        """Preemption is evicting the ``count`` victims of its chosen candidate (the
        scheduler_preemption_victims metric), called on the scheduling thread."""
        ...

    def async_preemption_done(self, ok: bool, seconds: float) -> None:
        """An asynchronous preemption's API calls ended, all succeeding or not (the goroutine metrics)."""
        ...

    def workload_preemption_attempted(self, result: str) -> None:
        """DefaultPreemption's PodGroupPostFilter ended with this status code name
        (scheduler_workload_preemption_attempts_total)."""
        ...

    def workload_victims_selected(self, victims: int, disruptions: int) -> None:
        """A pod group's preemption evicts ``victims`` pods in ``disruptions`` pod-group units (the workload
        preemption histograms)."""
        ...

    def preemption_evaluated(self, preemptor: str, result: str, seconds: float) -> None:
        """Victims were looked for, for a ``preemptor`` of type "pod" or "podgroup", ending with the status code
        named ``result`` (scheduler_preemption_evaluation_duration_seconds)."""
        ...

    def preemption_executed(self, preemptor: str, ok: bool, seconds: float) -> None:
        """A chosen candidate's victims were evicted, every call succeeding or not
        (scheduler_preemption_execution_duration_seconds; on a worker thread with asynchronous preemption)."""
        ...

    def pdb_violations_caused(self, preemptor: str, count: int) -> None:
        """The chosen candidate's victims violate ``count`` PodDisruptionBudgets
        (scheduler_preemption_pdb_violations_total)."""
        ...

    def clear_nominated_node(self, pod: Pod) -> Status | None:
        """Remove status.nominatedNodeName of a pod (lower-priority pods nominated to a preempted node)."""
        ...

    def update_object(self, kind: str, obj: Mapping[str, Any], subresource: str = "") -> Mapping[str, Any]:
        """Write (PUT) a PersistentVolume or PersistentVolumeClaim (VolumeBinding's PreBind) or a
        ResourceClaim, ``subresource`` "status" for its status (DynamicResources), and return the
        stored object; raises on failure (scheduler.model.apierrors.ConflictError on a stale resourceVersion)."""
        ...

    def get_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any]:
        """Read an object from the API server, not the cache (a ResourceClaim after a write conflict);
        raises NotFoundError when it is gone."""
        ...

    def patch_object_status(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Strategic-merge-patch an object's status (DynamicResources' Unreserve); raises on failure."""
        ...

    def create_object(self, kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """Create (POST) an object, named by the API server from ``generateName`` (DynamicResources'
        claim for extended resources); returns the stored object, raises on failure."""
        ...

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """Delete an object (the extended-resource claim of a failed attempt); NotFoundError when gone."""
        ...

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Strategic-merge-patch a pod's status (``status.extendedResourceClaimStatus``); raises on failure."""
        ...

    def pod_exists(self, pod: Pod) -> bool:
        """False once the pod was deleted (as far as the watch told)."""
        ...

    def activate_pods(self, pods: list[Pod]) -> None:
        """Move pending pods to activeQ (upstream's PodsToActivate; Coscheduling's siblings)."""
        ...

    def features(self) -> Features:
        """The feature gates in force (upstream passes them to each plugin's factory)."""
        ...

    def podgroup_writer(self) -> PodGroupWriter | None:
        """Where PodGroup status and events go (Coscheduling); None offline (simulate)."""
        ...

    def shared_plugin_state(self, key: str, factory: Callable[[], Any]) -> Any:
        """One object per scheduler under ``key``, shared by all profiles' plugin instances and kept across
        configuration reloads (upstream's SharedDRAManager: DynamicResources' claims and in-flight
        allocations); ``factory`` makes it the first time."""
        ...


class PodGroupWriter(Protocol):
    """The API writes for scheduler-plugins' PodGroups (implemented in scheduler.kube). Both return
    at once: the writes are made off the calling thread."""

    def patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        """Merge-patch the PodGroup's status subresource."""
        ...

    def event(self, podgroup: Mapping[str, Any], type_: str, reason: str, note: str) -> None:
        """Record an Event regarding the PodGroup."""
        ...


class WaitingPod(Protocol):
    """A pod held at Permit (upstream framework.WaitingPod)."""

    def get_pod(self) -> Pod: ...
    def get_pending_plugins(self) -> list[str]: ...
    def allow(self, plugin_name: str) -> None: ...
    def reject(self, plugin_name: str, msg: str) -> None: ...

    def rejected(self) -> bool:
        """Rejected or timed out, though its binding cycle may not have woken yet (our addition)."""
        ...


class Handle(ClusterHandle, Protocol):
    """What plugins get (upstream framework.Handle): the ClusterHandle plus the framework's own
    services, waiting pods for Permit plugins and filter re-runs for preemption."""

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...
    def iterate_over_waiting_pods(self) -> Sequence[WaitingPod]: ...
    def reject_waiting_pod(self, uid: str) -> bool: ...
    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None: ...
    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None: ...
    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None: ...
    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Reserve, as the pod-group preemption's reprieve simulates a member's placement."""
        ...
    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...
    def volume_scheduling_stage_failed(self, operation: str) -> None:
        """Count a VolumeBinding binder error (scheduler_volume_scheduling_stage_error_total;
        operation predicate, assume or bind, as upstream's volumebinding metrics)."""
        ...


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    name: str

    def pre_enqueue(self, pod: Pod) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Protocol):
    name: str

    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool: ...


@runtime_checkable
class QueueSortRankPlugin(Protocol):
    """Optional fast path of a QueueSort plugin: a sort key with ``less(a, b) == (rank(a) < rank(b))``, so
    activeQ can be a heap whose comparisons run in C (queue/heap.py RankedHeap)."""

    name: str

    def rank(self, qpi: QueuedPodInfoLike) -> tuple[Any, ...]: ...


class QueuedPodInfoLike(Protocol):
    pod: Pod
    timestamp: float


@runtime_checkable
class EnqueueExtensions(Protocol):
    name: str

    def events_to_register(self) -> list[ClusterEventWithHint]: ...


class PreFilterExtensions(Protocol):
    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None: ...
    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...
    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None: ...


class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]: ...
    def score_extensions(self) -> ScoreExtensions | None: ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...
    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    name: str

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]: ...


@runtime_checkable
class PreBindPlugin(Protocol):
    name: str

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class BindPlugin(Protocol):
    name: str

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class PostBindPlugin(Protocol):
    name: str

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


# The pod-group cycle's points (v1.37, GenericWorkload): only a pod group's scheduling cycle
# (schedule_one_podgroup.py) calls them.
@runtime_checkable
class PlacementGeneratePlugin(Protocol):
    name: str

    def generate_placements(self, state: CycleState, pod_group: PodGroupInfo,
                            parent_placement: Placement | None) -> tuple[list[Placement], Status | None]:
        """GeneratePlacements: candidate node sets for the group within ``parent_placement`` (None: all nodes);
        an empty list means no placement can hold it."""
        ...


@runtime_checkable
class PlacementScorePlugin(Protocol):
    name: str

    def score_placement(self, state: CycleState, pod_group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Status | None]:
        """ScorePlacement of a feasible placement; ``state`` is that placement's PlacementCycleState."""
        ...


@runtime_checkable
class PlacementScoreExtensions(Protocol):
    """Optional on a PlacementScore plugin (upstream's PlacementScoreExtensions())."""

    def normalize_placement_score(self, state: CycleState, pod_group: PodGroupInfo,
                                  scores: list[PlacementScore]) -> Status | None: ...


@runtime_checkable
class PlacementFeasiblePlugin(Protocol):
    """Not a configured point: upstream calls it on the GangScheduling plugin (a Permit plugin) only."""

    name: str

    def placement_feasible(self, state: CycleState, pod_group: PodGroupInfo,
                           progress: PlacementProgress) -> Status | None:
        """Wait (may become feasible with more pods), Unschedulable (give the placement up), or success."""
        ...


@runtime_checkable
class PodGroupPostFilterPlugin(Protocol):
    name: str

    def pod_group_post_filter(
        self, state: CycleState, pod_group: PodGroupInfo, scheduling_func: PodGroupSchedulingFunc,
    ) -> tuple[PodGroupPostFilterResult | None, Status | None]:
        """After a group's cycle failed: make room (preemption) and nominate its members, or say it cannot."""
        ...


# Extension point (as configs name it) -> the method that marks it on a plugin class (the config's
# EXTENSION_POINT_METHODS), and its protocol.
_PROTOCOLS: dict[str, type] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
    "placementGenerate": PlacementGeneratePlugin,
    "placementScore": PlacementScorePlugin,
    "podGroupPostFilter": PodGroupPostFilterPlugin,
}
EXTENSION_POINT_PROTOCOLS: dict[str, tuple[str, type]] = {
    point: (EXTENSION_POINT_METHODS[point], protocol) for point, protocol in _PROTOCOLS.items()
}


# ----- optional fast paths ---------------------------------------------------------------------
# A plugin may implement these besides its extension point; the framework checks once per profile
# which plugins do (isinstance) and must get the same verdicts and scores as from the plain method.


@runtime_checkable
class FilterForPlugin(Protocol):
    """Filter specialised to one pod: the filter loop runs hundreds of nodes per pod, so per-pod work
    (reading CycleState, parsing the pod) is done once here."""

    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None] | None:
        """A per-node check equal to ``filter(state, pod, node_info)``, or None when Filter passes every
        node that has a Node object (the snapshot lists only those)."""
        ...


@runtime_checkable
class ScoreNodesPlugin(Protocol):
    """Score for every node in one call: per-node call overhead dominates a Python scoring cycle."""

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """The scores ``score`` gives, in ``nodes`` order."""
        ...


def score_by_batch(
    plugin: ScoreNodesPlugin, state: CycleState, pod: Pod, node_info: NodeInfo
) -> tuple[int, Status | None]:
    """Score of one node through the plugin's ``score_nodes``: a plugin's ``score`` may be this, so its
    arithmetic is written once."""
    values, status = plugin.score_nodes(state, pod, [node_info])
    return (values[0] if values else 0), status


@runtime_checkable
class NormalizeValuesExtension(Protocol):
    """NormalizeScore on the framework's score row (``ScoreRow``: one plugin's scores of the feasible
    nodes, int64, in node order), with array operations and no NodeScore objects built."""

    def normalize_values(self, state: CycleState, pod: Pod, values: ScoreRow) -> Status | None:
        """What ``normalize_score`` does to the scores, in place."""
        ...


@runtime_checkable
class NodeChangeLog(Protocol):
    """A snapshot that logs which positions of ``list()`` got a new NodeInfo (cache.Snapshot does): sums
    over every node (opportunistic batching, ``NodeTotals``) then redo only those between two cycles."""

    def change_mark(self) -> Hashable:
        """Where the log stands now."""
        ...

    def changed_since(self, mark: Any) -> list[int] | None:
        """Positions replaced since ``mark``; None when unknown (list rebuilt, another snapshot's mark)."""
        ...


@runtime_checkable
class SignPlugin(Protocol):
    """Opportunistic batching (upstream KEP-5598's SignPlugin): pods with one signature reuse the previous
    pod's Filter verdicts and Score values on every node whose NodeInfo is unchanged. A profile batches only
    when each of its PreFilter, Filter, PreScore and Score plugins is a SignPlugin."""

    def sign_pod(self, pod: Pod) -> Hashable | None:
        """What, beyond the pod template (namespace, labels, annotations and spec without volume names,
        ``batch.template_key``), this plugin's verdicts and scores for the pod depend on, as long as they
        are a function of that and of one node's NodeInfo (and the number of nodes). None when they
        also depend on other nodes or objects (other pods' placement, claims, ...): no batching."""
        ...


@runtime_checkable
class TemplateSignPlugin(Protocol):
    """A SignPlugin whose fragment is a function of the pod template alone (``batch.template_key``: no pod
    field the template leaves out, no cluster object): the framework asks it once per template and gives the
    template's later pods the same fragment, so a cycle calls only the other signers."""

    def signs_by_template(self) -> bool:
        """True when ``sign_pod`` depends on the pod's template alone (asked once per profile)."""
        ...


@runtime_checkable
class SignatureDeltaPlugin(Protocol):
    """Opportunistic batching across signatures: a SignPlugin whose fragment names which nodes it rejects by
    some node-local property (PodTopologySpread's DoNotSchedule fragment is the set of domains too full for
    the pod) can tell which nodes two of its fragments disagree on. A pod whose signature differs from a
    remembered batch's only in such fragments starts from that batch, re-filtering just those nodes,
    instead of filtering every node afresh; upstream's batching has no equivalent."""

    def signature_delta(self, old: Hashable, new: Hashable) -> Callable[[NodeInfo], bool] | None:
        """A test for the nodes whose Filter verdicts or raw scores may differ between this plugin's fragments
        ``old`` and ``new`` (all other nodes have the same under both); None when it cannot tell."""
        ...


@runtime_checkable
class RescorePlugin(Protocol):
    """Opportunistic batching with rescoring (KEP-5598's next step upstream): a SignPlugin whose Filter
    verdicts for the pod are node-local (its ``sign_pod`` covers them) but whose scores move with other
    pods' placement, as PodTopologySpread's ScheduleAnyway constraints and SelectorSpread count matching
    pods per domain. A batched cycle reuses the verdicts and the other plugins' remembered scores, and
    scores the feasible nodes afresh with the plugins that ask for it."""

    def rescore_each_cycle(self, pod: Pod) -> bool:
        """True when this plugin's scores for ``pod`` must not be remembered between cycles."""
        ...


@runtime_checkable
class StateData(Protocol):
    """A CycleState value that must be copied when the state is cloned (mutable per-cycle data)."""

    def clone(self) -> Any: ...


@runtime_checkable
class ClusterEventObserver(Protocol):
    """Our addition: a plugin that keeps its own state from watch events, where upstream plugins
    read informers (Coscheduling's pod and PodGroup informers). The framework calls these on the
    watch threads for the pods of its profile and for the other kinds; they must return quickly.
    (Three observers, three roles: this one feeds a plugin, CycleObserver records what plugins said,
    edge.ScheduleObserver sees each attempt's outcome.)"""

    name: str

    def on_pod_event(self, deleted: bool, pod: Pod) -> None: ...
    def on_object_event(self, kind: str, deleted: bool, obj: Mapping[str, Any]) -> None: ...


class PluginFactory(Protocol):
    """Builds a plugin from its args and the framework handle. In-tree plugins get their typed Args
    (``config.types_pluginargs``), already defaulted and validated; plugins without an args type get
    the ``pluginConfig`` args mapping as given. Raise ValueError naming the field for invalid args."""

    def __call__(self, args: Any, handle: Handle) -> Any: ...


__all__ = [
    "EXTENSION_POINT_PROTOCOLS",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "BindPlugin",
    "ClusterEventObserver",
    "ClusterHandle",
    "CycleState",
    "EnqueueExtensions",
    "FilterForPlugin",
    "FilterPlugin",
    "Handle",
    "MutableSharedLister",
    "Node",
    "NodeScore",
    "NodeToStatus",
    "NormalizeValuesExtension",
    "ObjectLister",
    "PermitPlugin",
    "PlacementCycleState",
    "PlacementFeasiblePlugin",
    "PlacementGeneratePlugin",
    "PlacementScoreExtensions",
    "PlacementScorePlugin",
    "PluginFactory",
    "PodGroupCycleState",
    "PodGroupPostFilterPlugin",
    "PodGroupWriter",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "RescorePlugin",
    "ReservePlugin",
    "ScoreExtensions",
    "ScoreMatrix",
    "ScoreNodesPlugin",
    "ScorePlugin",
    "ScoreRow",
    "SharedLister",
    "SignPlugin",
    "StateData",
    "WaitingPod",
    "implements",
    "score_by_batch",
]


class CycleObserver(Protocol):
    """Sees every plugin's result at every extension point of a pod's scheduling attempt (the
    per-plugin view; the per-attempt outcome goes to edge.ScheduleObserver).

    Upstream has no such hook (kube-scheduler-simulator wraps each plugin to get the same view); here
    the framework calls it when one is injected, so `simulate`, `explain` and `run --record-results`
    share one recorder (framework/results.py). ``point`` is the upstream extension point name
    ("PreFilter", "PreScore", "Reserve", "Permit", "PreBind", "Bind"); a None status is Success."""

    def begin(self, pod: Pod) -> None:
        """A new attempt starts (PreFilter is about to run): forget the previous one."""
        ...

    def plugin_status(self, point: str, pod: Pod, plugin: str, status: Status | None) -> None: ...

    def pre_filter_result(self, pod: Pod, plugin: str, node_names: set[str]) -> None: ...

    def filter_status(self, pod: Pod, node: str, plugin: str, status: Status | None) -> None: ...

    def post_filter_result(self, pod: Pod, plugin: str, nominated_node: str, nodes: Sequence[str]) -> None: ...

    def scores(
        self, pod: Pod, nodes: Sequence[str], plugins: Mapping[str, tuple[Sequence[int], Sequence[int], int]]
    ) -> None:
        """The scored nodes and, per score plugin that ran, its raw Score, the values after NormalizeScore
        (both parallel to ``nodes``) and its weight; called again for each prioritizing extender (its
        0-10 score as both, and its weight times 10, the scaling to 0-100)."""
        ...

    def permit_timeout(self, pod: Pod, plugin: str, seconds: float) -> None: ...

    def selected_node(self, pod: Pod, node: str) -> None: ...
