"""Affinity and spreading terms, Service and workload objects, and a tiny in-memory Handle for the pod-to-pod
and spreading plugin tests (pods and nodes come from scheduler.testing).

The snapshot is list-based (NodeInfos in the given order), the object lister a dict of API objects; both
are what the plugins see through ``Handle`` and nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scheduler.framework.interface import CycleState, NodeScore
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.model.node import Node
from scheduler.model.pod import Pod

Selector = Mapping[str, Any]


# ----- terms and API objects the kit has no builder for ---------------------------------------------------


def term(selector: Selector | None, topology_key: str, namespaces: Sequence[str] | None = None,
         ns_selector: Selector | None = None) -> dict[str, Any]:
    """A PodAffinityTerm; ``selector`` is a metav1.LabelSelector dict."""
    t: dict[str, Any] = {"topologyKey": topology_key}
    if selector is not None:
        t["labelSelector"] = dict(selector)
    if namespaces is not None:
        t["namespaces"] = list(namespaces)
    if ns_selector is not None:
        t["namespaceSelector"] = dict(ns_selector)
    return t


def labels_in(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def match(**labels: str) -> dict[str, Any]:
    return {"matchLabels": dict(labels)}


def pod_affinity(
    required: Sequence[Mapping[str, Any]] = (),
    anti_required: Sequence[Mapping[str, Any]] = (),
    preferred: Sequence[tuple[int, Mapping[str, Any]]] = (),
    anti_preferred: Sequence[tuple[int, Mapping[str, Any]]] = (),
) -> dict[str, Any]:
    """spec.affinity with podAffinity / podAntiAffinity built from terms (weights for preferred ones)."""
    out: dict[str, Any] = {}
    req, pref = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"
    if required or preferred:
        out["podAffinity"] = {}
        if required:
            out["podAffinity"][req] = [dict(t) for t in required]
        if preferred:
            out["podAffinity"][pref] = [{"weight": w, "podAffinityTerm": dict(t)} for w, t in preferred]
    if anti_required or anti_preferred:
        out["podAntiAffinity"] = {}
        if anti_required:
            out["podAntiAffinity"][req] = [dict(t) for t in anti_required]
        if anti_preferred:
            out["podAntiAffinity"][pref] = [{"weight": w, "podAffinityTerm": dict(t)} for w, t in anti_preferred]
    return out


def spread(max_skew: int, key: str, selector: Selector | None, when: str = "DoNotSchedule",
           **extra: Any) -> dict[str, Any]:
    """A topologySpreadConstraint; ``extra`` takes minDomains, nodeAffinityPolicy, matchLabelKeys, ..."""
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = dict(selector)
    c.update(extra)
    return c


def service(name: str, selector: Mapping[str, str] | None, ns: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if selector is not None:
        spec["selector"] = dict(selector)
    return {"kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def namespace(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}


def workload(kind: str, name: str, selector: Any, ns: str = "default") -> dict[str, Any]:
    """A ReplicaSet / StatefulSet (metav1.LabelSelector) or ReplicationController (map) object."""
    return {"kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": {"selector": selector}}


# ----- the fake cluster -------------------------------------------------------------------------------


class FakeSnapshot:
    """A list-based SharedLister over NodeInfos built from nodes and the pods bound to them."""

    def __init__(self, nodes: Sequence[Node], pods: Iterable[Pod] = ()) -> None:
        self._infos: list[NodeInfo] = []
        self._by_name: dict[str, NodeInfo] = {}
        for n in nodes:
            ni = NodeInfo()
            ni.set_node(n)
            self._infos.append(ni)
            self._by_name[n.name] = ni
        for p in pods:
            self._by_name[p.node_name].add_pod(p)

    def list(self) -> Sequence[NodeInfo]:
        return self._infos

    def get(self, name: str) -> NodeInfo | None:
        return self._by_name.get(name)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return [ni for ni in self._infos if ni.pods_with_affinity]

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return [ni for ni in self._infos if ni.pods_with_required_anti_affinity]

    def num_nodes(self) -> int:
        return len(self._infos)


class FakeObjects:
    """An ObjectLister over API dicts, by their ``kind`` field."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self._objects = list(objects)

    def list(self, kind: str, namespace: str | None = None) -> Iterable[Mapping[str, Any]]:
        for o in self._objects:
            if o.get("kind") != kind:
                continue
            if namespace is not None and (o.get("metadata") or {}).get("namespace", "default") != namespace:
                continue
            yield o

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        for o in self.list(kind, namespace or None):
            if (o.get("metadata") or {}).get("name") == name:
                return o
        return None


class FakeHandle:
    def __init__(self, snapshot: FakeSnapshot, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self._snapshot = snapshot
        self._objects = FakeObjects(objects)

    def snapshot(self) -> FakeSnapshot:
        return self._snapshot

    def objects(self) -> FakeObjects:
        return self._objects

    def nominated_pods_for(self, node_name: str) -> Sequence[Pod]:
        return []

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return None

    def parallelism(self) -> int:
        return 1


def cluster(nodes: Sequence[Node], pods: Iterable[Pod] = (), objects: Iterable[Mapping[str, Any]] = ()) -> FakeHandle:
    return FakeHandle(FakeSnapshot(nodes, pods), objects)


# ----- running extension points -----------------------------------------------------------------------


def verdict(s: Status | None) -> tuple[str, str]:
    """(code name, message) of a filter status; ("SUCCESS", "") for None."""
    if s is None:
        return "SUCCESS", ""
    return s.code.name, s.message


def run_filter(
    plugin: Any, handle: FakeHandle, pod: Pod, state: CycleState | None = None
) -> dict[str, tuple[str, str]]:
    """PreFilter then Filter on every node; a Skip from PreFilter passes every node, as the runtime does."""
    state = state if state is not None else CycleState()
    _, s = plugin.pre_filter(state, pod, handle.snapshot().list())
    if s is not None and s.code == Code.SKIP:
        return {ni.name: ("SUCCESS", "") for ni in handle.snapshot().list()}
    if s is not None:
        return {ni.name: verdict(s) for ni in handle.snapshot().list()}
    return {ni.name: verdict(plugin.filter(state, pod, ni)) for ni in handle.snapshot().list()}


def filter_nodes(plugin: Any, state: CycleState, handle: FakeHandle, pod: Pod) -> dict[str, tuple[str, str]]:
    """Filter only (after a PreFilter the caller ran on ``state``)."""
    return {ni.name: verdict(plugin.filter(state, pod, ni)) for ni in handle.snapshot().list()}


def run_score(plugin: Any, handle: FakeHandle, pod: Pod, names: Sequence[str] | None = None) -> dict[str, int] | None:
    """PreScore, Score and NormalizeScore over the named (filtered) nodes; None when PreScore skips."""
    infos = [ni for ni in handle.snapshot().list() if names is None or ni.name in names]
    state = CycleState()
    s = plugin.pre_score(state, pod, infos)
    if s is not None and s.code == Code.SKIP:
        return None
    assert s is None, s
    scores = []
    for ni in infos:
        value, st = plugin.score(state, pod, ni)
        assert st is None, st
        scores.append(NodeScore(ni.name, value))
    ext = plugin.score_extensions()
    if ext is not None:
        assert ext.normalize_score(state, pod, scores) is None
    return {ns.name: ns.score for ns in scores}


def raw_scores(plugin: Any, handle: FakeHandle, pod: Pod) -> dict[str, int] | None:
    """PreScore and Score only (no normalization)."""
    infos = list(handle.snapshot().list())
    state = CycleState()
    s = plugin.pre_score(state, pod, infos)
    if s is not None and s.code == Code.SKIP:
        return None
    return {ni.name: plugin.score(state, pod, ni)[0] for ni in infos}
