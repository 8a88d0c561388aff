"""A typed, pre-parsed view of a v1 Node."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.errors import InvalidObjectError
from scheduler.model.resources import Resource
from scheduler.model.taints import Taint, parse_taints

ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")
REGION_LABELS = ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region")


@dataclass(frozen=True, slots=True)
class ImageOnNode:
    names: tuple[str, ...]
    size_bytes: int


@dataclass(slots=True, eq=False)
class Node:
    raw: Mapping[str, Any]
    name: str
    uid: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: Resource
    images: tuple[ImageOnNode, ...]
    conditions: Mapping[str, str]
    resource_version: str
    parse_error: InvalidObjectError | None = None
    memo: dict[str, Any] = field(default_factory=dict)

    # region + ":\x00:" + zone, beta labels first (component-helpers GetZoneKey): an attribute, set once (a
    # Node's labels never change; an update is a new Node), as zone spreading reads it per node per pod.
    zone_key: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self.zone_key = zone_key(self.labels)


def _first(labels: Mapping[str, str], keys: tuple[str, ...]) -> str:
    for k in keys:
        if labels.get(k):
            return labels[k]
    return ""


def zone_key(labels: Mapping[str, str]) -> str:
    zone = _first(labels, ZONE_LABELS)
    region = _first(labels, REGION_LABELS)
    if not zone and not region:
        return ""
    return f"{region}:\x00:{zone}"


def node_from_api(obj: Mapping[str, Any]) -> Node:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    name = meta.get("name") or ""
    ident = f"node {name}"
    error: InvalidObjectError | None = None
    try:
        alloc = Resource.from_list(status.get("allocatable") or status.get("capacity"), ident,
                                   "status.allocatable")
    except InvalidObjectError as exc:
        error, alloc = exc, Resource()
    try:
        taints = parse_taints(spec.get("taints"), ident)
    except InvalidObjectError as exc:
        error, taints = error or exc, ()
    images = tuple(
        ImageOnNode(tuple(i.get("names") or ()), int(i.get("sizeBytes") or 0))
        for i in status.get("images") or []
        if isinstance(i, Mapping)
    )
    return Node(
        raw=obj,
        name=name,
        uid=meta.get("uid") or name,
        labels=meta.get("labels") or {},
        taints=taints,
        unschedulable=bool(spec.get("unschedulable")),
        allocatable=alloc,
        images=images,
        conditions={c.get("type", ""): c.get("status", "") for c in status.get("conditions") or []},
        resource_version=meta.get("resourceVersion") or "",
        parse_error=error,
    )
