"""Run plugins on a hand-made cluster with the scheduler's own runtime: a snapshot built by the real cache,
the real Framework as the plugins' Handle, and for a whole profile the real scheduling algorithm.

* ``make_snapshot(nodes, pods)``: the snapshot the cache would build (zone order, image counts, accounting).
* ``PluginRunner``: one plugin in a profile of its own; ``runner.cycle(pod)`` runs its extension points
  one by one on one CycleState, as a scheduling cycle would (``filter``/``score`` do the whole walk).
* ``schedule(pod, nodes, ...)``: a profile's scheduling cycle (from a KubeSchedulerConfiguration, or the
  default profile), returning the chosen node, or the failure status and message the scheduler would post.

Nothing here talks to an API server: what a plugin asks the scheduler to do (bind, preempt, write an
object) is done on the in-memory store and recorded in ``TestActions``.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.cache import Snapshot, new_snapshot
from scheduler.cache.objects import ObjectStore
from scheduler.config.load import build_registry, load_dict
from scheduler.config.registry import Registry
from scheduler.config.types import EXTENSION_POINTS, PluginRef, Profile, SchedulerConfiguration
from scheduler.framework.extender import Extender
from scheduler.framework.features import Features
from scheduler.framework.interface import (
    EXTENSION_POINT_PROTOCOLS,
    CycleState,
    NodeToStatus,
    PluginFactory,
    PostFilterResult,
    PreFilterResult,
)
from scheduler.framework.preemptor import GroupPreemptor
from scheduler.framework.results import AttemptResult, ResultRecorder
from scheduler.framework.runtime import Framework, FrameworkOptions
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.schedule_one import SchedulingAlgorithm, handle_schedule_error

__all__ = [
    "CycleResult",
    "PluginCycle",
    "PluginRunner",
    "TestActions",
    "make_object_store",
    "make_snapshot",
    "new_handle",
    "schedule",
]

Obj = Mapping[str, Any]


def make_snapshot(nodes: Sequence[Node], pods: Sequence[Pod] = ()) -> Snapshot:
    """The snapshot the scheduler's cache builds from these nodes and pods (pods without a node, or on a
    node not listed, are not in it, as in the cache)."""
    return new_snapshot(nodes, pods)


def make_object_store(objects: Iterable[Obj] = ()) -> ObjectStore:
    """An object store (the plugins' ObjectLister) holding these API objects, keyed by their ``kind``."""
    store = ObjectStore()
    for o in objects:
        store.upsert(str(o["kind"]), o)
    return store


@dataclass
class TestActions:
    """What the scheduler does for plugins (the Framework's SchedulerActions), done in memory and recorded:
    binds and preemptions are listed, object writes go to the store (resourceVersion moved on)."""

    __test__ = False  # not a pytest test class despite its name

    store: ObjectStore = field(default_factory=ObjectStore)
    nominated: Mapping[str, Sequence[Pod]] = field(default_factory=dict)
    bound: list[tuple[str, str]] = field(default_factory=list)
    preempted: list[tuple[str, str, str]] = field(default_factory=list)
    activated: list[str] = field(default_factory=list)
    writes: list[tuple[str, str, Obj]] = field(default_factory=list)
    deleted_pods: set[str] = field(default_factory=set)
    _shared: dict[str, Any] = field(default_factory=dict)

    def nominated_pods_for(self, node_name: str) -> Sequence[Pod]:
        return self.nominated.get(node_name, ())

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        self.bound.append((pod.key, node_name))
        return None

    def extenders(self) -> Sequence[Extender]:
        return ()

    def latest_pod(self, pod: Pod) -> Pod | None:
        return None if pod.uid in self.deleted_pods else pod

    def preempt(
        self, victim: Pod, preemptor: Pod, node_name: str, plugin: str, *, group: GroupPreemptor | None = None
    ) -> Status | None:
        """Recorded as (victim, preemptor, node), the preemptor being the pod group's key when a group
        preempts; the victim counts as deleted from then on."""
        self.preempted.append((victim.key, preemptor.key if group is None else group.pod_group.key, node_name))
        self.deleted_pods.add(victim.uid)
        return None

    def victims_selected(self, count: int) -> None:
        return None

    def async_preemption_done(self, ok: bool, seconds: float) -> None:
        return None

    def workload_preemption_attempted(self, result: str) -> None:
        return None

    def workload_victims_selected(self, victims: int, disruptions: int) -> None:
        return None

    def preemption_evaluated(self, preemptor: str, result: str, seconds: float) -> None:
        return None

    def preemption_executed(self, preemptor: str, ok: bool, seconds: float) -> None:
        return None

    def pdb_violations_caused(self, preemptor: str, count: int) -> None:
        return None

    def clear_nominated_node(self, pod: Pod) -> Status | None:
        return None

    def _write(self, verb: str, kind: str, obj: Obj) -> dict[str, Any]:
        new = copy.deepcopy(dict(obj))
        meta = new.setdefault("metadata", {})
        meta["resourceVersion"] = str(int(meta.get("resourceVersion") or "0") + 1)
        self.writes.append((verb, kind, new))
        self.store.upsert(kind, new)
        return new

    def update_object(self, kind: str, obj: Obj, subresource: str = "") -> Obj:
        return self._write("update", kind, obj)

    def create_object(self, kind: str, obj: Obj) -> Obj:
        return self._write("create", kind, obj)

    def get_object(self, kind: str, namespace: str, name: str) -> Obj:
        found = self.store.get(kind, namespace, name)
        if found is None:
            raise LookupError(f"{kind} {namespace}/{name} not found")
        return found

    def patch_object_status(self, kind: str, namespace: str, name: str, patch: Obj) -> None:
        obj = copy.deepcopy(dict(self.get_object(kind, namespace, name)))
        obj.setdefault("status", {}).update(patch.get("status") or {})
        self._write("patch", kind, obj)

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        obj = self.get_object(kind, namespace, name)
        self.writes.append(("delete", kind, obj))
        self.store.delete(kind, obj)

    def patch_pod_status(self, namespace: str, name: str, patch: Obj) -> None:
        self.writes.append(("patch", "Pod", {"metadata": {"namespace": namespace, "name": name}, **patch}))

    def pod_exists(self, pod: Pod) -> bool:
        return pod.uid not in self.deleted_pods

    def activate_pods(self, pods: list[Pod]) -> None:
        self.activated.extend(p.key for p in pods)

    def shared_plugin_state(self, key: str, factory: Callable[[], Any]) -> Any:
        if key not in self._shared:
            self._shared[key] = factory()
        return self._shared[key]


def _framework(profile: Profile, registry: Registry | Mapping[str, PluginFactory], snapshot: Snapshot,
               actions: TestActions, features: Features | None, observer: ResultRecorder | None) -> Framework:
    options = FrameworkOptions(scheduler=actions, snapshot=snapshot, objects=actions.store, parallelism=1,
                               rng=random.Random(0), features=features or Features())
    return Framework(profile, registry, options, observer=observer)


def new_handle(nodes: Sequence[Node] = (), pods: Sequence[Pod] = (), objects: Iterable[Obj] = (), *,
               features: Features | None = None, actions: TestActions | None = None) -> Framework:
    """A Handle for constructing a plugin by hand (``MyPlugin(args, handle)``): a framework without plugins
    over this cluster; ``actions`` (made if None) records what plugins ask of the scheduler."""
    acts = actions or TestActions(store=make_object_store(objects))
    return _framework(Profile("default-scheduler", {}), {}, make_snapshot(nodes, pods), acts, features, None)


def _points_of(plugin_class: Any) -> list[str]:
    """The extension points a plugin (class or instance) implements, in the framework's order."""
    methods = {p: EXTENSION_POINT_PROTOCOLS[p][0] for p in EXTENSION_POINTS if p in EXTENSION_POINT_PROTOCOLS}
    return [p for p, method in methods.items() if callable(getattr(plugin_class, method, None))]


class PluginRunner:
    """One plugin, built by its factory with ``args`` and the real Framework as its Handle, enabled at every
    extension point it implements (weight 1) in a profile of its own, over a cluster of ``nodes``, bound
    ``pods`` and other API ``objects``."""

    def __init__(self, factory: PluginFactory, args: Any = None, *, nodes: Sequence[Node] = (),
                 pods: Sequence[Pod] = (), objects: Iterable[Obj] = (), features: Features | None = None,
                 nominated: Mapping[str, Sequence[Pod]] | None = None) -> None:
        name = str(getattr(factory, "name", "") or getattr(factory, "__name__", "Plugin"))
        self.actions = TestActions(store=make_object_store(objects), nominated=dict(nominated or {}))
        self.snapshot = make_snapshot(nodes, pods)
        self.recorder = ResultRecorder()
        points = _points_of(factory)
        profile = Profile("default-scheduler", {p: [PluginRef(name)] for p in points},
                          plugin_config={name: args if args is not None else {}})
        self.framework = _framework(profile, {name: factory}, self.snapshot, self.actions, features, self.recorder)
        self.plugin: Any = self.framework.plugins[name]

    def cycle(self, pod: Pod) -> PluginCycle:
        """A scheduling cycle of ``pod``: a fresh CycleState its extension points share."""
        return PluginCycle(self, pod)

    def filter(self, pod: Pod) -> dict[str, Status | None]:
        """PreFilter, then Filter on every node: node -> status (None: the node fits)."""
        return self.cycle(pod).filter_all()

    def score(self, pod: Pod) -> dict[str, int]:
        """PreScore, Score and NormalizeScore on every node: node -> final score."""
        return self.cycle(pod).score()


class PluginCycle:
    """The extension points of one plugin for one pod, in the order a cycle runs them; each returns what the
    framework returns for it (its statuses carry the plugin's name)."""

    def __init__(self, runner: PluginRunner, pod: Pod) -> None:
        self.runner = runner
        self.pod = pod
        self.state = CycleState()
        self.fwk = runner.framework
        self._pre_filtered: PreFilterResult | None = None
        runner.recorder.begin(pod)

    @property
    def nodes(self) -> Sequence[NodeInfo]:
        return self.runner.snapshot.list()

    def node(self, name: str) -> NodeInfo:
        info = self.runner.snapshot.get(name)
        if info is None:
            raise KeyError(f"no node {name!r} in the snapshot")
        return info

    def pre_filter(self) -> tuple[PreFilterResult | None, Status | None]:
        result, status, _ = self.fwk.run_pre_filter_plugins(self.state, self.pod, self.nodes)
        self._pre_filtered = result
        return result, status

    def filter(self, node_name: str) -> Status | None:
        """Filter on one node (run ``pre_filter`` first when the plugin has one: Filter reads its state)."""
        return self.fwk.run_filter_plugins(self.state, self.pod, self.node(node_name))

    def filter_all(self) -> dict[str, Status | None]:
        """PreFilter, then Filter on each node PreFilter left (others get its rejection), as the
        algorithm walks them."""
        result, status = self.pre_filter()
        if status is not None and status.code != Code.SUCCESS:
            if status.code == Code.SKIP:
                return {n.name: None for n in self.nodes}
            return {n.name: status for n in self.nodes}
        wanted = result.node_names if result is not None else None
        out: dict[str, Status | None] = {}
        for n in self.nodes:
            if wanted is not None and n.name not in wanted:
                out[n.name] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node is not in PreFilter's result"])
            else:
                out[n.name] = self.filter(n.name)
        return out

    def post_filter(self, statuses: Mapping[str, Status | None]) -> tuple[PostFilterResult | None, Status | None]:
        """PostFilter with these Filter verdicts (nodes with None are left out, as feasible ones are)."""
        rejected = NodeToStatus({n: s for n, s in statuses.items() if s is not None})
        return self.fwk.run_post_filter_plugins(self.state, self.pod, rejected)

    def pre_score(self, nodes: Sequence[str] | None = None) -> Status | None:
        return self.fwk.run_pre_score_plugins(self.state, self.pod, self._infos(nodes))

    def _infos(self, nodes: Sequence[str] | None) -> list[NodeInfo]:
        return list(self.nodes) if nodes is None else [self.node(n) for n in nodes]

    def score(self, nodes: Sequence[str] | None = None) -> dict[str, int]:
        """PreScore, Score and NormalizeScore over ``nodes`` (all by default): node -> final score. An
        error status raises AssertionError with its message."""
        infos = self._infos(nodes)
        status = self.pre_score([n.name for n in infos])
        if status is not None and status.code not in (Code.SUCCESS, Code.SKIP):
            raise AssertionError(f"PreScore: {status.message}")
        scores, status = self.fwk.run_score_plugins(self.state, self.pod, infos)
        if status is not None:
            raise AssertionError(f"Score: {status.message}")
        return {s.name: s.total_score for s in scores}

    @property
    def result(self) -> AttemptResult:
        """Every plugin result the framework reported this cycle (raw and normalized scores included)."""
        found = self.runner.recorder.result(self.pod.uid)
        assert found is not None
        return found

    def raw_scores(self) -> dict[str, int]:
        """node -> the plugin's Score before NormalizeScore, from the last ``score``."""
        name = self.runner.plugin.name
        return {n: per[name] for n, per in self.result.raw_score.items() if name in per}


@dataclass
class CycleResult:
    """A profile's scheduling cycle: ``node`` chosen (None when it failed); otherwise ``status`` and
    ``message`` (the FailedScheduling message, PostFilter's appended) and PostFilter's ``nominated_node``."""

    node: str | None
    status: Status | None
    message: str
    nominated_node: str | None
    attempt: AttemptResult
    actions: TestActions

    @property
    def scores(self) -> dict[str, int]:
        """node -> weighted total of the Score plugins (empty when one node was feasible: none ran)."""
        return {n: self.attempt.total(n) for n in self.attempt.final_score}

    @property
    def filter_statuses(self) -> dict[str, dict[str, str]]:
        """node -> plugin -> Filter message, for the nodes the plugins rejected."""
        return self.attempt.filter


def _configuration(config: SchedulerConfiguration | Mapping[str, Any] | None, scheduler_name: str,
                   registry: Registry | None) -> SchedulerConfiguration:
    if isinstance(config, SchedulerConfiguration):
        return config
    return load_dict(config, [scheduler_name], registry=registry)


def schedule(pod: Pod, nodes: Sequence[Node], pods: Sequence[Pod] = (), objects: Iterable[Obj] = (), *,
             config: SchedulerConfiguration | Mapping[str, Any] | None = None,
             plugins: Mapping[str, PluginFactory] | None = None, features: Features | None = None,
             nominated: Mapping[str, Sequence[Pod]] | None = None) -> CycleResult:
    """One scheduling cycle of ``pod`` by the profile named by its schedulerName: the default profile, or
    the one ``config`` (a KubeSchedulerConfiguration dict or a loaded one) defines; ``plugins`` registers
    out-of-tree plugins by name. Filter, Score, then Reserve and Permit on the chosen node; on failure
    PostFilter (preemption) as the scheduler runs it. Ties go to the first node by name, so results repeat."""
    base = Registry()
    for name, factory in (plugins or {}).items():
        base.register(name, factory)
    cfg = _configuration(config, pod.scheduler_name, base)
    profile = cfg.profile(pod.scheduler_name) or cfg.profiles[0]
    actions = TestActions(store=make_object_store(objects), nominated=dict(nominated or {}))
    snapshot = make_snapshot(nodes, pods)
    recorder = ResultRecorder()
    fwk = _framework(profile, build_registry(cfg, base), snapshot, actions, features, recorder)
    algorithm = SchedulingAlgorithm(cfg.percentage_of_nodes_to_score, rng=random.Random(0), tie_break="name",
                                    batching=False)
    state = CycleState()
    recorder.begin(pod)
    try:
        host = algorithm.schedule_pod(fwk, state, pod, snapshot).suggested_host
    except Exception as exc:
        failure = handle_schedule_error(fwk, state, pod, exc)
        return CycleResult(None, failure.status, failure.status.message, failure.nominated_node_name or None,
                           _attempt(recorder, pod), actions)
    assumed = pod.with_node(host)
    for status in (fwk.run_reserve_plugins_reserve(state, assumed, host),
                   fwk.run_permit_plugins(state, assumed, host)):
        if status is not None and status.code not in (Code.SUCCESS, Code.WAIT):
            return CycleResult(None, status, status.message, None, _attempt(recorder, pod), actions)
    return CycleResult(host, None, "", None, _attempt(recorder, pod), actions)


def _attempt(recorder: ResultRecorder, pod: Pod) -> AttemptResult:
    found = recorder.result(pod.uid)
    return found if found is not None else AttemptResult()
