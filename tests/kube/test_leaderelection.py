"""Leader election: the pure decision with a fake clock, and the elector against an in-memory Lease."""

from __future__ import annotations

import copy
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter

from scheduler.config.types import LeaderElection
from scheduler.kube.leaderelection import (
    Action,
    LeaderElector,
    LeaderGatedBinder,
    LeaderGatedWriter,
    LeaseConflict,
    LeaseRecord,
    NotLeaderError,
    State,
    decide,
    default_identity,
    micro_time,
    renew_deadline_passed,
)
from scheduler.serving.health import HealthServer, event_check
from scheduler.whatif.offline import RecordingBinder

CFG = LeaderElection(
    leader_elect=True,
    lease_duration_seconds=15,
    renew_deadline_seconds=10,
    retry_period_seconds=2,
    resource_namespace="ns",
    resource_name="lease",
)
WALL = "2026-01-02T03:04:05.000006Z"


def rec(holder: str, duration: int = 15, transitions: int = 0, acquire: str = "A", renew: str = "R") -> LeaseRecord:
    return LeaseRecord(holder, duration, acquire, renew, transitions)


# ---------------------------------------------------------------------------------------------------
# decide(): pure


def test_absent_lease_is_created_held_by_us_with_zero_transitions() -> None:
    d = decide(None, "me", observed_at=0, now=100, lease_duration_seconds=15, wall_now=WALL)
    assert d.action is Action.CREATE
    assert d.record == LeaseRecord("me", 15, WALL, WALL, 0)


def test_our_lease_is_renewed_keeping_acquire_time_and_transitions() -> None:
    current = rec("me", transitions=3, acquire="then")
    d = decide(current, "me", observed_at=0, now=1000, lease_duration_seconds=15, wall_now=WALL)
    assert d.action is Action.RENEW
    assert d.record == LeaseRecord("me", 15, "then", WALL, 3)


@pytest.mark.parametrize(
    ("now", "action"),
    [(10.0, Action.STAND_BY), (14.9, Action.STAND_BY), (15.0, Action.TAKE_OVER), (30.0, Action.TAKE_OVER)],
)
def test_someone_elses_lease_is_taken_only_after_it_expires(now: float, action: Action) -> None:
    """Observed at t=0 with leaseDurationSeconds 15: valid while 0 + 15 > now."""
    current = rec("other", duration=15, transitions=4)
    d = decide(current, "me", observed_at=0.0, now=now, lease_duration_seconds=15, wall_now=WALL)
    assert d.action is action
    if action is Action.TAKE_OVER:
        assert d.record == LeaseRecord("me", 15, WALL, WALL, 5)
    else:
        assert d.record is None and "other" in d.reason


def test_expiry_uses_the_records_duration_not_ours() -> None:
    current = rec("other", duration=2)
    d = decide(current, "me", observed_at=100.0, now=102.5, lease_duration_seconds=15, wall_now=WALL)
    assert d.action is Action.TAKE_OVER


def test_expiry_is_measured_from_local_observation_not_the_holders_renew_time() -> None:
    """A renewTime from long ago (or a skewed clock) does not make a freshly observed lease expire."""
    current = rec("other", duration=15, renew="1970-01-01T00:00:00.000000Z")
    d = decide(current, "me", observed_at=500.0, now=505.0, lease_duration_seconds=15, wall_now=WALL)
    assert d.action is Action.STAND_BY


def test_released_lease_is_taken_at_once_and_counts_a_transition() -> None:
    current = rec("", duration=1, transitions=7)
    d = decide(current, "me", observed_at=100.0, now=100.0, lease_duration_seconds=15, wall_now=WALL)
    assert d.action is Action.TAKE_OVER
    assert d.record is not None and d.record.lease_transitions == 8 and d.record.holder_identity == "me"


def test_renew_deadline() -> None:
    assert not renew_deadline_passed(100.0, 109.9, 10)
    assert renew_deadline_passed(100.0, 110.0, 10)


def test_lease_record_round_trips_through_the_spec() -> None:
    r = LeaseRecord("me", 15, WALL, WALL, 2)
    assert LeaseRecord.from_lease({"spec": r.to_spec()}) == r
    assert LeaseRecord.from_lease({"spec": {}}) == LeaseRecord("", 0, None, None, 0)


def test_micro_time_and_identity_formats() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", micro_time(1.5))
    assert micro_time(1.5) == "1970-01-01T00:00:01.500000Z"
    ident = default_identity()
    host, _, uid = ident.rpartition("_")
    assert host == socket.gethostname()
    assert re.fullmatch(r"[0-9a-f-]{36}", uid)
    assert default_identity() != ident


# ---------------------------------------------------------------------------------------------------
# the elector against an in-memory Lease


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, s: float) -> None:
        self.t += s


class FakeStore:
    """One Lease with optimistic concurrency (resourceVersion), like the API server."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.calls: list[str] = []
        self.events: list[str] = []
        self.failing = False

    def _check(self, op: str) -> None:
        self.calls.append(op)
        if self.failing:
            raise ConnectionError("API server unreachable")

    def _store(self, record: LeaseRecord) -> dict[str, Any]:
        self.rv += 1
        self.lease = {
            "metadata": {"name": "lease", "namespace": "ns", "resourceVersion": str(self.rv)},
            "spec": record.to_spec(),
        }
        return copy.deepcopy(self.lease)

    def get(self) -> dict[str, Any] | None:
        self._check("get")
        return copy.deepcopy(self.lease)

    def create(self, record: LeaseRecord) -> dict[str, Any]:
        self._check("create")
        if self.lease is not None:
            raise LeaseConflict("exists")
        return self._store(record)

    def update(self, lease: Mapping[str, Any], record: LeaseRecord) -> dict[str, Any]:
        self._check("update")
        if self.lease is None or lease["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
            raise LeaseConflict("conflict")
        return self._store(record)

    def record_event(self, lease: Mapping[str, Any], message: str) -> None:
        self.events.append(message)

    @property
    def record(self) -> LeaseRecord:
        assert self.lease is not None
        return LeaseRecord.from_lease(self.lease)


class Calls:
    def __init__(self) -> None:
        self.started = 0
        self.stopped = 0

    def start(self) -> None:
        self.started += 1

    def stop(self) -> None:
        self.stopped += 1


def elector(
    name: str, store: FakeStore, clock: FakeClock, calls: Calls | None = None, cfg: LeaderElection = CFG
) -> LeaderElector:
    calls = calls or Calls()
    return LeaderElector(
        None,
        cfg,
        identity=name,
        on_started_leading=calls.start,
        on_stopped_leading=calls.stop,
        store=store,
        clock=clock,
        wall_clock=lambda: clock.t,
        rand=lambda: 0.5,
    )


def test_first_candidate_creates_and_leads_second_stands_by() -> None:
    store, clock, ca, cb = FakeStore(), FakeClock(), Calls(), Calls()
    a, b = elector("a", store, clock, ca), elector("b", store, clock, cb)
    assert a.state is State.STARTING and not a.is_leader and a.readiness() is not None
    assert a.step() == CFG.retry_period_seconds
    assert a.is_leader and a.state is State.LEADING and ca.started == 1
    assert store.record.holder_identity == "a" and store.record.lease_transitions == 0
    assert store.events == ["a became leader"]
    delay = b.step()
    assert delay == pytest.approx(CFG.retry_period_seconds * (1 + 0.5 * 1.2))  # jittered retry
    assert not b.is_leader and b.state is State.STANDBY and cb.started == 0
    assert a.readiness() is None and b.readiness() is None, "leader and standby are both Ready"


def test_leader_renews_on_the_fast_path_without_reading() -> None:
    store, clock = FakeStore(), FakeClock()
    a = elector("a", store, clock)
    a.step()
    store.calls.clear()
    clock.advance(2)
    a.step()
    assert store.calls == ["update"]
    assert store.record.renew_time == micro_time(clock.t)


def test_standby_waits_while_the_leader_renews_and_takes_over_after_the_lease_expires() -> None:
    store, clock, ca, cb = FakeStore(), FakeClock(), Calls(), Calls()
    a, b = elector("a", store, clock, ca), elector("b", store, clock, cb)
    a.step()
    b.step()
    for _ in range(20):  # 40 s of renewals: far past one lease duration, yet b never takes over
        clock.advance(2)
        a.step()
        b.step()
        assert a.is_leader and not b.is_leader
    # a dies (stops renewing). b takes over once 15 s have passed since it last saw the record change.
    clock.advance(2)
    b.step()
    assert not b.is_leader
    clock.advance(12.9)
    b.step()
    assert not b.is_leader, "14.9 s after b observed a's last renewal the lease is still valid"
    clock.advance(0.2)
    b.step()
    assert b.is_leader and cb.started == 1
    assert store.record.holder_identity == "b" and store.record.lease_transitions == 1
    # a's own view: its renew deadline passed long ago, so it is no leader even before its loop notices.
    assert not a.is_leader
    a.step()
    assert a.state is State.STOPPED and ca.stopped == 1


def test_leader_that_cannot_renew_stops_leading_at_the_renew_deadline() -> None:
    store, clock, calls = FakeStore(), FakeClock(), Calls()
    a = elector("a", store, clock, calls)
    a.step()
    store.failing = True
    clock.advance(2)
    a.step()
    clock.advance(7.9)  # 9.9 s since the last renewal
    a.step()
    assert a.is_leader and calls.stopped == 0 and a.state is State.LEADING
    clock.advance(0.1)  # 10 s: is_leader is false at once, whatever the loop is doing
    assert not a.is_leader
    a.step()
    assert calls.stopped == 1 and a.state is State.STOPPED and a.readiness() is not None
    assert a.liveness() is None, "a stopped elector is not a liveness failure"


def test_a_slow_renewal_counts_from_when_it_began() -> None:
    """The API server wrote renewTime during the request; the deadline must not start at its end."""
    store, clock = FakeStore(), FakeClock()
    a = elector("a", store, clock)
    real_update = store.update

    def slow_update(lease: Mapping[str, Any], record: LeaseRecord) -> dict[str, Any]:
        clock.advance(2.5)
        return real_update(lease, record)

    store.update = slow_update  # type: ignore[method-assign]
    a.step()  # create: not slow
    clock.advance(2)
    began = clock.t
    a.step()  # renewal taking 2.5 s
    assert a.is_leader
    clock.t = began + CFG.renew_deadline_seconds
    assert not a.is_leader


def test_leader_that_sees_another_holder_stops_at_once() -> None:
    store, clock, calls = FakeStore(), FakeClock(), Calls()
    a = elector("a", store, clock, calls)
    a.step()
    assert store.lease is not None
    store._store(rec("intruder", transitions=1))  # e.g. a was paused longer than the lease
    clock.advance(2)
    a.step()  # the fast path conflicts, the re-read shows the intruder
    assert not a.is_leader and calls.stopped == 1 and a.state is State.STOPPED


def test_stop_releases_the_lease_and_a_standby_takes_it_without_waiting() -> None:
    store, clock, ca = FakeStore(), FakeClock(), Calls()
    a, b = elector("a", store, clock, ca), elector("b", store, clock)
    a.step()
    b.step()
    a.stop()
    assert ca.stopped == 1 and not a.is_leader and a.state is State.STOPPED
    assert store.record.holder_identity == "" and store.record.lease_duration_seconds == 1
    assert store.record.lease_transitions == 0
    b.step()  # no time has passed
    assert b.is_leader and store.record.lease_transitions == 1


def test_standby_stop_does_not_touch_the_lease() -> None:
    store, clock, cb = FakeStore(), FakeClock(), Calls()
    a, b = elector("a", store, clock), elector("b", store, clock, cb)
    a.step()
    b.step()
    before = copy.deepcopy(store.lease)
    b.stop()
    assert store.lease == before and cb.stopped == 0


def test_losing_a_create_race_means_standing_by() -> None:
    store, clock = FakeStore(), FakeClock()
    a, b = elector("a", store, clock), elector("b", store, clock)
    # b read "no lease" just before a created it: simulate by letting a create between b's get and create.
    real_get = store.get

    def get_then_a_creates() -> dict[str, Any] | None:
        got = real_get()
        store.get = real_get  # type: ignore[method-assign]
        a.step()
        return got

    store.get = get_then_a_creates  # type: ignore[method-assign]
    b.step()
    assert a.is_leader and not b.is_leader and b.state is State.STANDBY


def test_unreachable_api_server_at_start_keeps_the_elector_not_ready() -> None:
    store, clock = FakeStore(), FakeClock()
    store.failing = True
    a = elector("a", store, clock)
    a.step()
    assert a.state is State.STARTING and a.readiness() is not None and not a.is_leader


def test_invalid_durations_are_rejected() -> None:
    bad = LeaderElection(lease_duration_seconds=5, renew_deadline_seconds=5, retry_period_seconds=1)
    with pytest.raises(ValueError, match="leaseDuration"):
        LeaderElector(None, bad, store=FakeStore())


def test_callback_errors_do_not_break_the_elector() -> None:
    store, clock = FakeStore(), FakeClock()

    def boom() -> None:
        raise RuntimeError("callback bug")

    a = LeaderElector(
        None, CFG, identity="a", on_started_leading=boom, store=store, clock=clock, wall_clock=lambda: clock.t
    )
    a.step()
    assert a.is_leader


def test_thread_campaigns_leads_and_releases_on_stop() -> None:
    """The real loop with real (short) time: no timing assertions, only outcomes."""
    store = FakeStore()
    cfg = LeaderElection(lease_duration_seconds=1.0, renew_deadline_seconds=0.6, retry_period_seconds=0.05)
    started, stopped = threading.Event(), threading.Event()
    a = LeaderElector(
        None, cfg, identity="a", on_started_leading=started.set, on_stopped_leading=stopped.set, store=store
    )
    a.start()
    try:
        assert started.wait(10)
        deadline = time.monotonic() + 10
        while store.rv < 4 and time.monotonic() < deadline:  # a few renewals happen
            time.sleep(0.01)
        assert store.rv >= 4 and a.is_leader and a.liveness() is None
    finally:
        a.stop()
    assert stopped.is_set() and store.record.holder_identity == ""
    with pytest.raises(RuntimeError):
        a.start()


# ---------------------------------------------------------------------------------------------------
# the binding gate


class Flag:
    def __init__(self, value: bool) -> None:
        self.is_leader = value


class FakePod:
    key = "ns/p"


def test_gated_binder_binds_only_while_leading() -> None:
    inner, flag = RecordingBinder(), Flag(True)
    gate = LeaderGatedBinder(inner, flag)
    gate.bind(FakePod(), "n1")  # type: ignore[arg-type]
    flag.is_leader = False
    with pytest.raises(NotLeaderError, match="ns/p"):
        gate.bind(FakePod(), "n2")  # type: ignore[arg-type]
    assert inner.bindings == [("ns/p", "n1")]


class RecordingWriter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.calls.append(("patch", f"{namespace}/{name}"))

    def delete_pod(self, namespace: str, name: str) -> None:
        self.calls.append(("delete", f"{namespace}/{name}"))


    def update_object(self, kind: str, obj: Mapping[str, Any], subresource: str = "") -> Mapping[str, Any]:
        self.calls.append(("update", f"{kind}/{obj['metadata']['name']}"))
        return obj

    def get_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any]:
        self.calls.append(("get", f"{kind}/{name}"))
        return {}

    def patch_object_status(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.calls.append(("patch", f"{kind}/{name}"))


def test_api_writes_through_the_gated_writer_are_gated_too() -> None:
    """Preemption's and VolumeBinding's writes (the Scheduler's injected APIWriter) are gated like binding."""
    inner_writer, flag = RecordingWriter(), Flag(True)
    gate = LeaderGatedWriter(inner_writer, flag)
    gate.patch_pod_status("ns", "victim", {"status": {}})
    gate.delete_pod("ns", "victim")
    gate.update_object("PersistentVolume", {"metadata": {"name": "pv"}})
    flag.is_leader = False
    with pytest.raises(NotLeaderError, match="deletion of ns/other"):
        gate.delete_pod("ns", "other")
    with pytest.raises(NotLeaderError, match="status patch of ns/other"):
        gate.patch_pod_status("ns", "other", {})
    with pytest.raises(NotLeaderError, match="update of PersistentVolumeClaim c"):
        gate.update_object("PersistentVolumeClaim", {"metadata": {"name": "c"}})
    assert inner_writer.calls == [("patch", "ns/victim"), ("delete", "ns/victim"), ("update", "PersistentVolume/pv")]


def test_gate_closes_with_the_elector_at_the_renew_deadline() -> None:
    store, clock = FakeStore(), FakeClock()
    a = elector("a", store, clock)
    a.step()
    inner = RecordingBinder()
    gate = LeaderGatedBinder(inner, a)
    gate.bind(FakePod(), "n1")  # type: ignore[arg-type]
    clock.advance(CFG.renew_deadline_seconds)
    with pytest.raises(NotLeaderError):
        gate.bind(FakePod(), "n2")  # type: ignore[arg-type]
    assert len(inner.bindings) == 1


# ---------------------------------------------------------------------------------------------------
# health endpoints


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read().decode()


def test_health_server_reports_checks_and_metrics() -> None:
    registry = CollectorRegistry()
    Counter("py_scheduler_test_total", "a test counter", registry=registry).inc(3)
    synced = threading.Event()
    server = HealthServer(0, addr="127.0.0.1", registry=registry)
    server.add_readiness_check("synced", event_check(synced, "initial list not done"))
    server.add_liveness_check("ping", lambda: None)
    port = server.start()
    try:
        assert get(port, "/healthz") == (200, "ok\n")
        assert get(port, "/livez") == (200, "ok\n")
        code, body = get(port, "/readyz")
        assert code == 500 and "[-]synced failed: initial list not done" in body
        synced.set()
        assert get(port, "/readyz") == (200, "ok\n")
        code, body = get(port, "/readyz?verbose")
        assert code == 200 and "[+]synced ok" in body
        code, body = get(port, "/metrics")
        assert code == 200 and "py_scheduler_test_total 3.0" in body
        assert get(port, "/nope")[0] == 404

        def broken() -> str | None:
            raise RuntimeError("bug")

        server.add_liveness_check("broken", broken)
        code, body = get(port, "/healthz")
        assert code == 500 and "[-]broken failed: check raised an exception" in body and "bug" not in body
    finally:
        server.stop()


def test_elector_checks_plug_into_the_health_server() -> None:
    store, clock = FakeStore(), FakeClock()
    a = elector("a", store, clock)
    server = HealthServer(0, addr="127.0.0.1")
    server.add_readiness_check("leader-election", a.readiness)
    server.add_liveness_check("leader-election", a.liveness)
    port = server.start()
    try:
        assert get(port, "/readyz")[0] == 500
        a.step()
        assert get(port, "/readyz")[0] == 200
        store.failing = True
        clock.advance(CFG.lease_duration_seconds + 20.1)  # leading flag still set: the loop never ran
        code, body = get(port, "/healthz")
        assert code == 500 and "failed to renew leadership on lease ns/lease" in body
    finally:
        server.stop()
