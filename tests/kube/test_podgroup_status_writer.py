"""scheduler.kube.podgroupstatus: the Workload API PodGroup status writer leaves the cycle at once, sends patches in
order, merges the ones still queued for a PodGroup (field by field), logs failures instead of raising, and never
regresses a True it sent, nor keeps a True it did not; a new leader's cycle reads the True from the watch."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.config.defaults import set_workload_gates
from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED
from scheduler.framework.features import Features
from scheduler.kube.client import ApiWriter, api_error
from scheduler.kube.podgroupstatus import ApiPodGroupStatusWriter, initially_scheduled, merge_status_patches
from scheduler.kube.ratelimit import TokenBucket
from scheduler.model.pod import Pod
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import RecordingEventSink
from tests.builders import api_node, api_pod


def condition(status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"type": "PodGroupInitiallyScheduled", "status": status, "reason": reason, "message": message,
            "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"}


def patch(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"status": {"conditions": list(conditions)}}


class Patcher:
    """Stands in for ApiWriter; each write waits for ``release`` so later ones queue up behind it."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.release = threading.Event()
        self.fail = fail

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.release.wait(5)
        self.calls.append((namespace, name, dict(patch)))
        if self.fail is not None:
            raise self.fail


def test_patches_return_at_once_and_queued_ones_for_a_group_merge_by_condition_type() -> None:
    p = Patcher()
    w = ApiPodGroupStatusWriter(p)
    start = time.monotonic()
    w.patch_pod_group_status("ns", "first", patch(condition("False", "Unschedulable", "a")))  # holds the worker
    time.sleep(0.05)
    w.patch_pod_group_status("ns", "g", patch(condition("False", "Unschedulable", "b")))
    w.patch_pod_group_status("ns", "h", patch(condition("False", "Unschedulable", "c")))
    w.patch_pod_group_status("ns", "g", patch(condition("True", "Scheduled")))
    assert time.monotonic() - start < 1.0  # the worker is blocked; the callers were not
    p.release.set()
    assert w.flush()
    w.close()
    assert [(ns, name, body["status"]["conditions"][0]["reason"]) for ns, name, body in p.calls] == [
        ("ns", "first", "Unschedulable"), ("ns", "g", "Scheduled"), ("ns", "h", "Unschedulable")]


def test_failures_are_counted_and_logged_not_raised_and_a_deleted_group_is_no_failure() -> None:
    p = Patcher(fail=api_error(500, "Internal Server Error"))
    p.release.set()
    w = ApiPodGroupStatusWriter(p)
    w.patch_pod_group_status("ns", "g", patch(condition("True", "Scheduled")))
    assert w.flush()
    assert w.failed == 1
    p.fail = api_error(404, "Not Found")
    w.patch_pod_group_status("ns", "gone", patch(condition("True", "Scheduled")))
    assert w.flush()
    w.close()
    assert w.failed == 1 and len(p.calls) == 2


def test_a_standby_writes_nothing_and_a_full_backlog_drops() -> None:
    p = Patcher()
    p.release.set()
    w = ApiPodGroupStatusWriter(p, leading=lambda: False)
    w.patch_pod_group_status("ns", "g", patch(condition("True", "Scheduled")))
    assert w.flush()
    w.close()
    assert p.calls == []
    blocked = Patcher()
    w = ApiPodGroupStatusWriter(blocked, backlog=1)
    w.patch_pod_group_status("ns", "a", patch())  # taken by the worker, which waits
    time.sleep(0.05)
    w.patch_pod_group_status("ns", "b", patch())
    w.patch_pod_group_status("ns", "c", patch())
    assert w.dropped == 1
    blocked.release.set()
    w.close()


def test_merge_keeps_other_condition_types_and_replaces_the_same_type() -> None:
    other = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    earlier = patch(condition("False", "Unschedulable"), other)
    merged = merge_status_patches(earlier, patch(condition("True", "Scheduled")))
    assert merged == patch(condition("True", "Scheduled"), other)


class Raw:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any, str]] = []

    def request(self, method: str, path: str, body: Any = None, content_type: str = "") -> bytes:
        self.requests.append((method, path, body, content_type))
        return b"{}"


class PipelinedRaw(Raw):
    def pipeline(self, requests: list[tuple[str, str, Any, str]]) -> list[Exception | bytes]:
        self.requests.extend(requests)
        return [b"{}" for _ in requests]


def test_a_status_patch_is_not_held_behind_a_backlog_of_events() -> None:
    """A SIGKILL drops what the writer holds: the patch must not wait for the Events reserved before it."""
    raw = PipelinedRaw()
    api = ApiWriter(raw, TokenBucket(100, 1))
    events = [("ns", {"metadata": {"name": f"e{i}"}}) for i in range(100)]  # a second of the bucket
    sending = threading.Thread(target=api.create_events, args=(events,))
    sending.start()
    deadline = time.monotonic() + 5
    while api.limiter.reserve(0) == 0.0 and time.monotonic() < deadline:  # the Events have taken their tokens
        time.sleep(0.005)
    w = ApiPodGroupStatusWriter(api)
    w.patch_pod_group_status("ns", "g", patch(condition("True", "Scheduled")))
    assert w.flush(timeout=0.5)
    assert [r[0] for r in raw.requests] == ["PATCH"]  # sent while the Events still wait
    sending.join(5)
    assert [r[0] for r in raw.requests] == ["PATCH"] + ["POST"] * 100
    w.close()


def test_the_api_write_is_a_strategic_merge_patch_of_the_status_subresource() -> None:
    raw = Raw()
    ApiWriter(raw, TokenBucket(100, 100)).patch_pod_group_status("ns", "g", patch(condition("True", "Scheduled")))
    ((method, path, body, content_type),) = raw.requests
    assert (method, path) == ("PATCH", "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/podgroups/g/status")
    assert content_type == "application/strategic-merge-patch+json"
    assert body == patch(condition("True", "Scheduled"))


def test_a_true_condition_is_not_regressed_by_a_cycle_that_has_not_seen_it_yet() -> None:
    """A basic group's next cycle runs before the watch brought back the True just written and asks for False:
    the writer drops that, for ``settle`` seconds; later (or for another group) False is written as asked."""
    now = [0.0]
    p = Patcher()
    p.release.set()
    w = ApiPodGroupStatusWriter(p, settle=30.0, clock=lambda: now[0])
    w.patch_pod_group_status("ns", "g", patch(condition("True", "Scheduled")))
    w.patch_pod_group_status("ns", "g", patch(condition("False", "Unschedulable", "later member")))
    w.patch_pod_group_status("ns", "h", patch(condition("False", "Unschedulable", "other group")))
    assert w.flush()
    now[0] = 31.0
    w.patch_pod_group_status("ns", "g", patch(condition("False", "Unschedulable", "much later")))
    assert w.flush()
    w.close()
    assert [(name, body["status"]["conditions"][0]["message"]) for _, name, body in p.calls] == [
        ("g", ""), ("h", "other group"), ("g", "much later")]


def partial(**fields: Any) -> dict[str, Any]:
    """A condition entry of a two-way diff from a stale cached copy: its type and what changed."""
    return {"type": "PodGroupInitiallyScheduled", **fields}


def test_a_partial_entry_merges_into_the_queued_condition_field_by_field() -> None:
    queued = patch(condition("True", "Scheduled"))
    merged = merge_status_patches(queued, patch(partial(message="newer", observedGeneration=None)))
    assert merged == patch({**condition("True", "Scheduled"), "message": "newer", "observedGeneration": None})


def test_a_patch_that_leaves_the_status_alone_is_sent_after_a_true() -> None:
    """A cycle whose cached copy still holds an older False sends only the new message; the API server applies it to
    the True it holds (upstream's result), so the writer must neither drop it nor lose the queued True."""
    p = Patcher()
    w = ApiPodGroupStatusWriter(p, settle=30.0, clock=lambda: 0.0)
    w.patch_pod_group_status("ns", "first", patch())  # holds the worker: the next two queue up and merge
    time.sleep(0.05)
    w.patch_pod_group_status("ns", "g", patch(condition("True", "Scheduled")))
    w.patch_pod_group_status("ns", "g", patch(partial(message="pod group is unschedulable")))
    p.release.set()
    assert w.flush()
    w.patch_pod_group_status("ns", "g", patch(partial(message="again")))  # after the True was sent, alone
    assert w.flush()
    w.close()
    sent = [body["status"]["conditions"][0] for _, name, body in p.calls if name == "g"]
    assert sent == [{**condition("True", "Scheduled"), "message": "pod group is unschedulable"},
                    partial(message="again")]


@pytest.mark.parametrize(("fail", "leading"), [(api_error(500, "Internal Server Error"), True), (None, False)])
def test_a_true_that_was_not_sent_guards_nothing(fail: Exception | None, leading: bool) -> None:
    """The guard covers only a True this writer sent: after a failed True, or one dropped while not leading (the
    lease lost), the next False is written, as upstream's cycle would write it over a cache without True."""
    p = Patcher(fail=fail)
    p.release.set()
    lead = [leading]
    w = ApiPodGroupStatusWriter(p, settle=30.0, clock=lambda: 0.0, leading=lambda: lead[0])
    w.patch_pod_group_status("ns", "g", patch(condition("True", "Scheduled")))
    assert w.flush()
    p.fail, lead[0] = None, True
    w.patch_pod_group_status("ns", "g", patch(condition("False", "Unschedulable", "after")))
    assert w.flush()
    w.close()
    assert p.calls[-1][2] == patch(condition("False", "Unschedulable", "after"))


def gated_scheduler(writer: ApiPodGroupStatusWriter) -> Scheduler:
    set_workload_gates(True, False)
    try:
        cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": [{"schedulerName": "py-scheduler"}]})
    finally:
        set_workload_gates(False, False)
    return Scheduler(cfg, build_registry(cfg), Binder(), RecordingEventSink(), None, synchronous_binding=True,
                     features=Features(enable_generic_workload=True), pod_group_status_writer=writer)


class Binder:
    def bind(self, p: Pod, node_name: str) -> None:
        pass


@pytest.mark.parametrize("cached", [[condition("True", "Scheduled")], []])
def test_a_new_leaders_first_cycle_keeps_the_true_it_read_from_the_watch(cached: list[dict[str, Any]]) -> None:
    """A new leader (or a restarted scheduler) has a fresh writer that guards nothing; its informer brought the
    PodGroup with the True the previous leader wrote, and the cycle of a member that does not fit reads it there
    and writes no False, as upstream's. Without a True in the cache the same cycle writes False (the test's
    control: the member is attempted and the condition asked for)."""
    p = Patcher()
    p.release.set()
    w = ApiPodGroupStatusWriter(p)
    sched = gated_scheduler(w)
    sched.on_node_event(ADDED, api_node("n1", cpu="2"))
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "default", "uid": "uid-g", "generation": 1,
                          "resourceVersion": "7"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}, "status": {"conditions": cached}}
    sched.on_pod_group_event(ADDED, group)
    late = api_pod("late", cpu="4")
    late["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    sched.on_pod_event(ADDED, late)
    while sched.schedule_one(timeout=0):
        pass
    assert w.flush()
    w.close()
    written = [initially_scheduled(body) for _, _, body in p.calls]
    assert written == ([] if cached else ["False"])
