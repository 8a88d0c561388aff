"""Pods waiting at Permit (upstream ``pkg/scheduler/framework/runtime/waiting_pods_map.go``).

A ``WaitingPod`` is held until every waiting plugin allows it, one rejects it, or a plugin's timeout
passes; ``WaitingPodsMap`` is the profile's set of them, shared by the scheduling thread (Permit,
preemption, deletions) and the binding threads (WaitOnPermit), hence its lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from scheduler.config.duration import format_duration
from scheduler.framework.status import Code, Status, error
from scheduler.model.pod import Pod


class WaitingPod:
    """A pod held at Permit until every waiting plugin allows it, one rejects it, or a plugin's
    timeout passes. The first decision wins; later allow/reject calls are no-ops.

    Timeouts are checked whenever the pod is touched (allow, reject, wait, pending list), against an
    injectable clock, instead of one timer thread per plugin as upstream has.
    """

    def __init__(self, pod: Pod, plugin_timeouts: Mapping[str, float], clock: Callable[[], float]) -> None:
        self.pod = pod
        self._clock = clock
        self._cond = threading.Condition()
        now = clock()
        # plugin -> (deadline, timeout)
        self._pending: dict[str, tuple[float, float]] = {
            name: (now + timeout, timeout) for name, timeout in plugin_timeouts.items()
        }
        self._decided = False
        self._decision: Status | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._to_fire: list[Callable[[], None]] = []

    def when_decided(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (once, outside the pod's lock) when the pod is allowed, rejected or timed out:
        at once if it already is. A parked binding cycle starts this way, with no thread of its own."""
        with self._cond:
            self._expire_locked()
            if not self._decided:
                self._callbacks.append(callback)
                return
        callback()

    def next_deadline(self) -> float | None:
        """The earliest plugin timeout still pending (on the pod's clock), None once decided."""
        with self._cond:
            if self._decided or not self._pending:
                return None
            return min(d for d, _ in self._pending.values())

    def expire(self) -> None:
        """Reject the pod if a plugin's timeout has passed (the permit timer calls this at the deadline)."""
        with self._cond:
            self._expire_locked()
        self._fire()

    def _fire(self) -> None:
        with self._cond:
            todo, self._to_fire = self._to_fire, []
        for callback in todo:
            callback()

    def get_pod(self) -> Pod:
        return self.pod

    def get_pending_plugins(self) -> list[str]:
        with self._cond:
            self._expire_locked()
            pending = sorted(self._pending) if not self._decided else []
        self._fire()
        return pending

    def decided(self) -> bool:
        """Allowed, rejected or timed out (synchronous binding runs the binding cycle only then)."""
        with self._cond:
            self._expire_locked()
            decided = self._decided
        self._fire()
        return decided

    def rejected(self) -> bool:
        """Rejected or timed out: it will not be bound, even if its binding cycle has not woken yet."""
        with self._cond:
            self._expire_locked()
            rejected = self._decided and self._decision is not None
        self._fire()
        return rejected

    def allow(self, plugin_name: str) -> None:
        """The plugin lets the pod go; the pod is released once no plugin is pending."""
        with self._cond:
            self._expire_locked()
            self._pending.pop(plugin_name, None)
            if not self._pending:
                self._decide_locked(None)
        self._fire()

    def reject(self, plugin_name: str, msg: str) -> None:
        with self._cond:
            self._expire_locked()
            self._decide_locked(Status(Code.UNSCHEDULABLE, [msg], plugin=plugin_name))
        self._fire()

    def wait(self, timeout: float | None = None) -> Status | None:
        """Block until decided. ``timeout`` bounds this call only (e.g. shutdown): when it passes
        first the pod is released with an Error status."""
        try:
            return self._wait(timeout)
        finally:
            self._fire()

    def _wait(self, timeout: float | None) -> Status | None:
        with self._cond:
            give_up = None if timeout is None else self._clock() + timeout
            while True:
                self._expire_locked()
                if self._decided:
                    return self._decision
                now = self._clock()
                if give_up is not None and now >= give_up:
                    self._decide_locked(error(f"no permit decision within {format_duration(timeout or 0.0)}"))
                    continue
                deadlines = [d for d, _ in self._pending.values()]
                if give_up is not None:
                    deadlines.append(give_up)
                self._cond.wait(max(0.0, min(deadlines) - now) if deadlines else None)

    def _expire_locked(self) -> None:
        if self._decided or not self._pending:
            return
        now = self._clock()
        expired = [(deadline, name, t) for name, (deadline, t) in self._pending.items() if now >= deadline]
        if expired:
            _, name, timeout = min(expired)
            msg = f"rejected due to timeout after waiting {format_duration(timeout)} at plugin {name}"
            self._decide_locked(Status(Code.UNSCHEDULABLE, [msg], plugin=name))

    def _decide_locked(self, status: Status | None) -> None:
        if self._decided:
            return
        self._decided = True
        self._decision = status
        self._to_fire, self._callbacks = self._callbacks, []
        self._cond.notify_all()


class WaitingPodsMap:
    """The pods of one profile waiting at Permit, by uid (upstream waitingPodsMap). After a reload the
    new framework of a profile shares its predecessor's map, so a gang's last member, permitted by the
    new plugins, still allows the earlier ones."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}
        self._lock = threading.Lock()

    def add(self, wp: WaitingPod) -> None:
        with self._lock:
            self._pods[wp.pod.uid] = wp

    def remove(self, uid: str, wp: WaitingPod | None = None) -> None:
        """Forget the pod; with ``wp``, only if that is still the one registered (a newer attempt of the
        same pod may have replaced it)."""
        with self._lock:
            if wp is None or self._pods.get(uid) is wp:
                self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        """Without the lock: one dict lookup is atomic under the GIL (twice a pod's binding cycle)."""
        return self._pods.get(uid)

    def iterate(self) -> list[WaitingPod]:
        """A copy: callers allow or reject pods while the binding threads remove them."""
        with self._lock:
            return list(self._pods.values())
