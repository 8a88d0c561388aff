"""scheduler.kube.podgroupstatus: the Workload API PodGroup status writer leaves the cycle at once, sends patches in
order, merges the ones still queued for a PodGroup, and logs failures instead of raising."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from scheduler.kube.client import ApiWriter, api_error
from scheduler.kube.podgroupstatus import ApiPodGroupStatusWriter, merge_status_patches
from scheduler.kube.ratelimit import TokenBucket


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
