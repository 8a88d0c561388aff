"""Extended resources backed by a DeviceClass (DRAExtendedResource, GA in v1.37.2).

Follows ``k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache`` (which class
an extended resource name maps to) and
``pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go`` (the special claim a pod gets for
such resources: its device requests, one per container, and the container -> request mappings written to
``pod.status.extendedResourceClaimStatus``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduler.model.dra import DeviceClass
from scheduler.model.pod import Pod
from scheduler.model.quantity import parse
from scheduler.model.resources import is_extended_resource_name

DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"  # resourceapi.ResourceDeviceClassPrefix
CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"  # resourceapi.ExtendedResourceClaimAnnotation
SPECIAL_CLAIM_NAME = "<extended-resources>"  # specialClaimInMemName: not a valid name, never in the API


def is_dra_extended_resource_name(name: str) -> bool:
    """``schedutil.IsDRAExtendedResourceName``: an extended resource or a class's implicit name."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def _created(cls: DeviceClass) -> float:
    """The class's creationTimestamp in seconds (0 when absent, as Go's zero time compares earliest)."""
    text = str((cls.raw.get("metadata") or {}).get("creationTimestamp") or "")
    if not text:
        return float("-inf")
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class ExtendedResourceCache:
    """Which DeviceClass backs each extended resource name, updated event by event as upstream's cache
    (the outcome depends on the order classes arrive, so it is kept incrementally, not recomputed).

    A class's explicit ``extendedResourceName`` goes to the newest class naming it (same creation time:
    the smaller name); an older class arriving later changes nothing, not even its implicit name."""

    def __init__(self) -> None:
        self._by_resource: dict[str, DeviceClass] = {}

    def get(self, resource: str) -> DeviceClass | None:
        """``GetDeviceClass``."""
        return self._by_resource.get(resource)

    def add_or_update(self, new: DeviceClass, old: DeviceClass | None) -> None:
        """``updateResourceName2class``."""
        if new.extended_resource_name is not None:
            holder = self._by_resource.get(new.extended_resource_name)
            if holder is not None:
                a, b = _created(new), _created(holder)
                if a < b or (a == b and new.name >= holder.name):
                    return
        if old is not None:
            self._by_resource.pop(DEVICE_CLASS_PREFIX + old.name, None)
            if old.extended_resource_name is not None:
                self._by_resource.pop(old.extended_resource_name, None)
        if new.extended_resource_name is not None:
            self._by_resource[new.extended_resource_name] = new
        self._by_resource[DEVICE_CLASS_PREFIX + new.name] = new

    def delete(self, cls: DeviceClass) -> None:
        """``removeResourceName2class``."""
        self._by_resource.pop(DEVICE_CLASS_PREFIX + cls.name, None)
        if cls.extended_resource_name is not None:
            self._by_resource.pop(cls.extended_resource_name, None)


@dataclass(frozen=True, slots=True)
class RequestMapping:
    """``v1.ContainerExtendedResourceRequest``."""

    container_name: str
    resource_name: str
    request_name: str

    def to_api(self) -> dict[str, str]:
        return {"containerName": self.container_name, "resourceName": self.resource_name,
                "requestName": self.request_name}


@dataclass(frozen=True, slots=True)
class DeviceRequestSpec:
    """One ``exactly`` ExactCount request of the special claim."""

    name: str
    device_class_name: str
    count: int

    def to_api(self) -> dict[str, Any]:
        return {"name": self.name, "exactly": {"deviceClassName": self.device_class_name,
                                               "allocationMode": "ExactCount", "count": self.count}}


def find_extended_resource_claim(pod: Pod, claims: Iterable[Any]) -> Any | None:
    """``findExtendedResourceClaim``: the claim annotated as the pod's extended-resource claim and
    controlled by the pod (objects with a ``raw`` API form)."""
    for c in claims:
        meta = c.raw.get("metadata") or {}
        if (meta.get("annotations") or {}).get(CLAIM_ANNOTATION) != "true":
            continue
        for ref in meta.get("ownerReferences") or ():
            if ref.get("name") == pod.name and ref.get("controller") is True and ref.get("uid") == pod.uid:
                return c
    return None


def special_claim(pod: Pod) -> dict[str, Any]:
    """The in-memory claim PreFilter makes (no requests yet; Filter fills them per node), in API form."""
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod.namespace, "name": SPECIAL_CLAIM_NAME, "uid": str(uuid.uuid4()),
            "generateName": pod.name + "-extended-resources-",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid,
                                 "controller": True}],
            "annotations": {CLAIM_ANNOTATION: "true"},
        },
        "spec": {},
    }


def _as_int64(value: object) -> int | None:
    """``Quantity.AsInt64``: the whole value, None when it has a fraction (or does not parse)."""
    try:
        q = parse(value, "Pod", "resources.requests")
    except Exception:
        return None
    return int(q) if q == q.to_integral_value() else None


def _container_request(index: int, container: Mapping[str, Any], resource: str, class_name: str,
                       reusable: Sequence[DeviceRequestSpec | None]
                       ) -> tuple[DeviceRequestSpec | None, list[RequestMapping]]:
    """``createResourceRequestAndMappings``: the container's request for the resource (None when
    requests of later long-lived containers already cover it) and its mappings."""
    creqs = (container.get("resources") or {}).get("requests") or {}
    if resource not in creqs:
        return None, []
    want = _as_int64(creqs[resource])
    if not want:
        return None, []
    cname = str(container.get("name") or "")
    mappings: list[RequestMapping] = []
    covered = 0
    for r in reusable:
        if r is None:
            continue
        covered += r.count
        mappings.append(RequestMapping(cname, resource, r.name))
        if covered >= want:
            return None, mappings
    name = f"container-{index}-request-{sorted(creqs).index(resource)}"
    mappings.append(RequestMapping(cname, resource, name))
    return DeviceRequestSpec(name, class_name, want - covered), mappings


def _restart_always(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def create_requests_and_mappings(pod: Pod, resources: Iterable[str], classes: ExtendedResourceCache
                                 ) -> tuple[list[DeviceRequestSpec], list[RequestMapping]]:
    """``createRequestsAndMappings``: per resource (in name order) one request per long-lived container
    (regular and sidecar), plus the largest one of the plain init containers, which first reuse the
    requests of long-lived containers at or after their index; requests sorted by name."""
    spec = pod.raw.get("spec") or {}
    inits = list(spec.get("initContainers") or ())
    containers = inits + list(spec.get("containers") or ())
    short = [i for i in range(len(inits)) if not _restart_always(containers[i])]
    long = [i for i in range(len(containers)) if i not in short]
    requests: list[DeviceRequestSpec] = []
    mappings: list[RequestMapping] = []
    for resource in sorted(resources):
        cls = classes.get(resource)
        if cls is None:
            continue
        long_reqs: list[DeviceRequestSpec | None] = [None] * len(containers)
        long_maps: list[RequestMapping] = []
        for i in long:
            req, maps = _container_request(i, containers[i], resource, cls.name, ())
            long_reqs[i] = req
            long_maps.extend(maps)
        biggest: DeviceRequestSpec | None = None
        short_names: set[str] = set()
        short_maps: list[RequestMapping] = []
        for i in short:
            req, maps = _container_request(i, containers[i], resource, cls.name, long_reqs[i:])
            if req is not None:
                short_names.add(req.name)
                if biggest is None or biggest.count < req.count:
                    biggest = req
            short_maps.extend(maps)
        if biggest is not None and len(short_names) > 1:
            short_names.discard(biggest.name)
            short_maps = [RequestMapping(m.container_name, m.resource_name, biggest.name)
                          if m.request_name in short_names else m for m in short_maps]
        if biggest is not None:
            requests.append(biggest)
        requests.extend(r for r in long_reqs if r is not None)
        mappings.extend(long_maps)
        mappings.extend(short_maps)
    requests.sort(key=lambda r: r.name)
    return requests, mappings
