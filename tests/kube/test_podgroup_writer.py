"""scheduler.kube.podgroups: CRD discovery and the ordered, coalescing PodGroup status/event writer."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import orjson
from kubernetes.client.exceptions import ApiException

from scheduler.kube.client import api_error
from scheduler.kube.podgroups import ApiPodGroupWriter, podgroups_served


class FakeWriter:
    """Stands in for ApiWriter; the first write blocks until released, so later ones queue up."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.release = threading.Event()

    def patch_custom_status(self, group: str, version: str, plural: str, namespace: str, name: str,
                            status: Mapping[str, Any]) -> None:
        self.release.wait(5)
        self.calls.append(("status", (name, dict(status))))

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> str:
        self.release.wait(5)
        self.calls.append(("event", body["reason"]))
        return "e"


def wait_calls(w: FakeWriter, n: int) -> list[tuple[str, Any]]:
    deadline = time.monotonic() + 5
    while len(w.calls) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return w.calls


def test_every_phase_is_written_in_order_and_count_updates_coalesce() -> None:
    fake = FakeWriter()
    w = ApiPodGroupWriter(fake)  # type: ignore[arg-type]
    w.patch_status("ns", "other", {"phase": "Pending"})  # occupies the worker until released
    time.sleep(0.05)
    for body in ({"phase": "Scheduling", "scheduled": 0}, {"phase": "Scheduling", "scheduled": 1},
                 {"phase": "Scheduled", "scheduled": 2}, {"phase": "Scheduled", "scheduled": 2, "running": 1}):
        w.patch_status("ns", "g", body)
    w.event({"metadata": {"name": "g", "namespace": "ns", "uid": "u"}}, "Normal", "Scheduled", "note")
    fake.release.set()
    calls = wait_calls(fake, 4)
    w.close()
    assert calls == [
        ("status", ("other", {"phase": "Pending"})),
        ("status", ("g", {"phase": "Scheduling", "scheduled": 1})),
        ("status", ("g", {"phase": "Scheduled", "scheduled": 2, "running": 1})),
        ("event", "Scheduled"),
    ]


class Raw:
    def __init__(self, body: Any) -> None:
        self.body = body

    def request(self, method: str, path: str, body: Any = None, content_type: str = "") -> bytes:
        if isinstance(self.body, Exception):
            raise self.body
        assert (method, path) == ("GET", "/apis/scheduling.x-k8s.io/v1alpha1")
        return orjson.dumps(self.body)


def test_podgroups_are_served_only_when_discovery_lists_them() -> None:
    assert podgroups_served(Raw({"resources": [{"name": "podgroups"}, {"name": "podgroups/status"}]}))
    assert not podgroups_served(Raw({"resources": [{"name": "elasticquotas"}]}))
    assert not podgroups_served(Raw(api_error(404, "Not Found")))
    assert not podgroups_served(Raw(ApiException(status=403)))


def test_a_replica_that_is_not_leading_writes_nothing() -> None:
    fake = FakeWriter()
    fake.release.set()
    leading = [False]
    w = ApiPodGroupWriter(fake, leading=lambda: leading[0])  # type: ignore[arg-type]
    w.patch_status("ns", "g", {"phase": "Pending"})
    time.sleep(0.1)
    leading[0] = True
    w.patch_status("ns", "g", {"phase": "Scheduling"})
    assert wait_calls(fake, 1) == [("status", ("g", {"phase": "Scheduling"}))]
    w.close()


def test_writes_wait_until_the_members_are_listed() -> None:
    fake = FakeWriter()
    fake.release.set()
    ready = threading.Event()
    w = ApiPodGroupWriter(fake, ready=ready)  # type: ignore[arg-type]
    w.patch_status("ns", "g", {"phase": "Pending"})
    w.patch_status("ns", "g", {"phase": "Scheduling"})
    time.sleep(0.2)
    assert fake.calls == []
    ready.set()
    assert wait_calls(fake, 2) == [("status", ("g", {"phase": "Pending"})), ("status", ("g", {"phase": "Scheduling"}))]
    w.close()
