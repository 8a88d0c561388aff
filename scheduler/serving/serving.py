"""The HTTP(S) transport of the health and metrics endpoints: one asyncio loop on its own thread.

Why not ``ThreadingHTTPServer``: it started a thread per connection with no cap and no timeouts, so a
pod that opened ~160 connections and sent headers slowly took the port (and the scheduler's memory)
down. Here a connection costs a socket, a small buffer and a coroutine; the server bounds

* the number of connections (``max_connections``; at the cap the oldest connection still waiting
  for its request is closed for the new one, so idle or slow clients cannot keep a probe out),
* the time from accepting a connection (TLS handshake included) to a complete request head
  (``header_timeout``), and between two requests of one kept-alive connection (``idle_timeout``),
* the size of a request head (``max_header_bytes``; 431 beyond it). Bodies are refused.

TLS is done with ``ssl.MemoryBIO`` rather than asyncio's SSL transport, which allocates a 256 KiB
read buffer per connection: 500 idle TLS connections would have cost 128 MB.

Requests are answered by a ``Handler``: a fast one (health checks) runs on the loop itself, so it is
never queued behind slow work; ``Route.blocking`` ones (authentication through the API server,
/metrics) run on a small thread pool. Error bodies never carry exception text: details go to the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import os
import socket
import ssl
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import structlog

log = structlog.get_logger(__name__)

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 408: "Request Timeout", 413: "Content Too Large",
            431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}
_READ_CHUNK = 16 * 1024 + 512  # one TLS record at most


@dataclass(frozen=True, slots=True)
class ServingLimits:
    """Bounds of one listener. The timeouts are kube-apiserver's secure serving ones where it has them
    (idle 90 s); the header timeout is shorter than its 32 s, as every client here is a probe or a scraper."""

    max_connections: int = 1024
    header_timeout: float = 10.0
    idle_timeout: float = 90.0
    max_header_bytes: int = 64 * 1024


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: str
    headers: Mapping[str, str]  # names lower-cased


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)


# A handler answers a request; ``blocking(request)`` says whether it must run off the loop.
Handler = Callable[[Request], Response]


@dataclass(frozen=True, slots=True)
class Listener:
    """One port: its address, TLS context (None: plain HTTP) and handler."""

    host: str
    port: int
    handler: Handler
    blocking: Callable[[Request], bool]
    tls: ssl.SSLContext | None = None
    limits: ServingLimits = ServingLimits()


class HttpServer:
    """Serves listeners on one event loop thread; ``start`` binds them all or raises."""

    def __init__(self, workers: int = 4, name: str = "health-http") -> None:
        self._listeners: list[Listener] = []
        self._ports: list[int] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sockets: list[socket.socket] = []
        self._accepting: list[asyncio.Task[None]] = []
        self._unmade: set[socket.socket] = set()  # accepted, no _Connection yet
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"{name}-worker")
        self._name = name
        self._connections: list[_Connections] = []
        self.stopping = False

    def add(self, listener: Listener) -> None:
        self._listeners.append(listener)

    @property
    def ports(self) -> list[int]:
        """The bound ports, in the order the listeners were added (useful with port 0)."""
        return list(self._ports)

    def open_connections(self) -> int:
        return sum(len(c.all) for c in self._connections)

    def start(self) -> list[int]:
        loop = asyncio.new_event_loop()
        self._loop = loop
        ready: list[BaseException | None] = []
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._bind())
                ready.append(None)
            except BaseException as exc:  # reported to start()'s caller
                ready.append(exc)
                started.set()
                return
            started.set()
            loop.run_forever()
            self._wind_down(loop)

        self._thread = threading.Thread(target=run, name=self._name, daemon=True)
        self._thread.start()
        started.wait()
        if ready[0] is not None:
            raise ready[0]
        return self.ports

    async def _bind(self) -> None:
        loop = asyncio.get_running_loop()
        for listener in self._listeners:
            conns = _Connections(listener.limits.max_connections)
            self._connections.append(conns)
            family = socket.AF_INET6 if ":" in listener.host else socket.AF_INET
            sock = socket.create_server((listener.host, listener.port), family=family, backlog=1024,
                                        reuse_port=False)
            sock.setblocking(False)
            self._sockets.append(sock)
            self._ports.append(int(sock.getsockname()[1]))
            self._accepting.append(loop.create_task(self._accept(sock, listener, conns)))

    async def _accept(self, sock: socket.socket, listener: Listener, conns: _Connections) -> None:
        """Accept connections one by one and make each a _Connection. Done here rather than by
        loop.create_server, whose accepted sockets could be left open and unanswered at shutdown."""
        loop = asyncio.get_running_loop()
        while not self.stopping:
            accepting = asyncio.ensure_future(loop.sock_accept(sock))
            try:
                conn, _ = await asyncio.shield(accepting)
            except asyncio.CancelledError:  # stopping: a socket accepted meanwhile is closed, not lost
                accepting.add_done_callback(_close_accepted)
                accepting.cancel()
                raise
            except OSError as exc:  # out of file descriptors, say: the connection waits in the backlog
                log.warning("accepting a connection failed", error=str(exc))
                await asyncio.sleep(0.1)
                continue
            conn.setblocking(False)
            self._unmade.add(conn)
            try:
                await loop.connect_accepted_socket(lambda: _Connection(self, listener, conns), conn)
            except OSError:
                conn.close()
            finally:
                self._unmade.discard(conn)

    def stop(self) -> None:
        """Stop listening, drop every connection, end the thread; safe to call more than once."""
        loop = self._loop
        if loop is None or self.stopping:
            return
        self.stopping = True

        async def close() -> None:
            for task in self._accepting:
                task.cancel()
            for sock in self._sockets:
                sock.close()
            self._abort_all()

        with contextlib.suppress(RuntimeError, TimeoutError):
            asyncio.run_coroutine_threadsafe(close(), loop).result(5)
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _abort_all(self) -> None:
        for conn in list(self._unmade):
            conn.close()
        for conns in self._connections:
            for connection in list(conns.all):
                connection.abort()

    def _wind_down(self, loop: asyncio.AbstractEventLoop) -> None:
        """After the loop stopped: let what it had begun finish (a connection being accepted would keep
        its client waiting forever; cancelled before it ran, its socket would stay open), so that every
        connection is made and then dropped; then close the loop."""
        for _ in range(3):
            self._abort_all()
            pending = asyncio.all_tasks(loop)
            if not pending:
                break
            loop.run_until_complete(asyncio.wait(pending, timeout=1.0))
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._abort_all()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()

    async def answer(self, listener: Listener, request: Request) -> Response:
        """The handler's response, on the pool when it may block; a handler that raises answers 500
        with no detail (the detail is logged)."""
        try:
            if listener.blocking(request):
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(self._pool, listener.handler, request)
            return listener.handler(request)
        except Exception as exc:
            log.warning("request handler failed", path=request.path, error=f"{type(exc).__name__}: {exc}")
            return Response(500, b"internal error\n")


def _close_accepted(accepting: asyncio.Future[tuple[socket.socket, object]]) -> None:
    if not accepting.cancelled() and accepting.exception() is None:
        accepting.result()[0].close()


class _Connections:
    """The open connections of a listener, and those waiting for a request head (oldest first)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.all: set[_Connection] = set()
        self.waiting: OrderedDict[_Connection, None] = OrderedDict()

    def admit(self, conn: _Connection) -> bool:
        """Room for ``conn``: at the cap, the oldest connection waiting for its request is closed; when
        every connection is busy answering, the new one is refused."""
        if len(self.all) >= self.cap:
            if not self.waiting:
                return False
            oldest, _ = self.waiting.popitem(last=False)
            oldest.abort()
        self.all.add(conn)
        self.waiting[conn] = None
        return True

    def forget(self, conn: _Connection) -> None:
        self.all.discard(conn)
        self.waiting.pop(conn, None)


class _Closed(Exception):
    """The peer went away, the connection was aborted, or a limit was passed."""


class _Connection(asyncio.Protocol):
    """One accepted connection: bytes in and out, through TLS (MemoryBIO) when the listener has a context."""

    def __init__(self, server: HttpServer, listener: Listener, conns: _Connections) -> None:
        self.server = server
        self.listener = listener
        self.conns = conns
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()  # plaintext received, not yet consumed
        self.eof = False
        self.closed = False
        self.wakeup: asyncio.Event | None = None
        self.tls: ssl.SSLObject | None = None
        self.incoming: ssl.MemoryBIO | None = None
        self.outgoing: ssl.MemoryBIO | None = None
        self.handshaken = False
        self.task: asyncio.Task[None] | None = None

    # --- asyncio.Protocol ------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.server.stopping or not self.conns.admit(self):
            transport.abort()
            self.closed = True
            return
        self.wakeup = asyncio.Event()
        if self.listener.tls is not None:
            self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            self.tls = self.listener.tls.wrap_bio(self.incoming, self.outgoing, server_side=True)
        self.task = asyncio.get_running_loop().create_task(self._serve())

    def data_received(self, data: bytes) -> None:
        if self.tls is None:
            self.buffer += data
        else:
            assert self.incoming is not None
            self.incoming.write(data)
            self._pump()
        if len(self.buffer) > self.listener.limits.max_header_bytes and self.transport is not None:
            self.transport.pause_reading()  # the reader will answer 431; no more than that is kept
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.conns.forget(self)
        self._wake()

    # --- TLS -------------------------------------------------------------------------------------------

    def _pump(self) -> None:
        """Advance the handshake, decrypt what arrived, send what TLS produced."""
        assert self.tls is not None
        try:
            if not self.handshaken:
                self.tls.do_handshake()
                self.handshaken = True
            while True:
                chunk = self.tls.read(_READ_CHUNK)
                if not chunk:
                    self.eof = True
                    break
                self.buffer += chunk
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except (ssl.SSLError, OSError) as exc:
            log.debug("TLS connection failed", error=str(exc))
            self._flush()
            self.abort()
            return
        self._flush()

    def _flush(self) -> None:
        if self.outgoing is not None and self.transport is not None:
            data = self.outgoing.read()
            if data:
                self.transport.write(data)

    # --- for the request loop --------------------------------------------------------------------------

    def _wake(self) -> None:
        if self.wakeup is not None:
            self.wakeup.set()

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        self.conns.forget(self)
        self._wake()

    def write(self, data: bytes) -> None:
        if self.closed or self.transport is None:
            return
        if self.tls is None:
            self.transport.write(data)
            return
        try:
            self.tls.write(data)
        except (ssl.SSLError, OSError):
            self.abort()
            return
        self._flush()

    async def read_head(self, deadline: float, first_byte_deadline: float | None = None) -> bytes:
        """A request head (up to and including the blank line). ``first_byte_deadline``: a kept-alive
        connection may wait that long for the next request to start, then has until ``deadline`` after
        that start. Raises _Closed, TimeoutError, or ValueError (head too large)."""
        loop = asyncio.get_running_loop()
        limit = self.listener.limits.max_header_bytes
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                if end + 4 > limit:
                    raise ValueError("request head too large")
                head = bytes(self.buffer[:end + 4])
                del self.buffer[:end + 4]
                return head
            if len(self.buffer) > limit:
                raise ValueError("request head too large")
            if self.closed or self.eof:
                raise _Closed()
            now = loop.time()
            if first_byte_deadline is not None and not self.buffer and (self.tls is None or self.handshaken):
                until = first_byte_deadline
            else:
                if first_byte_deadline is not None:  # the next request has begun: the header clock starts
                    deadline, first_byte_deadline = now + (deadline - first_byte_deadline), None
                until = deadline
            if now >= until:
                raise TimeoutError()
            assert self.wakeup is not None
            self.wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wakeup.wait(), until - now)

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        limits = self.listener.limits
        first = True
        try:
            while not self.closed:
                if first:
                    deadline, idle = loop.time() + limits.header_timeout, None
                else:
                    idle = loop.time() + limits.idle_timeout
                    deadline = idle + limits.header_timeout
                try:
                    head = await self.read_head(deadline, idle)
                except TimeoutError:
                    break
                except ValueError:
                    self._reply(Response(431, b"request header fields too large\n"), keep_alive=False)
                    break
                first = False
                self.conns.waiting.pop(self, None)
                request, keep_alive, problem = _parse(head)
                if problem is not None or request is None:
                    self._reply(problem or Response(400, b"bad request\n"), keep_alive=False)
                    break
                response = await self.server.answer(self.listener, request)
                if self.closed:
                    break
                self._reply(response, keep_alive, head_only=request.method == "HEAD")
                if not keep_alive:
                    break
                self.conns.waiting[self] = None
        except _Closed:
            pass
        finally:
            self._close()

    def _reply(self, response: Response, keep_alive: bool, head_only: bool = False) -> None:
        reason = _REASONS.get(response.status, "Unknown")
        lines = [f"HTTP/1.1 {response.status} {reason}", f"Content-Type: {response.content_type}",
                 f"Content-Length: {len(response.body)}", "Cache-Control: no-store",
                 "X-Content-Type-Options: nosniff", f"Connection: {'keep-alive' if keep_alive else 'close'}"]
        lines += [f"{k}: {v}" for k, v in response.headers.items()]
        self.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if head_only else response.body))

    def _close(self) -> None:
        self.conns.forget(self)
        if self.closed or self.transport is None:
            return
        self.closed = True
        if self.tls is not None:
            with contextlib.suppress(ssl.SSLError, OSError):
                self.tls.unwrap()
            self._flush()
        self.transport.close()


def _parse(head: bytes) -> tuple[Request | None, bool, Response | None]:
    """(request, keep the connection alive, an error response to send instead)."""
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:
        return None, False, None
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return None, False, None
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            return None, False, None
        headers[name.lower()] = value.strip()
    if method not in ("GET", "HEAD"):
        return None, False, Response(405, b"method not allowed\n", headers={"Allow": "GET, HEAD"})
    if headers.get("content-length", "0") != "0" or "transfer-encoding" in headers:
        return None, False, Response(413, b"request bodies are not accepted\n")
    path, _, query = target.partition("?")
    if not path.startswith("/"):
        return None, False, None
    connection = headers.get("connection", "").lower()
    keep_alive = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
    return Request(method, path, query, headers), keep_alive, None


# --- TLS contexts --------------------------------------------------------------------------------------


def server_tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """A TLS 1.2+ server context serving this certificate (chain) and key."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    return ctx


def self_signed_tls_context(
    hosts: Sequence[str] = ("localhost",), ips: Sequence[str] = ("127.0.0.1",)
) -> tuple[ssl.SSLContext, bytes]:
    """A context with a certificate made now and kept in memory only, as kube-scheduler does without
    --tls-cert-file: a self-signed CA ("<host>-ca@<time>") and a serving certificate it signed for
    ``hosts`` and ``ips``, valid a year. Returns the context and the CA certificate (PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    stamp = int(time.time())
    host = hosts[0] if hosts else "localhost"
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}-ca@{stamp}")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=365))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(h) for h in hosts]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{stamp}")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    chain = cert.public_bytes(pem) + ca.public_bytes(pem)
    # ssl loads a chain only from files: a private directory, removed as soon as they are read.
    with tempfile.TemporaryDirectory(prefix="py-scheduler-tls-") as d:
        cert_path, key_path = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
        for path, data in ((cert_path, chain), (key_path, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        return server_tls_context(cert_path, key_path), ca.public_bytes(pem)
