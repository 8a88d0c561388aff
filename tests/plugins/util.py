"""The plugin tests' keyword shorthands over scheduler.testing's builders, NodeInfos and a fake Handle.

Objects are built by the public kit (scheduler.testing) and go through the real parsers and NodeInfo
accounting, so a test exercises the same views the scheduler builds from watch events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from scheduler import testing as st
from scheduler.cache import Snapshot, new_snapshot
from scheduler.framework.features import Features
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.testing import make_container, resources

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
    """A container dict (scheduler.testing's make_container); only the given requests are set."""
    c = make_container().name(name).image(image)
    requests = resources(extra, cpu=cpu or "", memory=memory or "", ephemeral_storage=ephemeral or "")
    requests = {k: v for k, v in requests.items() if v}
    if requests:
        c.req(requests)
    if limits:
        c.lim(limits)
    for p in ports:
        c.port(p)
    if restart_policy is not None:
        c.restart_policy(restart_policy)
    return c.obj()


def host_port(port: int, ip: str = "", protocol: str = "") -> dict[str, Any]:
    """A container port exposed on the host (a port dict for ``container(ports=...)``)."""
    ports: list[dict[str, Any]] = make_container().host_port(port, ip, protocol).obj()["ports"]
    return ports[0]


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
    """A pod (scheduler.testing's make_pod); by default one container without requests."""
    w = st.make_pod().name(name).uid(uid or f"uid-{name}").namespace(namespace)
    w.containers(*(containers if containers is not None else [container()]))
    for c in init_containers:
        w.init_container(c)
    if node:
        w.node(node)
    if tolerations:
        w.tolerations(tolerations)
    if node_selector is not None:
        w.node_selector(node_selector)
    if affinity is not None:
        w.affinity(affinity)
    if nominated:
        w.nominated_node_name(nominated)
    return w.obj()


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
    """A node (scheduler.testing's make_node) with the given allocatable, labels, taints, images (names,
    size) and conditions."""
    alloc: dict[str, str] = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    if ephemeral is not None:
        alloc["ephemeral-storage"] = ephemeral
    w = st.make_node().name(name).allocatable(alloc).labels(labels or {}).taints(taints)
    for names, size in images:
        w.image(names, size)
    for t, s in (conditions or {}).items():
        w.condition(t, s)
    if unschedulable:
        w.unschedulable()
    return w.obj()


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
