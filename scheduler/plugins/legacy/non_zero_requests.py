"""The seed-era (v1.16) view of resource requests: non-zero requests (regular containers only, 100m /
200Mi for a missing request), BestEffort QoS, and the node's NonZeroRequest summed that way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.types import NodeInfo
from scheduler.model.errors import InvalidObjectError
from scheduler.model.pod import Pod
from scheduler.model.quantity import CPU, MEMORY, parse, to_int, to_milli
from scheduler.model.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST

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
