"""Hand-made API objects for the cache tests."""

from __future__ import annotations

from typing import Any

from scheduler.model.node import Node, node_from_api
from scheduler.model.pod import Pod, pod_from_api


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
    prefix = "failure-domain.beta.kubernetes.io" if beta else "topology.kubernetes.io"
    lbls = dict(labels or {})
    if zone is not None:
        lbls[f"{prefix}/zone"] = zone
    if region is not None:
        lbls[f"{prefix}/region"] = region
    obj: dict[str, Any] = {
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": lbls},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "images": [{"names": names, "sizeBytes": size} for names, size in images or []],
        },
    }
    return node_from_api(obj)


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
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    ctrs: list[dict[str, Any]] = [
        {"name": f"c{i}", "image": "busybox", "resources": {"requests": dict(requests)} if requests else {}}
        for i in range(containers)
    ]
    if host_ports:
        ctrs[0]["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    spec: dict[str, Any] = {"containers": ctrs}
    if node:
        spec["nodeName"] = node
    if pvcs:
        spec["volumes"] = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in pvcs]
    if affinity:
        spec["affinity"] = affinity
    obj = {"metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}, "spec": spec}
    return pod_from_api(obj)


TERM = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}
ANTI_AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}
