"""Pods waiting at Permit hold no thread: one timer expires them and the binding pool runs their binding
cycles once decided (framework/runtime/permit_timer.py), with a live (threaded) scheduler."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED
from scheduler.framework.runtime import WaitingPod
from scheduler.framework.runtime.permit_timer import PermitTimer
from scheduler.model.pod import pod_from_api
from scheduler.plugins.helper.podgroup import POD_GROUP_LABEL
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import RecordingEventSink
from tests.builders import api_node, api_pod
from tests.test_scheduler import Binder

MEMBERS = 1000


def live_gang_scheduler(binder: Binder, wait_seconds: int) -> Scheduler:
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{
                         "schedulerName": "py-scheduler",
                         "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                                     "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
                         "pluginConfig": [{"name": "Coscheduling",
                                           "args": {"permitWaitingTimeSeconds": wait_seconds}}]}]})
    return Scheduler(cfg, build_registry(cfg), binder, RecordingEventSink(), None, bind_workers=4,
                     rng=random.Random(1), tie_break="name")


def member(name: str, group: str) -> dict[str, Any]:
    obj = api_pod(name, cpu="10m")
    obj["metadata"]["labels"] = {POD_GROUP_LABEL: group}
    return obj


def podgroup(name: str, min_member: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-pg-{name}",
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"minMember": min_member}}


def wait_until(condition: Any, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met"
        time.sleep(0.05)


def gang_waiting_at_permit(members: int) -> tuple[Scheduler, Binder, int, int]:
    """A live scheduler whose group has ``members`` + 1 members and minMember ``members`` + 1, one of which fits
    no node: the other ``members`` are assumed and wait at Permit. Returns the scheduler, its binder, the
    process's threads before and their peak while scheduling."""
    binder = Binder()
    s = live_gang_scheduler(binder, wait_seconds=600)
    for i in range(10):
        s.on_node_event(ADDED, {**api_node(f"n{i}", cpu="64"), "status": {
            "allocatable": {"cpu": "64", "memory": "64Gi", "pods": "200"}}})
    s.on_object_event("PodGroup", ADDED, podgroup("big", members + 1))
    unfit = member("unfit", "big")
    unfit["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1000"
    for obj in [*(member(f"m-{i}", "big") for i in range(members)), unfit]:
        s.on_group_pod_event(ADDED, obj)
        s.on_pod_event(ADDED, obj)
    threads_before = threading.active_count()
    peak = threads_before
    fwk = s.frameworks["py-scheduler"]
    while len(fwk.iterate_over_waiting_pods()) < members:
        assert s.schedule_one(timeout=5), "a member was not scheduled"
        peak = max(peak, threading.active_count())
    return s, binder, threads_before, peak


def test_a_thousand_gang_members_wait_at_permit_on_a_bounded_number_of_threads() -> None:
    """With a thread per waiting pod this was 1000 threads more; now the binding pool (4) and the timer."""
    s, binder, threads_before, peak = gang_waiting_at_permit(MEMBERS)
    try:
        assert s.cache.assumed_count() == MEMBERS
        assert peak - threads_before <= 4 + 1, f"{peak - threads_before} threads more with {MEMBERS} pods waiting"
        assert s.permit_timer.watched() == MEMBERS
        assert binder.bound == []
    finally:
        s.stop()  # the waiting pods are left as they are: no binding cycle was started for them


def test_rejected_waiting_pods_are_unreserved_by_binding_cycles_on_the_pool() -> None:
    """Rejecting the waiting members starts their binding cycles on the pool, which unreserve and forget every
    one. (A smaller group: each returning pod replays the events of every pod still in flight, so a thousand
    rejections at once cost a million hint evaluations.)"""
    s, binder, threads_before, _ = gang_waiting_at_permit(20)
    fwk = s.frameworks["py-scheduler"]
    try:
        for waiting in fwk.iterate_over_waiting_pods():
            waiting.reject("Coscheduling", "test: the group gives up")
        wait_until(lambda: s.cache.assumed_count() == 0)
        assert binder.bound == [] and fwk.iterate_over_waiting_pods() == []
        assert threading.active_count() - threads_before <= 4 + 1
    finally:
        s.stop()


def test_the_timer_expires_waiting_pods_at_their_timeout_and_starts_their_binding_cycles() -> None:
    timer = PermitTimer()
    started: list[str] = []
    waiting = []
    for i in range(20):
        p = pod_from_api(api_pod(f"w-{i}"))
        wp = WaitingPod(p, {"Coscheduling": 0.2 + i * 0.01, "Other": 60.0}, time.monotonic)
        wp.when_decided(lambda name=p.name: started.append(name))
        timer.watch(wp)
        waiting.append(wp)
    try:
        wait_until(lambda: len(started) == 20, 30)
        assert all(wp.rejected() for wp in waiting)
        assert "rejected due to timeout after waiting" in (waiting[0].wait(0) or _nothing()).message
        assert timer.watched() == 0
    finally:
        timer.stop()


def test_a_pod_decided_before_it_is_watched_starts_at_once() -> None:
    wp = WaitingPod(pod_from_api(api_pod("quick")), {"Coscheduling": 60.0}, time.monotonic)
    wp.allow("Coscheduling")
    started: list[bool] = []
    wp.when_decided(lambda: started.append(True))
    assert started == [True]
    timer = PermitTimer()
    timer.watch(wp)
    assert timer.watched() == 0
    timer.stop()


def _nothing() -> Any:
    raise AssertionError("no decision")
