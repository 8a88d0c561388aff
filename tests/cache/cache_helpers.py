"""The cache tests' shorthands over scheduler.testing's builders."""

from __future__ import annotations

from typing import Any

from scheduler import testing as st
from scheduler.model.node import Node
from scheduler.model.pod import Pod


def make_node(
    name: str,
    zone: str | None = None,
    region: str | None = None,
    beta: bool = False,
    cpu: str = "4",
    memory: str = "8Gi",
    images: list[tuple[list[str], int]] | None = None,
    labels: dict[str, str] | None = None,
) -> Node:
    """A node (scheduler.testing's make_node) in ``zone``/``region``, GA or beta topology labels."""
    prefix = "failure-domain.beta.kubernetes.io" if beta else "topology.kubernetes.io"
    lbls = dict(labels or {})
    if zone is not None:
        lbls[f"{prefix}/zone"] = zone
    if region is not None:
        lbls[f"{prefix}/region"] = region
    w = st.make_node().name(name).labels(lbls).allocatable(cpu=cpu, memory=memory, pods="110")
    for names, size in images or []:
        w.image(names, size)
    return w.obj()


def make_pod(
    name: str,
    node: str = "",
    cpu: str | None = None,
    memory: str | None = None,
    uid: str | None = None,
    namespace: str = "default",
    host_ports: list[int] | None = None,
    pvcs: list[str] | None = None,
    affinity: dict[str, Any] | None = None,
    containers: int = 1,
) -> Pod:
    """A pod (scheduler.testing's make_pod) of ``containers`` alike containers, each requesting cpu/memory."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    w = st.make_pod().name(name).uid(uid or f"uid-{name}").namespace(namespace)
    for i in range(containers):
        c = st.make_container().name(f"c{i}").image("busybox")
        if requests:
            c.req(requests)
        if i == 0:
            for port in host_ports or []:
                c.host_port(port)
        w.container(c)
    if node:
        w.node(node)
    for claim in pvcs or []:
        w.pvc(claim)
    if affinity:
        w.affinity(affinity)
    return w.obj()


TERM = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}
ANTI_AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}
