"""The dashboard's HTTP server: the static page (package data) and its JSON API, on the stdlib.

A door to the cluster with the operator's kubeconfig, so it answers only its own host names: a request
whose Host header names another host is refused (403) before anything is read, as kubectl proxy's
--accept-hosts does (a page on attacker.example whose name was rebound to 127.0.0.1 would otherwise read the
cluster through it), and a write (POST, PUT, PATCH, DELETE) whose Origin (else Referer) is not the dashboard
itself is refused too (another site's page posting to it). A request with neither header is no browser's
cross-site request and is served.

Bounded: a connection that does not send its request line and headers within REQUEST_TIMEOUT is
closed (a slow client cannot hold a thread), at most MAX_IN_FLIGHT requests are served at once (the
rest get 503 at once), request bodies are capped. Answers never carry exception text from inside:
bad input and cluster errors are a DashboardError's one line, anything else is logged here and the
page gets a fixed message. The server keeps serving through every one of them.

API (all GET but the what-if):
  /api/pending                   pods of the profiles' schedulerNames that are not bound
  /api/pod?namespace=NS&name=N   explain's answer as rows, closest nodes first
  /api/nodes                     nodes by zone: requested against allocatable, taints, conditions
  /api/whatif  (POST, YAML body) simulate --from-cluster's placement and capacity's count
  /api/scheduler                 queue sizes, attempts per second, recent decisions
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

import structlog

from scheduler.dashboard.source import MAX_YAML_BYTES, DashboardError, Source

log = structlog.get_logger(__name__)

REQUEST_TIMEOUT = 10.0  # seconds for a client to send its request (headers and body)
MAX_IN_FLIGHT = 8
INTERNAL = "internal error in the dashboard (the details are in its log)"
STATIC_DIR = "static"  # package data of scheduler.dashboard
STATIC = {  # file -> content type: only these names are served
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
# The page loads nothing from elsewhere; the browser enforces it.
CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'"


# The dashboard's own names (kubectl proxy's default --accept-hosts); the bind address is added unless it is a
# wildcard, and --accept-hosts adds more. Matched against the Host header's name, without the port.
LOCAL_HOSTS = (r"localhost", r"127\.0\.0\.1", r"\[::1\]")
WILDCARDS = frozenset({"", "0.0.0.0", "::"})
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def accepted_hosts(bind_host: str, extra: Sequence[str] = ()) -> tuple[re.Pattern[str], ...]:
    """The host names the dashboard answers to: the local ones, the bind address, and ``extra`` (regular
    expressions the whole name must match; a bad one raises ValueError naming it)."""
    own = [] if bind_host in WILDCARDS else [re.escape(f"[{bind_host}]" if ":" in bind_host else bind_host)]
    patterns = []
    for text in (*LOCAL_HOSTS, *own, *extra):
        try:
            patterns.append(re.compile(text, re.IGNORECASE))
        except re.error as exc:
            raise ValueError(f"--accept-hosts {text!r}: {exc}") from None
    return tuple(patterns)


def host_name(host: str) -> str:
    """The name part of a Host header or URL authority: ``[::1]:8080`` -> ``[::1]``, ``a.b:80`` -> ``a.b``."""
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    name, colon, port = host.rpartition(":")
    return name if colon and port.isdigit() else host


def refusal(method: str, host: str | None, origin: str | None, referer: str | None,
            accept: Sequence[re.Pattern[str]]) -> str | None:
    """Why the request is refused, or None. Host must name the dashboard; a write's Origin (else Referer)
    must be the dashboard itself: the same host and port as the Host header, over http or https."""
    if not host or not any(p.fullmatch(host_name(host)) for p in accept):
        return f"host {host_name(host or '')!r} is not one of this dashboard's names (add it with --accept-hosts)"
    if method not in WRITES:
        return None
    source = origin if origin is not None else referer
    if source is None:
        return None
    url = urlsplit(source)
    if url.scheme not in ("http", "https") or url.netloc.lower() != host.lower():
        return f"cross-origin {method} from {source[:200]!r} refused"
    return None


def static_file(name: str) -> bytes:
    """One of the page's files, read from the installed package (a wheel carries them as package data)."""
    return (resources.files("scheduler.dashboard") / STATIC_DIR / name).read_bytes()


class DashboardServer(ThreadingHTTPServer):
    """Serves ``source`` on ``address``; ``serve_forever`` blocks, ``start`` runs it on a daemon thread."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], source: Source, refresh_seconds: float = 5.0,
                 accept: Sequence[re.Pattern[str]] | None = None) -> None:
        self.source = source
        self.refresh_seconds = refresh_seconds
        self.accept = accepted_hosts(address[0]) if accept is None else accept
        self.slots = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/"

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="dashboard-http", daemon=True)
        thread.start()
        return thread

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away or timed out mid-request: nothing to answer, no traceback on stderr."""
        log.debug("dashboard request dropped", client=str(client_address))


class _Handler(BaseHTTPRequestHandler):
    server: DashboardServer
    timeout = REQUEST_TIMEOUT  # socket timeout while the request is read: slow clients are dropped
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        refused = refusal(method, self.headers.get("Host"), self.headers.get("Origin"), self.headers.get("Referer"),
                          self.server.accept)
        if refused is not None:
            log.warning("dashboard request refused", reason=refused, client=self.client_address[0])
            self.close_connection = True  # a body, if any, stays unread
            self._json(403, {"error": refused})
            return
        if not self.server.slots.acquire(blocking=False):
            self._json(503, {"error": "the dashboard is busy; try again in a moment"})
            return
        try:
            self._route(method)
        finally:
            self.server.slots.release()

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if method == "GET" and url.path in ("/", "/index.html"):
            self._static("index.html")
        elif method == "GET" and url.path.startswith("/static/") and url.path[len("/static/"):] in STATIC:
            self._static(url.path[len("/static/"):])
        elif url.path.startswith("/api/"):
            handler = self._api(method, url.path)
            if handler is None:
                self._json(404, {"error": f"no such API: {method} {url.path}"})
                return
            self._answer(lambda: handler(query))
        else:
            self._json(404, {"error": f"not found: {url.path}"})

    def _api(self, method: str, path: str) -> Callable[[dict[str, str]], dict[str, Any]] | None:
        src = self.server.source
        gets: dict[str, Callable[[dict[str, str]], dict[str, Any]]] = {
            "/api/pending": lambda q: src.pending(),
            "/api/pod": lambda q: src.pod(q.get("namespace", ""), q.get("name", "")),
            "/api/nodes": lambda q: src.nodes(),
            "/api/podgroups": lambda q: src.pod_groups(),
            "/api/podgroup": lambda q: src.pod_group(q.get("namespace", ""), q.get("name", "")),
            "/api/scheduler": lambda q: src.scheduler(),
            "/api/config": lambda q: {"refreshSeconds": self.server.refresh_seconds,
                                      "schedulerNames": src.scheduler_names},
        }
        if method == "GET":
            return gets.get(path)
        if method == "POST" and path == "/api/whatif":
            return lambda q: src.what_if(self._body())
        return None

    def _body(self) -> str:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise DashboardError("bad Content-Length", 400) from None
        if length > MAX_YAML_BYTES:
            self.close_connection = True  # the body stays unread
            raise DashboardError(f"the pasted YAML is over {MAX_YAML_BYTES // 1024} KiB", 413)
        return self.rfile.read(length).decode("utf-8", "replace")

    def _answer(self, produce: Callable[[], dict[str, Any]]) -> None:
        try:
            body = produce()
        except DashboardError as exc:
            self._json(exc.status, {"error": str(exc)})
            return
        except Exception:  # never a stack trace on the page; the log has it
            log.exception("dashboard request failed", path=self.path)
            self._json(500, {"error": INTERNAL})
            return
        self._json(200, body)

    def _static(self, name: str) -> None:
        self._reply(200, static_file(name), STATIC[name])

    def _json(self, code: int, body: dict[str, Any]) -> None:
        self._reply(code, json.dumps(body).encode(), "application/json")

    def _reply(self, code: int, body: bytes, content_type: str) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Security-Policy", CSP)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:  # the client hung up: nothing to answer
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("dashboard request", line=format % args)
