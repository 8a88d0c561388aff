"""What the scheduler needs from the world outside it, declared as Protocols and injected.

The live implementations are in scheduler.kube (ApiBinder, ApiWriter, ApiEventSink); simulate's are in
scheduler.whatif.offline. The scheduler never probes what it was given: each object is passed for one role.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from scheduler.framework.interface import NodeToStatus
from scheduler.model.pod import Pod


@dataclass(frozen=True, slots=True)
class RelatedObject:
    """An event's related object that is not a pod (a PodGroup preempting: upstream names it as the related
    object of the victims' Preempted events)."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    kind: str
    api_version: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class BoundElsewhereError(Exception):
    """The pod was bound to another node by someone else (a competing binder): nothing failed, the
    binding cycle forgets the assumed pod and records nothing."""

    def __init__(self, pod: str, node: str) -> None:
        super().__init__(f"pod {pod} is already bound to node {node}")
        self.node = node


class NotLeaderError(RuntimeError):
    """This replica does not hold the leader lease (any more): the write was not made. Nothing failed for
    the pod, whose binding the leader makes: the binding cycle forgets it and records nothing."""


class Binder(Protocol):
    """Posts a Binding, idempotently: a pod already bound to `node_name` is success. Raises on failure
    (the scheduler maps exceptions to a Status): BoundElsewhereError when another binder won,
    NotFoundError when the pod is gone."""

    def bind(self, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class BatchBinder(Binder, Protocol):
    """A Binder that can also post several Bindings at once: the binding cycles of plain pods (no PreBind
    work, DefaultBinder alone) post their Bindings side by side from one thread instead of a thread each.

    ``bind_batch`` makes the first POST of each binding and returns None or its error; ``bind_after`` goes on
    from such an error exactly as ``bind`` would have after that first POST (its retries, a 409's resolution),
    raising what ``bind`` raises."""

    def bind_batch(self, bindings: Sequence[tuple[Pod, str]]) -> list[Exception | None]: ...
    def bind_after(self, pod: Pod, node_name: str, first_error: Exception | None) -> None: ...


class APIWriter(Protocol):
    """The API writes made besides bindings and events: preemption's (victims' DisruptionTarget
    condition and deletion, cleared nominations), VolumeBinding's PreBind (PV / PVC updates) and
    DynamicResources' claim status writes.
    They raise on failure; NotFoundError means the object is gone, ConflictError that it changed."""

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None: ...
    def delete_pod(self, namespace: str, name: str) -> None: ...

    def update_object(self, kind: str, obj: Mapping[str, Any], subresource: str = "") -> Mapping[str, Any]:
        """PUT a PersistentVolume, PersistentVolumeClaim or ResourceClaim (``subresource`` "status" for
        its status); returns the object as stored."""
        ...

    def get_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any]:
        """GET the current object from the API server (a ResourceClaim after a write conflict)."""
        ...

    def patch_object_status(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Strategic-merge-patch an object's status subresource (Unreserve removes a reservedFor entry)."""
        ...

    def create_object(self, kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """POST an object (a pod's extended-resource ResourceClaim, ``generateName`` named); returns it as stored."""
        ...

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """DELETE an object (NotFoundError when already gone)."""
        ...


class EventRecorder(Protocol):
    """Where Kubernetes Events and PodScheduled condition updates go."""

    def event(
        self, pod: Pod, type_: str, reason: str, action: str, note: str, controller: str,
        related: Pod | RelatedObject | None = None,
    ) -> None:
        """``pod`` is the object the event is about; ``related`` a second one (e.g. the preemptor)."""
        ...

    def pod_condition(self, pod: Pod, reason: str, message: str, nominated_node: str | None) -> None:
        """PodScheduled=False with this reason and message; ``nominated_node`` None leaves
        status.nominatedNodeName alone, "" clears it, a name sets it."""
        ...


class ScheduleObserver(Protocol):
    """Sees every attempt's outcome (simulate's results, `run --record-results`). What each plugin said
    within the attempt goes to the framework's CycleObserver (framework/interface.py)."""

    def scheduled(self, pod: Pod, node: str, statuses: NodeToStatus) -> None:
        """A node was chosen and the pod passed Reserve and Permit; the binding cycle follows."""
        ...

    def bound(self, pod: Pod, node: str) -> None:
        """The binding cycle succeeded (a failed one is reported by ``failed``)."""
        ...

    def failed(self, pod: Pod, message: str, statuses: NodeToStatus | None) -> None: ...
    def preempted(self, victim: Pod, preemptor: Pod, node: str) -> None: ...
