"""The Workload API's PodGroup status on the API server: the PodGroupInitiallyScheduled condition the pod-group
cycle sets (framework.podgroup.PodGroupStatusWriter).

Upstream patches from the scheduling goroutine and waits for the answer; here the patch leaves the cycle at once
and one worker sends the patches in order, so a slow or failing API server never holds a group's cycle (nor the
members' binding). Patches for a PodGroup still queued are merged into one (later conditions win by type, as the
API server would merge them, field by field: the cycle's patch is a two-way diff against the cached PodGroup and
may carry only the fields that changed), so a group retried in a burst costs one write. Failures are logged, not
raised: the condition is informational and the next cycle of the group writes it again. The API write goes ahead
of the Bindings and Events waiting for the writer's rate limiter (ApiWriter.patch_pod_group_status): upstream's
cycle waits for its patch, so the condition lags the cycle by one request there, and here by little more; behind
that queue it lagged seconds in a burst, and a scheduler killed then lost every patch still held.

Upstream never regresses a True PodGroupInitiallyScheduled: the cycle reads the condition from its informer, which
its synchronous write has updated by the next cycle. Here the write is asynchronous, and a group's next cycle (a
basic group's remaining member, a millisecond later) may still see no condition at all and ask for False: the
writer drops a patch that sets "status": "False" for a while after it queued True for that PodGroup (``settle``
seconds, ample for the watch to deliver it). A patch that leaves the status alone (a new message for a stale
False, which the API server applies to the True it holds, as upstream's does) goes through. The guard is this
process's own: a True it did not send (failed, or dropped while not leading) is forgotten, and a new leader or a
restarted process guards nothing, as its cycles read the True from the watch like upstream's.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import structlog

from scheduler.model.apierrors import NotFoundError

log = structlog.get_logger(__name__)

INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"


def initially_scheduled(patch: Mapping[str, Any]) -> str | None:
    """The status the patch gives PodGroupInitiallyScheduled ("True", "False"), None when it leaves it alone."""
    for c in (patch.get("status") or {}).get("conditions") or []:
        if c.get("type") == INITIALLY_SCHEDULED:
            status = c.get("status")
            return None if status is None else str(status)
    return None


class PodGroupStatusPatcher(Protocol):
    """The synchronous write (kube.client.ApiWriter.patch_pod_group_status): raises on failure."""

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None: ...


def merge_status_patches(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """``second`` applied over ``first`` as a strategic merge would: maps merge key by key, ``conditions`` merge
    by ``type`` (a later entry's fields over the earlier one's of its type: a partial entry changes only what it
    names, a null field stays null so the API server drops it), other values are replaced."""
    out = dict(first)
    for key, value in second.items():
        old = out.get(key)
        if key == "conditions" and isinstance(old, list) and isinstance(value, list):
            by_type: dict[str, Any] = {c.get("type"): dict(c) for c in old}
            for c in value:
                kind = c.get("type")
                by_type[kind] = {**by_type[kind], **c} if kind in by_type else dict(c)
            out[key] = list(by_type.values())
        elif isinstance(old, Mapping) and isinstance(value, Mapping):
            out[key] = merge_status_patches(old, value)
        else:
            out[key] = value
    return out


class ApiPodGroupStatusWriter:
    """PodGroupStatusWriter over the API: asynchronous, ordered per PodGroup, bounded, leader-gated."""

    def __init__(self, patcher: PodGroupStatusPatcher, backlog: int = 5000,
                 leading: Callable[[], bool] = lambda: True, settle: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """Patches are dropped while not ``leading`` (a standby computes the same conditions; the leader alone
        writes), beyond ``backlog`` PodGroups waiting (counted in ``dropped``, logged), and when they would set
        PodGroupInitiallyScheduled to False less than ``settle`` seconds after this writer queued True."""
        self._patcher = patcher
        self._settle = settle
        self._clock = clock
        self._scheduled: dict[tuple[str, str], float] = {}  # PodGroup -> when True was last queued for it
        self._leading = leading
        self._backlog = backlog
        self._cond = threading.Condition()
        self._pending: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
        self._closed = False
        self._busy = False  # a patch is being sent
        self.dropped = 0
        self.failed = 0
        self._thread = threading.Thread(target=self._work, name="podgroup-status-writer", daemon=True)
        self._thread.start()

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, object]) -> None:
        """Queue the patch and return at once; never raises."""
        key = (namespace, name)
        state = initially_scheduled(patch)
        with self._cond:
            if self._closed or (state is not None and self._regresses(key, state)):
                return
            queued = self._pending.get(key)
            if queued is not None:
                self._pending[key] = merge_status_patches(queued, patch)
            elif len(self._pending) >= self._backlog:
                self.dropped += 1
                if self.dropped % 100 == 1:
                    log.warning("PodGroup status backlog full, dropping patches", dropped=self.dropped)
                return
            else:
                self._pending[key] = dict(patch)
            self._cond.notify()

    def _regresses(self, key: tuple[str, str], state: str) -> bool:
        """Remember a True; a False within ``settle`` seconds of one regresses it. Called under the lock."""
        now = self._clock()
        if state == "True":
            self._scheduled[key] = now
            if len(self._scheduled) > self._backlog:  # forget the ones old enough for the watch to have them
                self._scheduled = {k: t for k, t in self._scheduled.items() if now - t < self._settle}
            return False
        since = self._scheduled.get(key)
        return state == "False" and since is not None and now - since < self._settle

    def _not_sent(self, key: tuple[str, str], patch: Mapping[str, Any], since: float | None) -> None:
        """A True that did not reach the API server guards nothing (unless True was queued again meanwhile)."""
        if initially_scheduled(patch) == "True":
            with self._cond:
                if self._scheduled.get(key) == since:
                    self._scheduled.pop(key, None)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued patch was sent (or failed); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending and not self._busy, timeout)

    def close(self) -> None:
        """Send what is queued, then stop the worker."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=10)

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._closed)
                if not self._pending:
                    return
                (namespace, name), patch = self._pending.popitem(last=False)
                since = self._scheduled.get((namespace, name))
                self._busy = True
            try:
                if self._leading():
                    self._patcher.patch_pod_group_status(namespace, name, patch)
                else:
                    self._not_sent((namespace, name), patch, since)
            except NotFoundError:
                self._not_sent((namespace, name), patch, since)  # deleted meanwhile: nothing to report on
            except Exception as exc:
                self.failed += 1
                self._not_sent((namespace, name), patch, since)
                log.error("Failed to update PodGroup status", pod_group=f"{namespace}/{name}", error=str(exc))
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
