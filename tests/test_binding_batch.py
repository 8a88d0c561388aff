"""Plain pods' binding cycles post their Bindings side by side from one thread (Scheduler.binding_batch); a pod
with PreBind work, a failed first POST or a binder without batches takes the binding cycle it always took."""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.config.load import build_registry, load_dict
from scheduler.edge import BatchBinder
from scheduler.eventhandlers import ADDED
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Status, skip
from scheduler.model.apierrors import NotFoundError
from scheduler.model.pod import Pod
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import RecordingEventSink
from scheduler.workerpool import BatchWorker
from tests.builders import api_node, api_pod


class Gone(NotFoundError):
    pass


class Batching:
    """A BatchBinder that records what it was asked; ``fail`` maps a pod name to its first POST's error and
    ``after`` to what the follow-up raises (None: it binds)."""

    def __init__(self, fail: dict[str, Exception] | None = None, after: dict[str, Exception] | None = None) -> None:
        self.fail = fail or {}
        self.after = after or {}
        self.batches: list[list[tuple[str, str]]] = []
        self.alone: list[str] = []
        self.followed_up: list[tuple[str, Exception | None]] = []
        self.lock = threading.Lock()

    def bind(self, p: Pod, node_name: str) -> None:
        with self.lock:
            self.alone.append(p.name)

    def bind_batch(self, bindings: Sequence[tuple[Pod, str]]) -> list[Exception | None]:
        with self.lock:
            self.batches.append([(p.name, n) for p, n in bindings])
        return [self.fail.get(p.name) for p, _ in bindings]

    def bind_after(self, p: Pod, node_name: str, first_error: Exception | None) -> None:
        with self.lock:
            self.followed_up.append((p.name, first_error))
        error = self.after.get(p.name)
        if error is not None:
            raise error


class Busy:
    """A PreBind plugin with work for pods named busy-*, none for the others."""

    name = "Busy"

    def __init__(self, args: Any, handle: Any) -> None:
        del args, handle

    def pre_bind_pre_flight(self, state: CycleState, p: Pod, node_name: str) -> Status | None:
        return None if p.name.startswith("busy-") else skip()

    def pre_bind(self, state: CycleState, p: Pod, node_name: str) -> Status | None:
        return None


def run(binder: Any, names: list[str], pre_bind: list[str] | None = None) -> tuple[Scheduler, RecordingEventSink]:
    """Schedule ``names`` on two nodes with binding cycles on threads, then stop (which waits for them)."""
    profile: dict[str, Any] = {"schedulerName": "py-scheduler"}
    if pre_bind:
        profile["plugins"] = {"preBind": {"enabled": [{"name": n} for n in pre_bind]}}
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [profile]})
    sink = RecordingEventSink()
    s = Scheduler(cfg, build_registry(cfg), binder, sink, None, bind_workers=2, rng=random.Random(1),
                  tie_break="name")
    for n in ("n1", "n2"):
        s.on_node_event(ADDED, api_node(n, cpu="16"))
    for name in names:
        s.on_pod_event(ADDED, api_pod(name))
    for _ in names:
        assert s.schedule_one(timeout=0)
    s.stop()
    return s, sink


def scheduled(sink: RecordingEventSink) -> list[str]:
    return sorted(key.split("/")[1] for key, _, reason, _ in sink.events if reason == "Scheduled")


def test_plain_pods_are_bound_in_batches_and_never_alone() -> None:
    binder = Batching()
    assert isinstance(binder, BatchBinder)
    s, sink = run(binder, [f"p{i}" for i in range(6)])
    batched = [name for batch in binder.batches for name, _ in batch]
    assert sorted(batched) == [f"p{i}" for i in range(6)] and binder.alone == [] and binder.followed_up == []
    assert scheduled(sink) == [f"p{i}" for i in range(6)]
    assert s._posted == {}


def test_a_failed_first_post_goes_on_from_its_error_and_a_pod_gone_is_no_failure() -> None:
    first, lost = ConnectionRefusedError(111, "refused"), Gone("pod default/p1 not found")
    binder = Batching(fail={"p0": first, "p1": lost}, after={"p1": lost})
    s, sink = run(binder, ["p0", "p1", "p2"])
    assert sorted(binder.followed_up, key=lambda f: f[0]) == [("p0", first), ("p1", lost)]
    assert binder.alone == []
    assert scheduled(sink) == ["p0", "p2"]
    assert not [e for e in sink.events if e[2] == "FailedScheduling"], "a deleted pod is not a failure"
    assert not s.cache.is_assumed("uid-p1"), "forgotten"
    assert s._posted == {}


def test_a_pod_with_prebind_work_takes_the_whole_binding_cycle_on_the_pool() -> None:
    binder = Batching()
    _, sink = run(binder, ["busy-a", "p1"], pre_bind=["tests.test_binding_batch:Busy"])
    assert binder.alone == ["busy-a"]
    assert [name for batch in binder.batches for name, _ in batch] == ["p1"]
    assert scheduled(sink) == ["busy-a", "p1"]


class NoBatches:
    def __init__(self) -> None:
        self.alone: list[str] = []

    def bind(self, p: Pod, node_name: str) -> None:
        self.alone.append(p.name)


def test_a_binder_without_batches_binds_each_pod_alone() -> None:
    binder = NoBatches()
    s, sink = run(binder, ["p0", "p1"])
    assert s._bind_batch is None
    assert sorted(binder.alone) == ["p0", "p1"] and scheduled(sink) == ["p0", "p1"]


def test_a_batch_worker_takes_what_queued_meanwhile_and_runs_it_all_before_shutdown() -> None:
    seen: list[list[int]] = []
    gate = threading.Event()

    def work(items: list[int]) -> None:
        gate.wait(5)
        seen.append(items)

    w = BatchWorker("t", work, most=3)
    for i in range(7):
        w.submit(i)
    gate.set()
    w.shutdown(wait=True)
    assert [i for batch in seen for i in batch] == list(range(7))
    assert all(1 <= len(batch) <= 3 for batch in seen) and 3 <= len(seen) <= 7
    with pytest.raises(RuntimeError):
        w.submit(8)
