"""The health and metrics transport (serving/serving.py) through real sockets: TLS, the request guard, and the
limits that keep idle, slow or oversized clients from taking the port down."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry, Counter

from scheduler.serving.delegated_auth import DelegatedAuth
from scheduler.serving.health import HealthServer
from scheduler.serving.serving import Request, Response, ServingLimits, self_signed_tls_context


def get(port: int, path: str, tls: bool = False, headers: dict[str, str] | None = None,
        ca: bytes | None = None) -> tuple[int, bytes]:
    """One request on a new connection (HTTP/1.1, Connection: close): (status, body)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock: socket.socket = raw
    if tls:
        ctx = ssl.create_default_context(cadata=ca.decode()) if ca else ssl._create_unverified_context()
        sock = ctx.wrap_socket(raw, server_hostname="localhost")
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{extra}\r\n".encode())
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


class RefuseMetrics:
    """A guard that refuses everything it is asked about, and remembers what."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def admit(self, request: Request) -> Response | None:
        self.asked.append(request.path)
        return Response(403, b"no\n")


@pytest.fixture
def registry() -> CollectorRegistry:
    r = CollectorRegistry()
    Counter("py_scheduler_test_total", "a test counter", registry=r).inc()
    return r


@pytest.fixture
def tls_server(registry: CollectorRegistry) -> Iterator[tuple[HealthServer, RefuseMetrics, bytes]]:
    guard = RefuseMetrics()
    ctx, ca = self_signed_tls_context()
    server = HealthServer(registry=registry, limits=ServingLimits(header_timeout=2.0))
    server.add_listener("127.0.0.1", 0, tls=ctx, guard=guard)
    server.start()
    yield server, guard, ca
    server.stop()


def test_tls_with_a_certificate_made_at_start(tls_server: tuple[HealthServer, RefuseMetrics, bytes]) -> None:
    server, guard, ca = tls_server
    assert get(server.port, "/healthz", tls=True, ca=ca) == (200, b"ok\n")  # verified against the CA made
    assert get(server.port, "/livez", tls=True)[0] == 200
    assert get(server.port, "/readyz", tls=True)[0] == 200
    assert guard.asked == [], "the health paths never wait on the guard"
    assert get(server.port, "/metrics", tls=True) == (403, b"no\n")
    assert get(server.port, "/elsewhere", tls=True) == (403, b"no\n")
    assert guard.asked == ["/metrics", "/elsewhere"]


def test_plain_http_is_not_answered_on_the_tls_port(tls_server: tuple[HealthServer, RefuseMetrics, bytes]) -> None:
    server, _, _ = tls_server
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    assert b"py_scheduler_test_total" not in data and not data.startswith(b"HTTP/1.1 200")


def test_held_connections_do_not_keep_a_probe_out(registry: CollectorRegistry) -> None:
    """600 connections that send nothing and 100 that stop halfway through a request head are all held
    open while /healthz is asked, over plain HTTP and over TLS."""
    ctx, _ = self_signed_tls_context()
    server = HealthServer(0, registry=registry)
    server.add_listener("127.0.0.1", 0, tls=ctx, guard=RefuseMetrics())
    server.start()
    plain, secure = server.ports
    held: list[socket.socket] = []
    try:
        for port in (plain, secure):
            for _ in range(300):
                held.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        for _ in range(50):
            s = socket.create_connection(("127.0.0.1", plain), timeout=10)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            held.append(s)
            t = ssl._create_unverified_context().wrap_socket(
                socket.create_connection(("127.0.0.1", secure), timeout=10), server_hostname="localhost")
            t.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            held.append(t)
        _wait_for(lambda: server.open_connections() == len(held))
        assert get(plain, "/healthz") == (200, b"ok\n")
        assert get(secure, "/healthz", tls=True) == (200, b"ok\n")
        assert server.open_connections() >= len(held), "the held connections are still open"
    finally:
        for s in held:
            s.close()
        server.stop()


def test_at_the_connection_cap_the_oldest_waiting_connection_makes_room(registry: CollectorRegistry) -> None:
    server = HealthServer(0, registry=registry, limits=ServingLimits(max_connections=5))
    server.start()
    held = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(5)]
    try:
        _wait_for(lambda: server.open_connections() == 5)
        assert get(server.port, "/healthz") == (200, b"ok\n")
        assert held[0].recv(1) == b"", "the oldest idle connection was closed for the probe"
    finally:
        for s in held:
            s.close()
        server.stop()


def test_a_request_head_that_does_not_finish_in_time_is_dropped(registry: CollectorRegistry) -> None:
    server = HealthServer(0, registry=registry, limits=ServingLimits(header_timeout=0.3))
    server.start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            assert s.recv(1) == b""  # closed by the server, with no answer
        _wait_for(lambda: server.open_connections() == 0)
    finally:
        server.stop()


def test_oversized_heads_bodies_and_other_methods_are_refused(registry: CollectorRegistry) -> None:
    server = HealthServer(0, registry=registry, limits=ServingLimits(max_header_bytes=1024))
    server.start()
    try:
        assert get(server.port, "/healthz", headers={"X-Big": "x" * 2000})[0] == 431
        for request, status in ((b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 405),
                                (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 413),
                                (b"nonsense\r\n\r\n", 400)):
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
                s.sendall(request)
                assert s.recv(4096).split(b" ", 2)[1] == str(status).encode()
        assert get(server.port, "/metrics")[0] == 200  # and the server still answers
    finally:
        server.stop()


def test_keep_alive_serves_several_requests_on_one_connection(registry: CollectorRegistry) -> None:
    server = HealthServer(0, registry=registry)
    server.start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            for _ in range(3):
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                reply = b""
                while not reply.endswith(b"ok\n"):
                    reply += s.recv(4096)
                assert reply.startswith(b"HTTP/1.1 200")
    finally:
        server.stop()


def _wait_for(condition: Any, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met"
        time.sleep(0.02)


# --- delegated authentication and authorization ---------------------------------------------------------


class FakeApi:
    """Answers TokenReviews and SubjectAccessReviews as an API server would, counting them."""

    def __init__(self, tokens: dict[str, str], allowed: set[str]) -> None:
        self.tokens = tokens  # token -> user name
        self.allowed = allowed  # user names that may get /metrics
        self.calls: list[tuple[str, Any]] = []
        self.failing = False

    def request(self, method: str, path: str, body: Any = None, content_type: str = "", timeout: float | None = None,
                ) -> bytes:
        self.calls.append((path, body))
        if self.failing:
            raise ConnectionError("secret detail")
        spec = body["spec"]
        if path.endswith("/tokenreviews"):
            user = self.tokens.get(spec["token"])
            status: dict[str, Any] = {"authenticated": user is not None}
            if user:
                status["user"] = {"username": user, "uid": f"uid-{user}", "groups": ["system:authenticated"]}
            return orjson.dumps({"status": status})
        allowed = spec["user"] in self.allowed and spec["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
        return orjson.dumps({"status": {"allowed": allowed}})


def request(token: str | None = None, path: str = "/metrics", scheme: str = "Bearer") -> Request:
    headers = {"authorization": f"{scheme} {token}"} if token is not None else {}
    return Request("GET", path, "", headers)


def test_tokens_are_reviewed_and_requests_authorized_through_the_api() -> None:
    api = FakeApi({"good": "system:serviceaccount:mon:prometheus", "other": "system:serviceaccount:x:y"},
                  {"system:serviceaccount:mon:prometheus"})
    auth = DelegatedAuth(api)
    assert auth.admit(request("good")) is None
    refused = auth.admit(request("other"))
    assert refused is not None and refused.status == 403
    message = orjson.loads(refused.body)["message"]
    assert message == 'forbidden: User "system:serviceaccount:x:y" cannot get path "/metrics"'
    unknown = auth.admit(request("forged"))
    assert unknown is not None and unknown.status == 401
    basic = auth.admit(request("dXNlcjpwYXNz", scheme="Basic"))
    assert basic is not None and basic.status == 401
    # Anonymous, as kube-scheduler: RBAC decides (system:anonymous is not allowed here).
    anonymous = auth.admit(request())
    assert anonymous is not None and anonymous.status == 403 and b"system:anonymous" in anonymous.body
    sar = [body["spec"] for path, body in api.calls if path.endswith("subjectaccessreviews")]
    assert sar[0] == {"user": "system:serviceaccount:mon:prometheus", "groups": ["system:authenticated"],
                      "uid": "uid-system:serviceaccount:mon:prometheus",
                      "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    assert sar[-1]["user"] == "system:anonymous" and sar[-1]["groups"] == ["system:unauthenticated"]


def test_answers_are_cached_for_their_ttl() -> None:
    now = [0.0]
    api = FakeApi({"good": "alice"}, {"alice"})
    auth = DelegatedAuth(api, clock=lambda: now[0])
    for _ in range(5):
        assert auth.admit(request("good")) is None
    assert len(api.calls) == 2  # one TokenReview, one SubjectAccessReview
    now[0] = 10.5
    assert auth.admit(request("good")) is None
    assert len(api.calls) == 4


def test_an_unreachable_api_server_refuses_without_details() -> None:
    api = FakeApi({"good": "alice"}, {"alice"})
    api.failing = True
    refused = DelegatedAuth(api).admit(request("good"))
    assert refused is not None and refused.status == 401 and b"secret detail" not in refused.body
    api.failing = False
    auth = DelegatedAuth(api)
    auth.authenticate("good")
    api.failing = True
    failed = auth.admit(request("good"))
    assert failed is not None and failed.status == 500 and b"secret detail" not in failed.body
