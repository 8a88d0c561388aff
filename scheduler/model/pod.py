"""A typed, pre-parsed view of a v1 Pod: parsed once per watch event, never in the scheduling cycle."""

from __future__ import annotations

import functools
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from operator import attrgetter
from typing import Any

import orjson

from scheduler.model.errors import InvalidObjectError
from scheduler.model.resources import Resource, pod_resources, status_resource_key
from scheduler.model.taints import Toleration, parse_tolerations
from scheduler.model.workload import pod_group_name_of

DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


@dataclass(slots=True, eq=False)
class Pod:
    """What the scheduler needs of a pod. `raw` is the API object, kept for plugins and binding."""

    raw: Mapping[str, Any]
    uid: str
    namespace: str
    name: str
    labels: Mapping[str, str]
    scheduler_name: str
    node_name: str
    priority: int
    creation_timestamp: float
    deletion_timestamp: str | None
    nominated_node_name: str
    phase: str
    resource_version: str
    requests: Resource
    non_zero_milli_cpu: int
    non_zero_memory: int
    host_ports: tuple[HostPort, ...]
    tolerations: tuple[Toleration, ...]
    node_selector: Mapping[str, str]
    affinity: Mapping[str, Any]
    scheduling_gates: tuple[str, ...]
    images: tuple[str, ...]
    num_containers: int
    pvc_names: tuple[str, ...]
    preemption_policy: str
    parse_error: InvalidObjectError | None = None
    memo: dict[str, Any] = field(default_factory=dict)
    # Derivations of the resource fields only (containers', init containers' and pod-level requests,
    # overhead, container statuses' resources), shared by the pods whose fields are identical.
    resource_memo: dict[Hashable, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def has_affinity(self) -> bool:
        """Pod affinity or anti-affinity present, even empty (``podAffinity: {}``): upstream's
        podWithAffinity tests the pointers, not the terms (NodeInfo.PodsWithAffinity)."""
        return self.affinity.get("podAffinity") is not None or self.affinity.get("podAntiAffinity") is not None

    @property
    def has_required_anti_affinity(self) -> bool:
        anti = self.affinity.get("podAntiAffinity") or {}
        return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))

    @property
    def pod_group_name(self) -> str:
        """spec.schedulingGroup.podGroupName, "" when the pod is in no group (core/v1 PodSchedulingGroup). Read
        from ``raw`` on demand: only the queue and the pod-group cycle ask (GenericWorkload on), so parsing a pod
        costs no more."""
        return pod_group_name_of(self.raw.get("spec") or {})

    @property
    def terminating(self) -> bool:
        return self.deletion_timestamp is not None

    def with_node(self, node_name: str) -> Pod:
        """A copy placed on `node_name`: what assume puts in the cache."""
        spec = dict(self.raw.get("spec") or {})
        spec["nodeName"] = node_name
        raw = dict(self.raw)
        raw["spec"] = spec
        copy = Pod(*_pod_fields(self))  # every field as is, memo included (one C call reads them all)
        copy.raw = raw
        copy.node_name = node_name
        return copy


# All of a Pod's fields in __init__'s order, read in one call (Pod.with_node).
_pod_fields = attrgetter(*(f.name for f in fields(Pod)))


def parse_time(value: object) -> float:
    """RFC 3339 timestamp from the API to epoch seconds (0 when absent or malformed)."""
    if not isinstance(value, str) or not value:
        return 0.0
    return _parse_rfc3339(value)


@functools.lru_cache(maxsize=1024)
def _parse_rfc3339(value: str) -> float:
    """Remembered: timestamps have one-second resolution, so pods created together share them."""
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """util.GetHostPorts: restartable (sidecar) init containers' host ports, then the app containers';
    regular init containers do not hold their ports while the pod runs."""
    out = []
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for c in sidecars + list(spec.get("containers") or []):
        for p in c.get("ports") or []:
            hp = p.get("hostPort") or 0
            if isinstance(hp, int) and hp > 0:
                out.append(HostPort(p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", hp))
    return tuple(out)


def pod_uid(obj: Mapping[str, Any]) -> str:
    """metadata.uid, or namespace/name for objects without one (hand-written test and simulate pods)."""
    meta = obj.get("metadata") or {}
    return meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def pod_from_api(obj: Mapping[str, Any], previous: Pod | None = None) -> Pod:
    """Build a Pod view. Malformed fields do not raise: they land in `parse_error` so the pod
    can be reported (FailedScheduling) instead of crashing the scheduler.

    ``previous``, the view of an earlier version of the same pod, lets a watch update skip the parsing of a
    spec that did not change (a pod's later events change its status, or only its nodeName, which assume
    already wrote into the cached copy's spec): what derives from an equal spec is equal, so it is reused;
    the resources are reused only when the status fields they read are equal too.

    ``obj`` is read-only once a view holds it, its spec included: a spec dict (which the pod stream shares among
    events and pods) stands for the same spec every time it is seen.
    """
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    key = status_resource_key(status)
    if previous is not None and previous.parse_error is None:
        held = previous.raw.get("spec") or {}
        if spec is held or spec == held:  # the pod stream shares an unchanged spec's dict
            resources = previous if key == _status_key(previous) else _SpecPart.of(meta, spec, status, previous)
            pod = _pod(obj, meta, spec, status, resources, previous, previous)
            pod.memo[_STATUS_KEY_MEMO] = key  # the next update of the pod compares its status with this one
            return pod
    part = _fresh_part(meta, spec, status, key)
    pod = _pod(obj, meta, spec, status, part, part)
    pod.memo[_STATUS_KEY_MEMO] = key
    return pod


_PARTS_MEMO: dict[bytes, _SpecPart] = {}
_PARTS_BY_SPEC: dict[int, tuple[Mapping[str, Any], tuple[object, ...], _SpecPart]] = {}
_PARTS_MEMO_MAX = 1024


def _fresh_part(meta: Mapping[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any],
                status_key: tuple[object, ...]) -> _SpecPart:
    """_SpecPart.of a new pod, remembered by its spec and the status fields its resources read
    (``status_key``; a workload's pods share a few templates): what it derives from them is a function of them
    alone. First by the spec's identity (the pod stream hands a template's pods one shared spec dict, which
    the entry holds, so its id is not reused), then by its JSON. A part with an error (which names its pod)
    is not remembered, nor one whose spec is not plain JSON."""
    held = _PARTS_BY_SPEC.get(id(spec))
    if held is not None and held[0] is spec and held[1] == status_key:
        return held[2]
    try:
        key = orjson.dumps((spec, status_key))
    except TypeError:
        return _SpecPart.of(meta, spec, status)
    part = _PARTS_MEMO.get(key)
    if part is None:
        part = _SpecPart.of(meta, spec, status)
        if part.parse_error is not None:
            return part
        if len(_PARTS_MEMO) >= _PARTS_MEMO_MAX:
            _PARTS_MEMO.clear()
        _PARTS_MEMO[key] = part
    if len(_PARTS_BY_SPEC) >= _PARTS_MEMO_MAX:
        _PARTS_BY_SPEC.clear()
    _PARTS_BY_SPEC[id(spec)] = (spec, status_key, part)
    return part


_STATUS_KEY_MEMO = "pod_from_api.status_resource_key"


def _status_key(pod: Pod) -> tuple[object, ...]:
    """status_resource_key of the pod's own status, remembered when pod_from_api built it from a previous view."""
    key: tuple[object, ...] | None = pod.memo.get(_STATUS_KEY_MEMO)
    return status_resource_key(pod.raw.get("status") or {}) if key is None else key


@dataclass(slots=True)
class _SpecPart:
    """What pod_from_api derives from the spec (and, for the resources, the status) with some work."""

    requests: Resource
    non_zero_milli_cpu: int
    non_zero_memory: int
    resource_memo: dict[Hashable, Any]
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...]
    scheduling_gates: tuple[str, ...]
    images: tuple[str, ...]
    num_containers: int
    pvc_names: tuple[str, ...]
    parse_error: InvalidObjectError | None

    @classmethod
    def of(cls, meta: Mapping[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any],
           same_spec: Pod | None = None) -> _SpecPart:
        """Parsed anew; with ``same_spec`` (a view of an equal spec), only the resources are. A list item of the
        wrong shape (a container, port, gate or volume that is not an object: the API server never sends one,
        hand-written and what-if pods can) becomes the part's ``parse_error``, so the pod is reported, not raised."""
        ident = f"pod {meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
        try:
            return cls._of(ident, spec, status, same_spec)
        except (AttributeError, TypeError, KeyError) as exc:
            error = InvalidObjectError(ident, "spec", f"an item of the wrong shape ({exc})")
            return cls(Resource(), 0, 0, {}, (), (), (), (), 0, (), error)

    @classmethod
    def _of(cls, ident: str, spec: Mapping[str, Any], status: Mapping[str, Any],
            same_spec: Pod | None) -> _SpecPart:
        error: InvalidObjectError | None = None
        try:
            resources = pod_resources(spec, status, ident)
            requests = resources.requests
            non_zero_cpu, non_zero_mem = resources.non_zero_milli_cpu, resources.non_zero_memory
            resource_memo = resources.derived
        except InvalidObjectError as exc:
            error, requests, non_zero_cpu, non_zero_mem, resource_memo = exc, Resource(), 0, 0, {}
        if same_spec is not None:
            return cls(requests, non_zero_cpu, non_zero_mem, resource_memo, same_spec.tolerations,
                       same_spec.host_ports, same_spec.scheduling_gates, same_spec.images, same_spec.num_containers,
                       same_spec.pvc_names, error)
        try:
            tolerations = parse_tolerations(spec.get("tolerations"), ident)
        except InvalidObjectError as exc:
            error, tolerations = error or exc, ()
        containers = list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
        return cls(
            requests, non_zero_cpu, non_zero_mem, resource_memo, tolerations, _host_ports(spec),
            tuple(g.get("name", "") for g in spec.get("schedulingGates") or []),
            tuple(c.get("image") or "" for c in containers),
            len(containers),
            tuple(
                v["persistentVolumeClaim"]["claimName"]
                for v in spec.get("volumes") or []
                if isinstance(v.get("persistentVolumeClaim"), Mapping)
                and v["persistentVolumeClaim"].get("claimName")
            ),
            error,
        )


def _pod(obj: Mapping[str, Any], meta: Mapping[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any],
         resources: _SpecPart | Pod, parsed: _SpecPart | Pod, same_spec: Pod | None = None) -> Pod:
    """The view: the cheap fields read from ``obj``, the parsed ones taken from ``resources`` and ``parsed``, and
    with ``same_spec`` (a view of an equal spec) the spec's scalars taken from it. Positional, in Pod's field
    order: keywords cost the watch a name lookup each, on every event."""
    if same_spec is None:
        prio = spec.get("priority")
        scheduler_name, node_name = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME, spec.get("nodeName") or ""
        priority = prio if isinstance(prio, int) else 0
        preemption_policy = spec.get("preemptionPolicy") or "PreemptLowerPriority"
    else:
        scheduler_name, node_name, priority = same_spec.scheduler_name, same_spec.node_name, same_spec.priority
        preemption_policy = same_spec.preemption_policy
    return Pod(
        obj, meta.get("uid") or pod_uid(obj), meta.get("namespace") or "default", meta.get("name") or "",
        meta.get("labels") or {},
        scheduler_name, node_name, priority, parse_time(meta.get("creationTimestamp")), meta.get("deletionTimestamp"),
        status.get("nominatedNodeName") or "", status.get("phase") or "", meta.get("resourceVersion") or "",
        resources.requests, resources.non_zero_milli_cpu, resources.non_zero_memory, parsed.host_ports,
        parsed.tolerations, spec.get("nodeSelector") or {}, spec.get("affinity") or {},
        parsed.scheduling_gates, parsed.images, parsed.num_containers, parsed.pvc_names,
        preemption_policy, resources.parse_error, {}, resources.resource_memo,
    )
