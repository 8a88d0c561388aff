"""A leader hands over cleanly: losing the lease is not a scheduling failure, a write is not retried once the
replica no longer leads, and extenders bind only while it leads."""

from __future__ import annotations

import random
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from scheduler.config.load import build_registry, load_dict
from scheduler.edge import NotLeaderError
from scheduler.eventhandlers import ADDED
from scheduler.kube.binder import BIND_TRIES, ApiBinder
from scheduler.kube.client import ApiWriter
from scheduler.kube.ratelimit import TokenBucket
from scheduler.model.pod import Pod, pod_from_api
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import RecordingEventSink
from tests.builders import api_node, api_pod
from tests.test_scheduler import Clock


class LostLeadership:
    def __init__(self) -> None:
        self.calls = 0

    def bind(self, p: Pod, node_name: str) -> None:
        self.calls += 1
        raise NotLeaderError(f"not the leader: binding of {p.key} to {node_name} skipped")


def scheduler(binder: Any, sink: RecordingEventSink, extenders: list[dict[str, Any]] | None = None,
              leading: Any = None) -> Scheduler:
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{"schedulerName": "py-scheduler"}], "extenders": extenders or []})
    return Scheduler(cfg, build_registry(cfg), binder, sink, None, synchronous_binding=True, rng=random.Random(1),
                     tie_break="name", clock=Clock(), leading=leading)


def test_losing_the_lease_mid_binding_is_not_a_scheduling_failure() -> None:
    sink = RecordingEventSink()
    binder = LostLeadership()
    s = scheduler(binder, sink)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, api_pod("p"))
    assert s.schedule_one(timeout=0)
    assert binder.calls == 1
    assert sink.events == [] and sink.conditions == {}, "no FailedScheduling, no PodScheduled=False"
    assert not s.cache.is_assumed("uid-p") and s.cache.assumed_count() == 0


def test_an_extender_binds_only_while_leading() -> None:
    """The extender's URL is never reached (nothing listens there): the gate answers first."""
    sink = RecordingEventSink()
    binder = LostLeadership()
    s = scheduler(binder, sink, [{"urlPrefix": "http://127.0.0.1:9/ext", "bindVerb": "bind"}], leading=lambda: False)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, api_pod("p"))
    assert s.schedule_one(timeout=0)
    assert binder.calls == 0
    assert sink.events == [] and sink.conditions == {}
    assert s.cache.assumed_count() == 0


class Flaky:
    """Answers 503 every time."""

    def __init__(self) -> None:
        self.calls = 0

    def request(self, method: str, path: str, body: Any = None, content_type: str = "", timeout: float | None = None,
                ) -> bytes:
        self.calls += 1
        raise ApiException(status=503, reason="Service Unavailable")


def test_a_binding_is_not_retried_once_the_replica_stops_leading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda s: None)
    leading = [True]
    raw = Flaky()
    binder = ApiBinder(ApiWriter(raw, TokenBucket(0, 1), may_retry=lambda: leading[0]))
    p = pod_from_api(api_pod("p"))
    leading[0] = False  # lost while the first attempt was in flight
    with pytest.raises(NotLeaderError):
        binder.bind(p, "n1")
    assert raw.calls == 1
    leading[0] = True
    with pytest.raises(ApiException):
        binder.bind(p, "n1")
    assert raw.calls == 1 + BIND_TRIES  # retried while leading, as util.BindPod retries a 503


def test_a_write_is_not_retried_once_the_replica_stops_leading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda s: None)
    leading = [False]
    raw = Flaky()
    writer = ApiWriter(raw, TokenBucket(0, 1), may_retry=lambda: leading[0])
    with pytest.raises(NotLeaderError):
        writer.patch_pod_status("ns", "p", {"status": {}})
    assert raw.calls == 1
