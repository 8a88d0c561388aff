"""Gang scheduling through the whole scheduler core (synchronous binding, no API server)."""

from __future__ import annotations

import random
from typing import Any

from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED, DELETED, MODIFIED
from scheduler.plugins.helper.podgroup import POD_GROUP_LABEL
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import RecordingEventSink
from tests.builders import api_node, api_pod
from tests.test_scheduler import Binder, Clock

GANG_PROFILE: dict[str, Any] = {
    "schedulerName": "py-scheduler",
    "plugins": {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
    },
    "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 30}}],
}


def make(binder: Binder, clock: Clock) -> Scheduler:
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [GANG_PROFILE]})
    return Scheduler(cfg, build_registry(cfg), binder, RecordingEventSink(), None, synchronous_binding=True,
                     rng=random.Random(1), tie_break="name", clock=clock)


def member(name: str, group: str, cpu: str = "1") -> dict[str, Any]:
    obj = api_pod(name, cpu=cpu)
    obj["metadata"]["labels"] = {POD_GROUP_LABEL: group}
    return obj


def podgroup(name: str, min_member: int, created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-pg-{name}", "creationTimestamp": created},
            "spec": {"minMember": min_member}}


def add(s: Scheduler, obj: dict[str, Any]) -> None:
    s.on_group_pod_event(ADDED, obj)
    s.on_pod_event(ADDED, obj)


def drain(s: Scheduler, clock: Clock, rounds: int = 6) -> None:
    """Schedule until the queue is empty, letting backoffs pass between rounds."""
    for _ in range(rounds):
        while s.schedule_one(timeout=0):
            pass
        clock.now += 20
        s.queue.flush_backoff_completed()


def confirm(s: Scheduler, b: Binder, objs: dict[str, dict[str, Any]]) -> None:
    """What the watch would deliver for each bound pod."""
    for key, node_name in b.bound:
        obj = objs[key.split("/")[1]]
        bound = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "2"},
                 "spec": {**obj["spec"], "nodeName": node_name}}
        s.on_group_pod_event(MODIFIED, bound)
        s.on_pod_event(MODIFIED, bound)


def test_group_that_does_not_fit_binds_nothing_until_nodes_are_added() -> None:
    b, clock = Binder(), Clock()
    s = make(b, clock)
    for n in ("n1", "n2"):
        s.on_node_event(ADDED, api_node(n, cpu="2"))
    s.on_object_event("PodGroup", ADDED, podgroup("g", 5))
    for i in range(5):
        add(s, member(f"g-{i}", "g"))
    drain(s, clock)
    assert b.bound == []
    assert s.cache.assumed_count() == len(s.parked) <= 1  # at most one member waits (not bound) for the rest
    s.on_node_event(ADDED, api_node("n3", cpu="2"))
    drain(s, clock)
    assert sorted(k for k, _ in b.bound) == [f"default/g-{i}" for i in range(5)]


def test_two_competing_groups_one_complete_one_pending() -> None:
    b, clock = Binder(), Clock()
    s = make(b, clock)
    s.on_node_event(ADDED, api_node("n1", cpu="4"))
    s.on_object_event("PodGroup", ADDED, podgroup("a", 3, "2026-01-01T00:00:01Z"))
    s.on_object_event("PodGroup", ADDED, podgroup("b", 3, "2026-01-01T00:00:00Z"))
    objs = {}
    for i in range(3):  # interleaved arrival
        for g in ("a", "b"):
            objs[f"{g}-{i}"] = member(f"{g}-{i}", g)
            add(s, objs[f"{g}-{i}"])
    drain(s, clock)
    groups = {k.split("/")[1][0] for k, _ in b.bound}
    assert len(b.bound) == 3 and groups == {"b"}, b.bound  # the older group wins, whole
    confirm(s, b, objs)
    drain(s, clock)
    assert len(b.bound) == 3


def test_member_deleted_while_others_wait_rejects_the_rest_until_whole_again() -> None:
    b, clock = Binder(), Clock()
    s = make(b, clock)
    s.on_node_event(ADDED, api_node("n1", cpu="8"))
    s.on_object_event("PodGroup", ADDED, podgroup("g", 3))
    objs = {f"g-{i}": member(f"g-{i}", "g") for i in range(3)}
    for o in objs.values():
        add(s, o)
    assert s.schedule_one(timeout=0) and s.schedule_one(timeout=0)
    assert len(s.parked) == 2
    s.on_group_pod_event(DELETED, objs["g-1"])
    s.on_pod_event(DELETED, objs["g-1"])
    drain(s, clock)
    assert b.bound == [] and not s.parked and s.cache.assumed_count() == 0
    objs["g-3"] = member("g-3", "g")
    add(s, objs["g-3"])
    drain(s, clock)
    assert sorted(k for k, _ in b.bound) == ["default/g-0", "default/g-2", "default/g-3"]


def test_pod_naming_a_missing_group_waits_and_blocks_nobody() -> None:
    b, clock = Binder(), Clock()
    s = make(b, clock)
    s.on_node_event(ADDED, api_node("n1"))
    add(s, member("orphan", "nope"))
    add(s, api_pod("plain"))
    drain(s, clock)
    assert b.bound == [("default/plain", "n1")]
    sink = s.recorder
    assert isinstance(sink, RecordingEventSink)
    assert 'names PodGroup "default/nope"' in sink.conditions["default/orphan"][1]


def test_a_group_larger_than_the_binding_pool_completes() -> None:
    """Waiting members hold no binding worker or slot (1 worker, 4 slots here, 12 members)."""
    import threading
    import time

    class SlowBinder(Binder):
        def __init__(self) -> None:
            super().__init__()
            self.lock = threading.Lock()

        def bind(self, p: Any, node_name: str) -> None:
            with self.lock:
                super().bind(p, node_name)

    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [GANG_PROFILE]})
    b = SlowBinder()
    s = Scheduler(cfg, build_registry(cfg), b, RecordingEventSink(), None, bind_workers=1,
                  rng=random.Random(1), tie_break="name")
    try:
        s.on_node_event(ADDED, api_node("n1", cpu="16"))
        s.on_object_event("PodGroup", ADDED, podgroup("big", 12))
        for i in range(12):
            add(s, member(f"big-{i}", "big"))
        done = threading.Event()

        def loop() -> None:
            for _ in range(12):
                s.schedule_one(timeout=1)
            done.set()

        threading.Thread(target=loop, daemon=True).start()
        assert done.wait(10), "the scheduling loop blocked behind waiting members"
        deadline = time.monotonic() + 10
        while len(b.bound) < 12 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(b.bound) == 12
    finally:
        s.stop()


def two_members_pending(b: Binder, clock: Clock) -> Scheduler:
    s = make(b, clock)
    s.on_node_event(ADDED, api_node("n1", cpu="4"))
    s.on_object_event("PodGroup", ADDED, podgroup("g", 2))
    for i in range(2):
        add(s, member(f"g-{i}", "g"))
    return s


def reload(s: Scheduler, permit_wait: int) -> None:
    profile = {**GANG_PROFILE, "pluginConfig": [{"name": "Coscheduling",
                                                 "args": {"permitWaitingTimeSeconds": permit_wait}}]}
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [profile]})
    s.reconfigure(cfg, build_registry(cfg))
    s.apply_next_config()


def test_a_reload_keeps_what_coscheduling_knows_of_groups() -> None:
    b, clock = Binder(), Clock()
    s = two_members_pending(b, clock)
    reload(s, 5)
    drain(s, clock)
    assert sorted(k for k, _ in b.bound) == ["default/g-0", "default/g-1"]


def test_members_waiting_across_a_reload_are_allowed_by_the_last_member() -> None:
    b, clock = Binder(), Clock()
    s = two_members_pending(b, clock)
    assert s.schedule_one(timeout=0) and len(s.parked) == 1  # g-0 waits at Permit
    reload(s, 30)
    drain(s, clock)
    assert sorted(k for k, _ in b.bound) == ["default/g-0", "default/g-1"]
