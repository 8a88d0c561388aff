"""HTTP health endpoints for the kubelet's probes, and /metrics on the same port.

Why one port: kube-scheduler serves /healthz, /readyz and /metrics together on its secure port
(10259); a Deployment then needs one containerPort for the probes and the metrics Service. Here it is
plain HTTP (the pod network is the trust boundary; no TokenReview/SubjectAccessReview permissions).

* ``/healthz`` (alias ``/livez``): the process answers and every liveness check passes (e.g. the
  leader keeps renewing). Answers from process start, before the initial list.
* ``/readyz``: every readiness check passes (caches synced, leader election leading or standing by).
* ``/metrics``: the Prometheus registry given, if any. A collector that fails answers 500 and a client
  that goes away mid-response is dropped; either counts in ``on_scrape_error`` and the server (and
  the scheduler) carry on.

Responses follow the API server's convention: 200 ``ok``, or 500 with one ``[-]name failed: reason``
line per failing check; ``?verbose`` lists every check with ``[+]``/``[-]``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = structlog.get_logger(__name__)

# A check returns None when healthy, or a short reason when not.
Check = Callable[[], "str | None"]


def event_check(event: threading.Event, reason: str) -> Check:
    """A check that passes once ``event`` is set (e.g. "caches synced")."""
    return lambda: None if event.is_set() else reason


class HealthServer:
    """/healthz, /readyz and /metrics over HTTP on a daemon thread."""

    def __init__(
        self, port: int, addr: str = "0.0.0.0", registry: CollectorRegistry | None = None,
        on_scrape_error: Callable[[], None] | None = None,
    ) -> None:
        self._addr = addr
        self._on_scrape_error = on_scrape_error
        self._requested_port = port
        self._registry = registry
        self._checks: dict[str, dict[str, Check]] = {"/healthz": {}, "/readyz": {}}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def add_liveness_check(self, name: str, check: Check) -> None:
        self._checks["/healthz"][name] = check

    def add_readiness_check(self, name: str, check: Check) -> None:
        self._checks["/readyz"][name] = check

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        if self._server is None:
            raise RuntimeError("HealthServer not started")
        return int(self._server.server_address[1])

    def start(self) -> int:
        """Bind and serve on a daemon thread; returns the port."""
        outer = self

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                """A client that resets while its request is read: counted, never a traceback on stderr."""
                outer._scrape_failed("request failed", sys.exc_info()[1] or Exception("unknown"))

        server = Server((self._addr, self._requested_port), self._handler_class())
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="health-http", daemon=True)
        self._thread.start()
        log.info("health and metrics endpoints serving", port=self.port, paths=["/healthz", "/readyz", "/metrics"])
        return self.port

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _scrape_failed(self, what: str, exc: BaseException) -> None:
        log.debug("metrics scrape failed", reason=what, error=str(exc))
        if self._on_scrape_error is not None:
            self._on_scrape_error()

    def evaluate(self, path: str) -> tuple[bool, list[tuple[str, str | None]]]:
        """Run the checks of ``/healthz`` or ``/readyz``: (all passed, [(name, reason or None)])."""
        results: list[tuple[str, str | None]] = []
        for name, check in list(self._checks[path].items()):
            try:
                reason = check()
            except Exception as exc:  # a broken check is a failing check, never a crashed probe
                reason = f"check raised {type(exc).__name__}: {exc}"
            results.append((name, reason))
        return all(r is None for _, r in results), results

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                path = "/healthz" if url.path == "/livez" else url.path
                if path == "/metrics" and outer._registry is not None:
                    self._metrics(outer._registry)
                    return
                if path not in outer._checks:
                    self._reply(404, b"not found\n", "text/plain; charset=utf-8")
                    return
                ok, results = outer.evaluate(path)
                verbose = "verbose" in parse_qs(url.query, keep_blank_values=True)
                lines = [
                    f"[+]{name} ok" if reason is None else f"[-]{name} failed: {reason}"
                    for name, reason in results
                    if verbose or reason is not None
                ]
                if not ok:
                    lines.append(f"{path[1:]} check failed")
                else:
                    lines.append(f"{path[1:]} check passed" if verbose else "ok")
                self._reply(200 if ok else 500, ("\n".join(lines) + "\n").encode(), "text/plain; charset=utf-8")

            def _metrics(self, registry: CollectorRegistry) -> None:
                try:
                    body = generate_latest(registry)
                except Exception as exc:  # e.g. a collector reading state that is being torn down
                    outer._scrape_failed("collecting metrics failed", exc)
                    self._reply(500, f"collecting metrics failed: {exc}\n".encode(), "text/plain; charset=utf-8")
                    return
                self._reply(200, body, CONTENT_TYPE_LATEST)

            def _reply(self, code: int, body: bytes, content_type: str) -> None:
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.send_header("Cache-Control", "no-store")
                    self.end_headers()
                    self.wfile.write(body)
                    self.wfile.flush()
                except OSError as exc:  # the client hung up (broken pipe, reset): nothing to answer
                    self.close_connection = True
                    outer._scrape_failed("client went away", exc)

            def log_message(self, format: str, *args: Any) -> None:
                return  # probes every few seconds would flood the log

        return Handler
