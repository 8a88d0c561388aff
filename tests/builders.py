"""The test suite's one shorthand module: keyword shorthands over scheduler.testing's builders, for the call
shapes hundreds of tests share. Each is only calls of the kit; a test that needs anything else calls the kit.

``make_pod``/``make_node``/``container`` give model objects for plugin, cache and framework tests;
``api_pod``/``api_node`` give the API objects the scheduler's event handlers take, as the watch delivers them, and
``sched_pod``/``sched_node`` the same as kit wrappers, for a test to add fields with the kit's methods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler import testing as st
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


def sched_node(name: str, cpu: str = "4", memory: str = "8Gi") -> st.NodeWrapper:
    """A node with ``cpu`` and ``memory`` (and 110 pods) allocatable and its hostname label, at resourceVersion 1;
    the kit's methods add the rest."""
    return (st.make_node().name(name).resource_version("1").label("kubernetes.io/hostname", name)
            .allocatable(cpu=cpu, memory=memory, pods="110"))


def api_node(name: str, cpu: str = "4", zone: str = "a") -> dict[str, Any]:
    """sched_node in ``zone``, as the API object the scheduler's event handlers take."""
    return sched_node(name, cpu).zone(zone).api()


def sched_pod(name: str, cpu: str | None = None, memory: str | None = None, node_name: str = "",
              scheduler: str = "py-scheduler", rv: str = "1", priority: int | None = None) -> st.PodWrapper:
    """A pod for ``scheduler`` with one container requesting ``cpu`` and ``memory`` (when given), created
    2026-01-01, at ``rv``, bound to ``node_name`` and of ``priority`` when given; the kit's methods add the rest."""
    c = make_container().image("pause")
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if requests:
        c.req(requests)
    w = (st.make_pod().name(name).scheduler_name(scheduler).resource_version(rv)
         .creation_timestamp("2026-01-01T00:00:00Z").container(c))
    if priority is not None:
        w.priority(priority)
    return w.node(node_name) if node_name else w


def api_pod(name: str, cpu: str = "1", node_name: str = "", scheduler: str = "py-scheduler", rv: str = "1",
            priority: int = 0) -> dict[str, Any]:
    """sched_pod requesting ``cpu`` (1 unless given), of ``priority`` (0 unless given), as the API object the
    scheduler's event handlers take."""
    return sched_pod(name, cpu, None, node_name, scheduler, rv, priority).api()
