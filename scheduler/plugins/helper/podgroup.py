"""PodGroups (scheduler-plugins' ``scheduling.x-k8s.io/v1alpha1``) and their manager, for Coscheduling.

The manager keeps what the Coscheduling plugin needs between cycles, as scheduler-plugins'
``coscheduling/core`` PodGroupManager plus its PodGroup controller do: the members of each group
(fed by a pod watch that also sees terminal pods), groups that recently failed (backoff), groups
whose ``minResources`` passed the cluster check, and the group status (phase and counts), written
through an injected :class:`PodGroupWriter` so that the core never talks to the API server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.interface import ObjectLister, PodGroupWriter
from scheduler.framework.types import NodeInfo
from scheduler.model.errors import InvalidObjectError
from scheduler.model.pod import Pod, parse_time
from scheduler.model.quantity import PODS
from scheduler.model.resources import Resource, parse_resource_list
from scheduler.model.timefmt import rfc3339

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
KIND = "PodGroup"
GROUP, VERSION, PLURAL = "scheduling.x-k8s.io", "v1alpha1", "podgroups"

PENDING, SCHEDULING, SCHEDULED, RUNNING, FINISHED, FAILED = (
    "Pending", "Scheduling", "Scheduled", "Running", "Finished", "Failed",
)
TERMINAL_POD_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class PodGroup:
    """The fields of a PodGroup the scheduler uses. ``problem`` says why the spec is unusable."""

    namespace: str
    name: str
    uid: str
    min_member: int
    min_resources: Mapping[str, Any] | None
    schedule_timeout_seconds: int | None
    creation_timestamp: float
    phase: str
    raw: Mapping[str, Any]
    problem: str = ""

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"


def podgroup_from_api(obj: Mapping[str, Any]) -> PodGroup:
    """Parse a PodGroup; a spec that cannot work (minMember < 1, a bad quantity) is kept with ``problem``
    set, so its pods get a message naming the field instead of being scheduled wrongly."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    ns, name = meta.get("namespace") or "", meta.get("name") or ""
    problem = ""
    min_member = spec.get("minMember", 0)
    if isinstance(min_member, bool) or not isinstance(min_member, int):
        problem, min_member = f"spec.minMember must be an integer, got {min_member!r}", 0
    elif min_member < 1:
        problem = f"spec.minMember is {min_member}: it must be at least 1"
    timeout = spec.get("scheduleTimeoutSeconds")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0):
        problem = problem or f"spec.scheduleTimeoutSeconds must be a non-negative integer, got {timeout!r}"
        timeout = None
    min_resources = spec.get("minResources")
    if min_resources is not None:
        try:
            parse_resource_list(min_resources, f"PodGroup {ns}/{name}", "spec.minResources")
        except (InvalidObjectError, AttributeError) as exc:
            problem = problem or str(exc)
            min_resources = None
    return PodGroup(
        namespace=ns,
        name=name,
        uid=meta.get("uid") or "",
        min_member=min_member,
        min_resources=min_resources or None,
        schedule_timeout_seconds=timeout or None,
        creation_timestamp=parse_time(meta.get("creationTimestamp")),
        phase=(obj.get("status") or {}).get("phase") or "",
        raw=obj,
        problem=problem,
    )


def group_name(pod: Pod) -> str:
    """The PodGroup a pod names with the ``scheduling.x-k8s.io/pod-group`` label ("" if none)."""
    return pod.labels.get(POD_GROUP_LABEL, "")


def group_full_name(pod: Pod) -> str:
    name = group_name(pod)
    return f"{pod.namespace}/{name}" if name else ""


def cluster_resource_gap(nodes: Iterable[NodeInfo], group: PodGroup) -> dict[str, int]:
    """What ``minResources`` (plus ``pods: minMember``) lacks in the free capacity of the cluster,
    counting the group's own pods as free (scheduler-plugins' CheckClusterResource). Empty: it fits.
    Amounts are in the units of :class:`Resource` (cpu in millicores)."""
    want = Resource.from_list(group.min_resources, f"PodGroup {group.full_name}", "spec.minResources")
    need = {"cpu": want.milli_cpu, "memory": want.memory, "ephemeral-storage": want.ephemeral_storage,
            **want.scalar, PODS: group.min_member}
    need = {k: v for k, v in need.items() if v > 0}
    for info in nodes:
        if info.node is None or not need:
            continue
        free = info.allocatable.copy()
        free.sub(info.requested)
        pods = len(info.pods)
        for p in info.pods.values():
            if group_full_name(p) == group.full_name:
                free.add(p.requests)
                pods -= 1
        free.allowed_pod_number = info.allocatable.allowed_pod_number - pods
        for k in list(need):
            need[k] -= max(0, free.get(k))
            if need[k] <= 0:
                del need[k]
    return need


@dataclass(slots=True)
class _Status:
    """The status the manager last wrote (or found) for one group."""

    phase: str = ""
    counts: tuple[int, int, int, int] = (-1, -1, -1, -1)  # scheduled, running, succeeded, failed
    start: str = ""


@dataclass(slots=True)
class _Group:
    members: dict[str, Pod] = field(default_factory=dict)  # uid -> latest pod (terminal ones kept)
    reserved: set[str] = field(default_factory=set)  # uids assumed by this scheduler, not yet seen bound
    status: _Status | None = None
    problem_reported: str = ""


class PodGroupManager:
    """Group bookkeeping shared by the scheduling thread, the binding threads and the watch threads."""

    def __init__(
        self,
        objects: Callable[[], ObjectLister],
        writer: PodGroupWriter | None,
        activate: Callable[[list[Pod]], None],
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._objects = objects
        self._writer = writer
        self._activate = activate
        self._clock = clock
        self._wall = wall_clock
        self._lock = threading.RLock()
        self._groups: dict[str, _Group] = {}
        self._backoff_until: dict[str, float] = {}
        self._permitted_until: dict[str, float] = {}

    # ----- lookups ------------------------------------------------------------------------------

    def get(self, pod: Pod) -> tuple[str, PodGroup | None]:
        """(namespace/name of the group the pod names, the PodGroup or None if it does not exist)."""
        name = group_name(pod)
        if not name:
            return "", None
        obj = self._objects().get(KIND, pod.namespace, name)
        return f"{pod.namespace}/{name}", podgroup_from_api(obj) if obj is not None else None

    def member_count(self, full_name: str) -> int:
        """Members that can still run: not terminal, not being deleted."""
        with self._lock:
            g = self._groups.get(full_name)
            return 0 if g is None else sum(1 for p in g.members.values() if _live(p))

    def assigned_count(
        self, group: PodGroup, exclude: set[str] | frozenset[str] = frozenset(),
        waiting: set[str] | frozenset[str] = frozenset(),
    ) -> int:
        """Members assumed (reserved, or ``waiting`` at Permit) or bound (upstream CalculateAssignedPods),
        in O(group size)."""
        with self._lock:
            g = self._groups.get(group.full_name)
            if g is None:
                return len(waiting - exclude)
            bound = {uid for uid, p in g.members.items() if p.node_name}
            return len((bound | g.reserved | waiting) - exclude)

    def reserve(self, pod: Pod) -> None:
        """The pod was assumed on a node: it counts as assigned until bound or unreserved."""
        with self._lock:
            self._groups.setdefault(group_full_name(pod), _Group()).reserved.add(pod.uid)

    def unreserve(self, pod: Pod) -> None:
        with self._lock:
            g = self._groups.get(group_full_name(pod))
            if g is not None:
                g.reserved.discard(pod.uid)

    # ----- backoff and the minResources cache ----------------------------------------------------

    def backoff(self, full_name: str, seconds: float) -> None:
        """Reject the group's pods at PreFilter for ``seconds``, then move them to activeQ at once."""
        if seconds <= 0:
            return
        with self._lock:
            if self._backoff_until.get(full_name, 0.0) > self._clock():
                return
            self._backoff_until[full_name] = self._clock() + seconds
        timer = threading.Timer(seconds, self.activate_pending, (full_name,))
        timer.daemon = True
        timer.start()

    def backed_off(self, full_name: str) -> bool:
        with self._lock:
            until = self._backoff_until.get(full_name)
            if until is None:
                return False
            if until > self._clock():
                return True
            del self._backoff_until[full_name]
            return False

    def permitted(self, full_name: str) -> bool:
        with self._lock:
            return self._permitted_until.get(full_name, 0.0) > self._clock()

    def permit(self, full_name: str, seconds: float) -> None:
        with self._lock:
            self._permitted_until[full_name] = self._clock() + seconds

    def forget_permitted(self, full_name: str) -> None:
        with self._lock:
            self._permitted_until.pop(full_name, None)

    def activate_pending(self, full_name: str, exclude_uid: str = "") -> None:
        """Move the group's unscheduled members to activeQ (siblings of a pod that reached Permit,
        a group that became whole, a backoff that ended)."""
        with self._lock:
            g = self._groups.get(full_name)
            pods = [p for p in g.members.values() if _live(p) and not p.node_name and p.uid != exclude_uid
                    and p.uid not in g.reserved] if g is not None else []
        if pods:
            self._activate(pods)

    # ----- watch events -------------------------------------------------------------------------

    def on_pod_event(self, deleted: bool, pod: Pod) -> None:
        """A member pod changed (any phase). A group that just became whole is activated."""
        full = group_full_name(pod)
        if not full:
            return
        with self._lock:
            g = self._groups.setdefault(full, _Group())
            before = sum(1 for p in g.members.values() if _live(p))
            if deleted:
                g.members.pop(pod.uid, None)
            else:
                g.members[pod.uid] = pod
            if deleted or pod.node_name:
                g.reserved.discard(pod.uid)
            after = sum(1 for p in g.members.values() if _live(p))
            if not g.members and not g.reserved and g.status is None:
                del self._groups[full]
        ns, _, name = full.partition("/")
        obj = self._objects().get(KIND, ns, name)
        if obj is None:
            return
        group = podgroup_from_api(obj)
        if not group.problem and before < group.min_member <= after:
            self.activate_pending(full)
        self.sync_status(group)

    def on_podgroup_event(self, deleted: bool, obj: Mapping[str, Any]) -> None:
        group = podgroup_from_api(obj)
        with self._lock:
            if deleted:
                g = self._groups.get(group.full_name)
                if g is not None:
                    g.status = None
                self._backoff_until.pop(group.full_name, None)
                self._permitted_until.pop(group.full_name, None)
                return
        self.report_problem(group)
        self.sync_status(group)

    # ----- status and events --------------------------------------------------------------------

    def report_problem(self, group: PodGroup) -> None:
        """One Warning event per distinct spec problem."""
        if not group.problem:
            return
        with self._lock:
            g = self._groups.setdefault(group.full_name, _Group())
            if g.problem_reported == group.problem:
                return
            g.problem_reported = group.problem
        self.event(group, "Warning", "InvalidPodGroup",
                   f"PodGroup {group.full_name} cannot be scheduled: {group.problem}")

    def event(self, group: PodGroup, type_: str, reason: str, note: str) -> None:
        if self._writer is not None:
            self._writer.event(group.raw, type_, reason, note)

    def sync_status(self, group: PodGroup) -> None:
        """Advance the group's phase one step at a time (each step a separate write, so every phase
        is observable in order) and keep the counts current."""
        if self._writer is None:
            return
        writes: list[tuple[dict[str, Any], str]] = []
        with self._lock:
            g = self._groups.setdefault(group.full_name, _Group())
            if (not g.members and group.phase) or group.phase in (FINISHED, FAILED):
                return  # members not known (yet), or a final status: never overwrite it
            if g.status is None:
                status = group.raw.get("status") or {}
                counts = tuple(int(status.get(k) or 0) for k in ("scheduled", "running", "succeeded", "failed"))
                g.status = _Status(group.phase, (counts[0], counts[1], counts[2], counts[3]),
                                   status.get("scheduleStartTime") or "")
            members = list(g.members.values())
            counts = _counts(members)
            live = sum(1 for p in members if _live(p))
            while True:
                nxt = _next_phase(g.status.phase, group.min_member, live, counts)
                if nxt is None:
                    break
                g.status.phase = nxt
                if nxt == SCHEDULING and not g.status.start:
                    g.status.start = rfc3339(self._wall())
                g.status.counts = counts
                writes.append((self._status_body(g.status), nxt))
            if not writes and counts != g.status.counts and g.status.phase:
                g.status.counts = counts
                writes.append((self._status_body(g.status), ""))
        for body, phase in writes:
            self._writer.patch_status(group.namespace, group.name, body)
            if phase:
                self.event(group, "Normal", phase, _phase_note(group, phase, counts, live))

    @staticmethod
    def _status_body(s: _Status) -> dict[str, Any]:
        scheduled, running, succeeded, failed = s.counts
        body: dict[str, Any] = {"phase": s.phase, "scheduled": scheduled, "running": running,
                                "succeeded": succeeded, "failed": failed}
        if s.start:
            body["scheduleStartTime"] = s.start
        return body


def _live(pod: Pod) -> bool:
    return pod.phase not in TERMINAL_POD_PHASES and not pod.deletion_timestamp


def _counts(members: list[Pod]) -> tuple[int, int, int, int]:
    scheduled = sum(1 for p in members if p.node_name)
    running = sum(1 for p in members if p.phase == "Running")
    succeeded = sum(1 for p in members if p.phase == "Succeeded")
    failed = sum(1 for p in members if p.phase == "Failed")
    return scheduled, running, succeeded, failed


def _next_phase(phase: str, min_member: int, live: int, counts: tuple[int, int, int, int]) -> str | None:
    """One step of Pending -> Scheduling -> Scheduled -> Running -> Finished/Failed (scheduler-plugins'
    PodGroup controller rules), or None when the phase stays."""
    scheduled, running, succeeded, failed = counts
    if phase in (FINISHED, FAILED):
        return None
    if phase == "":
        return PENDING
    if phase == PENDING:
        return SCHEDULING if live >= min_member > 0 else None
    if phase == SCHEDULING:
        return SCHEDULED if scheduled >= min_member else None
    if succeeded >= min_member:
        return FINISHED
    if failed and failed + running + succeeded >= min_member:
        return FAILED
    if phase == SCHEDULED and running + succeeded >= min_member:
        return RUNNING
    return None


def _phase_note(group: PodGroup, phase: str, counts: tuple[int, int, int, int], live: int) -> str:
    scheduled, running, succeeded, failed = counts
    return (f"PodGroup {group.full_name} is {phase}: {live} live members, {scheduled} scheduled, "
            f"{running} running, {succeeded} succeeded, {failed} failed (minMember {group.min_member})")
