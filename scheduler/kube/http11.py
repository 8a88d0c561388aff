"""A small HTTP/1.1 keep-alive client for the scheduler's requests (lists, the Lease and every write).

Every scheduled pod costs two writes (the Binding and the Scheduled event). Through urllib3 and
http.client each took about 420 us of CPU for a small JSON exchange (status line and headers parsed by
the email package, pool bookkeeping, URL parsing), through a plain socket about 110 us (measured on a
loopback API server). This client sends a request and reads one response (Content-Length, chunked or
read-to-close bodies) over pooled TLS or plain connections, nothing more: no proxies, no redirects, no
compression (RawApi falls back to urllib3 when a proxy is configured).

``pipeline`` sends several requests in one write on one connection and reads their answers in order
(HTTP/1.1 pipelining; Go's net/http server, kube-apiserver's, answers them one after another): the
Scheduled events of a burst of bindings cost one send, fewer reads and one thread wake-up instead of one
each. Only the framing headers of an answer are read eagerly; the others are parsed when asked for.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

_CRLF = b"\r\n"
_END_OF_HEAD = b"\r\n\r\n"
_RECV = 65536
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class ConnectionClosed(ConnectionError):
    """The server closed the connection before a whole response arrived."""


@dataclass(slots=True)
class Response:
    status: int
    reason: str
    head: str  # the header lines as received (latin-1), parsed into ``headers`` on first use
    body: bytes
    _headers: dict[str, str] | None = field(default=None, repr=False)

    @property
    def headers(self) -> dict[str, str]:
        """Lower-case names; a repeated header keeps its last value (most answers never ask: 2xx writes)."""
        if self._headers is None:
            self._headers = parse_header_lines(self.head.split("\r\n"))
        return self._headers


def parse_header_lines(lines: Sequence[str]) -> dict[str, str]:
    """Header lines (no CRLFs) as a dict: lower-case names, a repeated header keeps its last value."""
    parsed: dict[str, str] = {}
    for line in lines:
        name, _, value = line.partition(":")
        if name:
            parsed[name.strip().lower()] = value.strip()
    return parsed


# One request: method, path (after the pool's prefix), headers (a mapping, or lines already rendered, each
# ending in CRLF), body.
Request = tuple[str, str, Mapping[str, str] | str, bytes | None]


def _framing_value(lower_head: bytes, name: bytes) -> bytes | None:
    """The last value of header ``name`` (lower-case) in ``lower_head`` (CRLF + the lower-cased header lines)."""
    at = lower_head.rfind(b"\r\n" + name + b":")
    if at < 0:
        return None
    start = at + len(name) + 3
    end = lower_head.find(b"\r\n", start)
    return lower_head[start : end if end >= 0 else len(lower_head)].strip()


class _Conn:
    """One connection and its read buffer; used by one thread at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.received = 0  # bytes read for the current response

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def _fill(self) -> None:
        data = self.sock.recv(_RECV)
        if not data:
            raise ConnectionClosed("connection closed by the server")
        self.received += len(data)
        self.buf += data

    def _read_until(self, marker: bytes) -> bytes:
        while True:
            at = self.buf.find(marker)
            if at >= 0:
                out, self.buf = self.buf[:at], self.buf[at + len(marker) :]
                return out
            self._fill()

    def _read_exactly(self, n: int) -> bytes:
        if len(self.buf) < n:  # collect the pieces and join once: a LIST page runs to megabytes
            parts, have = [self.buf], len(self.buf)
            while have < n:
                data = self.sock.recv(_RECV)
                if not data:
                    raise ConnectionClosed("connection closed by the server")
                self.received += len(data)
                parts.append(data)
                have += len(data)
            self.buf = b"".join(parts)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _read_to_close(self) -> bytes:
        chunks = [self.buf]
        self.buf = b""
        while True:
            data = self.sock.recv(_RECV)
            if not data:
                return b"".join(chunks)
            chunks.append(data)

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int(self._read_until(_CRLF).split(b";", 1)[0].strip(), 16)
            if size == 0:
                while self._read_until(_CRLF):  # trailers end with an empty line
                    pass
                return b"".join(parts)
            parts.append(self._read_exactly(size))
            self._read_exactly(2)

    def exchange(self, head: bytes, body: bytes | None, method: str) -> tuple[Response, bool]:
        """Send one request, read its response; returns it and whether the connection may be reused."""
        self.received = 0
        self.sock.sendall(head + body if body else head)
        return self.read_response(method)

    def read_response(self, method: str) -> tuple[Response, bool]:
        """Read the next response (to a request of ``method``); returns it and whether the connection may
        be reused. Only the framing headers are looked up here, each only when present (an API server's answer
        to a write has Content-Length alone); ``Response.headers`` parses the rest. Searched by ``find``: ``in`` on
        bytes first tries its operand as an int, raising and clearing a TypeError each test."""
        raw = self._read_until(_END_OF_HEAD)
        status_line, _, lines = raw.partition(_CRLF)
        parts = status_line.split(b" ", 2)
        if len(parts) < 2:
            raise ValueError(f"malformed status line {status_line[:80]!r}")
        status = int(parts[1])
        lower = _CRLF + lines.lower()
        keep = lower.find(b"\r\nconnection:") < 0 or _framing_value(lower, b"connection") != b"close"
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            payload = b""
        elif (lower.find(b"\r\ntransfer-encoding:") >= 0
              and (_framing_value(lower, b"transfer-encoding") or b"").find(b"chunked") >= 0):
            payload = self._read_chunked()
        elif (length := _framing_value(lower, b"content-length")) is not None:
            payload = self._read_exactly(int(length))
        else:
            payload, keep = self._read_to_close(), False
        reason = parts[2].decode("latin-1") if len(parts) > 2 else ""
        return Response(status, reason, lines.decode("latin-1"), payload), keep


class Http11Pool:
    """Keep-alive connections to one server. ``request`` is thread-safe: each call takes an idle
    connection (or opens one) and returns it afterwards. A request that fails on a reused connection
    before any response byte arrived (the server closed it while idle) is sent once more on a new one,
    and the other idle connections are dropped with it (after an API server restart all are dead)."""

    def __init__(self, base_url: str, ssl_context: ssl.SSLContext | None, timeout: float = 30.0,
                 max_idle: int = 64, server_name: str | None = None) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"unsupported server URL {base_url!r}")
        self.tls = parts.scheme == "https"
        self.hostname = parts.hostname
        self.server_name = server_name or parts.hostname  # SNI and certificate name (kubeconfig tls-server-name)
        self.port = parts.port or (443 if self.tls else 80)
        self.host_header = parts.netloc
        self.prefix = parts.path.rstrip("/")
        self.ssl_context = ssl_context if ssl_context is not None else ssl.create_default_context()
        self.timeout = timeout
        self.max_idle = max_idle
        self._idle: deque[_Conn] = deque()
        self._lock = threading.Lock()

    def tcp(self, timeout: float) -> socket.socket:
        """A new TCP connection to the server, below TLS (the pod watch decrypts its stream itself)."""
        sock = socket.create_connection((self.hostname, self.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _connect(self, timeout: float) -> _Conn:
        sock = self.tcp(timeout)
        if self.tls:
            sock = self.ssl_context.wrap_socket(sock, server_hostname=self.server_name)
        return _Conn(sock)

    def _take(self, timeout: float) -> tuple[_Conn, bool]:
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            return self._connect(timeout), False
        if conn.sock.gettimeout() != timeout:  # settimeout is an ioctl and a GIL hand-off: only on a change
            conn.sock.settimeout(timeout)
        return conn, True

    def _give_back(self, conn: _Conn) -> None:
        with self._lock:
            if len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def _head(self, method: str, path: str, headers: Mapping[str, str] | str, body: bytes | None) -> bytes:
        """The request line and headers; ``headers`` may come rendered already (lines ending in CRLF)."""
        rendered = headers if isinstance(headers, str) else "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        length = f"Content-Length: {len(body or b'')}\r\n" if body is not None or method in _BODY_METHODS else ""
        return f"{method} {self.prefix}{path} HTTP/1.1\r\nHost: {self.host_header}\r\n{rendered}{length}\r\n".encode(
            "latin-1")

    def request(self, method: str, path: str, headers: Mapping[str, str] | str, body: bytes | None = None,
                timeout: float | None = None) -> Response:
        """One exchange; ``timeout`` (default the pool's) bounds connecting and every socket read."""
        seconds = self.timeout if timeout is None else timeout
        head = self._head(method, path, headers, body)
        for attempt in range(2):
            conn, reused = self._take(seconds)
            try:
                response, keep = conn.exchange(head, body, method)
            except (OSError, ValueError) as exc:
                conn.close()
                if attempt == 0 and reused and conn.received == 0:
                    # A stale idle connection: nothing of ours was answered. The server closed it while idle
                    # (its idle timeout, or a restart that closed them all): the other idle ones are as old,
                    # so the retry goes out on a new connection.
                    self.close()
                    continue
                if isinstance(exc, OSError):
                    raise
                raise ConnectionClosed(f"malformed HTTP response: {exc}") from exc
            if keep:
                self._give_back(conn)
            else:
                conn.close()
            return response
        raise AssertionError("unreachable")

    def pipeline(self, requests: Sequence[Request], timeout: float | None = None) -> list[Response | Exception]:
        """Send ``requests`` in one write on one connection and read their answers in order; one answer or
        exception per request. A request whose answer did not arrive (the connection failed or the server
        closed it after an earlier answer) gets ConnectionClosed or the OSError: the server may or may not
        have acted on it, so only requests that are safe to send again belong here. A reused connection that
        fails before any byte of the first answer is replaced once, as in ``request``."""
        if not requests:
            return []
        seconds = self.timeout if timeout is None else timeout
        data = b"".join(self._head(m, p, h, b) + (b or b"") for m, p, h, b in requests)
        for attempt in range(2):
            conn, reused = self._take(seconds)
            conn.received = 0
            out: list[Response | Exception] = []
            try:
                conn.sock.sendall(data)
                keep = True
                while keep and len(out) < len(requests):
                    response, keep = conn.read_response(requests[len(out)][0])
                    out.append(response)
            except (OSError, ValueError) as exc:
                conn.close()
                if not out and attempt == 0 and reused and conn.received == 0:
                    self.close()  # stale, as in request(): nothing of ours was answered
                    continue
                failure: Exception = exc
                if not isinstance(exc, OSError):
                    failure = ConnectionClosed(f"malformed HTTP response: {exc}")
                return out + [failure] * (len(requests) - len(out))
            if keep:
                self._give_back(conn)
            else:
                conn.close()
            unanswered = len(requests) - len(out)
            return out + [ConnectionClosed("the server closed the connection before answering")] * unanswered
        raise AssertionError("unreachable")

    def fanout(self, requests: Sequence[Request], timeout: float | None = None) -> list[Response | Exception]:
        """Send each request on a connection of its own, all before reading any answer, then read the answers;
        one answer or exception per request. The server works on them side by side (unlike ``pipeline``'s,
        which it answers one after another), and the caller's thread wakes once for the lot instead of once
        each. A reused connection that fails before any byte of its answer (closed by the server while idle)
        is replaced: that request goes out again alone through ``request``."""
        seconds = self.timeout if timeout is None else timeout
        started: list[tuple[_Conn, bool] | Exception | None] = []  # None: a stale connection, send it alone
        for method, path, headers, body in requests:
            head = self._head(method, path, headers, body)
            try:
                conn, reused = self._take(seconds)
            except OSError as exc:
                started.append(exc)
                continue
            conn.received = 0
            try:
                conn.sock.sendall(head + body if body else head)
            except OSError as exc:
                conn.close()
                started.append(None if reused else exc)
                continue
            started.append((conn, reused))
        return [self._fanout_answer(request, begun, seconds) for request, begun in zip(requests, started, strict=True)]

    def _fanout_answer(self, request: Request, begun: tuple[_Conn, bool] | Exception | None,
                       seconds: float) -> Response | Exception:
        """The answer to one of ``fanout``'s requests, its connection returned to the pool or closed."""
        method, path, headers, body = request
        if begun is None:
            return self._alone(method, path, headers, body, seconds)
        if isinstance(begun, Exception):
            return begun
        conn, reused = begun
        try:
            response, keep = conn.read_response(method)
        except (OSError, ValueError) as exc:
            conn.close()
            if reused and conn.received == 0:
                return self._alone(method, path, headers, body, seconds)
            return exc if isinstance(exc, OSError) else ConnectionClosed(f"malformed HTTP response: {exc}")
        if keep:
            self._give_back(conn)
        else:
            conn.close()
        return response

    def _alone(self, method: str, path: str, headers: Mapping[str, str] | str, body: bytes | None,
               seconds: float) -> Response | Exception:
        """A request sent again on its own after its reused connection proved stale (``request``'s rule)."""
        self.close()  # the other idle connections are as old
        try:
            return self.request(method, path, headers, body, timeout=seconds)
        except (OSError, ValueError) as exc:
            return exc

    def close(self) -> None:
        with self._lock:
            while self._idle:
                self._idle.pop().close()
