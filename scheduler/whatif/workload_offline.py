"""`simulate` with the Workload API (scheduling.k8s.io/v1beta1 Workload and PodGroup, pods that join a group
through ``spec.schedulingGroup``; gate GenericWorkload).

The objects of the pods file arrive in file order, as their watch events would on a live cluster, and after
each one the scheduler runs until nothing is left to schedule: a group is placed as soon as its PodGroup and
enough members are there (a PodGroup listed after its pods arrives after them), and a member whose PodGroup
never arrives stays pending with the message upstream leaves it. A group's retries that wait for its backoff
(after a preemption) run after the last object arrived, as a file is created faster than a backoff.
Workloads are accepted and ignored, as kube-scheduler has no informer for them. The PodGroup status the
cycle writes goes to RecordingPodGroupStatusWriter, which delivers it back as the watch would, one cycle
late, and keeps each group's conditions for the output.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from scheduler.eventhandlers import ADDED, MODIFIED
from scheduler.model.workload import API_VERSION, GROUP, KIND_POD_GROUP, KIND_WORKLOAD
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import merged_status

WORKLOAD_API = f"{GROUP}/"


def is_workload_object(o: Mapping[str, Any]) -> bool:
    """A Workload or PodGroup of the Workload API (not scheduler-plugins' PodGroup, scheduling.x-k8s.io)."""
    return o.get("kind") in (KIND_POD_GROUP, KIND_WORKLOAD) and str(o.get("apiVersion", "")).startswith(WORKLOAD_API)


def is_grouped_pod(o: Mapping[str, Any]) -> bool:
    """A pod that names its PodGroup in ``spec.schedulingGroup``."""
    return o.get("kind") == "Pod" and bool(((o.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName"))


def gate_refusal(o: Mapping[str, Any]) -> str:
    """Why a file's Workload API object is refused with GenericWorkload off (the API server would not serve it)."""
    return (f"{o.get('kind')} {API_VERSION}: the Workload API needs --feature-gates GenericWorkload=true "
            f"(kube-scheduler v1.37: beta, off by default)")


class RecordingPodGroupStatusWriter:
    """The PodGroupStatusWriter offline: a patch's conditions are merged by type into the PodGroup as the API
    server would, the result is delivered to the scheduler as a watch event, and the last status of each group
    is kept for simulate's output. Call ``connect`` with the scheduler first; ``seen`` every PodGroup fed;
    ``cycle_done`` after every scheduling cycle, ``deliver_all`` when the scheduler is idle.

    Delivery lags one cycle, as kube's watch lags the write: a group whose cycle placed some members requeues
    the rest at once, and their cycle (the next) still sees the PodGroup as cached before the write, so its
    patch is a diff against that stale copy (seeds 21, 90, 114, 118 of the differential)."""

    def __init__(self, watch_lag: bool = True) -> None:
        # watch_lag False: a write reaches the scheduler at once, the other side of the same race (kube's retry
        # sometimes runs after the watch brought the write: seeds 32, 90 and 118 went either way on kube's reruns).
        self.watch_lag = watch_lag
        self._sched: Scheduler | None = None
        self.pod_groups: dict[str, dict[str, Any]] = {}  # "ns/name" -> the object as last written or fed
        self._written: list[dict[str, Any]] = []  # written in the cycle now running: delivered after the next
        self._lagging: list[dict[str, Any]] = []  # written in the cycle before: delivered when this one ends

    def connect(self, sched: Scheduler) -> None:
        self._sched = sched

    def seen(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self.pod_groups[f"{meta.get('namespace')}/{meta.get('name')}"] = copy.deepcopy(dict(obj))

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, object]) -> None:
        key = f"{namespace}/{name}"
        current = self.pod_groups.get(key)
        if current is None:
            raise LookupError(f'podgroups.{GROUP} "{name}" not found')
        written = copy.deepcopy(current)
        written["status"] = merged_status(current, patch)
        meta = written.setdefault("metadata", {})
        version = str(meta.get("resourceVersion") or "0")
        meta["resourceVersion"] = str(int(version) + 1) if version.isdigit() else f"{version}+status"
        self.pod_groups[key] = written
        if self.watch_lag:
            self._written.append(written)
        else:
            self._deliver([written])

    def cycle_done(self) -> None:
        """A scheduling cycle returned: the watch brings what the cycle before it wrote."""
        lagging, self._lagging, self._written = self._lagging, self._written, []
        self._deliver(lagging)

    def deliver_all(self) -> bool:
        """The scheduler is idle: the watch catches up. Whether anything was delivered."""
        pending, self._lagging, self._written = self._lagging + self._written, [], []
        self._deliver(pending)
        return bool(pending)

    def _deliver(self, objs: list[dict[str, Any]]) -> None:
        if self._sched is not None:
            for obj in objs:
                self._sched.on_pod_group_event(MODIFIED, obj)

    def conditions(self, key: str) -> list[dict[str, Any]]:
        return list((self.pod_groups.get(key, {}).get("status") or {}).get("conditions") or [])

    def summary(self) -> list[dict[str, Any]]:
        """Every PodGroup of the run with its status conditions, in the order they were first seen."""
        return [{"podGroup": key, "conditions": self.conditions(key)} for key in self.pod_groups]


def feed(sched: Scheduler, writer: RecordingPodGroupStatusWriter, o: Mapping[str, Any], type_: str = ADDED) -> None:
    """One Workload API object as its watch event. A Workload is accepted and changes nothing: kube-scheduler
    v1.37.2 has no Workload informer (a group's policy is its PodGroup's, which the Workload's controller
    would have stamped from the template)."""
    if o.get("kind") == KIND_POD_GROUP:
        writer.seen(o)
        sched.on_pod_group_event(type_, o)
