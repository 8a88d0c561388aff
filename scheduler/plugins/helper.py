"""Helpers shared by score plugins: normalization, Go integer arithmetic and seed-era (v1.16) resource views.

Scores must equal kube-scheduler's to the unit, so everything here reproduces Go's integer semantics
(division truncates toward zero, ``math.Round`` rounds half away from zero) rather than Python's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.interface import NodeScore
from scheduler.framework.status import Status, error
from scheduler.framework.types import NodeInfo
from scheduler.model.errors import InvalidObjectError
from scheduler.model.pod import Pod
from scheduler.model.quantity import CPU, MEMORY, parse, to_int, to_milli
from scheduler.model.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST

# --- Go arithmetic -------------------------------------------------------------------------------


def go_div(a: int, b: int) -> int:
    """Go's integer division: truncates toward zero (Python's // floors, which differs for negatives).

    The broken-linear shape function divides negative slopes, so this matters for decreasing shapes."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_round(x: float) -> int:
    """Go's math.Round: half away from zero (Python's round() is banker's rounding).

    x - trunc(x) is exact, unlike x + 0.5, which rounds 0.49999999999999994 up to 1.0."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return t


# --- normalization -------------------------------------------------------------------------------


def default_normalize_values(max_priority: int, reverse: bool, values: list[int]) -> None:
    """helper.DefaultNormalizeScore on plain scores: scale [0, max(values)] to [0, max_priority], in place.

    All-zero scores stay 0, or all become max_priority when reversed (no node is "worse")."""
    max_count = max(values, default=0)
    if max_count <= 0:
        if reverse:
            values[:] = [max_priority] * len(values)
        return
    if reverse:
        values[:] = [max_priority - go_div(max_priority * v, max_count) for v in values]
    else:
        values[:] = [go_div(max_priority * v, max_count) for v in values]


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """default_normalize_values on a NodeScore list."""
    values = [s.score for s in scores]
    default_normalize_values(max_priority, reverse, values)
    for s, v in zip(scores, values, strict=True):
        s.score = v


# --- per-node score memo --------------------------------------------------------------------------


class NodeScoreMemo:
    """Raw scores of one pod signature by NodeInfo generation.

    Generations come from one global counter and every NodeInfo change takes a new one, so a generation
    names one state of one node exactly (a clone keeps it until it is changed). A score that depends only
    on that state and on the pod's signature (the resource scorers) can be reused across cycles: pods
    alike (a ReplicaSet, a Job) then recompute only the nodes changed since the last cycle, usually the
    one just bound. A new signature, or ``limit`` entries of dead generations, start a new memo. Used
    from the scheduling loop only (one thread)."""

    __slots__ = ("entries", "limit", "signature")

    def __init__(self, limit: int = 50_000) -> None:
        self.signature: object = None
        self.entries: dict[int, int] = {}
        self.limit = limit

    def scores(
        self, signature: object, nodes: Sequence[NodeInfo], compute: Callable[[Sequence[NodeInfo]], list[int]]
    ) -> list[int]:
        """``compute(nodes)``, calling it only for the nodes without an entry for their generation."""
        if signature != self.signature or len(self.entries) > self.limit:
            self.entries = {}
            self.signature = signature
        entries = self.entries
        get = entries.get
        out = [get(ni.generation) for ni in nodes]
        if None in out:
            missing = [i for i, v in enumerate(out) if v is None]
            todo = [nodes[i] for i in missing]
            for i, ni, value in zip(missing, todo, compute(todo), strict=True):
                out[i] = value
                entries[ni.generation] = value
        return out  # type: ignore[return-value]  # no None is left


# --- RequestedToCapacityRatio shape ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShapePoint:
    """One (utilization %, score) point of a RequestedToCapacityRatio shape."""

    utilization: int
    score: int


def build_broken_linear_function(shape: Sequence[ShapePoint]) -> Callable[[int], int]:
    """helper.BuildBrokenLinearFunction: flat before the first and after the last point, integer
    linear interpolation (Go truncation) in between."""
    points = tuple(shape)

    def f(p: int) -> int:
        for i, point in enumerate(points):
            if p <= point.utilization:
                if i == 0:
                    return points[0].score
                prev = points[i - 1]
                rise = (point.score - prev.score) * (p - prev.utilization)
                return prev.score + go_div(rise, point.utilization - prev.utilization)
        return points[-1].score

    return f


# --- args parsing --------------------------------------------------------------------------------


def int_arg(value: object, fld: str, default: int = 0) -> int:
    """An integer plugin argument; bool and non-integers are rejected with the field named."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{fld}: must be an integer, got {value!r}")
    return value


def list_arg(value: object, fld: str) -> list[Any]:
    """A list plugin argument (None means empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{fld}: must be a list, got {type(value).__name__}")
    return value


def mapping_arg(value: object, fld: str) -> Mapping[str, Any]:
    """An object plugin argument (None means empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{fld}: must be an object, got {type(value).__name__}")
    return value


# --- seed-era (v1.16) resource views --------------------------------------------------------------

_LEGACY_KEY = "legacy116"


@dataclass(frozen=True, slots=True)
class LegacyPodView:
    """What the v1.16 priorities and predicates saw of a pod."""

    non_zero_milli_cpu: int
    non_zero_memory: int
    best_effort: bool


def _containers(spec: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    raw = spec.get(key)
    return [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []


def _resource_list(c: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    res = c.get("resources")
    rl = res.get(kind) if isinstance(res, Mapping) else None
    return rl if isinstance(rl, Mapping) else {}


def _legacy_view(pod: Pod) -> LegacyPodView:
    """v1.16 getNonZeroRequests (regular containers only, 100m / 200Mi for a missing request) and
    qos.GetPodQOS == BestEffort (no positive cpu/memory request or limit in any container or init
    container). Raises InvalidObjectError for unparsable quantities."""
    spec = pod.raw.get("spec") or {}
    ident = f"pod {pod.namespace}/{pod.name}"
    cpu = mem = 0
    for i, c in enumerate(_containers(spec, "containers")):
        req = _resource_list(c, "requests")
        fld = f"spec.containers[{i}].resources.requests"
        cpu += to_milli(req[CPU], ident, f"{fld}.cpu") if CPU in req else DEFAULT_MILLI_CPU_REQUEST
        mem += to_int(req[MEMORY], ident, f"{fld}.memory") if MEMORY in req else DEFAULT_MEMORY_REQUEST
    best_effort = True
    for key in ("containers", "initContainers"):
        for i, c in enumerate(_containers(spec, key)):
            for kind in ("requests", "limits"):
                rl = _resource_list(c, kind)
                for name in (CPU, MEMORY):
                    if name in rl and parse(rl[name], ident, f"spec.{key}[{i}].resources.{kind}.{name}") > 0:
                        best_effort = False
    return LegacyPodView(cpu, mem, best_effort)


def legacy_pod_view(pod: Pod) -> LegacyPodView:
    """The pod's v1.16 view, computed once per pod and kept in ``pod.memo``."""
    view = pod.memo.get(_LEGACY_KEY)
    if view is None:
        view = pod.memo[_LEGACY_KEY] = _legacy_view(pod)
    return view


def _existing_pod_non_zero(pod: Pod) -> tuple[int, int]:
    """A bound pod's v1.16 non-zero request; a malformed one (which the API server would not have
    admitted) counts as the model computed it rather than failing every score on its node."""
    try:
        view = legacy_pod_view(pod)
    except InvalidObjectError:
        return pod.non_zero_milli_cpu, pod.non_zero_memory
    return view.non_zero_milli_cpu, view.non_zero_memory


def legacy_node_non_zero(node_info: NodeInfo) -> tuple[int, int]:
    """v1.16 NodeInfo.NonZeroRequest (sum over the node's pods of their regular containers).

    Cached on the Node's memo per NodeInfo generation, so a node is summed again only after it changed."""
    node = node_info.node
    if node is None:
        return _sum_non_zero(node_info.pods.values())
    cached = node.memo.get(_LEGACY_KEY)
    if cached is not None and cached[0] == node_info.generation:
        return cached[1], cached[2]
    cpu, mem = _sum_non_zero(node_info.pods.values())
    node.memo[_LEGACY_KEY] = (node_info.generation, cpu, mem)
    return cpu, mem


def _sum_non_zero(pods: Iterable[Pod]) -> tuple[int, int]:
    cpu = mem = 0
    for p in pods:
        c, m = _existing_pod_non_zero(p)
        cpu += c
        mem += m
    return cpu, mem


def legacy_requested(pod: Pod, node_info: NodeInfo) -> tuple[int, int]:
    """v1.16 ResourceAllocationPriority's `requested`: the pod's non-zero request plus the node's
    NonZeroRequest, for cpu (millicores) and memory. Raises InvalidObjectError for a malformed pod."""
    view = legacy_pod_view(pod)
    cpu, mem = legacy_node_non_zero(node_info)
    return view.non_zero_milli_cpu + cpu, view.non_zero_memory + mem


class LegacyRequestedPriority:
    """The seed-era (v1.16) cpu/memory priorities: ``resource_score(requested, capacity)`` per resource
    on v1.16 non-zero requests, averaged 1:1 with integer division. Subclasses set ``name`` and
    ``resource_score``; errors in the pod's quantities are Score errors, as upstream's map failed."""

    name: str

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        self.handle = handle

    @staticmethod
    def resource_score(requested: int, capacity: int) -> int:
        raise NotImplementedError

    def score(self, state: Any, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            cpu, mem = legacy_requested(pod, node_info)
        except InvalidObjectError as exc:
            return 0, error(exc)
        alloc = node_info.allocatable
        return go_div(self.resource_score(cpu, alloc.milli_cpu) + self.resource_score(mem, alloc.memory), 2), None

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> list[Any]:
        """A score-only plugin never rejects a pod, so no event can make one schedulable."""
        return []
