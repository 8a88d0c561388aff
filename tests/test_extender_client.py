"""The extender client's limits (scheduler/extender.py), against raw sockets that misbehave: no redirect is
followed, httpTimeout bounds the whole exchange, answers are capped, URLs lose their credentials in messages,
and turning certificate verification off is said."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator

import pytest
from structlog.testing import capture_logs

from scheduler import extender as extender_module
from scheduler.config.types import Extender as ExtenderConfig
from scheduler.config.types import ExtenderTLSConfig
from scheduler.extender import HTTPExtender, redact
from scheduler.framework.extender import ExtenderError
from tests.socket_server import LocalSocketServer, read_request_head


class RawServer(LocalSocketServer):
    """Accepts connections on 127.0.0.1 and hands each request's connection to ``serve`` (on its own thread)."""

    def __init__(self, serve: Callable[[socket.socket], None]) -> None:
        self.requests: list[bytes] = []
        self._serve = serve
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            data = read_request_head(conn)
            if data is None:
                return
            self.requests.append(data)
            with contextlib.suppress(OSError):  # the client hung up
                self._serve(conn)


@pytest.fixture
def servers() -> Iterator[list[RawServer]]:
    made: list[RawServer] = []
    yield made
    for s in made:
        s.close()


def serve(servers: list[RawServer], fn: Callable[[socket.socket], None]) -> RawServer:
    s = RawServer(fn)
    servers.append(s)
    return s


def client(url: str, timeout: float = 5.0, **kw: object) -> HTTPExtender:
    return HTTPExtender(ExtenderConfig(url_prefix=url, filter_verb="filter", http_timeout_seconds=timeout, **kw))


def test_a_redirect_is_an_error_not_a_request_elsewhere(servers: list[RawServer]) -> None:
    elsewhere = serve(servers, lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"))
    location = f"http://127.0.0.1:{elsewhere.port}/steal".encode()
    redirecting = serve(servers, lambda c: c.sendall(
        b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\nContent-Length: 0\r\n\r\n"))
    with pytest.raises(ExtenderError, match="code 302"):
        client(f"http://127.0.0.1:{redirecting.port}")._send("filter", {"Pod": {}})
    assert elsewhere.requests == []


def test_http_timeout_bounds_the_whole_exchange(servers: list[RawServer]) -> None:
    """An extender that answers one byte every 50 ms for 30 s never lets a per-read timeout expire."""
    def trickle(c: socket.socket) -> None:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 600\r\n\r\n")
        for _ in range(600):
            c.sendall(b" ")
            time.sleep(0.05)

    slow = serve(servers, trickle)
    with pytest.raises(ExtenderError, match=r"timed out after 0\.5s"):
        client(f"http://127.0.0.1:{slow.port}", timeout=0.5)._send("filter", {"Pod": {}})


def test_an_answer_beyond_the_cap_is_refused(servers: list[RawServer], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extender_module, "MAX_RESPONSE_BYTES", 1000)
    body = b"[" + b"0," * 1000 + b"0]"
    declared = serve(servers, lambda c: c.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body))
    chunked = serve(servers, lambda c: c.sendall(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"))
    for s in (declared, chunked):
        with pytest.raises(ExtenderError, match="exceeds 1000 bytes"):
            client(f"http://127.0.0.1:{s.port}")._send("filter", {"Pod": {}})


def test_messages_name_the_url_without_credentials(servers: list[RawServer]) -> None:
    failing = serve(servers, lambda c: c.sendall(b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n"))
    with pytest.raises(ExtenderError) as err:
        client(f"http://user:s3cret@127.0.0.1:{failing.port}/x")._send("filter", {"Pod": {}})
    assert "s3cret" not in str(err.value) and "user" not in str(err.value)
    assert f"http://127.0.0.1:{failing.port}/x/filter" in str(err.value)
    assert redact("https://a:b@[::1]:8443/p?q=1") == "https://[::1]:8443/p?q=1"
    assert redact("http://host/p") == "http://host/p"


def test_turning_verification_off_is_logged() -> None:
    with capture_logs() as logs:
        client("https://user:pw@ext.example:8443", enable_https=True)
        client("https://ext.example:8443", tls_config=ExtenderTLSConfig(insecure=True))
        client("https://ext.example:8443", enable_https=True, tls_config=ExtenderTLSConfig(ca_data=CA))
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert [e["extender"] for e in warnings] == ["https://ext.example:8443", "https://ext.example:8443"]


# A CA certificate (made once for this test; no key needed): verification stays on with it.
def _ca() -> bytes:
    from scheduler.serving.serving import self_signed_tls_context

    return self_signed_tls_context()[1]


CA = _ca()
