"""The API edge without an API server: retry policy, rate limiting, event dedup and truncation, paginated
reads, credentials and the lease's raw requests."""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest
from kubernetes.client.exceptions import ApiException

from scheduler.kube import recorder as recorder_module
from scheduler.kube.client import ApiWriter, authorization, is_transient, list_all, list_pages
from scheduler.kube.client import api_error as client_api_error
from scheduler.kube.leaderelection import KubeLeaseStore, LeaseConflict, LeaseRecord
from scheduler.kube.operator import connection_info
from scheduler.kube.podstream import Gone, PodStream
from scheduler.kube.ratelimit import TokenBucket
from scheduler.kube.recorder import ApiEventSink, truncate_note
from scheduler.kube.transform import trimmed
from scheduler.model.pod import pod_from_api


def api_error(status: int, headers: dict[str, str] | None = None) -> ApiException:
    """What RawApi raises for ``status`` (typed for 404 and 409, as the edge catches them)."""
    return client_api_error(status, "x", None, headers or {})


@pytest.mark.parametrize(
    ("exc", "transient"),
    [(api_error(500), True), (api_error(503), True), (api_error(429), True), (api_error(409), False),
     (api_error(404), False), (api_error(403), False), (ConnectionError(), True), (ValueError(), False)],
)
def test_transient_classification(exc: BaseException, transient: bool) -> None:
    assert is_transient(exc) is transient


class FlakyRaw:
    """Fails with the given errors, then succeeds; records every request."""

    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = list(errors)
        self.calls = 0
        self.requests: list[tuple[str, str, Any, str]] = []

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> bytes:
        self.calls += 1
        self.requests.append((method, path, body, content_type))
        if self.errors:
            raise self.errors.pop(0)
        return b'{"metadata": {"name": "ev-1"}}'


def writer_with(raw: FlakyRaw) -> ApiWriter:
    return ApiWriter(raw, TokenBucket(0, 1))


def test_a_write_retries_transient_errors_then_succeeds() -> None:
    raw = FlakyRaw([api_error(500), api_error(429, {"Retry-After": "0"}), ConnectionError()])
    writer_with(raw).patch_pod_status("ns", "p", {"status": {}})
    assert raw.calls == 4


def test_a_binding_is_one_post_its_retries_are_the_binders() -> None:
    """ApiWriter.bind posts once; ApiBinder retries it as kube-scheduler does (tests/kube/test_bind_retries.py)."""
    raw = FlakyRaw([])
    writer_with(raw).bind("ns", "p", "uid", "n1")
    method, path, body, _ = raw.requests[-1]
    assert (method, path) == ("POST", "/api/v1/namespaces/ns/pods/p/binding")
    assert body["metadata"]["uid"] == "uid" and body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    failing = FlakyRaw([api_error(503)])
    with pytest.raises(ApiException):
        writer_with(failing).bind("ns", "p", "uid", "n1")
    assert failing.calls == 1


def test_a_persistent_transient_error_is_tried_six_times_with_exponential_waits(monkeypatch: Any) -> None:
    """The first attempt runs outside tenacity; the waits and the attempt count are those of one policy."""
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    raw = FlakyRaw([api_error(503) for _ in range(10)])
    with pytest.raises(ApiException):
        writer_with(raw).patch_pod_status("ns", "p", {"status": {}})
    assert raw.calls == 6
    assert waits == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6])
    conflict = FlakyRaw([api_error(409)])
    with pytest.raises(ApiException):
        writer_with(conflict).patch_pod_status("ns", "p", {"status": {}})
    assert conflict.calls == 1 and waits == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6])


def test_a_first_attempt_that_outlasted_the_retry_window_is_not_retried(monkeypatch: Any) -> None:
    """As tenacity's stop_after_delay would: a transient failure after MAX_SECONDS ends the write."""
    clock = iter([100.0, 131.0])
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    raw = FlakyRaw([api_error(503)])
    with pytest.raises(ApiException):
        writer_with(raw).patch_pod_status("ns", "p", {"status": {}})
    assert raw.calls == 1


def test_an_event_created_under_its_own_name_is_known_by_it_and_a_generated_one_by_the_answer() -> None:
    """The recorder names every Event itself: a create keeps that name, so the answer need not be read."""
    raw = FlakyRaw([])
    w = writer_with(raw)
    assert w.create_event("ns", {"metadata": {"name": "p.17f3", "namespace": "ns"}}) == "p.17f3"
    assert w.create_event("ns", {"metadata": {"generateName": "p.", "namespace": "ns"}}) == "ev-1"
    assert raw.calls == 2


def test_writes_use_upstream_paths_and_patch_types() -> None:
    raw = FlakyRaw([])
    w = writer_with(raw)
    w.patch_pod_status("ns", "p", {"status": {}})
    assert w.create_event("ns", {"note": "x"}) == "ev-1"
    w.patch_event("ns", "ev-1", {"series": {"count": 2}})
    w.delete_pod("ns", "p")
    w.update_object("PersistentVolumeClaim", {"metadata": {"name": "c", "namespace": "ns"}})
    assert [(m, p, t) for m, p, _, t in raw.requests] == [
        ("PATCH", "/api/v1/namespaces/ns/pods/p/status", "application/strategic-merge-patch+json"),
        ("POST", "/apis/events.k8s.io/v1/namespaces/ns/events", "application/json"),
        ("PATCH", "/apis/events.k8s.io/v1/namespaces/ns/events/ev-1", "application/strategic-merge-patch+json"),
        ("DELETE", "/api/v1/namespaces/ns/pods/p", "application/json"),
        ("PUT", "/api/v1/namespaces/ns/persistentvolumeclaims/c", "application/json"),
    ]
    assert raw.requests[-1][2]["kind"] == "PersistentVolumeClaim"
    with pytest.raises(ValueError, match="unsupported kind"):
        w.update_object("Pod", {"metadata": {"name": "p"}})


def test_resource_claim_writes_use_the_resource_group_paths() -> None:
    """DynamicResources' PreBind (update, status update), conflict re-read (get) and Unreserve (status patch)."""
    raw = FlakyRaw([])
    w = writer_with(raw)
    claim = {"metadata": {"name": "c", "namespace": "ns"}}
    w.update_object("ResourceClaim", claim)
    w.update_object("ResourceClaim", claim, "status")
    w.get_object("ResourceClaim", "ns", "c")
    w.patch_object_status("ResourceClaim", "ns", "c", {"status": {}})
    base = "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c"
    assert [(m, p, t) for m, p, _, t in raw.requests] == [
        ("PUT", base, "application/json"),
        ("PUT", f"{base}/status", "application/json"),
        ("GET", base, "application/json"),
        ("PATCH", f"{base}/status", "application/strategic-merge-patch+json"),
    ]
    assert raw.requests[0][2]["apiVersion"] == "resource.k8s.io/v1" and raw.requests[0][2]["kind"] == "ResourceClaim"


@pytest.mark.parametrize("status", [404, 409])
def test_bind_does_not_retry_final_errors(status: int) -> None:
    raw = FlakyRaw([api_error(status)])
    with pytest.raises(ApiException) as info:
        writer_with(raw).bind("ns", "p", "uid", "n1")
    assert info.value.status == status
    assert raw.calls == 1


def test_token_bucket_allows_burst_then_paces() -> None:
    now = [0.0]
    tb = TokenBucket(qps=10, burst=3, clock=lambda: now[0])
    assert [tb.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert tb.reserve() == pytest.approx(0.1)
    now[0] += 1.0  # refills, capped at burst
    assert tb.reserve() == 0.0


def test_token_bucket_first_goes_ahead_of_the_queue_and_the_queue_pays_for_it() -> None:
    now = [0.0]
    tb = TokenBucket(qps=10, burst=1, clock=lambda: now[0])
    assert tb.reserve() == 0.0
    assert tb.reserve(50) == pytest.approx(5.0)  # a burst of Events / Bindings waits its turn
    assert tb.reserve(first=True) == 0.0  # the status patch does not wait behind it
    assert tb.reserve(first=True) == pytest.approx(0.1)  # but the ones ahead of the queue are paced at qps
    assert tb.reserve() == pytest.approx(5.3)  # and what comes later waits for their tokens too
    now[0] += 10.0
    assert tb.reserve(first=True) == 0.0


def test_token_bucket_zero_qps_is_unlimited() -> None:
    tb = TokenBucket(qps=0, burst=1)
    assert all(tb.reserve() == 0.0 for _ in range(100))


def test_truncate_note_limits_to_1024_bytes() -> None:
    assert truncate_note("short") == "short"
    long = "x" * 2000
    out = truncate_note(long)
    assert len(out.encode()) == 1024
    assert out.endswith(" ...")


class RecordingWriter:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []
        self.status: list[dict[str, Any]] = []

    def create_event(self, namespace: str, body: dict[str, Any]) -> str:
        self.created.append(body)
        return str(body["metadata"]["name"])

    def patch_event(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.patched.append((name, patch))

    def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.status.append(patch)


def _drain(sink: ApiEventSink) -> None:
    sink.close()
    for t in sink._threads:
        t.join(5)


class SlowWriter(RecordingWriter):
    """Answers each event after a millisecond, as a busy API server would (slower, in fact)."""

    def create_event(self, namespace: str, body: dict[str, Any]) -> str:
        time.sleep(0.001)
        return super().create_event(namespace, body)


def test_a_burst_of_events_larger_than_a_small_backlog_is_written_in_full() -> None:
    """5000 Scheduled events at once, each write taking a millisecond: the default sink writes them all
    (upstream gives each its own goroutine). The former defaults (2 workers, 2000 queued) dropped most."""
    w = SlowWriter()
    sink = ApiEventSink(w)
    pods = [pod_from_api({"metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}"}, "spec": {}})
            for i in range(5000)]
    for p in pods:
        sink.event(p, "Normal", "Scheduled", "Binding", f"Successfully assigned ns/{p.name} to n1", "py-scheduler")
    _drain(sink)
    assert sink.dropped == 0
    assert len(w.created) == 5000
    assert {e["regarding"]["uid"] for e in w.created} == {p.uid for p in pods}


def test_repeated_events_become_one_event_with_a_series() -> None:
    now = [0.0]
    w = RecordingWriter()
    sink = ApiEventSink(w, workers=1, series_patch_interval=60, clock=lambda: now[0])
    pod = pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {}})
    sink.event(pod, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available: x.", "py-scheduler")
    deadline = time.monotonic() + 5
    while not w.created and time.monotonic() < deadline:
        time.sleep(0.01)
    for _ in range(5):
        sink.event(pod, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available: x.", "py-scheduler")
    now[0] = 61.0
    sink.event(pod, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available: x.", "py-scheduler")
    _drain(sink)
    assert len(w.created) == 1
    ev = w.created[0]
    assert (ev["type"], ev["reason"], ev["action"], ev["reportingController"]) == (
        "Warning", "FailedScheduling", "Scheduling", "py-scheduler")
    assert ev["regarding"]["uid"] == "u1"
    assert len(w.patched) == 1
    assert w.patched[0][1]["series"]["count"] == 7


def test_event_series_expire_after_the_ttl_and_beyond_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Series unseen for the TTL are forgotten (a repeat then starts a new Event), and beyond MAX_SERIES the
    least recently seen go first, however recent: memory and the cost per event stay bounded."""
    monkeypatch.setattr(recorder_module, "MAX_SERIES", 3)
    now = [0.0]
    sink = ApiEventSink(RecordingWriter(), workers=1, series_ttl=10, clock=lambda: now[0])

    def seen(i: int) -> None:
        pod = pod_from_api({"metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}"}, "spec": {}})
        sink.event(pod, "Normal", "Scheduled", "Binding", "assigned", "py-scheduler")

    def uids() -> list[str]:
        return [key[0] for key in sink._series]

    for i in range(3):
        seen(i)
        now[0] += 1
    seen(0)  # seen again: now the most recent
    assert uids() == ["u1", "u2", "u0"]
    seen(3)  # over the cap: the least recently seen goes
    assert uids() == ["u2", "u0", "u3"]
    now[0] = 13.5  # u2 (seen at 2) and u0 (seen at 3) are past the TTL of 10, u3 (seen at 3) too
    seen(4)
    assert uids() == ["u4"]
    _drain(sink)


def test_pod_condition_patch_and_unchanged_skip() -> None:
    w = RecordingWriter()
    sink = ApiEventSink(w, workers=1)
    pod = pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {}})
    sink.pod_condition(pod, "Unschedulable", "0/1 nodes are available: x.", None)
    deadline = time.monotonic() + 5
    while not w.status and time.monotonic() < deadline:
        time.sleep(0.01)
    same = pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {}, "status": {
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                        "message": "0/1 nodes are available: x."}]}})
    sink.pod_condition(same, "Unschedulable", "0/1 nodes are available: x.", None)
    _drain(sink)
    assert len(w.status) == 1
    cond = w.status[0]["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")


class StaleWriter(RecordingWriter):
    """The pod changed after the scheduler read it: the first status patch conflicts, GET gives ``now``."""

    def __init__(self, now: dict[str, Any]) -> None:
        super().__init__()
        self.now = now
        self.conflicts = 1

    def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        if self.conflicts:
            self.conflicts -= 1
            raise api_error(409)
        super().patch_pod_status(namespace, name, patch)

    def get(self, path: str) -> bytes:
        return orjson.dumps(self.now)


@pytest.mark.parametrize(
    ("now", "nominated", "written"),
    [
        # bound before the preemptor's queued write landed: the nomination alone, as upstream's order leaves it
        ({"uid": "u1", "node": "n2"}, "n1", [{"metadata": {"resourceVersion": "7"},
                                              "status": {"nominatedNodeName": "n1"}}]),
        ({"uid": "u1", "node": "n2"}, None, []),  # bound, nothing nominated: nothing to write
        ({"uid": "u2", "node": ""}, "n1", []),  # a new pod of the same name: never written to
        ({"uid": "u1", "node": ""}, "n1", ["condition"]),  # just updated: the condition again, on the fresh pod
    ],
)
def test_a_conflicting_failure_write_is_redone_kept_to_the_nomination_or_dropped(
    now: dict[str, str], nominated: str | None, written: list[Any]
) -> None:
    fresh = {"metadata": {"name": "p", "namespace": "ns", "uid": now["uid"], "resourceVersion": "7"},
             "spec": {"nodeName": now["node"]} if now["node"] else {}}
    w = StaleWriter(fresh)
    sink = ApiEventSink(w, workers=1)
    pod = pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "5"}, "spec": {}})
    sink.pod_condition(pod, "Unschedulable", "0/1 nodes are available: x.", nominated)
    _drain(sink)
    if written == ["condition"]:
        assert len(w.status) == 1 and w.status[0]["metadata"] == {"resourceVersion": "7"}
        assert w.status[0]["status"]["nominatedNodeName"] == "n1"
        assert w.status[0]["status"]["conditions"][0]["reason"] == "Unschedulable"
    else:
        assert w.status == written


def test_request_bodies_serialise_read_only_mappings() -> None:
    from types import MappingProxyType

    import orjson

    from scheduler.model.jsonutil import plain

    body = {"metadata": {"labels": MappingProxyType({"a": "b"})}, "items": (1, 2)}
    assert orjson.loads(orjson.dumps(body, default=plain)) == {"metadata": {"labels": {"a": "b"}}, "items": [1, 2]}
    with pytest.raises(TypeError):
        orjson.dumps({"x": object()}, default=plain)


def test_scheduled_false_condition_keeps_transition_and_sets_observed_generation() -> None:
    from scheduler.kube.recorder import scheduled_false_condition

    earlier = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "old",
               "lastTransitionTime": "2026-01-01T00:00:00Z"}
    pod = pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "generation": 3}, "spec": {},
                        "status": {"conditions": [earlier]}})
    cond = scheduled_false_condition(pod, "Unschedulable", "new")
    assert (cond["message"], cond["lastTransitionTime"], cond["observedGeneration"]) == (
        "new", "2026-01-01T00:00:00Z", 3)
    fresh = pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {}, "status": {
        "conditions": [dict(earlier, status="True")]}})
    cond = scheduled_false_condition(fresh, "Unschedulable", "new")
    assert cond["lastTransitionTime"] != "2026-01-01T00:00:00Z" and "observedGeneration" not in cond


# --- reads: one paginated LIST for the sync, the resync and the pod stream's relist -----------------


class PagedRaw:
    """Serves a LIST in pages (the continue token is the page index); records the request paths."""

    def __init__(self, pages: list[list[dict[str, Any]]], rv: str = "77", error: ApiException | None = None) -> None:
        self.pages = pages
        self.rv = rv
        self.error = error
        self.paths: list[str] = []
        self.timeouts: list[float | None] = []

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                timeout: float | None = None, accept: str = "") -> bytes:
        self.paths.append(path)
        if self.error is not None:
            raise self.error
        query = parse_qs(urlsplit(path).query)
        i = int(query.get("continue", ["0"])[0])
        meta = {"resourceVersion": self.rv, "continue": str(i + 1) if i + 1 < len(self.pages) else ""}
        return orjson.dumps({"items": self.pages[i], "metadata": meta})


def pod_obj(uid: str) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "name": uid, "namespace": "ns"}}


def test_list_pages_follows_continue_tokens_with_limit_and_selector() -> None:
    raw = PagedRaw([[pod_obj("a"), pod_obj("b")], [], [pod_obj("c")]])
    pages = list(list_pages(raw, "/api/v1/pods", "status.phase!=Failed", limit=2))
    assert [[o["metadata"]["uid"] for o in items] for items, _ in pages] == [["a", "b"], [], ["c"]]
    assert pages[-1][1]["resourceVersion"] == "77"
    queries = [parse_qs(urlsplit(p).query) for p in raw.paths]
    assert [q.get("continue") for q in queries] == [None, ["1"], ["2"]]
    assert all(q["limit"] == ["2"] and q["fieldSelector"] == ["status.phase!=Failed"] for q in queries)
    assert [o["metadata"]["uid"] for o in list_all(raw, "/api/v1/nodes")] == ["a", "b", "c"]


def test_pod_stream_relist_synthesizes_deletions_and_maps_410_to_gone() -> None:
    events: list[tuple[str, str]] = []
    raw = PagedRaw([[pod_obj("a"), pod_obj("b")]], rv="10")
    stream = PodStream(raw, lambda t, o: events.append((t, o["metadata"]["uid"])))  # type: ignore[arg-type]
    assert stream.relist() == "10" and stream.synced.is_set()
    raw.pages, raw.rv = [[pod_obj("b")]], "20"
    assert stream.relist() == "20"
    assert events == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "b"), ("DELETED", "a")]
    raw.error = api_error(410)
    with pytest.raises(Gone):
        stream.relist()


MANAGED = [{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]


def test_objects_enter_the_cache_without_managed_fields() -> None:
    """As kube-scheduler's informer transform: list pages and the pod stream drop metadata.managedFields in
    place; a body kopf owns is copied, not changed."""
    managed = {"metadata": {"uid": "a", "name": "a", "namespace": "ns", "managedFields": MANAGED}, "spec": {"x": 1}}
    raw = PagedRaw([[managed]])
    (items, _), = list(list_pages(raw, "/api/v1/pods"))
    assert items == [{"metadata": {"uid": "a", "name": "a", "namespace": "ns"}, "spec": {"x": 1}}]
    events: list[Any] = []
    stream = PodStream(raw, lambda t, o: events.append(o))  # type: ignore[arg-type]
    stream._handle_line(orjson.dumps({"type": "ADDED", "object": managed}), "1")
    assert "managedFields" not in events[0]["metadata"] and events[0]["spec"] == {"x": 1}
    owned = {"metadata": {"name": "n", "managedFields": MANAGED}, "status": {}}
    copy = trimmed(owned)
    assert copy == {"metadata": {"name": "n"}, "status": {}} and owned["metadata"]["managedFields"] == MANAGED
    assert trimmed(copy) is copy


class Cfg:
    """The parts of a kubernetes client Configuration that credentials are read from."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.host = "https://k:6443"
        self.ssl_ca_cert, self.verify_ssl, self.cert_file, self.key_file = "/ca", True, None, None

    def get_api_key_with_prefix(self, name: str) -> str:
        return self.key if name == "authorization" else ""


@pytest.mark.parametrize(("key", "header", "scheme", "token"), [
    ("tok", "Bearer tok", "Bearer", "tok"), ("Basic abc", "Basic abc", "Basic", "abc"), ("", "", None, None)])
def test_credentials_are_read_once_for_raw_requests_and_kopf(key: str, header: str, scheme: str | None,
                                                             token: str | None) -> None:
    assert authorization(Cfg(key)) == header
    info = connection_info(Cfg(key))
    assert (info.scheme, info.token, info.server, info.ca_path) == (scheme, token, "https://k:6443", "/ca")


def test_lease_store_speaks_raw_json_with_the_elector_timeout() -> None:
    class LeaseRaw:
        def __init__(self) -> None:
            self.calls: list[tuple[str, str, Any, float | None]] = []
            self.fail: dict[str, ApiException] = {}

        def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                    timeout: float | None = None, accept: str = "") -> bytes:
            self.calls.append((method, path, body, timeout))
            if method in self.fail:
                raise self.fail[method]
            return orjson.dumps(body or {"metadata": {"name": "lease", "resourceVersion": "5"}})

    raw = LeaseRaw()
    store = KubeLeaseStore(raw, "kube-system", "py-scheduler")
    store.timeout = 3.5
    lease = store.get()
    assert lease is not None and lease["metadata"]["resourceVersion"] == "5"
    record = LeaseRecord("me", 15, "t", "t", 0)
    written = store.update(lease, record)
    assert written["spec"]["holderIdentity"] == "me" and written["metadata"]["resourceVersion"] == "5"
    assert [(m, p, t) for m, p, _, t in raw.calls] == [
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/py-scheduler", 3.5),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/py-scheduler", 3.5),
    ]
    raw.fail = {"GET": api_error(404), "POST": api_error(409), "PUT": api_error(409)}
    assert store.get() is None
    with pytest.raises(LeaseConflict):
        store.create(record)
    with pytest.raises(LeaseConflict):
        store.update(lease, record)


def test_a_nominating_failure_write_is_made_before_the_call_returns() -> None:
    """Upstream writes the nomination before the preemptor can be retried; other failure writes are queued."""
    w = RecordingWriter()
    sink = ApiEventSink(w, workers=0)  # no worker thread: a queued write would not happen at all
    pod = pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "5"}, "spec": {}})
    sink.pod_condition(pod, "Unschedulable", "0/1 nodes are available: x.", None)
    assert w.status == []
    sink.pod_condition(pod, "Unschedulable", "0/1 nodes are available: y.", "n1")
    assert len(w.status) == 1 and w.status[0]["status"]["nominatedNodeName"] == "n1"
    assert w.status[0]["status"]["conditions"][0]["message"] == "0/1 nodes are available: y."


class PipelineWriter(SlowWriter):
    """A writer that can pipeline: records each batch; the Event named ``refused`` fails."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []
        self.writing, self.go = threading.Event(), threading.Event()

    def create_event(self, namespace: str, body: dict[str, Any]) -> str:
        self.writing.set()  # the first, alone: the rest queue until the test lets it finish
        self.go.wait(5)
        return super().create_event(namespace, body)

    def create_events(self, events: list[tuple[str, dict[str, Any]]]) -> list[Exception | None]:
        self.batches.append(len(events))
        out: list[Exception | None] = []
        for _, body in events:
            if body["regarding"]["name"] == "refused":
                out.append(RuntimeError("422 Invalid"))
            else:
                self.created.append(body)
                out.append(None)
        return out


def test_new_events_queued_meanwhile_go_out_in_one_batch() -> None:
    w = PipelineWriter()
    sink = ApiEventSink(w, workers=1, event_writers=1)
    pods = [pod_from_api({"metadata": {"name": n, "namespace": "ns", "uid": f"u-{n}"}, "spec": {}})
            for n in [f"p{i}" for i in range(19)] + ["refused"]]  # fmt: skip
    for i, p in enumerate(pods):
        sink.event(p, "Normal", "Scheduled", "Binding", f"Successfully assigned ns/{p.name} to n1", "py-scheduler")
        if i == 0:
            assert w.writing.wait(5)
    w.go.set()
    _drain(sink)
    assert w.batches == [19]  # the first went alone; everything queued while it was written, together
    assert sorted(e["regarding"]["name"] for e in w.created) == sorted(p.name for p in pods if p.name != "refused")
    names = {key[0]: s.name for key, s in sink._series.items()}
    assert names["u-refused"] == "" and all(names[f"u-p{i}"].startswith(f"p{i}.") for i in range(19))
