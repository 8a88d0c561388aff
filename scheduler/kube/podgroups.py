"""PodGroups on the API server, for Coscheduling: is the CRD served, status and Event writes.

The scheduler watches PodGroups (scheduling.x-k8s.io/v1alpha1) only when the API server serves them, so
a cluster without the CRD starts as before. Status patches and Events leave the calling thread at once
and are written in order by one worker: a status update that only changes counts replaces the queued
one with the same phase, so every phase is written, and a burst of pod events costs one write.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from scheduler.kube.client import ApiWriter, Requester, served_resources
from scheduler.kube.kinds import WATCHED_KINDS
from scheduler.model.apierrors import NotFoundError
from scheduler.model.timefmt import micro_time
from scheduler.plugins.helper.podgroup import GROUP, KIND, PLURAL, VERSION

log = structlog.get_logger(__name__)

# The CRD kinds as the watch wiring lists them (kind -> group, version, plural): PodGroup.
PODGROUP_KINDS: dict[str, tuple[str, str, str]] = {k.kind: k.gvr for k in WATCHED_KINDS if k.crd}


def podgroups_served(raw: Requester) -> bool:
    """Discovery of scheduling.x-k8s.io/v1alpha1: does it list podgroups? Any failure means no."""
    try:
        return PLURAL in served_resources(raw, GROUP, VERSION)
    except Exception as exc:
        log.warning("cannot discover PodGroups; Coscheduling sees none", error=str(exc))
        return False


class ApiPodGroupWriter:
    """scheduler.plugins.helper.podgroup.PodGroupWriter over the API: asynchronous, ordered, bounded."""

    def __init__(
        self, writer: ApiWriter, controller: str = "py-scheduler", backlog: int = 5000,
        leading: Callable[[], bool] = lambda: True,
        ready: threading.Event | None = None,
    ) -> None:
        """Writes wait until ``ready`` is set (the members are listed: a half-listed group would get
        counts that are too low) and are dropped while not ``leading`` (a standby sees the same watch
        events and keeps the same view; the leader alone writes)."""
        self._writer = writer
        self._leading = leading
        self._ready = ready
        self._controller = controller
        self._backlog = backlog
        self._cond = threading.Condition()
        self._tasks: deque[tuple[str, Any]] = deque()
        self._statuses: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._closed = False
        self.dropped = 0
        self._thread = threading.Thread(target=self._work, name="podgroup-writer", daemon=True)
        self._thread.start()

    def patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        key = (namespace, name)
        with self._cond:
            queued = self._statuses.get(key)
            if queued is None:
                if not self._room():
                    return
                self._statuses[key] = [dict(status)]
                self._tasks.append(("status", key))
            elif queued[-1].get("phase") == status.get("phase"):
                queued[-1] = dict(status)
            else:
                queued.append(dict(status))
            self._cond.notify()

    def event(self, podgroup: Mapping[str, Any], type_: str, reason: str, note: str) -> None:
        meta = podgroup.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.get('name')}.{time.time_ns():x}", "namespace": ns},
            "eventTime": micro_time(),
            "reportingController": self._controller,
            "reportingInstance": self._controller,
            "action": "Scheduling",
            "reason": reason,
            "type": type_,
            "note": note[:1024],
            "regarding": {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "namespace": ns,
                          "name": meta.get("name"), "uid": meta.get("uid"),
                          "resourceVersion": meta.get("resourceVersion")},
        }
        with self._cond:
            if self._room():
                self._tasks.append(("event", (ns, body)))
                self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _room(self) -> bool:
        if len(self._tasks) < self._backlog:
            return True
        self.dropped += 1
        if self.dropped % 100 == 1:
            log.warning("PodGroup write backlog full, dropping writes", dropped=self.dropped)
        return False

    def _work(self) -> None:
        while self._ready is not None and not self._ready.wait(0.5):
            if self._closed:
                return
        while True:
            with self._cond:
                while not self._tasks and not self._closed:
                    self._cond.wait()
                if not self._tasks:
                    return
                what, arg = self._tasks.popleft()
                bodies = self._statuses.pop(arg, []) if what == "status" else []
            if not self._leading():
                continue
            try:
                if what == "event":
                    self._writer.create_event(*arg)
                for body in bodies:
                    self._writer.patch_custom_status(GROUP, VERSION, PLURAL, arg[0], arg[1], body)
            except Exception as exc:  # a deleted PodGroup (404) or an outage: never stop the worker
                if not isinstance(exc, NotFoundError):
                    log.warning("PodGroup write failed", kind=what, error=str(exc))
