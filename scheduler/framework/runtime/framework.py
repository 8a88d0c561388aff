"""The framework runtime: one profile's plugins, run at each extension point as kube-scheduler does.

Mirrors ``pkg/scheduler/framework/runtime/framework.go``: the order in which plugins run, which
codes stop a loop, the wrapping of unexpected codes into Error statuses (same wording), the
nominated-pods two-pass filter, score normalization/range-check/weighting, Permit waiting and the
Bind "first non-Skip wins" chain. As upstream's frameworkImpl, the Framework is itself the Handle its
plugins get. Everything runs on the caller's thread; only Permit waiting is shared with the binding
threads (waiting_pods_map.py). Sampled cycles run the timed wrappers of instrumented_plugins.py.
Each section (``# -----``) names the upstream functions it follows.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from scheduler.config.types import EXTENSION_POINTS, Profile
from scheduler.framework.batch import template_key
from scheduler.framework.expectation import PreFlightCheck, pre_flight_checks
from scheduler.framework.features import Features
from scheduler.framework.interface import (
    EXTENSION_POINT_PROTOCOLS,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    ClusterEventObserver,
    CycleObserver,
    CycleState,
    EnqueueExtensions,
    FilterForPlugin,
    FilterPlugin,
    NodeScore,
    NodeToStatus,
    NormalizeValuesExtension,
    ObjectLister,
    PermitPlugin,
    PluginFactory,
    PodGroupWriter,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueuedPodInfoLike,
    QueueSortPlugin,
    QueueSortRankPlugin,
    RescorePlugin,
    ReservePlugin,
    ScoreMatrix,
    ScoreNodesPlugin,
    ScorePlugin,
    ScoreRow,
    SharedLister,
    SignatureDeltaPlugin,
    SignPlugin,
    TemplateSignPlugin,
    implements,
)
from scheduler.framework.listers import MutableSharedLister
from scheduler.framework.podgroup import PodGroupManager
from scheduler.framework.runtime.instrumented_plugins import PluginMetrics, instrument
from scheduler.framework.runtime.podgroup_points import PodGroupPoints
from scheduler.framework.runtime.waiting_pods_map import WaitingPod, WaitingPodsMap
from scheduler.framework.score_rows import score_rows
from scheduler.framework.status import (
    CODE_SKIP,
    CODE_SUCCESS,
    CODE_UNRESOLVABLE,
    CODE_UNSCHEDULABLE,
    CODE_WAIT,
    SUCCESS_NAME,
    Status,
    code_name,
    error,
    success,
    unresolvable,
)
from scheduler.framework.types import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, NodeInfo
from scheduler.model.pod import Pod

if TYPE_CHECKING:
    from scheduler.framework.extender import Extender
    from scheduler.framework.preemptor import GroupPreemptor

# callable(extension_point, status_code_string, seconds): wired to scheduler_framework_extension_point_duration.
MetricsHook = Callable[[str, str, float], None]
_NO_SCORES: ScoreRow = np.zeros(0, dtype=np.int64)
_NONE_RESCORED: frozenset[str] = frozenset()
# A signature's leading parts: the profile's name and the template key; the signers' fragments follow.
_SIGNATURE_HEAD = 2
# Templates whose signing is remembered (sign_pod), and what marks a template not seen yet.
_MAX_TEMPLATES = 256
_UNSIGNED: Any = object()
# active_score_plugins keeps this many lists at most (one per set of plugins PreScore skipped; a profile has few),
# and count_filter_evaluations this many name tuples.
_MAX_SCORE_LISTS = 64
# A list of Score plugins' names, weights and normalizers (Framework._score_list).
_ScoreList = tuple[tuple[str, ...], "npt.NDArray[np.int64]", tuple[tuple[int, Any, Any], ...]]
_maximum = np.maximum.reduce  # ndarray.max() without numpy's Python layer (_methods._amax) in between
# (state, pod, nodes, plugins) -> raw score matrix (a row per plugin, in ``plugins`` order), or an error status
RawScores = Callable[[CycleState, Pod, Sequence[NodeInfo], "list[ScorePlugin]"], "tuple[ScoreMatrix, Status | None]"]


def score_matrix(raw: Mapping[str, Sequence[int]], plugins: Sequence[ScorePlugin], n: int) -> ScoreMatrix:
    """``score_nodes``' lists as a matrix, a row per plugin in ``plugins`` order."""
    return score_rows([raw[pl.name] for pl in plugins], n)


# Permit plugins may not ask for a longer wait than this (upstream maxTimeout).
MAX_PERMIT_TIMEOUT_SECONDS = 15 * 60.0

# Only plugins at these points can make a pod unschedulable, so only their events requeue pods.
_ENQUEUE_POINTS = ("preEnqueue", "preFilter", "filter", "reserve", "permit")

# Registered for plugins that do not say which events matter to them: any event may help.
WILDCARD_EVENT = ClusterEventWithHint(ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "WildCard"))


class SchedulerActions(Protocol):
    """What only the scheduler can do or know for plugins: its writes (bind, evict, clear a nomination,
    volume objects), its queue (nominated pods, activation), its view of pending pods and its metrics.
    The Scheduler implements it (scheduler.py); the framework hands it out as part of the Handle."""

    def nominated_pods_for(self, node_name: str) -> Sequence[Pod]: ...
    def bind(self, pod: Pod, node_name: str) -> Status | None: ...
    def extenders(self) -> Sequence[Extender]: ...
    def latest_pod(self, pod: Pod) -> Pod | None: ...
    def preempt(
        self, victim: Pod, preemptor: Pod, node_name: str, plugin: str, *, group: GroupPreemptor | None = None
    ) -> Status | None: ...
    def victims_selected(self, count: int) -> None: ...
    def async_preemption_done(self, ok: bool, seconds: float) -> None: ...
    def workload_preemption_attempted(self, result: str) -> None: ...
    def workload_victims_selected(self, victims: int, disruptions: int) -> None: ...
    def preemption_evaluated(self, preemptor: str, result: str, seconds: float) -> None: ...
    def preemption_executed(self, preemptor: str, ok: bool, seconds: float) -> None: ...
    def pdb_violations_caused(self, preemptor: str, count: int) -> None: ...
    def clear_nominated_node(self, pod: Pod) -> Status | None: ...
    def update_object(self, kind: str, obj: Mapping[str, Any], subresource: str = "") -> Mapping[str, Any]: ...
    def get_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any]: ...
    def patch_object_status(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> None: ...
    def create_object(self, kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any]: ...
    def delete_object(self, kind: str, namespace: str, name: str) -> None: ...
    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None: ...
    def pod_exists(self, pod: Pod) -> bool: ...
    def activate_pods(self, pods: list[Pod]) -> None: ...
    def shared_plugin_state(self, key: str, factory: Callable[[], Any]) -> Any: ...


class PluginRegistry(Protocol):
    """Where a framework gets its plugins' factories by name (config/registry.py Registry): None when a
    plugin cannot be had."""

    def get(self, name: str, default: PluginFactory | None = None) -> PluginFactory | None: ...


# What NewFramework accepts as a registry: a Registry, or a plain name -> factory mapping (tests, embedding).
Plugins = PluginRegistry | Mapping[str, PluginFactory]


@dataclass(frozen=True, slots=True)
class FrameworkOptions:
    """What a scheduler gives each profile's framework (upstream's frameworkOptions: WithSnapshotSharedLister,
    WithParallelism, ...). The framework is the plugins' Handle and answers from these; ``scheduler`` does
    what only the scheduler can (SchedulerActions)."""

    scheduler: SchedulerActions
    snapshot: SharedLister
    objects: ObjectLister
    parallelism: int = 16
    rng: random.Random = field(default_factory=random.Random)
    features: Features = field(default_factory=Features)
    podgroup_writer: PodGroupWriter | None = None
    # The cache's pod-group states (GenericWorkload): what Handle.pod_group_manager() answers, as upstream's
    # WithPodGroupManager(schedulerCache); None: the snapshot's.
    pod_group_manager: PodGroupManager | None = None


def _failure(message: str, plugin: str = "", cause: Status | None = None) -> Status:
    """An Error status wrapping a plugin's: like Go's %w, the cause's error (e.g. an API 404) stays
    reachable, so callers can still tell a deleted pod from a failure."""
    s = error(message)
    s.plugin = plugin
    if cause is not None and cause.error is not None:
        s.error = cause.error
    return s


@dataclass(slots=True)
class NodePluginScores:
    """A node's weighted total (per-plugin scores go to the CycleObserver, when one is injected)."""

    name: str
    total_score: int = 0


class PluginInitError(ValueError):
    """A plugin's factory raised (upstream: "initializing plugin"): for an out-of-tree plugin, that is how bad
    args show, so the start-up and reload paths report it as a configuration error on one line."""

    def __init__(self, profile: str, plugin: str, cause: Exception) -> None:
        detail = str(cause).replace("\n", " ").strip()
        if not isinstance(cause, ValueError) or not detail:
            detail = f"{type(cause).__name__}: {detail}" if detail else type(cause).__name__
        super().__init__(f"profile {profile!r}: initializing plugin {plugin!r}: {detail}")


class Framework(PodGroupPoints):
    """The plugins of one profile, instantiated once each, listed per extension point in config order;
    the Handle they get (upstream frameworkImpl implements framework.Handle)."""

    def __init__(
        self,
        profile: Profile,
        registry: Plugins,
        options: FrameworkOptions,
        *,
        metrics: MetricsHook | None = None,
        plugin_metrics: PluginMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        observer: CycleObserver | None = None,
        success_values: Callable[[str, str], list[float]] | None = None,
    ) -> None:
        self.profile_name = profile.scheduler_name
        # Told every plugin's result (simulate, explain, --record-results); None in the plain live path.
        self.observer = observer
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score
        self.run_all_filters = profile.run_all_filters
        self._options = options
        self._scheduler = options.scheduler
        self._metrics = metrics
        # ``success_values(point, SUCCESS_NAME)``: the list ``metrics`` appends that point's successful durations to
        # (ProfileMetrics.extension_point_values), kept per point here: ~8 observations a cycle skip the hook's call.
        self._success_values = success_values
        self._success_lists: dict[str, list[float]] = {}
        self._plugin_metrics = plugin_metrics
        self._clock = clock
        self.waiting_pods = WaitingPodsMap()
        self.plugins: dict[str, Any] = {}
        self._by_point: dict[str, list[Any]] = {}
        self.score_plugin_weight: dict[str, int] = {}
        self.placement_score_plugin_weight: dict[str, int] = {}
        self._score_lists: dict[tuple[Any, ...], _ScoreList] = {}
        # active_score_plugins' lists by (timed, skipped plugins), and the latest of them _score_list described.
        self._active_scores: dict[tuple[bool, frozenset[str]], list[ScorePlugin]] = {}
        self._latest_score_list: tuple[list[ScorePlugin], _ScoreList] | None = None
        self._build(profile, registry)
        # By each plugin's own name, the name list_plugins, metrics and score weights use; ``plugins`` is by the
        # name the configuration lists, which differs for a plugin named by its import path (``pkg.mod:Class``).
        self.plugins_by_name: dict[str, Any] = {str(pl.name): pl for pl in self.plugins.values()}
        self._pre_enqueue: list[PreEnqueuePlugin] = self._by_point["preEnqueue"]
        self._queue_sort: list[QueueSortPlugin] = self._by_point["queueSort"]
        self._pre_filter: list[PreFilterPlugin] = self._by_point["preFilter"]
        self._filter: list[FilterPlugin] = self._by_point["filter"]
        self._post_filter: list[PostFilterPlugin] = self._by_point["postFilter"]
        self._pre_score: list[PreScorePlugin] = self._by_point["preScore"]
        self._pre_filter_names = tuple(pl.name for pl in self._pre_filter)  # counted every cycle (metrics)
        # The PreFilter plugins with AddPod/RemovePod, fixed once built: preemption's simulations call them per
        # victim and per member, where asking each plugin again cost as much as the extension's own work.
        self._pre_filter_exts = tuple((pl.name, ext) for pl in self._pre_filter
                                      if (ext := pl.pre_filter_extensions()) is not None)
        self._pre_score_names = tuple(pl.name for pl in self._pre_score)
        self._score: list[ScorePlugin] = self._by_point["score"]
        self._reserve: list[ReservePlugin] = self._by_point["reserve"]
        self._permit: list[PermitPlugin] = self._by_point["permit"]
        self._pre_bind: list[PreBindPlugin] = self._by_point["preBind"]
        self._bind_names = tuple(pl.name for pl in self._by_point["bind"])
        self._pre_bind_all_pre_flight = all(hasattr(pl, "pre_bind_pre_flight") for pl in self._pre_bind)
        self._pre_bind_names = frozenset(pl.name for pl in self._pre_bind)
        self._pre_flights = pre_flight_checks(self._pre_bind)  # looked up once, not per binding cycle
        self._bind: list[BindPlugin] = self._by_point["bind"]
        self._post_bind: list[PostBindPlugin] = self._by_point["postBind"]
        self._observers = [p for p in self.plugins.values() if isinstance(p, ClusterEventObserver)]
        # The optional fast paths each plugin declares (interface.py), looked up once per profile; a
        # plugin's timed wrapper implements the same ones.
        self._filter_for: frozenset[str] = frozenset(pl.name for pl in self._filter if isinstance(pl, FilterForPlugin))
        self._score_nodes_of: frozenset[str] = frozenset(
            pl.name for pl in self._score if isinstance(pl, ScoreNodesPlugin))
        self._timed_by_point: dict[str, list[Any]] = {}
        if plugin_metrics is not None:
            self._timed_by_point = {p: instrument(p, pls, plugin_metrics) for p, pls in self._by_point.items()}
        # Filter plugins as filter_runner walks them each cycle: (name, plugin, whether a FilterForPlugin).
        self._filter_rows = self._rows_of(self._filter)
        self._timed_filter_rows = self._rows_of(self._timed_by_point.get("filter", []))
        # PreFilter's, PreScore's and Reserve's (name, method) pairs, plain and timed (_calls), and the active Filter
        # plugins' evaluation counter cells by the set PreFilter skipped (the counts of a walk without rejections).
        self._calls_by_point: dict[tuple[str, bool], list[tuple[str, Any]]] = {
            (point, timed): [(pl.name, getattr(pl, method)) for pl in plugins]
            for point, method in (("preFilter", "pre_filter"), ("preScore", "pre_score"), ("reserve", "reserve"))
            for timed, plugins in ((False, self._by_point[point]), (True, self._timed_by_point.get(point, [])))
        }
        self._active_filter_cells: dict[frozenset[str], list[Any]] = {}
        self._score_cells: dict[tuple[str, ...], list[Any]] = {}  # Score's evaluation counter cells by plugin names
        self._name_cells: dict[str, list[Any]] = {}  # _count_names' counter cells by extension point

        # Opportunistic batching needs every PreFilter, Filter, PreScore and Score plugin to sign pods.
        points = (self._pre_filter, self._filter, self._pre_score, self._score)
        unique: list[Any] = list({id(pl): pl for pls in points for pl in pls}.values())
        signers: list[SignPlugin] = [pl for pl in unique if isinstance(pl, SignPlugin)]
        self._signers: list[SignPlugin] | None = signers if len(signers) == len(unique) else None
        # The signers asked per pod, with their fragment's place in the signature; the others (TemplateSignPlugin)
        # are asked once per template: _template_signatures holds each template's signature with their
        # fragments in place (None: a template signer refused the template).
        self._pod_signers = [(_SIGNATURE_HEAD + i, pl) for i, pl in enumerate(signers)
                             if not (isinstance(pl, TemplateSignPlugin) and pl.signs_by_template())]
        self._template_signatures: dict[str, list[Hashable] | None] = {}
        self._rescorers: list[tuple[str, RescorePlugin]] = [
            (pl.name, pl) for pl in self._score if isinstance(pl, RescorePlugin)
        ]

    # ----- construction: NewFramework, expandMultiPointPlugins, getValidScoreWeights, updatePluginList

    def _rows_of(self, plugins: list[Any]) -> list[tuple[str, Any, bool]]:
        return [(pl.name, pl, pl.name in self._filter_for) for pl in plugins]

    def _build(self, profile: Profile, registry: Plugins) -> None:
        """Instantiate each named plugin once and check it implements every point it is listed at."""
        unknown = set(profile.plugins) - set(EXTENSION_POINTS)
        if unknown:
            raise ValueError(f"profile {self.profile_name!r}: unknown extension point(s) {sorted(unknown)}")
        for point in EXTENSION_POINTS:
            listed: list[Any] = []
            for ref in profile.plugins.get(point, []):
                plugin = self._instantiate(profile, registry, ref.name)
                if not isinstance(plugin, EXTENSION_POINT_PROTOCOLS[point][1]):
                    raise ValueError(
                        f"profile {self.profile_name!r}: plugin {ref.name!r} is enabled at {point} "
                        f"but does not implement it"
                    )
                if any(p is plugin for p in listed):
                    raise ValueError(f"profile {self.profile_name!r}: plugin {ref.name!r} listed twice at {point}")
                listed.append(plugin)
                if point == "score":
                    self._set_score_weight(ref.name, plugin, ref.weight)
                elif point == "placementScore":
                    self.placement_score_plugin_weight[str(getattr(plugin, "name", ref.name))] = max(ref.weight, 1)
            self._by_point[point] = listed
        if len(self._by_point["queueSort"]) > 1:
            raise ValueError(f"profile {self.profile_name!r}: only one queueSort plugin can be enabled")

    def _set_score_weight(self, listed_as: str, plugin: Any, weight: int) -> None:
        """Weights are looked up by the plugin's own name, which differs from the name it is listed under
        when a configuration names it by import path (``pkg.module:Class``); two Score plugins calling
        themselves the same would share one weight, so that is a configuration error."""
        name = str(plugin.name)
        if name in self.score_plugin_weight:
            raise ValueError(f"profile {self.profile_name!r}: plugin {listed_as!r} is named {name!r}, "
                             f"like another Score plugin of this profile")
        self.score_plugin_weight[name] = weight if weight > 0 else 1

    def _instantiate(self, profile: Profile, registry: Plugins, name: str) -> Any:
        if name in self.plugins:
            return self.plugins[name]
        factory = registry.get(name)
        if factory is None:
            raise ValueError(f"profile {self.profile_name!r}: plugin {name!r} is not registered")
        try:
            plugin = factory(profile.plugin_config.get(name, {}), self)
        except Exception as exc:  # an out-of-tree plugin checks its own args when built
            raise PluginInitError(self.profile_name, name, exc) from exc
        self.plugins[name] = plugin
        return plugin

    # ----- the Handle: SnapshotSharedLister, Parallelizer, the podNominator, Extenders, PodActivator

    def snapshot(self) -> SharedLister:
        return self._options.snapshot

    def mutable_snapshot(self) -> MutableSharedLister:
        return cast(MutableSharedLister, self._options.snapshot)

    def pod_group_manager(self) -> PodGroupManager:
        """The cache's pod-group states (upstream hands plugins the cache); the snapshot's without a cache."""
        manager = self._options.pod_group_manager
        return manager if manager is not None else cast(PodGroupManager, self._options.snapshot)

    def objects(self) -> ObjectLister:
        return self._options.objects

    def parallelism(self) -> int:
        return self._options.parallelism

    def rng(self) -> random.Random:
        return self._options.rng

    def features(self) -> Features:
        return self._options.features

    def podgroup_writer(self) -> PodGroupWriter | None:
        return self._options.podgroup_writer

    def nominated_pods_for(self, node_name: str) -> Sequence[Pod]:
        return self._scheduler.nominated_pods_for(node_name)

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return self._scheduler.bind(pod, node_name)

    def extenders(self) -> Sequence[Extender]:
        return self._scheduler.extenders()

    def latest_pod(self, pod: Pod) -> Pod | None:
        return self._scheduler.latest_pod(pod)

    def preempt(
        self, victim: Pod, preemptor: Pod, node_name: str, plugin: str, *, group: GroupPreemptor | None = None
    ) -> Status | None:
        if group is None:
            return self._scheduler.preempt(victim, preemptor, node_name, plugin)
        return self._scheduler.preempt(victim, preemptor, node_name, plugin, group=group)

    def victims_selected(self, count: int) -> None:
        self._scheduler.victims_selected(count)

    def async_preemption_done(self, ok: bool, seconds: float) -> None:
        self._scheduler.async_preemption_done(ok, seconds)

    def workload_preemption_attempted(self, result: str) -> None:
        self._scheduler.workload_preemption_attempted(result)

    def workload_victims_selected(self, victims: int, disruptions: int) -> None:
        self._scheduler.workload_victims_selected(victims, disruptions)

    def preemption_evaluated(self, preemptor: str, result: str, seconds: float) -> None:
        self._scheduler.preemption_evaluated(preemptor, result, seconds)

    def preemption_executed(self, preemptor: str, ok: bool, seconds: float) -> None:
        self._scheduler.preemption_executed(preemptor, ok, seconds)

    def pdb_violations_caused(self, preemptor: str, count: int) -> None:
        self._scheduler.pdb_violations_caused(preemptor, count)

    def clear_nominated_node(self, pod: Pod) -> Status | None:
        return self._scheduler.clear_nominated_node(pod)

    def update_object(self, kind: str, obj: Mapping[str, Any], subresource: str = "") -> Mapping[str, Any]:
        return self._scheduler.update_object(kind, obj, subresource)

    def get_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any]:
        return self._scheduler.get_object(kind, namespace, name)

    def patch_object_status(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self._scheduler.patch_object_status(kind, namespace, name, patch)

    def create_object(self, kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        return self._scheduler.create_object(kind, obj)

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        self._scheduler.delete_object(kind, namespace, name)

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self._scheduler.patch_pod_status(namespace, name, patch)

    def pod_exists(self, pod: Pod) -> bool:
        return self._scheduler.pod_exists(pod)

    def shared_plugin_state(self, key: str, factory: Callable[[], Any]) -> Any:
        return self._scheduler.shared_plugin_state(key, factory)

    def activate_pods(self, pods: list[Pod]) -> None:
        self._scheduler.activate_pods(pods)

    # ----- introspection: ListPlugins, HasFilterPlugins, HasPostFilterPlugins, HasScorePlugins, metricsRecorder

    def list_plugins(self) -> dict[str, list[str]]:
        """Extension point -> plugin names, in run order (points without plugins omitted)."""
        return {p: [pl.name for pl in pls] for p, pls in self._by_point.items() if pls}

    def pre_bind_plugins(self) -> list[PreBindPlugin]:
        """The PreBind plugins in run order (every binding cycle asks: no dict of every point per pod)."""
        return self._pre_bind

    def pre_bind_pre_flights(self) -> list[PreFlightCheck]:
        """The (name, PreBindPreFlight) of the PreBind plugins that have one, in run order (run_pre_flights)."""
        return self._pre_flights

    def bind_plugin_names(self) -> tuple[str, ...]:
        """The Bind plugins' names in run order."""
        return self._bind_names

    def pre_bind_plugins_say_when_idle(self) -> bool:
        """Every PreBind plugin has a PreBindPreFlight, so a Skip from all of them means PreBind has nothing to
        do for the pod (a plugin without one might, so its binding cycle cannot be batched)."""
        return self._pre_bind_all_pre_flight

    def has_filter_plugins(self) -> bool:
        return bool(self._filter)

    def has_post_filter_plugins(self) -> bool:
        return bool(self._post_filter)

    def has_score_plugins(self) -> bool:
        return bool(self._score)

    def observe(self, extension_point: str, status: Status | None, seconds: float) -> None:
        """Report one extension point's duration to the metrics hook (if any)."""
        metrics = self._metrics
        if metrics is None:
            return
        if status is None and self._success_values is not None:  # ~8 extension points a cycle, most succeed
            self._success_list(extension_point).append(seconds)
        else:
            metrics(extension_point, SUCCESS_NAME if status is None else code_name(status), seconds)

    def _observe_since(self, extension_point: str, status: Status | None, start: float) -> None:
        """``observe`` of the time since ``start``; a success's list read here (no call between, seven a cycle)."""
        metrics = self._metrics
        if metrics is None:
            return
        if status is not None or self._success_values is None:
            metrics(extension_point, SUCCESS_NAME if status is None else code_name(status), time.perf_counter() - start)
            return
        values = self._success_lists.get(extension_point)
        if values is None:
            values = self._success_list(extension_point)
        values.append(time.perf_counter() - start)

    def _success_list(self, extension_point: str) -> list[float]:
        """The list ``metrics`` appends the point's successful durations to (``success_values``), kept."""
        values = self._success_lists.get(extension_point)
        if values is None:
            assert self._success_values is not None
            values = self._success_lists[extension_point] = self._success_values(extension_point, SUCCESS_NAME)
        return values

    # ----- watch events for plugins that keep state (no upstream counterpart: plugins there keep informers)

    def has_observers(self) -> bool:
        return bool(self._observers)

    def notify_pod_event(self, deleted: bool, pod: Pod) -> None:
        """A pod of this profile changed (any phase, as a label-selected pod watch sees it)."""
        if pod.scheduler_name != self.profile_name:
            return
        for pl in self._observers:
            pl.on_pod_event(deleted, pod)

    def notify_object_event(self, kind: str, deleted: bool, obj: Mapping[str, Any]) -> None:
        for pl in self._observers:
            pl.on_object_event(kind, deleted, obj)

    def _timed(self, state: CycleState) -> bool:
        """Whether this cycle runs the timed plugins (it samples plugin durations)."""
        return state.record_plugin_metrics and bool(self._timed_by_point)

    def _plugins(self, state: CycleState, point: str) -> list[Any]:
        """The plugins of ``point``, timed ones when this cycle samples plugin durations."""
        return self._timed_by_point[point] if self._timed(state) else self._by_point[point]

    def _calls(self, state: CycleState, point: str) -> list[tuple[str, Any]]:
        """(name, bound method of ``point``) of its plugins, timed ones when this cycle samples plugin durations:
        built once, so the PreFilter and PreScore loops read no plugin attribute per plugin."""
        return self._calls_by_point[(point, self._timed(state))]

    def _count_names(self, point: str, names: tuple[str, ...]) -> None:
        """scheduler_plugin_evaluation_total: each of the plugins ``names`` ran once (PreFilter, PreScore, whose
        lists are fixed per profile: their counter cell is kept, one addition a cycle)."""
        cell = self._name_cells.get(point)
        if cell is None:
            if self._plugin_metrics is None:
                return
            cell = self._name_cells[point] = self._plugin_metrics.evaluation_cell(names, point)
        cell[1] += 1

    def count_filter_evaluations(self, state: CycleState, visited: int, rejections: Sequence[Status]) -> None:
        """Filter evaluations without per-node counting: a plugin ran on every visited node that the
        plugins before it passed (``rejections``: the statuses of the nodes rejected in this walk). With no
        rejection (a pod that fits, usually) every active filter ran on every visited node: one count."""
        metrics = self._plugin_metrics
        if metrics is None or not visited:
            return
        skipped = state.skip_filter_plugins
        if not rejections:
            key = frozenset(skipped)
            cell = self._active_filter_cells.get(key)  # the counter cell of the active filters' names
            if cell is None:
                if len(self._active_filter_cells) >= _MAX_SCORE_LISTS:
                    self._active_filter_cells.clear()
                names = tuple([pl.name for pl in self._filter if pl.name not in key])
                cell = self._active_filter_cells[key] = metrics.evaluation_cell(names, "Filter")
            cell[1] += visited
            return
        # The few distinct rejecting plugins counted by list.count, a C loop that mostly meets the very name object
        # it counts, rather than a Counter's dict update per rejected node: hundreds of nodes may be rejected
        # (anti-affinity).
        rejecting = list(map(attrgetter("plugin"), rejections))
        rejected = {name: rejecting.count(name) for name in set(rejecting)}
        for pl in self._filter:
            name = pl.name
            if name in skipped:
                continue
            if visited:
                metrics.plugin_evaluations((name,), "Filter", visited)
            visited -= rejected.get(name, 0)

    # ----- queue side: QueueSortFunc, PreEnqueuePlugins, EnqueueExtensions, SignPod, computeBatchablePlugins

    def queue_sort_less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool:
        if not self._queue_sort:
            raise RuntimeError(f"profile {self.profile_name!r}: no queueSort plugin is enabled")
        return self._queue_sort[0].less(a, b)

    def queue_sort_rank(self) -> Callable[[QueuedPodInfoLike], tuple[Any, ...]] | None:
        """The QueueSort plugin's sort key, when it gives one (QueueSortRankPlugin)."""
        if self._queue_sort and implements(self._queue_sort[0], QueueSortRankPlugin):
            return cast(QueueSortRankPlugin, self._queue_sort[0]).rank
        return None

    def pre_enqueue_plugins(self) -> list[PreEnqueuePlugin]:
        return list(self._pre_enqueue)

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name -> events that may make a pod it rejected schedulable.

        Only plugins that can reject (PreEnqueue, PreFilter, Filter, Reserve, Permit) count; one
        without ``events_to_register`` gets the wildcard event, as upstream's default extension."""
        out: dict[str, list[ClusterEventWithHint]] = {}
        for point in _ENQUEUE_POINTS:
            for pl in self._by_point[point]:
                if pl.name in out:
                    continue
                out[pl.name] = list(pl.events_to_register()) if isinstance(pl, EnqueueExtensions) else [WILDCARD_EVENT]
        return out

    def sign_pod(self, pod: Pod) -> Hashable | None:
        """The pod's batching signature (framework/batch.py), or None when it cannot be batched."""
        if self._signers is None:
            return None
        key = template_key(pod)
        parts = self._template_signatures.get(key, _UNSIGNED)
        if parts is _UNSIGNED:
            parts = self._sign_template(pod, key)
        if parts is None:
            return None
        if self._pod_signers:
            parts = parts.copy()
            for at, pl in self._pod_signers:
                fragment = pl.sign_pod(pod)
                if fragment is None:
                    return None
                parts[at] = fragment
        return tuple(parts)

    def _sign_template(self, pod: Pod, key: str) -> list[Hashable] | None:
        """The signature's head and the template signers' fragments (the per-pod ones' places hold None), or None
        when one of them refuses; remembered for the template (at most _MAX_TEMPLATES, then afresh)."""
        assert self._signers is not None
        per_pod = {at for at, _ in self._pod_signers}
        parts: list[Hashable] = [self.profile_name, key]
        signed: list[Hashable] | None = parts
        for at, pl in enumerate(self._signers, _SIGNATURE_HEAD):
            if at in per_pod:
                parts.append(None)
                continue
            fragment = pl.sign_pod(pod)
            if fragment is None:
                signed = None
                break
            parts.append(fragment)
        if len(self._template_signatures) >= _MAX_TEMPLATES:
            self._template_signatures.clear()
        self._template_signatures[key] = signed
        return signed

    def signature_delta(self, old: Hashable, new: Hashable) -> Callable[[NodeInfo], bool] | None:
        """The nodes whose verdicts or raw scores may differ between two of this profile's signatures
        (``sign_pod``): None unless they share the template and differ only in fragments of
        SignatureDeltaPlugins, which then name those nodes."""
        if self._signers is None or not isinstance(old, tuple) or not isinstance(new, tuple):
            return None
        head = _SIGNATURE_HEAD
        if len(old) != len(new) or len(old) != head + len(self._signers) or old[:head] != new[:head]:
            return None
        tests: list[Callable[[NodeInfo], bool]] = []
        for pl, a, b in zip(self._signers, old[head:], new[head:], strict=True):
            if a == b:
                continue
            test = pl.signature_delta(a, b) if isinstance(pl, SignatureDeltaPlugin) else None
            if test is None:
                return None
            tests.append(test)
        if len(tests) == 1:
            return tests[0]
        return lambda node_info: any(test(node_info) for test in tests)

    def rescored_plugins(self, pod: Pod) -> frozenset[str]:
        """The Score plugins whose scores for ``pod`` a batch must not remember (RescorePlugin)."""
        names = [name for name, pl in self._rescorers if pl.rescore_each_cycle(pod)]
        return frozenset(names) if names else _NONE_RESCORED

    # ----- PreFilter / Filter: RunPreFilterPlugins, RunPreFilterExtensionAddPod/RemovePod, RunFilterPlugins,
    # RunFilterPluginsWithNominatedPods, addGENominatedPods

    def run_pre_filter_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo] | None = None
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Run PreFilter plugins. Returns the merged PreFilterResult, the status, and the plugins
        whose result narrowed the node set (upstream's pluginsWithNodes, a diagnosis input).

        Skip → the plugin's Filter and PreFilterExtensions are skipped this cycle. Unschedulable →
        keep running (preemption needs every plugin's state); UnschedulableAndUnresolvable → stop.
        An empty intersection of node sets is UnschedulableAndUnresolvable."""
        start = time.perf_counter()
        skip: set[str] = set()
        status: Status | None = None
        if self.observer is not None:
            self.observer.begin(pod)
        try:
            # The snapshot's own list when it is that (plugins' kept sums recognise it), read-only.
            all_nodes = nodes if nodes is not None else self.snapshot().list()
            result, status, with_nodes = self._pre_filter_loop(state, pod, all_nodes, skip)
            return result, status, with_nodes
        finally:
            state.skip_filter_plugins = skip
            self._observe_since("PreFilter", status, start)
            self._count_names("PreFilter", self._pre_filter_names)

    def _pre_filter_loop(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], skip: set[str]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        result: PreFilterResult | None = None
        with_nodes: set[str] = set()
        returned: Status | None = None
        observer = self.observer
        for name, pre_filter in self._calls(state, "preFilter"):
            r, s = pre_filter(state, pod, nodes)
            if observer is not None:
                observer.plugin_status("PreFilter", pod, name, s)
                if r is not None and r.node_names is not None:
                    observer.pre_filter_result(pod, name, r.node_names)
            if s is not None and s.code != CODE_SUCCESS:  # success() inline: a dozen plugins a cycle
                if s.code == CODE_SKIP:
                    skip.add(name)
                    continue
                s.plugin = name
                if s.code == CODE_UNRESOLVABLE:
                    return None, s, set()
                if s.code == CODE_UNSCHEDULABLE:
                    returned = s
                    continue
                return None, _failure(f'running PreFilter plugin "{name}": {s.message}', name), set()
            if r is None:  # most plugins: nothing to merge
                continue
            if not r.all_nodes():
                with_nodes.add(name)
            result = r if result is None else result.merge(r)
            if result is not None and result.node_names is not None and not result.node_names:
                return result, unresolvable(_prefilter_conflict_msg(with_nodes)), with_nodes
        return result, returned, with_nodes

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        """Tell PreFilter plugins' state that `pod_to_add` now runs on the node (nominated pods, preemption)."""
        skipped = state.skip_filter_plugins
        for name, ext in self._pre_filter_exts:
            if name in skipped:
                continue
            s = ext.add_pod(state, pod, pod_to_add, node_info)
            if not success(s):
                assert s is not None
                return _failure(f'running AddPod on PreFilter plugin "{name}": {s.message}')
        return None

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        """Tell PreFilter plugins' state that `pod_to_remove` left the node (preemption victims)."""
        skipped = state.skip_filter_plugins
        for name, ext in self._pre_filter_exts:
            if name in skipped:
                continue
            s = ext.remove_pod(state, pod, pod_to_remove, node_info)
            if not success(s):
                assert s is not None
                return _failure(f'running RemovePod on PreFilter plugin "{name}": {s.message}')
        return None

    def run_filter_plugins(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, *, observe: bool = False
    ) -> Status | None:
        """First rejecting Filter wins, with its plugin recorded; other non-success codes are Errors.

        A node whose object could not be parsed is rejected as UnschedulableAndUnresolvable with the
        parse error (our addition: upstream never sees malformed nodes, the API server validates).
        ``observe``: the CycleObserver is told each verdict; only the scheduling algorithm's own runs
        are observed, not the dry runs plugins make through the Handle (preemption's).

        One node is filtered with each plugin's plain ``filter``: specialising a check to the pod (filter_for)
        pays off over many nodes, and the node-at-a-time callers (preemption's dry runs, nominated nodes'
        two passes) call this with a fresh CycleState or NodeInfo each time."""
        return self.filter_runner(state, pod, observe=observe, specialise=False)(node_info)

    def filter_runner(
        self, state: CycleState, pod: Pod, *, observe: bool = False, specialise: bool = True
    ) -> Callable[[NodeInfo], Status | None]:
        """run_filter_plugins for one pod with this cycle's non-skipped filters bound once: the filter loop
        calls it for hundreds of nodes, so per-pod work is hoisted out of it, and plugins that are
        FilterForPlugins run their check specialised to this pod (unless ``specialise`` is False: the
        check equals ``filter``, interface.FilterForPlugin)."""
        active: list[tuple[str, Callable[..., Status | None], bool]] = []
        skipped = state.skip_filter_plugins
        rows = self._timed_filter_rows if self._timed(state) else self._filter_rows
        for name, pl, for_pod in rows:
            if name in skipped:
                continue
            if not (for_pod and specialise):
                active.append((name, pl.filter, False))
                continue
            check = pl.filter_for(state, pod)
            if check is not None:
                active.append((name, check, True))
        observer = self.observer if observe else None

        def run(node_info: NodeInfo) -> Status | None:
            node = node_info.node
            if node is not None and node.parse_error is not None:
                return unresolvable(str(node.parse_error))
            rejected: Status | None = None
            for name, filter_, per_node in active:
                s = filter_(node_info) if per_node else filter_(state, pod, node_info)
                if s is not None and s.code != CODE_SUCCESS:
                    if not s.is_rejected():
                        s = error(f'running "{name}" filter plugin: {s.message}')
                    s.plugin = name
                    if observer is not None:
                        observer.filter_status(pod, node_info.name, name, s)
                    if not s.is_rejected() or not self.run_all_filters:
                        return s
                    rejected = _merge_rejections(rejected, s)
                elif observer is not None:
                    observer.filter_status(pod, node_info.name, name, None)
            return rejected

        return run

    def run_filter_plugins_with_nominated_pods(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        nominated_pods: Sequence[Pod] | None = None,
        *,
        observe: bool = False,
    ) -> Status | None:
        """Filter the node twice when it has nominated pods of priority >= the pod's: once with them
        added (they must not lose the room they were promised), then once without them (filters such
        as pod affinity may only hold thanks to them). Both must pass.

        ``nominated_pods`` are the pods nominated to this node; None asks the scheduler. ``observe``
        as for run_filter_plugins."""
        status: Status | None = None
        pods_added = False
        for i in range(2):
            state_to_use, info_to_use = state, node_info
            if i == 0:
                pods_added, state_to_use, info_to_use, err = self._add_ge_nominated_pods(
                    state, pod, node_info, nominated_pods
                )
                if err is not None:
                    return err
            elif not pods_added or not success(status):
                break
            status = self.run_filter_plugins(state_to_use, pod, info_to_use, observe=observe)
            if not success(status) and status is not None and not status.is_rejected():
                return status
        return status

    def _add_ge_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, nominated: Sequence[Pod] | None
    ) -> tuple[bool, CycleState, NodeInfo, Status | None]:
        if nominated is None:
            nominated = self.nominated_pods_for(node_info.name)
        if not nominated:
            return False, state, node_info, None
        info_out = node_info.clone()
        state_out = state.clone()
        added = False
        for other in nominated:
            if other.priority >= pod.priority and other.uid != pod.uid:
                info_out.add_pod(other)
                s = self.run_pre_filter_extension_add_pod(state_out, pod, other, info_out)
                if not success(s):
                    return False, state, node_info, s
                added = True
        return added, state_out, info_out, None

    # ----- PostFilter: RunPostFilterPlugins

    def run_post_filter_plugins(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Run until one succeeds, is unresolvable or errors; otherwise gather all reasons.

        Upstream keeps the last result whose nominating mode is not Noop; our PostFilterResult has
        no mode, so any non-None result counts."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            result, status = self._post_filter_loop(state, pod, statuses)
            return result, status
        finally:
            self._observe_since("PostFilter", status, start)

    def _post_filter_loop(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for pl in self._plugins(state, "postFilter"):
            r, s = pl.post_filter(state, pod, statuses)
            if self.observer is not None:
                nominated = r.nominated_node_name if r is not None else ""
                self.observer.post_filter_result(pod, pl.name, nominated, list(statuses.statuses))
            if success(s):
                return r, s
            assert s is not None
            if s.code == CODE_UNRESOLVABLE:
                s.plugin = pl.name
                return r, s
            if not s.is_rejected():
                return None, _failure(s.message, pl.name)
            if r is not None:
                result = r
            reasons.extend(s.reasons)
            rejector = rejector or pl.name
        return result, Status(CODE_UNSCHEDULABLE, reasons, plugin=rejector)

    # ----- PreScore / Score: RunPreScorePlugins, RunScorePlugins, NormalizeScores, nonSkippedScorePlugins

    def run_pre_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Skip → that plugin's Score does not run this cycle; anything else but success is an Error."""
        start = time.perf_counter()
        skip: set[str] = set()
        status: Status | None = None
        try:
            observer = self.observer
            for name, pre_score in self._calls(state, "preScore"):
                s = pre_score(state, pod, nodes)
                if observer is not None:
                    observer.plugin_status("PreScore", pod, name, s)
                if s is not None and s.code != CODE_SUCCESS:
                    if s.code == CODE_SKIP:
                        skip.add(name)
                        continue
                    status = _failure(f'running PreScore plugin "{name}": {s.message}')
                    return status
            return None
        finally:
            state.skip_score_plugins = skip
            self._observe_since("PreScore", status, start)
            self._count_names("PreScore", self._pre_score_names)

    def run_score_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodePluginScores], Status | None]:
        """Score every node with every non-skipped plugin, normalize, check [0, 100], weight, sum.

        Returns the per-node totals in ``nodes`` order, or ([], Error status)."""
        totals, status = self.score_totals(state, pod, nodes)
        if status is not None:
            return [], status
        return [NodePluginScores(n.name, t) for n, t in zip(nodes, totals.tolist(), strict=True)], None

    def score_totals(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], raw_scores: RawScores | None = None
    ) -> tuple[ScoreRow, Status | None]:
        """run_score_plugins as the weighted totals in ``nodes`` order (an int64 array), the form the
        cycle selects from. The scores are a matrix (a row per plugin, a column per node) from Score to
        the totals, so NormalizeScore, the range check and the weights are array operations. The observer
        (if any) gets every plugin's raw and normalized scores. ``raw_scores`` gives the plugins' raw
        score matrix instead of ``score_nodes`` (opportunistic batching)."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            plugins = self.active_score_plugins(state)
            if self._plugin_metrics is not None and nodes:
                names = self.score_plugin_names(plugins)
                cell = self._score_cells.get(names)  # the names' counter cell, kept: a profile has few lists
                if cell is None:
                    cell = self._score_cells[names] = self._plugin_metrics.evaluation_cell(names, "Score")
                cell[1] += len(nodes)
            if raw_scores is not None:
                matrix, status = raw_scores(state, pod, nodes, plugins)
            else:
                raw, status = self.score_nodes(state, pod, nodes, plugins)
                if status is None:
                    matrix = score_matrix(raw, plugins, len(nodes))
            if status is not None:
                return _NO_SCORES, status
            before = matrix.copy() if self.observer is not None else matrix
            status = self._normalize(state, pod, nodes, plugins, matrix)
            if status is None:
                status = self._check_range(plugins, matrix)
            if status is not None:
                return _NO_SCORES, status
            if self.observer is not None:
                self.observer.scores(pod, [n.name for n in nodes], {
                    pl.name: (before[i].tolist(), matrix[i].tolist(), self.score_plugin_weight[pl.name])
                    for i, pl in enumerate(plugins)
                })
            return self._weights(plugins) @ matrix, None
        finally:
            self._observe_since("Score", status, start)

    def _weights(self, plugins: list[ScorePlugin]) -> npt.NDArray[np.int64]:
        """The weights of ``plugins`` as an array."""
        return self._score_list(plugins)[1]

    def score_plugin_names(self, plugins: list[ScorePlugin]) -> tuple[str, ...]:
        """The names of ``plugins`` (a list of this profile's Score plugins), as a tuple."""
        return self._score_list(plugins)[0]

    def _score_list(self, plugins: list[ScorePlugin]) -> _ScoreList:
        """Names, weights and normalizers of a list of Score plugins, remembered per list (a profile has few):
        every cycle asks for them, for the metrics, the weights, the batch's remembered scores and NormalizeScore.
        The normalizers are (row, ScoreExtensions, its bound normalize_values if it is a NormalizeValuesExtension
        else None), for the plugins whose ScoreExtensions is not None (as upstream's, fixed per plugin)."""
        latest = self._latest_score_list
        if latest is not None and latest[0] is plugins:  # active_score_plugins' shared list, as most cycles ask
            return latest[1]
        key = tuple(plugins)  # the plugin objects themselves: hashed by identity, no name read per plugin
        known = self._score_lists.get(key)
        if known is None:
            names = tuple([pl.name for pl in plugins])
            weights = np.fromiter((self.score_plugin_weight[name] for name in names), dtype=np.int64, count=len(names))
            extensions = [(i, pl.score_extensions()) for i, pl in enumerate(plugins)]
            normalizers = tuple((i, ext, cast(NormalizeValuesExtension, ext).normalize_values
                                 if implements(ext, NormalizeValuesExtension) else None)
                                for i, ext in extensions if ext is not None)
            known = self._score_lists[key] = (names, weights, normalizers)
        if any(plugins is active for active in self._active_scores.values()):
            self._latest_score_list = (plugins, known)
        return known

    def active_score_plugins(self, state: CycleState) -> list[ScorePlugin]:
        """The Score plugins whose PreScore did not skip this cycle: one list per set of skipped plugins (and
        timing), shared and read-only, so that ``_score_list`` knows it by identity."""
        skipped = state.skip_score_plugins
        key = (self._timed(state), frozenset(skipped))
        active = self._active_scores.get(key)
        if active is None:
            if len(self._active_scores) >= _MAX_SCORE_LISTS:
                self._active_scores.clear()
            active = self._active_scores[key] = [pl for pl in self._plugins(state, "score") if pl.name not in skipped]
        return active

    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], plugins: list[ScorePlugin]
    ) -> tuple[dict[str, list[int]], Status | None]:
        """Raw scores plugin by plugin over all nodes, as plain int lists in ``nodes`` order; a
        ScoreNodesPlugin scores every node in one call."""
        raw: dict[str, list[int]] = {}
        score_nodes_of = self._score_nodes_of
        for pl in plugins:
            name = pl.name
            if name in score_nodes_of:  # a ScoreNodesPlugin (no typing.cast call, a Python call, per plugin)
                values, s = pl.score_nodes(state, pod, nodes)  # type: ignore[attr-defined]
                if s is not None and s.code != CODE_SUCCESS:
                    return raw, _failure(f'running Score plugins: plugin "{name}" failed with: {s.message}')
                raw[name] = values if type(values) is list else list(values)
                continue
            score = pl.score
            out: list[int] = []
            for node_info in nodes:
                value, s = score(state, pod, node_info)
                if s is not None and s.code != CODE_SUCCESS:
                    return raw, _failure(f'running Score plugins: plugin "{pl.name}" failed with: {s.message}')
                out.append(value)
            raw[pl.name] = out
        return raw, None

    def _normalize(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], plugins: list[ScorePlugin],
        matrix: ScoreMatrix,
    ) -> Status | None:
        """NormalizeScore in place, row by row. A NormalizeValuesExtension works on its row;
        ``normalize_score`` gets the upstream NodeScore list, built only for it."""
        for i, ext, normalize_values in self._score_list(plugins)[2]:
            row = matrix[i]
            if normalize_values is not None:
                s = normalize_values(state, pod, row)
            else:
                scores = [NodeScore(n.name, v) for n, v in zip(nodes, row.tolist(), strict=True)]
                s = ext.normalize_score(state, pod, scores)
                row[:] = [ns.score for ns in scores]
            if not success(s):
                assert s is not None
                name = plugins[i].name
                return _failure(f'running Normalize on Score plugins: plugin "{name}" failed with: {s.message}')
        return None

    @staticmethod
    def _check_range(plugins: list[ScorePlugin], matrix: ScoreMatrix) -> Status | None:
        """Every normalized score in [0, 100]; else the first plugin's first bad value, as upstream."""
        if not matrix.size:
            return None
        if MIN_NODE_SCORE == 0 and matrix.dtype == np.int64:
            # One reduction instead of min and max (each releases the GIL past 500 elements, handing it to a
            # waiting thread live): as unsigned, a negative score is huge, so max <= 100 holds iff all are in range.
            if _maximum(matrix.view(np.uint64), axis=None) <= MAX_NODE_SCORE:
                return None
        elif matrix.min() >= MIN_NODE_SCORE and matrix.max() <= MAX_NODE_SCORE:
            return None
        bad_rows = np.flatnonzero((matrix.max(axis=1) > MAX_NODE_SCORE) | (matrix.min(axis=1) < MIN_NODE_SCORE))
        if not bad_rows.size:
            return None
        row = matrix[bad_rows[0]]
        bad = int(row[np.flatnonzero((row > MAX_NODE_SCORE) | (row < MIN_NODE_SCORE))[0]])
        return _failure(
            f'applying score defaultWeights on Score plugins: plugin "{plugins[bad_rows[0]].name}" returns an '
            f"invalid score {bad}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
        )

    # ----- Reserve / Permit: RunReservePluginsReserve/Unreserve, RunPermitPlugins, WaitOnPermit, GetWaitingPod,
    # IterateOverWaitingPods, RejectWaitingPod

    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Stop at the first failure; the caller then runs Unreserve for all plugins."""
        if self.observer is not None:
            self.observer.selected_node(pod, node_name)
        return self._run_until_failure("Reserve", self._calls(state, "reserve"), state, pod, node_name)

    def _run_until_failure(
        self, point: str, calls: list[tuple[str, Callable[[CycleState, Pod, str], Status | None]]],
        state: CycleState, pod: Pod, node_name: str,
    ) -> Status | None:
        """Reserve and PreBind: the first non-success stops; a rejection keeps its code, anything else
        becomes an Error naming the plugin."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            for name, call in calls:
                s = call(state, pod, node_name)
                if self.observer is not None:
                    self.observer.plugin_status(point, pod, name, s)
                if not success(s):
                    assert s is not None
                    if s.is_rejected():
                        s.plugin = name
                        status = s
                    else:
                        status = _failure(f'running {point} plugin "{name}": {s.message}', cause=s)
                    return status
            return None
        finally:
            self._observe_since(point, status, start)

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Undo Reserve in reverse order, so later plugins release before the ones they built on."""
        start = time.perf_counter()
        for pl in reversed(self._plugins(state, "reserve")):
            pl.unreserve(state, pod, node_name)
        self._observe_since("Unreserve", None, start)

    def run_permit_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Reject → stop; Wait → remember the plugin's timeout (capped at 15 min) and go on. If any
        plugin waits, the pod is registered as waiting and a Wait status is returned."""
        start = time.perf_counter()
        plugins = self._plugins(state, "permit")
        if not plugins:  # the default profiles: nothing to run, the duration still observed
            self._observe_since("Permit", None, start)
            return None
        status: Status | None = None
        try:
            waits: dict[str, float] = {}
            for pl in plugins:
                s, timeout = pl.permit(state, pod, node_name)
                if self.observer is not None:
                    self.observer.plugin_status("Permit", pod, pl.name, s)
                    self.observer.permit_timeout(pod, pl.name, timeout)
                if success(s):
                    continue
                assert s is not None
                if s.is_rejected():
                    s.plugin = pl.name
                    status = s
                    return status
                if s.code == CODE_WAIT:
                    waits[pl.name] = min(timeout, MAX_PERMIT_TIMEOUT_SECONDS)
                    continue
                status = _failure(f'running Permit plugin "{pl.name}": {s.message}', pl.name, cause=s)
                return status
            if waits:
                self.waiting_pods.add(WaitingPod(pod, waits, self._clock))
                msg = f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"'
                status = Status(CODE_WAIT, [msg])
            return status
        finally:
            self._observe_since("Permit", status, start)

    def wait_on_permit(self, pod: Pod, timeout: float | None = None) -> Status | None:
        """Block (binding thread) until a waiting pod is allowed, rejected or timed out; returns at
        once for pods that did not wait. ``timeout`` is an extra bound for this call only."""
        wp = self.waiting_pods.get(pod.uid)
        if wp is None:
            return None
        start = time.perf_counter()
        s: Status | None = error("waiting on permit was interrupted")
        try:
            s = wp.wait(timeout)
        finally:
            self.waiting_pods.remove(pod.uid, wp)
            if self._plugin_metrics is not None:
                self._plugin_metrics.permit_wait(code_name(s), time.perf_counter() - start)
        if success(s):
            return None
        assert s is not None
        if s.is_rejected():
            return s
        return _failure(f"waiting on permit for pod: {s.message}", s.plugin)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def share_waiting_pods(self, previous: Framework) -> None:
        """After a reload: the pods waiting at Permit under the previous framework of this profile are
        this one's too (a gang's last member, permitted by the new plugins, allows the earlier ones)."""
        self.waiting_pods = previous.waiting_pods

    def iterate_over_waiting_pods(self) -> list[WaitingPod]:
        return self.waiting_pods.iterate()

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject a waiting pod (e.g. it was deleted); False if it was not waiting."""
        wp = self.get_waiting_pod(uid)
        if wp is None:
            return False
        wp.reject("", "removed")
        return True

    def volume_scheduling_stage_failed(self, operation: str) -> None:
        if self._plugin_metrics is not None:
            self._plugin_metrics.volume_scheduling_stage_failed(operation)

    # ----- PreBind / Bind / PostBind: RunPreBindPlugins, RunBindPlugins, RunPostBindPlugins

    def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """PreBind, but for the plugins whose PreBindPreFlight returned Skip this binding cycle (upstream's
        GetSkipPreBindPlugins): a pod with nothing to bind calls none."""
        skipped = state.skip_pre_bind_plugins
        if self._pre_bind_names <= skipped:  # none to run (a batched pod's): the point's duration alone, as below
            start = time.perf_counter()
            self._observe_since("PreBind", None, start)
            return None
        return self._run_until_failure("PreBind", [(pl.name, pl.pre_bind) for pl in self._plugins(state, "preBind")
                                                   if pl.name not in skipped], state, pod, node_name)

    def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind plugins in order until one does not return Skip. When none binds (no plugins, or all
        skipped) this returns an Error: upstream hands back the Skip status, which its caller also
        treats as a failed binding."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            status = self._bind_loop(state, pod, node_name)
            return status
        finally:
            self._observe_since("Bind", status, start)

    def _bind_loop(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for pl in self._plugins(state, "bind"):
            s = pl.bind(state, pod, node_name)
            if self.observer is not None:
                self.observer.plugin_status("Bind", pod, pl.name, s)
            if s is not None and s.code == CODE_SKIP:
                continue
            if success(s):
                return None
            assert s is not None
            if s.is_rejected():
                s.plugin = pl.name
                return s
            return _failure(f'running Bind plugin "{pl.name}": {s.message}', cause=s)
        return _failure(f"no bind plugin bound pod {pod.key} (all returned Skip or none is enabled)")

    def run_post_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> None:
        start = time.perf_counter()
        for pl in self._plugins(state, "postBind"):
            pl.post_bind(state, pod, node_name)
        self._observe_since("PostBind", None, start)


def _merge_rejections(first: Status | None, other: Status) -> Status:
    """alwaysCheckAllPredicates: every rejecting filter's reasons on one status, the strongest code,
    the first rejecting plugin (upstream PluginToStatus.Merge)."""
    if first is None:
        return Status(other.code, list(other.reasons), plugin=other.plugin)
    code = max(first.code, other.code, key=lambda c: c == CODE_UNRESOLVABLE)
    return Status(code, [*first.reasons, *other.reasons], plugin=first.plugin)


def _prefilter_conflict_msg(plugins: set[str]) -> str:
    names = sorted(plugins)
    if len(names) == 1:
        return f"node(s) didn't satisfy plugin {names[0]}"
    return f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
