"""Object builders for plugin tests: API-shaped pods and nodes, NodeInfos and a fake Handle.

Objects go through the real parsers (pod_from_api / node_from_api) and NodeInfo accounting, so a test
exercises the same views the scheduler builds from watch events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from scheduler.cache import Snapshot, new_snapshot
from scheduler.framework.features import Features
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo
from scheduler.model.node import Node, node_from_api
from scheduler.model.pod import Pod, pod_from_api

MiB = 1024 * 1024
GiB = 1024 * MiB


def container(
    cpu: str | None = None,
    memory: str | None = None,
    ephemeral: str | None = None,
    extra: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    image: str = "busybox",
    ports: Sequence[Mapping[str, Any]] = (),
    restart_policy: str | None = None,
    name: str = "c",
) -> dict[str, Any]:
    """A container dict; only the given requests are set (a missing one stays missing)."""
    requests: dict[str, str] = dict(extra or {})
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if ephemeral is not None:
        requests["ephemeral-storage"] = ephemeral
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = dict(limits)
    c: dict[str, Any] = {"name": name, "image": image, "resources": resources}
    if ports:
        c["ports"] = [dict(p) for p in ports]
    if restart_policy is not None:
        c["restartPolicy"] = restart_policy
    return c


def host_port(port: int, ip: str = "", protocol: str = "") -> dict[str, Any]:
    p: dict[str, Any] = {"containerPort": port, "hostPort": port}
    if ip:
        p["hostIP"] = ip
    if protocol:
        p["protocol"] = protocol
    return p


def make_pod(
    name: str = "p",
    containers: Sequence[Mapping[str, Any]] | None = None,
    init_containers: Sequence[Mapping[str, Any]] = (),
    node: str = "",
    uid: str | None = None,
    namespace: str = "default",
    tolerations: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    nominated: str = "",
) -> Pod:
    """A pod; by default one container without requests."""
    spec: dict[str, Any] = {"containers": [dict(c) for c in (containers if containers is not None else [container()])]}
    if init_containers:
        spec["initContainers"] = [dict(c) for c in init_containers]
    if node:
        spec["nodeName"] = node
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = affinity
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"},
        "spec": spec,
    }
    if nominated:
        obj["status"] = {"nominatedNodeName": nominated}
    return pod_from_api(obj)


def make_node(
    name: str = "n",
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    ephemeral: str | None = None,
    extra: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    images: Sequence[tuple[Sequence[str], int]] = (),
    conditions: Mapping[str, str] | None = None,
    unschedulable: bool = False,
) -> Node:
    """A node with the given allocatable, labels, taints, images (names, size) and conditions."""
    alloc: dict[str, str] = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    if ephemeral is not None:
        alloc["ephemeral-storage"] = ephemeral
    status: dict[str, Any] = {
        "allocatable": alloc,
        "images": [{"names": list(names), "sizeBytes": size} for names, size in images],
    }
    if conditions is not None:
        status["conditions"] = [{"type": t, "status": s} for t, s in conditions.items()]
    spec: dict[str, Any] = {"taints": [dict(t) for t in taints]}
    if unschedulable:
        spec["unschedulable"] = True
    obj = {
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": dict(labels or {})},
        "spec": spec,
        "status": status,
    }
    return node_from_api(obj)


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def node_info(node: Node, pods: Iterable[Pod] = ()) -> NodeInfo:
    """A NodeInfo holding `node` and `pods`, accounted as the cache does."""
    ni = NodeInfo()
    ni.set_node(node)
    for p in pods:
        ni.add_pod(p)
    return ni


class FakeHandle:
    """A Handle over a fixed snapshot (nodes and bound pods)."""

    def __init__(self, snapshot: Snapshot | None = None) -> None:
        self._snapshot = snapshot or Snapshot()

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def objects(self) -> Any:
        return None

    def nominated_pods_for(self, node_name: str) -> Sequence[Pod]:
        return []

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return None

    def parallelism(self) -> int:
        return 1

    def features(self) -> Features:
        """The default gates (v1.37's), or the ones a test set."""
        return self.gates

    def shared_plugin_state(self, key: str, factory: Callable[[], Any]) -> Any:
        """One object per handle and key, as the scheduler keeps one per scheduler."""
        shared = self.__dict__.setdefault("_shared", {})
        if key not in shared:
            shared[key] = factory()
        return shared[key]

    gates = Features()


def snapshot_handle(nodes: Sequence[Node], pods: Sequence[Pod] = ()) -> FakeHandle:
    """A handle whose snapshot is built by the real cache (image counts, accounting)."""
    return FakeHandle(new_snapshot(nodes, pods))


def new_state() -> CycleState:
    return CycleState()
