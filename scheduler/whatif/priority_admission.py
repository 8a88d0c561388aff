"""The API server's Priority admission for the what-if commands' files (plugin/pkg/admission/priority at
v1.37.2): a pod created in a cluster gets ``spec.priority`` and ``spec.preemptionPolicy`` from its
PriorityClass, or from the global default class when it names none, and is refused when its class does
not exist. A cluster described as a user applies it (PriorityClasses and pods naming them) simulates as
the API server would have stored it.

The system classes exist in every cluster (the API server creates them), so files need not list them.
A pod written with ``spec.priority`` is taken as already stored (see ``admit``). With ``--from-cluster``
the live cluster's classes are not read (the read-only role does not list them): a file's pod naming a
class the files do not define keeps the priority it was written with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.validation import SYSTEM_PRIORITY_CLASSES

KIND = "PriorityClass"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"


class AdmissionError(Exception):
    """The pod would be refused at creation; the text is the API server's."""


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    value: int
    preemption_policy: str  # defaulted to PreemptLowerPriority by the API server
    global_default: bool = False


def priority_class_from_api(obj: Mapping[str, Any]) -> PriorityClass:
    return PriorityClass(
        name=str((obj.get("metadata") or {}).get("name") or ""),
        value=int(obj.get("value") or 0),
        preemption_policy=str(obj.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY),
        global_default=bool(obj.get("globalDefault")),
    )


class PriorityAdmission:
    """Resolves pods against a set of PriorityClasses. ``complete`` is False when classes may exist that
    were not given (a live cluster): then an unknown class leaves the pod as written."""

    def __init__(self, classes: Iterable[PriorityClass], *, complete: bool = True,
                 pod_group_preemption_policy: bool = False) -> None:
        self.classes = {n: PriorityClass(n, v, PREEMPT_LOWER_PRIORITY) for n, v in SYSTEM_PRIORITY_CLASSES.items()}
        self.classes.update({c.name: c for c in classes})
        self.complete = complete
        self.pod_group_preemption_policy = pod_group_preemption_policy  # the API server's gate

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]], *, complete: bool = True,
                     pod_group_preemption_policy: bool = False) -> PriorityAdmission:
        return cls((priority_class_from_api(o) for o in objects if o.get("kind") == KIND), complete=complete,
                   pod_group_preemption_policy=pod_group_preemption_policy)

    def default_class(self) -> PriorityClass | None:
        """getDefaultPriorityClass: among global defaults (normally one), the lowest value."""
        defaults = [c for c in self.classes.values() if c.global_default]
        return min(defaults, key=lambda c: c.value) if defaults else None

    def admit(self, pod: Mapping[str, Any]) -> dict[str, Any]:
        """admitPod on create: the pod with its class's priority and preemption policy (AdmissionError
        with admission's message when the class is missing or the pod contradicts it).

        A pod that already has ``spec.priority`` is taken as stored (admitted before, e.g. a dump of
        ``kubectl get pods -o yaml``, or a file written with explicit priorities): it is kept, unless it
        names a class given here whose value or policy it contradicts, which admission refuses."""
        spec = dict(pod.get("spec") or {})
        name = spec.get("priorityClassName") or ""
        stored = spec.get("priority") is not None
        if name:
            pc = self.classes.get(name)
            if pc is None:
                if stored or not self.complete:
                    return dict(pod)
                raise AdmissionError(_forbidden(pod, f"no PriorityClass with name {name} was found"))
        elif stored:
            return dict(pod)
        else:
            pc = self.default_class()
            if pc is None and not self.complete:
                return dict(pod)
        class_name, value, policy = (pc.name, pc.value, pc.preemption_policy) if pc else ("", 0, PREEMPT_LOWER_PRIORITY)
        if stored and spec["priority"] != value:
            raise AdmissionError(_forbidden(
                pod, f"the integer value of priority ({spec['priority']}) must not be provided in pod spec; "
                     f"priority admission controller computed {value} from the given PriorityClass name"))
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            raise AdmissionError(_forbidden(
                pod, f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not be provided in "
                     f"pod spec; priority admission controller computed {policy} from the given PriorityClass name"))
        if class_name:
            spec["priorityClassName"] = class_name
        spec.update(priority=value, preemptionPolicy=policy)
        return {**pod, "spec": spec}


    def admit_pod_group(self, group: Mapping[str, Any]) -> dict[str, Any]:
        """admitPodGroup on create (GenericWorkload on): the PodGroup with its class's priority, or the
        default class's, or 0; a stored ``spec.priority`` that contradicts a class given here is refused. With
        PodGroupPreemptionPolicy the class's preemption policy (PreemptLowerPriority without a class) is set, and a
        stored one that contradicts it refused; without it the policy is left as written."""
        spec = dict(group.get("spec") or {})
        name = spec.get("priorityClassName") or ""
        stored = spec.get("priority")
        pc = self.classes.get(name) if name else self.default_class()
        if pc is None and (name or not self.complete):
            if stored is None and name and self.complete:
                raise AdmissionError(_forbidden(group, f"no PriorityClass with name {name} was found", PODGROUPS))
            return dict(group)
        value = pc.value if pc else 0
        if stored is not None and stored != value:
            raise AdmissionError(_forbidden(
                group, f"priority set in the pod group ({stored}) must match the priority computed ({value}) based "
                       f"on the priority class set in the spec", PODGROUPS))
        spec["priority"] = value
        if pc:
            spec["priorityClassName"] = pc.name
        if self.pod_group_preemption_policy:
            policy = pc.preemption_policy if pc else PREEMPT_LOWER_PRIORITY
            written = spec.get("preemptionPolicy")
            if written is not None and written != policy:
                raise AdmissionError(_forbidden(
                    group, f"the string value of PreemptionPolicy ({written}) must not be provided in pod group spec; "
                           f"priority admission controller computed {policy} from the given PriorityClass name",
                    PODGROUPS))
            spec["preemptionPolicy"] = policy
        return {**group, "spec": spec}


PODGROUPS = "podgroups.scheduling.k8s.io"


def _forbidden(pod: Mapping[str, Any], why: str, resource: str = "pods") -> str:
    """admission.NewForbidden's text for a pod: its name (or generateName) in quotes."""
    meta = pod.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or "Unknown"
    return f'{resource} "{name}" is forbidden: {why}'
