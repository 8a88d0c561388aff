"""Http11Pool against a scripted local HTTP/1.1 server (plain sockets): framing, reuse, stale connections."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from scheduler.kube.client import segment
from scheduler.kube.http11 import ConnectionClosed, Http11Pool, _Conn
from tests.socket_server import LocalSocketServer, read_request_head


class ScriptedServer(LocalSocketServer):
    """Answers each request with the next scripted raw response; ``None`` closes the connection without
    answering. Records the requests (head and body) and counts connections."""

    def __init__(self, responses: list[bytes | None], close_after: set[int] | None = None) -> None:
        self.responses = list(responses)
        self.close_after = close_after or set()  # response indexes after which the server closes
        self.requests: list[bytes] = []
        self._served = 0
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buf) < length:
                    buf += conn.recv(65536)
                body, buf = buf[:length], buf[length:]
                self.requests.append(head + b"\r\n\r\n" + body)
                index = self._served
                self._served += 1
                response = self.responses[index]
                if response is None:
                    return
                conn.sendall(response)
                if index in self.close_after:
                    return


def ok(body: bytes, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


@pytest.fixture
def server_factory() -> Iterator[list[ScriptedServer]]:
    made: list[ScriptedServer] = []
    yield made
    for s in made:
        s.close()


def start(made: list[ScriptedServer], responses: list[bytes | None], close_after: set[int] | None = None) -> tuple[
        ScriptedServer, Http11Pool]:
    server = ScriptedServer(responses, close_after)
    made.append(server)
    return server, Http11Pool(f"http://127.0.0.1:{server.port}/prefix", None, timeout=5)


def test_keep_alive_reuses_one_connection_and_sends_the_body(server_factory: list[ScriptedServer]) -> None:
    server, pool = start(server_factory, [ok(b'{"a":1}'), ok(b"second"), ok(b"")])
    r = pool.request("POST", "/api/x", {"Content-Type": "application/json"}, b'{"k":"v"}')
    assert (r.status, r.reason, r.body) == (200, "OK", b'{"a":1}')
    assert pool.request("GET", "/api/y", {}).body == b"second"
    assert pool.request("DELETE", "/api/z", {}).body == b""
    assert server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST /prefix/api/x HTTP/1.1\r\n")
    assert b"Content-Length: 9\r\n" in first and first.endswith(b'{"k":"v"}')
    assert f"Host: 127.0.0.1:{server.port}".encode() in first


def test_chunked_and_read_to_close_bodies(server_factory: list[ScriptedServer]) -> None:
    chunked = (b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"4\r\nWiki\r\n6;ext=1\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n0\r\nX-Trailer: y\r\n\r\n")
    to_close = b"HTTP/1.1 200 OK\r\n\r\nuntil the end"
    server, pool = start(server_factory, [chunked, to_close, ok(b"again")], close_after={1})
    r = pool.request("GET", "/c", {})
    assert (r.status, r.body) == (201, b"Wikipedia in \r\n\r\nchunks.")
    assert pool.request("GET", "/d", {}).body == b"until the end"
    assert pool.request("GET", "/e", {}).body == b"again"  # a body read to close is never reused
    assert server.connections == 2


def test_connection_close_header_is_honoured(server_factory: list[ScriptedServer]) -> None:
    server, pool = start(server_factory, [ok(b"x", "Connection: close\r\n"), ok(b"y")], close_after={0})
    assert pool.request("GET", "/a", {}).body == b"x"
    assert pool.request("GET", "/b", {}).body == b"y"
    assert server.connections == 2


def test_stale_idle_connection_is_retried_once_on_a_new_one(server_factory: list[ScriptedServer]) -> None:
    # The server drops the reused connection without answering the second request.
    server, pool = start(server_factory, [ok(b"1"), None, ok(b"2")])
    assert pool.request("GET", "/a", {}).body == b"1"
    assert pool.request("POST", "/b", {}, b"{}").body == b"2"
    assert server.connections == 2
    assert len(server.requests) == 3


def test_after_a_server_restart_every_idle_connection_is_dropped_at_once(server_factory: list[ScriptedServer]) -> None:
    """Several idle connections a restarted server has closed: the first failure drops them all, so the
    request succeeds on a new connection instead of failing on the second stale one (an API server
    restart kept the pod relist failing for 25 s in the chaos suite before this)."""
    server, pool = start(server_factory, [ok(b"fresh")])
    closer = socket.socket()
    closer.bind(("127.0.0.1", 0))
    closer.listen(8)
    dead = []
    for _ in range(3):
        sock = socket.create_connection(closer.getsockname())
        closer.accept()[0].close()
        dead.append(sock)
    pool._idle.extend(_Conn(sock) for sock in dead)
    assert pool.request("GET", "/a", {}).body == b"fresh"
    assert server.connections == 1 and len(pool._idle) == 1
    closer.close()


def test_a_fresh_connection_that_closes_is_an_error(server_factory: list[ScriptedServer]) -> None:
    _, pool = start(server_factory, [None])
    with pytest.raises(ConnectionClosed):
        pool.request("GET", "/a", {})


def test_error_statuses_are_returned_with_headers(server_factory: list[ScriptedServer]) -> None:
    body = b'{"kind":"Status","code":409}'
    raw = f"HTTP/1.1 409 Conflict\r\nContent-Length: {len(body)}\r\nRetry-After: 2\r\n\r\n".encode() + body
    _, pool = start(server_factory, [raw])
    r = pool.request("POST", "/bind", {}, b"{}")
    assert (r.status, r.reason, r.headers["retry-after"], r.body) == (409, "Conflict", "2", body)


def test_only_http_urls() -> None:
    with pytest.raises(ValueError, match="unsupported server URL"):
        Http11Pool("ftp://example", None)


def test_a_large_body_arrives_whole_and_the_connection_is_reused(server_factory: list[ScriptedServer]) -> None:
    """A LIST page runs to megabytes: many reads joined into one body, nothing left over for the next."""
    big = bytes(range(256)) * 8192  # 2 MiB
    server, pool = start(server_factory, [ok(big), ok(b"next")])
    assert pool.request("GET", "/big", {}).body == big
    assert pool.request("GET", "/next", {}).body == b"next"
    assert server.connections == 1


def test_the_per_request_timeout_bounds_the_wait_for_an_answer() -> None:
    """The lease's requests must give up before the renew deadline, whatever the pool's default."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts (in the backlog) but never answers
    try:
        pool = Http11Pool(f"http://127.0.0.1:{silent.getsockname()[1]}", None, timeout=30)
        with pytest.raises(TimeoutError):
            pool.request("GET", "/lease", {}, timeout=0.2)
    finally:
        silent.close()


def test_a_pipeline_sends_every_request_in_one_write_and_reads_the_answers_in_order(
        server_factory: list[ScriptedServer]) -> None:
    server, pool = start(server_factory, [ok(b"one"), ok(b"two"), ok(b"three")])
    answers = pool.pipeline([("POST", "/e", {"Content-Type": "application/json"}, b'{"n":1}'),
                             ("POST", "/e", "Content-Type: application/json\r\n", b'{"n":22}'),
                             ("GET", "/g", {}, None)])
    assert [a.body for a in answers if not isinstance(a, Exception)] == [b"one", b"two", b"three"]
    assert server.connections == 1 and len(pool._idle) == 1
    assert server.requests[1].startswith(b"POST /prefix/e HTTP/1.1\r\n") and server.requests[1].endswith(b'{"n":22}')
    assert b"Content-Length: 8\r\nContent-Type" not in server.requests[1]  # rendered headers come first
    assert b"Content-Type: application/json\r\nContent-Length: 8\r\n\r\n" in server.requests[1]
    assert b"Content-Length" not in server.requests[2]


def test_a_pipeline_cut_short_reports_the_unanswered_requests(server_factory: list[ScriptedServer]) -> None:
    """A server that closes after the first answer (Connection: close) or drops the connection: the answered
    requests keep their answers, each unanswered one gets a ConnectionClosed, and the connection is not kept."""
    _, pool = start(server_factory, [ok(b"a", "Connection: close\r\n"), ok(b"b")], close_after={0})
    answers = pool.pipeline([("POST", "/e", {}, b"1"), ("POST", "/e", {}, b"2")])
    assert not isinstance(answers[0], Exception) and answers[0].body == b"a"
    assert isinstance(answers[1], ConnectionClosed)
    assert not pool._idle
    server2, pool2 = start(server_factory, [ok(b"a"), None])
    answers = pool2.pipeline([("POST", "/e", {}, b"1"), ("POST", "/e", {}, b"2"), ("POST", "/e", {}, b"3")])
    assert not isinstance(answers[0], Exception) and answers[0].body == b"a"
    assert all(isinstance(a, OSError) for a in answers[1:])
    assert not pool2._idle and server2.connections == 1


def test_a_pipeline_on_a_stale_idle_connection_goes_out_again_on_a_new_one(
        server_factory: list[ScriptedServer]) -> None:
    server, pool = start(server_factory, [ok(b"1"), None, ok(b"x"), ok(b"y")])
    assert pool.request("GET", "/a", {}).body == b"1"
    answers = pool.pipeline([("POST", "/e", {}, b"1"), ("POST", "/e", {}, b"2")])
    assert [a.body for a in answers if not isinstance(a, Exception)] == [b"x", b"y"]
    assert server.connections == 2


def test_framing_headers_are_read_whatever_their_case_and_the_rest_on_demand(
        server_factory: list[ScriptedServer]) -> None:
    raw = (b"HTTP/1.1 200 OK\r\nX-Content-Length-Hint: 99\r\ncontent-LENGTH: 3\r\nAudit-Id: abc\r\n"
           b"CONNECTION: Close\r\n\r\nxyz")
    server, pool = start(server_factory, [raw, ok(b"again")], close_after={0})
    r = pool.request("GET", "/a", {})
    assert r.body == b"xyz" and not pool._idle  # "Close" in any case ends the connection
    assert r.headers["audit-id"] == "abc" and r.headers["content-length"] == "3"
    assert pool.request("GET", "/b", {}).body == b"again"
    assert server.connections == 2


@pytest.mark.parametrize("text", ["ns-1", "pod.name_x~y", "", "a b", "ünï", "a/b", "x%2F", "p?q#r"])
def test_a_path_segment_is_quoted_as_quote_does(text: str) -> None:
    assert segment(text) == quote(text)


def test_a_reused_connection_keeps_its_timeout_until_a_request_asks_for_another(
        server_factory: list[ScriptedServer], monkeypatch: pytest.MonkeyPatch) -> None:
    """settimeout is a system call (FIONBIO) that gives the GIL away: made only when the timeout changes."""
    _, pool = start(server_factory, [ok(b"1"), ok(b"2"), ok(b"3"), ok(b"4")])
    assert pool.request("GET", "/a", {}).body == b"1"
    conn = pool._idle[0]
    calls: list[float | None] = []
    monkeypatch.setattr(conn, "sock", _Recording(conn.sock, calls))
    assert pool.request("GET", "/b", {}).body == b"2"
    assert pool.request("GET", "/c", {}).body == b"3"
    assert calls == []
    assert pool.request("GET", "/d", {}, timeout=2.5).body == b"4"
    assert calls == [2.5]


class _Recording:
    """A socket whose settimeout calls are recorded (everything else passes through)."""

    def __init__(self, sock: socket.socket, calls: list[float | None]) -> None:
        self._sock, self._calls = sock, calls

    def settimeout(self, value: float | None) -> None:
        self._calls.append(value)
        self._sock.settimeout(value)

    def __getattr__(self, name: str) -> object:
        return getattr(self._sock, name)


class GatheringServer(LocalSocketServer):
    """Answers each request with its own body, but only once ``expect`` requests have arrived (on any
    connections): a client that read an answer before sending every request would wait forever (5 s here,
    then the server answers 503). A body of ``drop`` closes the connection unanswered, ``conflict`` is a 409."""

    def __init__(self, expect: int) -> None:
        self.barrier = threading.Barrier(expect, timeout=5)
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        with conn:
            while True:
                data = read_request_head(conn)
                if data is None:
                    return
                head, _, body = data.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(body) < length:
                    body += conn.recv(65536)
                try:
                    self.barrier.wait()
                except threading.BrokenBarrierError:
                    conn.sendall(b"HTTP/1.1 503 Unavailable\r\nContent-Length: 0\r\n\r\n")
                    return
                if body == b"drop":
                    return
                status = "409 Conflict" if body == b"conflict" else "200 OK"
                conn.sendall(f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)


def test_a_fanout_sends_every_request_on_a_connection_of_its_own_before_reading_any_answer() -> None:
    server = GatheringServer(expect=3)
    try:
        pool = Http11Pool(f"http://127.0.0.1:{server.port}", None, timeout=10)
        answers = pool.fanout([("POST", "/b", {}, b"one"), ("POST", "/b", {}, b"conflict"), ("POST", "/b", {}, b"3")])
        assert [(a.status, a.body) for a in answers if not isinstance(a, Exception)] == [
            (200, b"one"), (409, b"conflict"), (200, b"3")]
        assert server.connections == 3 and len(pool._idle) == 3
        server.barrier.reset()
        answers = pool.fanout([("POST", "/b", {}, b"x"), ("POST", "/b", {}, b"y"), ("POST", "/b", {}, b"z")])
        assert [a.body for a in answers if not isinstance(a, Exception)] == [b"x", b"y", b"z"]
        assert server.connections == 3, "the idle connections were reused"
        server.barrier.reset()
        fresh = Http11Pool(f"http://127.0.0.1:{server.port}", None, timeout=10)
        answers = fresh.fanout([("POST", "/b", {}, b"x"), ("POST", "/b", {}, b"drop"), ("POST", "/b", {}, b"z")])
        assert not isinstance(answers[0], Exception) and answers[0].body == b"x"
        assert isinstance(answers[1], OSError), "an answer lost on a new connection is the caller's to judge"
        assert not isinstance(answers[2], Exception) and answers[2].body == b"z"
        assert len(fresh._idle) == 2
    finally:
        server.close()


def test_a_fanout_request_on_a_stale_idle_connection_goes_out_again_alone(
        server_factory: list[ScriptedServer]) -> None:
    server, pool = start(server_factory, [ok(b"1"), None, ok(b"again")])
    assert pool.request("GET", "/a", {}).body == b"1"
    answers = pool.fanout([("POST", "/e", {}, b"1")])
    assert [a.body for a in answers if not isinstance(a, Exception)] == [b"again"]
    assert server.connections == 2
