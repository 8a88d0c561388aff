"""Issue 15's edge fixes, as pure logic with hand-made objects (the API server's side of each is in
tests/integration/test_faults.py): relist reconciliation, idempotent binding, conditional condition
writes, typed binding errors, one-line API messages, and bounded watch stalls."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import orjson
import pytest
from kubernetes.client.exceptions import ApiException

from scheduler.edge import BoundElsewhereError
from scheduler.eventhandlers import ADDED
from scheduler.kube.binder import ApiBinder
from scheduler.kube.client import METADATA_LIST, ApiError
from scheduler.kube.client import api_error as client_api_error
from scheduler.kube.http11 import Http11Pool
from scheduler.kube.podstream import PodStream
from scheduler.kube.recorder import ApiEventSink
from scheduler.kube.sync import Resyncer, reconcile
from scheduler.model.pod import pod_from_api
from scheduler.whatif.offline import RecordingEventSink
from tests.builders import api_node, api_pod
from tests.test_scheduler import Binder, Clock, make


def api_error(status: int, message: str) -> ApiError:
    body = orjson.dumps({"kind": "Status", "message": message}).decode()
    return client_api_error(status, "Conflict" if status == 409 else "Not Found", body,
                            {"Audit-Id": "0f3c", "Content-Type": "application/json"})


def test_api_errors_read_as_the_status_message_on_one_line() -> None:
    exc = api_error(409, 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned\nto node "n1"')
    assert str(exc) == 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    assert "Audit-Id" not in str(exc)
    bare = ApiError(status=503, reason="Service Unavailable")
    bare.body = "<html>upstream connect error</html>"
    assert str(bare) == "503 Service Unavailable"


# ----- relist reconciliation ----------------------------------------------------------------------


class Lister:
    """A Requester answering LISTs from fixed items (one page)."""

    def __init__(self, items: dict[str, list[dict[str, Any]]]) -> None:
        self.items = items
        self.accepts: list[str] = []

    def request(self, method: str, path: str, body: Any = None, content_type: str = "", timeout: float | None = None,
                accept: str = "") -> bytes:
        self.accepts.append(accept)
        return orjson.dumps({"metadata": {"resourceVersion": "9"}, "items": self.items[path.split("?")[0]]})


def test_a_relist_delivers_the_deletions_it_implies() -> None:
    clock = Clock()
    s = make(Binder(), clock=clock)
    for n in ("n1", "n2", "n3"):
        s.on_node_event(ADDED, api_node(n))
    s.on_pod_event(ADDED, api_pod("bound", node_name="n3"))
    svc = {"kind": "Service", "metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"a": "b"}}}
    s.on_object_event("Service", ADDED, svc)
    clock.now += 1
    api = Lister({"/api/v1/nodes": [api_node("n1"), api_node("n2")], "/api/v1/services": [], "/api/v1/pods": []})
    assert reconcile(api, s, "Node") == 1
    assert s.cache.get_node("n3") is None and s.cache.get_node("n2") is not None
    assert reconcile(api, s, "Service") == 1
    assert list(s.objects.list("Service")) == []
    assert reconcile(api, s, "Pod") == 1 and s.cache.pod_count() == 0
    # Names and UIDs are all a relist compares: it never has the API server send specs and statuses.
    assert api.accepts == [METADATA_LIST] * 3


def test_a_relist_never_undoes_an_event_heard_after_it_began() -> None:
    clock = Clock()
    s = make(Binder(), clock=clock)
    s.on_node_event(ADDED, api_node("n1"))
    api = Lister({"/api/v1/nodes": []})
    # n1 was heard of at the same instant the list began: it may be newer than the list, keep it.
    assert reconcile(api, s, "Node") == 0
    assert s.cache.get_node("n1") is not None


def test_kopfs_replay_of_a_kind_triggers_its_reconciliation_once_quiet() -> None:
    clock = Clock()
    s = make(Binder(), clock=clock)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_node_event(ADDED, api_node("gone"))
    clock.now += 1
    resync = Resyncer(Lister({"/api/v1/nodes": [api_node("n1")]}), s, period=3600, quiet=0.2)
    resync.start()
    try:
        resync.listed("Node")  # kopf replayed n1 after a 410; "gone" was not replayed
        deadline = time.monotonic() + 5
        while s.cache.get_node("gone") is not None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        resync.stop()
    assert s.cache.get_node("gone") is None and s.cache.get_node("n1") is not None


def test_a_pod_relist_cues_the_node_reconciliation() -> None:
    cues: list[str] = []
    stream = PodStream(Lister({"/api/v1/pods": [api_pod("p")]}), lambda t, o: None,  # type: ignore[arg-type]
                       on_relist=lambda: cues.append("Node"))
    assert stream.relist() == "9"
    assert cues == ["Node"]


# ----- idempotent binding -------------------------------------------------------------------------


class ConflictWriter:
    """bind() answers 409; get() returns the pod as the API server has it."""

    may_retry = None

    def __init__(self, current: dict[str, Any]) -> None:
        self.current = current

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        raise api_error(409, f'pod {name} is already assigned to node "{self.current["spec"].get("nodeName")}"')

    def get(self, path: str) -> bytes:
        return orjson.dumps(self.current)


def test_a_409_for_our_node_is_success_another_node_is_bound_elsewhere_a_new_uid_is_gone() -> None:
    p = pod_from_api(api_pod("p"))
    ApiBinder(ConflictWriter(api_pod("p", node_name="n1"))).bind(p, "n1")  # type: ignore[arg-type]
    with pytest.raises(BoundElsewhereError) as elsewhere:
        ApiBinder(ConflictWriter(api_pod("p", node_name="n2"))).bind(p, "n1")  # type: ignore[arg-type]
    assert elsewhere.value.node == "n2"
    recreated = api_pod("p", node_name="n1")
    recreated["metadata"]["uid"] = "uid-other"
    with pytest.raises(ApiException) as gone:
        ApiBinder(ConflictWriter(recreated)).bind(p, "n1")  # type: ignore[arg-type]
    assert gone.value.status == 404


def test_bound_elsewhere_forgets_the_pod_and_records_nothing() -> None:
    sink = RecordingEventSink()
    s = make(Binder([BoundElsewhereError("default/p", "n2")]), sink)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, api_pod("p"))
    s.schedule_one(timeout=0)
    assert not s.cache.is_assumed("uid-p") and s.cache.pod_count() == 0
    assert sink.events == [] and sink.conditions == {}
    assert all(n == 0 for n in s.queue.lengths().values())


def test_a_404_through_the_framework_is_a_deleted_pod_not_an_error() -> None:
    sink = RecordingEventSink()
    s = make(Binder([api_error(404, 'pods "p" not found')]), sink)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, api_pod("p"))
    s.schedule_one(timeout=0)
    assert sink.events == [] and sink.conditions == {}


# ----- conditional PodScheduled writes ------------------------------------------------------------


class StatusWriter:
    """patch_pod_status fails with 409 while the patch's resourceVersion is not the current one."""

    def __init__(self, current: dict[str, Any]) -> None:
        self.current = current
        self.patches: list[dict[str, Any]] = []
        self.applied: list[dict[str, Any]] = []

    def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.patches.append(patch)
        if patch.get("metadata", {}).get("resourceVersion") != self.current["metadata"]["resourceVersion"]:
            raise api_error(409, "the object has been modified")
        self.applied.append(patch)

    def get(self, path: str) -> bytes:
        return orjson.dumps(self.current)

    def create_event(self, namespace: str, body: dict[str, Any]) -> str:
        return "e"

    def patch_event(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        return None


def _write(w: StatusWriter, seen: dict[str, Any]) -> None:
    sink = ApiEventSink(w, workers=1)
    sink.pod_condition(pod_from_api(seen), "SchedulerError", "boom", None)
    sink.close()
    for t in sink._threads:
        t.join(5)


def test_a_condition_write_is_dropped_once_the_pod_was_bound() -> None:
    w = StatusWriter(api_pod("p", node_name="n1", rv="7"))
    _write(w, api_pod("p", rv="5"))
    assert [p["metadata"]["resourceVersion"] for p in w.patches] == ["5"]
    assert w.applied == []


def test_a_condition_write_follows_a_pod_that_only_changed() -> None:
    w = StatusWriter(api_pod("p", rv="6"))
    _write(w, api_pod("p", rv="5"))
    assert [p["metadata"]["resourceVersion"] for p in w.applied] == ["6"]
    assert w.applied[0]["status"]["conditions"][0]["status"] == "False"


class SlowFirstWriter(StatusWriter):
    """Applies patches as the API server would (a new resourceVersion each), holding the first one back
    until ``release`` is set."""

    def __init__(self, current: dict[str, Any]) -> None:
        super().__init__(current)
        self.release = threading.Event()
        self.first_started = threading.Event()

    def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        if not self.first_started.is_set():
            self.first_started.set()
            self.release.wait(5)
        super().patch_pod_status(namespace, name, patch)
        meta = self.current["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        self.current["status"] = {"conditions": patch["status"]["conditions"]}


def test_a_later_attempts_condition_is_the_one_left_on_the_pod() -> None:
    """Two failed attempts of one pod, the first write slow: the second message must be the last written,
    whatever order the workers take them in (once, an older write's conflict retry overwrote a newer one)."""
    seen = api_pod("p", rv="5")
    w = SlowFirstWriter(dict(seen, metadata=dict(seen["metadata"])))
    sink = ApiEventSink(w, workers=8)
    sink.pod_condition(pod_from_api(seen), "Unschedulable", "one", None)
    assert w.first_started.wait(5)
    sink.pod_condition(pod_from_api(seen), "Unschedulable", "two", None)
    time.sleep(0.2)  # room for another worker to take the second write while the first is under way
    w.release.set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and [a["status"]["conditions"][0]["message"] for a in w.applied][-1:] != ["two"]:
        time.sleep(0.01)
    sink.close()
    for t in sink._threads:
        t.join(5)
    assert [a["status"]["conditions"][0]["message"] for a in w.applied] == ["one", "two"]


# ----- bounded watch stall ------------------------------------------------------------------------


def test_a_silent_watch_is_abandoned_after_the_read_timeout() -> None:
    """A partition that neither resets nor answers (here: a server that accepts and never writes) ends
    the watch after its read timeout, so the stream reconnects instead of waiting for minutes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True).start()
    cfg = type("Cfg", (), {"host": f"http://127.0.0.1:{server.getsockname()[1]}", "ssl_ca_cert": None,
                           "verify_ssl": False, "cert_file": None, "key_file": None})()
    api = type("Api", (), {"cfg": cfg, "host": cfg.host, "auth_headers": lambda self: {}})()
    stream = PodStream(api, lambda t, o: None, watch_timeout=1, read_grace=0.5)  # type: ignore[arg-type]
    pool = Http11Pool(cfg.host, None)
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        stream._watch(pool, "1")
    took = time.monotonic() - start
    server.close()
    assert 1.4 < took < 30  # watch_timeout + read_grace; the bound only says "not the minutes of a long watch"
