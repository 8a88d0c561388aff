"""The Workload API's objects as the scheduler reads them (``scheduling.k8s.io/v1beta1`` Workload and PodGroup,
kube-scheduler v1.37 with GenericWorkload on), parsed once per watch event.

A pod joins a group through ``spec.schedulingGroup.podGroupName`` (core/v1 PodSchedulingGroup; read by
``Pod.pod_group_name``). A PodGroup is the runtime instance the scheduler places: its scheduling policy (basic, or
gang with ``minCount``), topology constraints, disruption mode, priority and preemption policy. A Workload is
only the template the controllers stamp PodGroups from; the scheduler reads it for nothing but preemption's
grouping and keeps it for the plugins that want it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.errors import InvalidObjectError

GROUP = "scheduling.k8s.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND_WORKLOAD = "Workload"
KIND_POD_GROUP = "PodGroup"

# The PodGroup condition the scheduler writes (pkg/apis/scheduling's PodGroupInitiallyScheduled) and its reasons.
POD_GROUP_INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
POD_GROUP_DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

POLICY_BASIC = "basic"
POLICY_GANG = "gang"
DISRUPTION_SINGLE = "single"
DISRUPTION_ALL = "all"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"


@dataclass(frozen=True, slots=True)
class SchedulingPolicy:
    """PodGroupSchedulingPolicy: exactly one of basic and gang; ``min_count`` only for gang."""

    kind: str  # POLICY_BASIC or POLICY_GANG
    min_count: int = 0

    @property
    def is_gang(self) -> bool:
        return self.kind == POLICY_GANG


@dataclass(frozen=True, slots=True)
class PodGroupResourceClaim:
    """PodGroupResourceClaim: a claim shared by the group's pods (DRAWorkloadResourceClaims)."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


@dataclass(frozen=True, slots=True)
class WorkloadReference:
    workload_name: str
    template_name: str


@dataclass(frozen=True, slots=True)
class Condition:
    """metav1.Condition as the API returns it (times as their RFC 3339 text)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    observed_generation: int = 0
    last_transition_time: str = ""


@dataclass(frozen=True, slots=True)
class PodGroupTemplate:
    """A Workload's PodGroupTemplate: what its PodGroups are stamped from."""

    name: str
    policy: SchedulingPolicy
    topology_keys: tuple[str, ...]
    disruption_mode: str
    priority_class_name: str
    priority: int | None
    preemption_policy: str | None
    resource_claims: tuple[PodGroupResourceClaim, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Workload:
    raw: Mapping[str, Any]
    namespace: str
    name: str
    uid: str
    generation: int
    resource_version: str
    pod_group_templates: tuple[PodGroupTemplate, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True, eq=False)
class PodGroup:
    """A PodGroup (v1beta1). ``raw`` is the API object (its status is what a condition patch starts from)."""

    raw: Mapping[str, Any]
    namespace: str
    name: str
    uid: str
    generation: int
    resource_version: str
    workload_ref: WorkloadReference | None
    policy: SchedulingPolicy
    topology_keys: tuple[str, ...]  # schedulingConstraints.topology[].key
    disruption_mode: str  # DISRUPTION_SINGLE (the API's default) or DISRUPTION_ALL
    priority_class_name: str
    priority: int | None  # spec.priority as the admission plugin set it; None when unset
    preemption_policy: str | None  # spec.preemptionPolicy; None when unset
    resource_claims: tuple[PodGroupResourceClaim, ...]
    conditions: tuple[Condition, ...]
    parent_composite_pod_group_name: str | None = None  # CompositePodGroup (not built): refused at parse

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def effective_priority(self) -> int:
        """util.PodGroupPriority: spec.priority, 0 when unset."""
        return self.priority if self.priority is not None else 0

    @property
    def effective_preemption_policy(self) -> str:
        """The group's preemption policy, PreemptLowerPriority when unset (podGroupPreemptionPolicy)."""
        return self.preemption_policy or PREEMPT_LOWER_PRIORITY

    def condition(self, type_: str) -> Condition | None:
        for c in self.conditions:
            if c.type == type_:
                return c
        return None


def _ident(kind: str, meta: Mapping[str, Any]) -> str:
    return f"{kind} {meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def _mapping(value: object, ident: str, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidObjectError(ident, field, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: object, ident: str, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidObjectError(ident, field, f"expected a list, got {type(value).__name__}")
    return value


def _int(value: object, ident: str, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidObjectError(ident, field, f"expected an integer, got {value!r}")
    return value


def parse_policy(value: object, ident: str, field: str = "spec.schedulingPolicy") -> SchedulingPolicy:
    """PodGroupSchedulingPolicy: exactly one of basic, gang (the API server validates the same)."""
    spec = _mapping(value, ident, field)
    basic, gang = spec.get("basic"), spec.get("gang")
    if (basic is None) == (gang is None):
        raise InvalidObjectError(ident, field, "exactly one of basic and gang must be set")
    if gang is None:
        return SchedulingPolicy(POLICY_BASIC)
    min_count = _int(_mapping(gang, ident, f"{field}.gang").get("minCount"), ident, f"{field}.gang.minCount")
    if min_count < 1:
        raise InvalidObjectError(ident, f"{field}.gang.minCount", f"must be at least 1, got {min_count}")
    return SchedulingPolicy(POLICY_GANG, min_count)


def _topology_keys(value: object, ident: str, field: str) -> tuple[str, ...]:
    constraints = _mapping(value, ident, field)
    keys = []
    for i, t in enumerate(_list(constraints.get("topology"), ident, f"{field}.topology")):
        key = _mapping(t, ident, f"{field}.topology[{i}]").get("key")
        if not isinstance(key, str) or not key:
            raise InvalidObjectError(ident, f"{field}.topology[{i}].key", "must be a non-empty string")
        keys.append(key)
    return tuple(keys)


def _disruption_mode(value: object, ident: str, field: str) -> str:
    mode = _mapping(value, ident, field)
    if not mode or mode.get("single") is not None:
        return DISRUPTION_SINGLE
    if mode.get("all") is not None:
        return DISRUPTION_ALL
    raise InvalidObjectError(ident, field, "one of single and all must be set")


def _resource_claims(value: object, ident: str, field: str) -> tuple[PodGroupResourceClaim, ...]:
    out = []
    for i, c in enumerate(_list(value, ident, field)):
        claim = _mapping(c, ident, f"{field}[{i}]")
        out.append(PodGroupResourceClaim(str(claim.get("name") or ""), claim.get("resourceClaimName"),
                                         claim.get("resourceClaimTemplateName")))
    return tuple(out)


def _optional_int(value: object, ident: str, field: str) -> int | None:
    return None if value is None else _int(value, ident, field)


def _conditions(value: object, ident: str) -> tuple[Condition, ...]:
    out = []
    for i, c in enumerate(_list(value, ident, "status.conditions")):
        cond = _mapping(c, ident, f"status.conditions[{i}]")
        out.append(Condition(str(cond.get("type") or ""), str(cond.get("status") or ""),
                             str(cond.get("reason") or ""), str(cond.get("message") or ""),
                             int(cond.get("observedGeneration") or 0), str(cond.get("lastTransitionTime") or "")))
    return tuple(out)


def parse_pod_group(obj: Mapping[str, Any]) -> PodGroup:
    """A PodGroup from its API dict; raises InvalidObjectError naming the field it cannot read. A PodGroup with
    ``spec.parentCompositePodGroupName`` belongs to a CompositePodGroup, which py-scheduler does not build."""
    meta = _mapping(obj.get("metadata"), "PodGroup", "metadata")
    ident = _ident(KIND_POD_GROUP, meta)
    spec = _mapping(obj.get("spec"), ident, "spec")
    ref = spec.get("workloadRef")
    workload_ref = None
    if ref is not None:
        r = _mapping(ref, ident, "spec.workloadRef")
        workload_ref = WorkloadReference(str(r.get("workloadName") or ""), str(r.get("templateName") or ""))
    prio = _optional_int(spec.get("priority"), ident, "spec.priority")
    return PodGroup(
        obj, meta.get("namespace") or "default", meta.get("name") or "", meta.get("uid") or "",
        int(meta.get("generation") or 0), meta.get("resourceVersion") or "", workload_ref,
        parse_policy(spec.get("schedulingPolicy"), ident),
        _topology_keys(spec.get("schedulingConstraints"), ident, "spec.schedulingConstraints"),
        _disruption_mode(spec.get("disruptionMode"), ident, "spec.disruptionMode"),
        str(spec.get("priorityClassName") or ""), prio, spec.get("preemptionPolicy"),
        _resource_claims(spec.get("resourceClaims"), ident, "spec.resourceClaims"),
        _conditions(_mapping(obj.get("status"), ident, "status").get("conditions"), ident),
        spec.get("parentCompositePodGroupName"),
    )


def parse_workload(obj: Mapping[str, Any]) -> Workload:
    """A Workload from its API dict; raises InvalidObjectError naming the field it cannot read."""
    meta = _mapping(obj.get("metadata"), "Workload", "metadata")
    ident = _ident(KIND_WORKLOAD, meta)
    spec = _mapping(obj.get("spec"), ident, "spec")
    templates = []
    for i, t in enumerate(_list(spec.get("podGroupTemplates"), ident, "spec.podGroupTemplates")):
        field = f"spec.podGroupTemplates[{i}]"
        tmpl = _mapping(t, ident, field)
        templates.append(PodGroupTemplate(
            str(tmpl.get("name") or ""), parse_policy(tmpl.get("schedulingPolicy"), ident, f"{field}.schedulingPolicy"),
            _topology_keys(tmpl.get("schedulingConstraints"), ident, f"{field}.schedulingConstraints"),
            _disruption_mode(tmpl.get("disruptionMode"), ident, f"{field}.disruptionMode"),
            str(tmpl.get("priorityClassName") or ""),
            _optional_int(tmpl.get("priority"), ident, f"{field}.priority"), tmpl.get("preemptionPolicy"),
            _resource_claims(tmpl.get("resourceClaims"), ident, f"{field}.resourceClaims"),
        ))
    return Workload(obj, meta.get("namespace") or "default", meta.get("name") or "", meta.get("uid") or "",
                    int(meta.get("generation") or 0), meta.get("resourceVersion") or "", tuple(templates))


def pod_group_name_of(spec: Mapping[str, Any]) -> str:
    """spec.schedulingGroup.podGroupName of a pod spec, "" when the pod belongs to no group."""
    group = spec.get("schedulingGroup")
    if not group:
        return ""
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return name if isinstance(name, str) else ""
