"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Why: py-scheduler runs as two replicas so that a standby with warm caches takes over when the leader
dies, and two schedulers binding the same pods at once must never happen. This follows client-go's
``tools/leaderelection`` (what kube-scheduler uses) so the Lease looks and behaves as operators expect:

* Acquire when the Lease is absent, released (empty ``holderIdentity``), held by us, or expired.
  "Expired" is judged the way client-go judges it, by *local* time: the record last observed changed
  at ``observed_at`` (our monotonic clock) and ``observed_at + leaseDurationSeconds`` has passed. A
  candidate never compares the holder's ``renewTime`` with its own wall clock, so clock skew between
  nodes cannot make two replicas lead at once. (A standby that starts after the holder died therefore
  waits one full lease duration, as upstream does.)
* The leader renews every ``retryPeriod``; if no renewal has succeeded for ``renewDeadline`` it stops
  leading at once. ``is_leader`` itself turns false when the deadline passes, even if the renewing
  thread is stuck in a request, so a binding gate on it never outlives the deadline. Because
  ``renewDeadline < leaseDuration``, the old leader stops binding before anyone else may acquire.
* ``leaseTransitions`` is incremented whenever the holder changes to us; ``acquireTime`` is kept while
  we hold it; the holder identity is ``<hostname>_<uuid>`` (kube-scheduler's form).
* ``stop()`` releases the Lease as client-go's ``ReleaseOnCancel``: ``holderIdentity`` cleared,
  ``leaseDurationSeconds: 1``, so a standby takes over on its next retry instead of after a full lease.

The decision itself (``decide``) is a pure function of the observed record and the time, unit-tested
with a fake clock; ``LeaderElector`` adds the API calls, the loop and the callbacks.
Why not ``kubernetes.leaderelection``: its ``run()`` blocks the caller, judges expiry with the wall clock,
never releases the Lease on stop and has no ``is_leader`` that closes at the renew deadline for the
binding gate below; and it talks through the generated client instead of RawApi.
Differences from client-go, on purpose: ``on_stopped_leading`` is called only if we were leading
(client-go also calls it when ``Run`` ends without ever leading); after losing the lease the elector
does not campaign again (client-go's ``Run`` returns too; kube-scheduler then exits).
"""

from __future__ import annotations

import enum
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol
from urllib.parse import quote

import orjson
import structlog
from kubernetes.client.exceptions import ApiException

from scheduler.config.types import LeaderElection
from scheduler.edge import APIWriter, BatchBinder, Binder, NotLeaderError
from scheduler.kube.client import Requester
from scheduler.model.apierrors import ConflictError, NotFoundError
from scheduler.model.pod import Pod
from scheduler.model.timefmt import micro_time, rfc3339

log = structlog.get_logger(__name__)

JITTER_FACTOR = 1.2  # client-go's JitterFactor for the acquire loop
MAX_TOLERABLE_EXPIRED_LEASE = 20.0  # kube-scheduler's leader-election healthz tolerance, seconds


def default_identity() -> str:
    """``<hostname>_<uuid>``: unique per process even when replicas share a hostname."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The Lease spec fields leader election reads and writes (client-go's LeaderElectionRecord)."""

    holder_identity: str
    lease_duration_seconds: int
    acquire_time: str | None
    renew_time: str | None
    lease_transitions: int

    @classmethod
    def from_lease(cls, lease: Mapping[str, Any]) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.lease_transitions,
        }


class Action(enum.Enum):
    CREATE = "create"  # no Lease yet: create it holding it
    RENEW = "renew"  # we hold it: write a new renewTime
    TAKE_OVER = "take-over"  # released or expired: write ourselves as holder, transitions + 1
    STAND_BY = "stand-by"  # someone else holds a valid lease: write nothing


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    record: LeaseRecord | None  # what to write; None for STAND_BY
    reason: str


def lease_valid(current: LeaseRecord, observed_at: float, now: float) -> bool:
    """client-go's isLeaseValid: the record, first seen at ``observed_at``, has not outlived its duration."""
    return observed_at + current.lease_duration_seconds > now


def decide(
    current: LeaseRecord | None,
    identity: str,
    *,
    observed_at: float,
    now: float,
    lease_duration_seconds: float,
    wall_now: str,
) -> Decision:
    """What one tryAcquireOrRenew does with the record just read (None: the Lease does not exist).

    ``observed_at`` and ``now`` are readings of the same monotonic clock; ``wall_now`` is the MicroTime
    to write as renewTime (and acquireTime on a change of holder).
    """
    duration = max(1, int(lease_duration_seconds))
    if current is None:
        return Decision(Action.CREATE, LeaseRecord(identity, duration, wall_now, wall_now, 0), "no lease yet")
    if current.holder_identity == identity:
        renewed = replace(current, lease_duration_seconds=duration, renew_time=wall_now)
        return Decision(Action.RENEW, renewed, "held by us")
    if current.holder_identity and lease_valid(current, observed_at, now):
        left = observed_at + current.lease_duration_seconds - now
        return Decision(Action.STAND_BY, None, f"held by {current.holder_identity}, valid for {left:.1f}s more")
    why = "released" if not current.holder_identity else f"expired (held by {current.holder_identity})"
    record = LeaseRecord(identity, duration, wall_now, wall_now, current.lease_transitions + 1)
    return Decision(Action.TAKE_OVER, record, why)


def renew_deadline_passed(last_renew: float, now: float, renew_deadline_seconds: float) -> bool:
    """True when no renewal has succeeded for renewDeadline: the leader must stop leading now."""
    return now - last_renew >= renew_deadline_seconds


class LeaseConflict(Exception):
    """The Lease changed under us (409) or already exists (create raced): re-read and decide again."""


class LeaseStore(Protocol):
    """Where the Lease lives: the API server (KubeLeaseStore) or a dict in unit tests."""

    def get(self) -> dict[str, Any] | None: ...
    def create(self, record: LeaseRecord) -> dict[str, Any]: ...
    def update(self, lease: Mapping[str, Any], record: LeaseRecord) -> dict[str, Any]: ...
    def record_event(self, lease: Mapping[str, Any], message: str) -> None: ...


class KubeLeaseStore:
    """GET / POST / PUT of one Lease over RawApi; raw JSON, so MicroTime round-trips as written."""

    def __init__(self, api: Requester, namespace: str, name: str) -> None:
        self.namespace = namespace
        self.name = name
        self._api = api
        self._leases = f"/apis/coordination.k8s.io/v1/namespaces/{quote(namespace)}/leases"
        self.timeout: float = 10.0  # per request; the elector lowers it to what is left of its deadline

    def _body(self, record: LeaseRecord, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        meta = dict(metadata or {"name": self.name, "namespace": self.namespace})
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": record.to_spec()}

    def _request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        data: dict[str, Any] = orjson.loads(self._api.request(method, path, body, timeout=self.timeout) or b"{}")
        return data

    def get(self) -> dict[str, Any] | None:
        try:
            return self._request("GET", f"{self._leases}/{quote(self.name)}")
        except NotFoundError:
            return None

    def create(self, record: LeaseRecord) -> dict[str, Any]:
        try:
            return self._request("POST", self._leases, self._body(record))
        except ConflictError as exc:
            raise LeaseConflict("lease created by someone else meanwhile") from exc

    def update(self, lease: Mapping[str, Any], record: LeaseRecord) -> dict[str, Any]:
        """PUT with the resourceVersion of ``lease``: fails with LeaseConflict if anyone wrote since."""
        try:
            return self._request("PUT", f"{self._leases}/{quote(self.name)}", self._body(record, lease.get("metadata")))
        except ConflictError as exc:
            raise LeaseConflict("lease updated by someone else meanwhile") from exc

    def record_event(self, lease: Mapping[str, Any], message: str) -> None:
        """A core Event on the Lease, as client-go's LeaseLock.RecordEvent ("<id> became leader")."""
        meta = lease.get("metadata") or {}
        now = rfc3339()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{self.name}.", "namespace": self.namespace},
            "involvedObject": {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "namespace": self.namespace,
                "name": self.name,
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": "LeaderElection",
            "message": message,
            "type": "Normal",
            "source": {"component": "py-scheduler"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self._request("POST", f"/api/v1/namespaces/{quote(self.namespace)}/events", body)


class State(enum.Enum):
    STARTING = "starting"  # no attempt has reached the API server yet
    STANDBY = "standby"  # the lease is held by someone else; we keep trying
    LEADING = "leading"
    STOPPED = "stopped"  # stop() was called or the lease was lost; this elector is done


class LeaderElector:
    """Campaign for a Lease on a daemon thread; call the callbacks when leadership starts and ends.

    ``on_started_leading`` and ``on_stopped_leading`` run on the elector's thread and must return
    quickly (start or stop the scheduling loop, or exit the process); an exception in them is logged.
    """

    def __init__(
        self,
        api: Requester | None,
        cfg: LeaderElection,
        identity: str | None = None,
        on_started_leading: Callable[[], None] = lambda: None,
        on_stopped_leading: Callable[[], None] = lambda: None,
        *,
        store: LeaseStore | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        rand: Callable[[], float] = random.random,
    ) -> None:
        if cfg.lease_duration_seconds <= cfg.renew_deadline_seconds:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if cfg.renew_deadline_seconds <= cfg.retry_period_seconds:
            raise ValueError("renewDeadline must be greater than retryPeriod")
        if store is None:
            if api is None:
                raise ValueError("LeaderElector needs an api or a store")
            store = KubeLeaseStore(api, cfg.resource_namespace, cfg.resource_name)
        self.cfg = cfg
        self.identity = identity or default_identity()
        self.lease_key = f"{cfg.resource_namespace}/{cfg.resource_name}"
        self._store = store
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._wall = wall_clock
        self._rand = rand
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._state = State.STARTING
        self._leading = False
        self._last_renew = 0.0
        self._lease: dict[str, Any] | None = None  # the Lease object as last read or written
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._started_at = 0.0

    # ----- what the rest of the scheduler reads -----

    @property
    def is_leader(self) -> bool:
        """True only while we hold the lease and the last renewal is younger than renewDeadline."""
        with self._lock:
            return self._leading and not renew_deadline_passed(
                self._last_renew, self._clock(), self.cfg.renew_deadline_seconds
            )

    @property
    def state(self) -> State:
        return self._state

    @property
    def holder(self) -> str:
        """The holder identity last observed ("" when unknown or released)."""
        return self._observed.holder_identity if self._observed else ""

    def readiness(self) -> str | None:
        """None when ready (leading, or standing by with the lease observed); otherwise why not."""
        if self._state in (State.LEADING, State.STANDBY):
            return None
        return f"leader election {self._state.value} on lease {self.lease_key}"

    def liveness(self, max_tolerable_expired: float = MAX_TOLERABLE_EXPIRED_LEASE) -> str | None:
        """client-go's HealthzAdaptor: unhealthy if leading but not renewed for leaseDuration + tolerance,
        or if the elector's thread died while it should still be running."""
        if self._thread is not None and not self._thread.is_alive() and self._state is not State.STOPPED:
            return "leader election thread died"
        with self._lock:
            leading, last = self._leading, self._last_renew
        if leading and self._clock() - last > self.cfg.lease_duration_seconds + max_tolerable_expired:
            return f"failed to renew leadership on lease {self.lease_key}"
        return None

    # ----- life cycle -----

    def start(self, on_started_leading: Callable[[], None] | None = None) -> None:
        """Campaign on a daemon thread until stop() or until the lease is lost. ``on_started_leading``
        replaces the constructor's: what it starts (the scheduler) may be built after the elector, whose
        gate it takes (upstream sets the callbacks in Run, after Setup built the scheduler)."""
        if self._thread is not None:
            raise RuntimeError("LeaderElector.start() called twice")
        if on_started_leading is not None:
            self._on_started = on_started_leading
        self._started_at = self._clock()
        log.info("leader election: campaigning", lease=self.lease_key, identity=self.identity)
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop campaigning; if leading, stop leading and release the lease (ReleaseOnCancel)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.cfg.renew_deadline_seconds + 1 if timeout is None else timeout)
        with self._lock:
            was_leading = self._leading
            self._leading = False
        self._state = State.STOPPED
        if was_leading:
            self._release()
            self._call(self._on_stopped, "on_stopped_leading")

    def _run(self) -> None:
        while not self._stop.is_set() and self._state is not State.STOPPED:
            try:
                delay = self.step()
            except Exception:  # the loop must survive anything one attempt throws
                log.exception("leader election attempt crashed", lease=self.lease_key)
                delay = self.cfg.retry_period_seconds
            if self._state is State.STOPPED:
                return
            self._stop.wait(delay)

    # ----- one iteration (driven by the thread; by tests directly) -----

    def step(self) -> float:
        """One acquire or renew attempt; returns the seconds to wait before the next one.

        A successful write counts from when the attempt *began*: the API server wrote renewTime no
        earlier, so others' view of the lease can only be younger and the renew deadline errs safe.
        """
        retry = self.cfg.retry_period_seconds
        began = self._clock()
        if not self._leading:
            if self.try_acquire_or_renew():
                self._became_leader(began)
                return retry
            return retry * (1 + self._rand() * JITTER_FACTOR)
        if self.try_acquire_or_renew():
            with self._lock:
                self._last_renew = began
            return retry
        if self._observed is not None and self._observed.holder_identity != self.identity:
            self._lost(f"lease taken over by {self._observed.holder_identity}")
        elif renew_deadline_passed(self._last_renew, self._clock(), self.cfg.renew_deadline_seconds):
            self._lost(f"no successful renewal for {self.cfg.renew_deadline_seconds:g}s (renewDeadline)")
        return retry

    def try_acquire_or_renew(self) -> bool:
        """client-go's tryAcquireOrRenew: True if we hold the lease after this attempt."""
        self._set_timeout()
        now = self._clock()
        wall = micro_time(self._wall())
        # Fast path: the leader writes on top of the lease it last wrote, saving a GET per renewal.
        if (
            self._leading
            and self._lease is not None
            and self._observed is not None
            and lease_valid(self._observed, self._observed_at, now)
        ):
            record = replace(
                self._observed,
                holder_identity=self.identity,
                lease_duration_seconds=max(1, int(self.cfg.lease_duration_seconds)),
                renew_time=wall,
            )
            try:
                self._wrote(self._store.update(self._lease, record), record)
                return True
            except Exception as exc:
                log.info("lease renewal on the fast path failed; re-reading", lease=self.lease_key, error=_brief(exc))
        try:
            lease = self._store.get()
        except Exception as exc:
            log.warning("cannot read the leader-election lease", lease=self.lease_key, error=_brief(exc))
            return False
        current = None if lease is None else LeaseRecord.from_lease(lease)
        if current is not None:
            self._lease = lease
            if current != self._observed:
                self._observed, self._observed_at = current, self._clock()
        decision = decide(
            current,
            self.identity,
            observed_at=self._observed_at,
            now=self._clock(),
            lease_duration_seconds=self.cfg.lease_duration_seconds,
            wall_now=wall,
        )
        if decision.action is Action.STAND_BY or decision.record is None:
            if self._state is State.STARTING:
                log.info("leader election: standing by", lease=self.lease_key, reason=decision.reason)
            self._state = State.STANDBY if self._state is State.STARTING else self._state
            return False
        try:
            if decision.action is Action.CREATE:
                written = self._store.create(decision.record)
            else:
                assert lease is not None
                written = self._store.update(lease, decision.record)
        except Exception as exc:
            log.info(
                "leader election: could not write the lease",
                lease=self.lease_key,
                action=decision.action.value,
                error=_brief(exc),
            )
            if self._state is State.STARTING:
                self._state = State.STANDBY
            return False
        if decision.action is not Action.RENEW:
            log.info(
                "leader election: acquired the lease",
                lease=self.lease_key,
                reason=decision.reason,
                transitions=decision.record.lease_transitions,
            )
        self._wrote(written, decision.record)
        return True

    # ----- internals -----

    def _set_timeout(self) -> None:
        """Bound each request so the loop re-checks the renew deadline in time (client-go: ctx timeout)."""
        if not isinstance(self._store, KubeLeaseStore):
            return
        budget = self.cfg.renew_deadline_seconds
        if self._leading:
            budget = self._last_renew + self.cfg.renew_deadline_seconds - self._clock()
        self._store.timeout = max(0.5, min(budget, self.cfg.renew_deadline_seconds))

    def _wrote(self, lease: dict[str, Any], record: LeaseRecord) -> None:
        self._lease = lease
        self._observed = LeaseRecord.from_lease(lease) if lease.get("spec") else record
        self._observed_at = self._clock()

    def _became_leader(self, began: float) -> None:
        with self._lock:
            self._leading = True
            self._last_renew = began
        self._state = State.LEADING
        log.info(
            "leader election: became leader",
            lease=self.lease_key,
            identity=self.identity,
            waited_s=round(self._clock() - self._started_at, 2),
        )
        self._call(self._on_started, "on_started_leading")
        if self._lease is not None:
            try:
                self._store.record_event(self._lease, f"{self.identity} became leader")
            except Exception as exc:
                log.info("could not record the leader-election event", error=_brief(exc))

    def _lost(self, why: str) -> None:
        with self._lock:
            self._leading = False
        self._state = State.STOPPED
        log.error("leader election: lost the lease; stopped leading", lease=self.lease_key, reason=why)
        self._call(self._on_stopped, "on_stopped_leading")

    def _release(self) -> None:
        """Clear holderIdentity (leaseDurationSeconds 1, transitions kept): client-go's release()."""
        if self._lease is None or self._observed is None or self._observed.holder_identity != self.identity:
            return
        now = micro_time(self._wall())
        record = LeaseRecord("", 1, now, now, self._observed.lease_transitions)
        try:
            self._set_timeout()
            self._wrote(self._store.update(self._lease, record), record)
            log.info("leader election: released the lease", lease=self.lease_key)
        except Exception as exc:
            log.warning("leader election: could not release the lease", lease=self.lease_key, error=_brief(exc))

    def _call(self, fn: Callable[[], None], what: str) -> None:
        try:
            fn()
        except Exception:
            log.exception(f"leader election: {what} callback failed", lease=self.lease_key)


def _brief(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        return f"HTTP {exc.status}: {exc.reason}"
    return f"{type(exc).__name__}: {exc}"


class _Leadership(Protocol):
    @property
    def is_leader(self) -> bool: ...


class LeaderGatedWriter:
    """The core's API writes (preemption's DisruptionTarget conditions and deletions, cleared
    nominations, VolumeBinding's PV/PVC updates), made only while ``is_leader`` holds: evicting pods
    and binding volumes are as much a leader's acts as binding pods."""

    def __init__(self, inner: APIWriter, leadership: _Leadership) -> None:
        self.inner = inner
        self.leadership = leadership

    def _require_leader(self, what: str) -> None:
        if not self.leadership.is_leader:
            raise NotLeaderError(f"not the leader: {what} skipped")

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self._require_leader(f"status patch of {namespace}/{name}")
        self.inner.patch_pod_status(namespace, name, patch)

    def delete_pod(self, namespace: str, name: str) -> None:
        self._require_leader(f"deletion of {namespace}/{name}")
        self.inner.delete_pod(namespace, name)

    def update_object(self, kind: str, obj: Mapping[str, Any], subresource: str = "") -> Mapping[str, Any]:
        meta = obj.get("metadata") or {}
        self._require_leader(f"update of {kind} {meta.get('name', '')}")
        return self.inner.update_object(kind, obj, subresource)

    def get_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any]:
        return self.inner.get_object(kind, namespace, name)

    def patch_object_status(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self._require_leader(f"status patch of {kind} {namespace}/{name}")
        self.inner.patch_object_status(kind, namespace, name, patch)

    def create_object(self, kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        self._require_leader(f"creation of {kind} {(obj.get('metadata') or {}).get('generateName', '')}")
        return self.inner.create_object(kind, obj)

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        self._require_leader(f"deletion of {kind} {namespace}/{name}")
        self.inner.delete_object(kind, namespace, name)


class LeaderGatedBinder:
    """Wraps the scheduler's binder: no Binding is posted unless ``is_leader`` holds right now.

    Why: the scheduling loop may be mid-cycle when the lease is lost; the gate makes the loss take
    effect at the very next bind instead of whenever the loop notices.
    """

    def __init__(self, inner: Binder, leadership: _Leadership) -> None:
        self.inner = inner
        self.leadership = leadership

    def bind(self, pod: Pod, node_name: str) -> None:
        if not self.leadership.is_leader:
            raise NotLeaderError(f"not the leader: binding of {pod.key} to {node_name} skipped")
        self.inner.bind(pod, node_name)


class LeaderGatedBatchBinder(LeaderGatedBinder):
    """LeaderGatedBinder of a BatchBinder: a batch is posted only while leading, and so is every retry."""

    def __init__(self, inner: BatchBinder, leadership: _Leadership) -> None:
        super().__init__(inner, leadership)
        self.batch_inner = inner

    def bind_batch(self, bindings: Sequence[tuple[Pod, str]]) -> list[Exception | None]:
        if not self.leadership.is_leader:
            return [NotLeaderError(f"not the leader: binding of {pod.key} to {node} skipped") for pod, node in bindings]
        return self.batch_inner.bind_batch(bindings)

    def bind_after(self, pod: Pod, node_name: str, first_error: Exception | None) -> None:
        if not self.leadership.is_leader:
            raise NotLeaderError(f"not the leader: binding of {pod.key} to {node_name} skipped")
        self.batch_inner.bind_after(pod, node_name, first_error)


def leader_gated_binder(inner: Binder, leadership: _Leadership) -> LeaderGatedBinder:
    """The gate for ``inner``, keeping its batch capability when it has one."""
    if isinstance(inner, BatchBinder):
        return LeaderGatedBatchBinder(inner, leadership)
    return LeaderGatedBinder(inner, leadership)
