"""A thin list-watch of pods, for the high-volume pod stream.

kopf remains the operator (login, nodes and the other kinds, life cycle), but its per-event machinery
costs many times the CPU of a plain stream of newline-delimited JSON (docs/performance.md). Every scheduled
pod produces two to four pod events, so the pod stream decides whether the API server or the scheduler is the
limit.

It also does what kopf does not after a 410 Gone: the relist synthesizes DELETED events for pods
that vanished while the watch was down, so no deletion is ever missed.

The list pages go through RawApi like every other request. The watch, one response streamed for minutes,
is read by kube.watchhttp with blocking I/O on a connection of its own, in the stream's thread: no event
loop, so what the thread spends beyond decoding the events is a recv per block of bytes that arrived.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import structlog
from kubernetes.client.exceptions import ApiException

from scheduler.kube.client import JSON, RawApi, api_error, list_pages, ssl_context
from scheduler.kube.http11 import Http11Pool
from scheduler.kube.transform import PodLineDecoder
from scheduler.kube.watchhttp import StreamedResponse, open_stream

log = structlog.get_logger(__name__)

EventHandler = Callable[[str, Mapping[str, Any]], object]  # the return value (metric labels) is ignored

# A watch the server ends after WATCH_TIMEOUT_S (resumed at once from the last resourceVersion), read with
# a client timeout a little longer: a silent partition (no reset, no data) stalls the stream for at most
# WATCH_TIMEOUT_S + READ_GRACE_S before it reconnects, instead of the 5 minutes of a long watch.
WATCH_TIMEOUT_S = 30
READ_GRACE_S = 15.0
CONNECT_TIMEOUT_S = 10.0


class Gone(Exception):
    """The watch's resourceVersion is too old (HTTP 410 or an ERROR event with code 410)."""


class PodStream:
    """List then watch `/api/v1/pods` (all namespaces) with field and label selectors; calls
    `on_event(type, obj)`.

    Runs in its own thread so the scheduler's other work cannot delay it. `synced` is
    set once the first list has been delivered (the scheduling loop waits for it, like upstream's
    WaitForCacheSync).
    """

    def __init__(
        self,
        api: RawApi,
        on_event: EventHandler,
        field_selector: str = "",
        page_size: int = 500,
        watch_timeout: int = WATCH_TIMEOUT_S,
        read_grace: float = READ_GRACE_S,
        on_relist: Callable[[], None] = lambda: None,
        label_selector: str = "",
    ) -> None:
        self.api = api
        self.on_event = on_event
        self.on_relist = on_relist
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.read_grace = read_grace
        self.synced = threading.Event()
        self.events = 0
        self.relists = 0
        self._known: dict[str, Mapping[str, Any]] = {}  # uid -> last object, for synthesized deletions
        self._decoder = PodLineDecoder()  # the watch lines' specs, each decoded once (read-only objects)
        self._stop = threading.Event()
        self._response: StreamedResponse | None = None  # the watch being read, for stop() to end
        self._resume_rv = ""  # the version of the last event delivered: where a broken watch resumes
        self._thread = threading.Thread(target=self._thread_main, name="pod-stream", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ends the thread: a watch blocked in a read sees its connection closed at once."""
        self._stop.set()
        response = self._response
        if response is not None:
            response.abort()

    def _thread_main(self) -> None:
        pool = Http11Pool(self.api.host, ssl_context(self.api.cfg),
                          server_name=getattr(self.api.cfg, "tls_server_name", None))
        backoff = 0.1
        rv = ""
        while not self._stop.is_set():
            self._resume_rv = rv
            try:
                if not rv:
                    rv = self._resume_rv = self.relist()
                    backoff = 0.1
                rv = self._watch(pool, rv)
            except Gone:
                log.info("pod watch expired; relisting")
                rv = ""
            except (ValueError, ApiException, OSError) as exc:  # OSError: timeouts, resets, TLS, a cut body
                if self._stop.is_set():
                    return
                rv = self._resume_rv  # the last event handled before the watch broke ("": relist)
                log.warning("pod watch interrupted; resuming", error=str(exc) or type(exc).__name__,
                            resource_version=rv)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)

    def _params(self, **extra: Any) -> dict[str, str]:
        params = {k: str(v) for k, v in extra.items()}
        if self.field_selector:
            params["fieldSelector"] = self.field_selector
        if self.label_selector:
            params["labelSelector"] = self.label_selector
        return params

    def relist(self) -> str:
        """Full paginated list; objects not seen again are delivered as DELETED. Returns the list's
        resourceVersion (where the watch resumes). `on_relist` hears of it first: a pod watch that expired
        (410) tells that the other kinds' watches are likely stale too."""
        self.on_relist()
        seen: set[str] = set()
        resource_version = ""
        try:
            for items, meta in list_pages(self.api, "/api/v1/pods", self.field_selector, self.page_size):
                resource_version = str(meta.get("resourceVersion") or "")
                for obj in items:
                    obj.setdefault("apiVersion", "v1")
                    obj.setdefault("kind", "Pod")
                    uid = obj["metadata"]["uid"]
                    seen.add(uid)
                    self._deliver("ADDED", obj, uid)
        except ApiException as exc:
            if exc.status == 410:
                raise Gone() from None
            raise
        for uid in [u for u in self._known if u not in seen]:
            self._deliver("DELETED", self._known[uid], uid)
        self.relists += 1
        self.synced.set()
        return resource_version

    def _watch(self, pool: Http11Pool, rv: str) -> str:
        """One watch from `rv` until the server ends it (timeoutSeconds); returns where to resume."""
        params = self._params(watch="1", resourceVersion=rv, allowWatchBookmarks="true",
                              timeoutSeconds=self.watch_timeout)
        headers = {"Accept": JSON, "User-Agent": getattr(self.api, "user_agent", "py-scheduler"),
                   **self.api.auth_headers()}
        response = open_stream(pool, f"/api/v1/pods?{urlencode(params)}", headers, CONNECT_TIMEOUT_S,
                               self.watch_timeout + self.read_grace)
        self._response = response
        try:
            if self._stop.is_set():  # stop() came before there was a response to abort
                return rv
            response.read_head()
            if response.status == 410:
                raise Gone()
            if response.status != 200:
                body = response.read_body().decode("utf-8", "replace")
                raise api_error(response.status, response.reason, body, response.headers)
            for line in response.lines():
                if self._stop.is_set():
                    break
                rv = self._resume_rv = self._handle_line(line, rv)
        finally:
            self._response = None
            response.close()
        return rv

    def _handle_line(self, line: bytes, rv: str) -> str:
        """One watch event; returns the resourceVersion to resume from."""
        ev = self._decoder.loads(line)
        type_ = ev.get("type")
        obj = ev.get("object") or {}
        if type_ == "ERROR":
            if obj.get("code") == 410:
                raise Gone()
            raise ValueError(f"watch error: {obj.get('message')}")
        new_rv = (obj.get("metadata") or {}).get("resourceVersion")
        if type_ != "BOOKMARK":
            self._deliver(type_, obj, obj["metadata"]["uid"])
        return new_rv or rv

    def _deliver(self, type_: str, obj: Mapping[str, Any], uid: str) -> None:
        if type_ == "DELETED":
            self._known.pop(uid, None)
        else:
            self._known[uid] = obj
        self.events += 1
        try:
            self.on_event(type_, obj)
        except Exception:  # one bad event must not stop the stream
            log.exception("pod event handler failed", uid=uid, type=type_)


def wait_synced(stream: PodStream, timeout: float = 300.0) -> bool:
    """Block until the first list was delivered (or timeout)."""
    deadline = time.monotonic() + timeout
    while not stream.synced.wait(0.5):
        if time.monotonic() > deadline:
            return False
    return True
