"""Health endpoints for the kubelet's probes, and /metrics beside them.

Why together: kube-scheduler serves /healthz, /readyz, /livez and /metrics on its secure port (10259,
``--secure-port``), over TLS, authenticating bearer tokens with a TokenReview and authorizing each
request with a SubjectAccessReview (non-resource path, verb get), except the health paths, which are
always allowed (``--authorization-always-allow-paths``). A ``Guard`` does that here (serving/delegated_auth.py);
a listener without one (``--metrics-port``, bound to 127.0.0.1 only) serves everything to local clients.

* ``/healthz`` (alias ``/livez``): the process answers and every liveness check passes (e.g. the
  leader keeps renewing). Answers from process start, before the initial list.
* ``/readyz``: every readiness check passes (caches synced, leader election leading or standing by).
* ``/metrics``: the Prometheus registry given, if any. A collector that fails answers 500 and a client
  that goes away mid-response is dropped; either counts in ``on_scrape_error`` and the server (and
  the scheduler) carry on.

Responses follow the API server's convention: 200 ``ok``, or 500 with one ``[-]name failed: reason``
line per failing check; ``?verbose`` lists every check with ``[+]``/``[-]``. A check or a collector that
raises is reported without its exception text (that goes to the log). The transport, its limits and
TLS are in serving/serving.py.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from scheduler.serving.serving import HttpServer, Listener, Request, Response, ServingLimits

log = structlog.get_logger(__name__)

# A check returns None when healthy, or a short reason when not.
Check = Callable[[], "str | None"]


def event_check(event: threading.Event, reason: str) -> Check:
    """A check that passes once ``event`` is set (e.g. "caches synced")."""
    return lambda: None if event.is_set() else reason


ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")


class Guard(Protocol):
    """Authentication and authorization of a request (blocking: it may ask the API server)."""

    def admit(self, request: Request) -> Response | None:
        """None when the request may be served, else the response refusing it (401, 403)."""
        ...


class HealthServer:
    """/healthz, /readyz and /metrics on one or more listeners, served from one thread."""

    def __init__(
        self, port: int | None = None, addr: str = "127.0.0.1", registry: CollectorRegistry | None = None,
        on_scrape_error: Callable[[], None] | None = None, limits: ServingLimits | None = None,
    ) -> None:
        self._on_scrape_error = on_scrape_error
        self._registry = registry
        self._checks: dict[str, dict[str, Check]] = {"/healthz": {}, "/readyz": {}}
        self._http = HttpServer()
        self._limits = limits or ServingLimits()
        self._started = False
        if port is not None:
            self.add_listener(addr, port)

    def add_listener(
        self, host: str, port: int, tls: ssl.SSLContext | None = None, guard: Guard | None = None,
        always_allow_paths: Sequence[str] = ALWAYS_ALLOW_PATHS,
    ) -> None:
        """Serve on ``host:port`` too: over TLS when ``tls`` is given; through ``guard`` for every path
        but ``always_allow_paths`` (which never wait on it)."""
        open_paths = frozenset(always_allow_paths)

        def guarded(request: Request) -> bool:
            return guard is not None and request.path not in open_paths

        def handle(request: Request) -> Response:
            if guarded(request):
                assert guard is not None
                refusal = guard.admit(request)
                if refusal is not None:
                    return refusal
            return self.respond(request)

        def blocking(request: Request) -> bool:
            return guarded(request) or request.path == "/metrics"

        self._http.add(Listener(host, port, handle, blocking, tls, self._limits))

    def add_liveness_check(self, name: str, check: Check) -> None:
        self._checks["/healthz"][name] = check

    def add_readiness_check(self, name: str, check: Check) -> None:
        self._checks["/readyz"][name] = check

    @property
    def port(self) -> int:
        """The first listener's bound port (useful with port 0)."""
        if not self._started:
            raise RuntimeError("HealthServer not started")
        return self._http.ports[0]

    @property
    def ports(self) -> list[int]:
        return self._http.ports

    def open_connections(self) -> int:
        return self._http.open_connections()

    def start(self) -> int:
        """Bind every listener and serve on a daemon thread; returns the first one's port."""
        ports = self._http.start()
        self._started = True
        log.info("health and metrics endpoints serving", ports=ports, paths=["/healthz", "/readyz", "/metrics"])
        return ports[0]

    def stop(self) -> None:
        self._http.stop()

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
                log.warning("health check raised", check=name, error=f"{type(exc).__name__}: {exc}")
                reason = "check raised an exception"
            results.append((name, reason))
        return all(r is None for _, r in results), results

    def respond(self, request: Request) -> Response:
        """The answer for an admitted request."""
        path = "/healthz" if request.path == "/livez" else request.path
        if path == "/metrics" and self._registry is not None:
            return self._metrics(self._registry)
        if path not in self._checks:
            return Response(404, b"not found\n")
        ok, results = self.evaluate(path)
        verbose = any(part.split("=", 1)[0] == "verbose" for part in request.query.split("&"))
        lines = [
            f"[+]{name} ok" if reason is None else f"[-]{name} failed: {reason}"
            for name, reason in results
            if verbose or reason is not None
        ]
        if not ok:
            lines.append(f"{path[1:]} check failed")
        else:
            lines.append(f"{path[1:]} check passed" if verbose else "ok")
        return Response(200 if ok else 500, ("\n".join(lines) + "\n").encode())

    def _metrics(self, registry: CollectorRegistry) -> Response:
        try:
            body = generate_latest(registry)
        except Exception as exc:  # e.g. a collector reading state that is being torn down
            self._scrape_failed("collecting metrics failed", exc)
            return Response(500, b"collecting metrics failed\n")
        return Response(200, body, CONTENT_TYPE_LATEST)
