"""The pod watch's TLS decrypted from memory (scheduler.kube.watchhttp.TlsSource): the records' bytes split
anywhere, many records in one recv, a connection ended mid-record or by close_notify, against a TLS server made
in the test (its certificate too); and the whole stream (open_stream, PodStream) over a real TLS socket."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler.kube import watchhttp
from scheduler.kube.http11 import ConnectionClosed, Http11Pool
from scheduler.kube.podstream import PodStream
from scheduler.kube.watchhttp import StreamedResponse, TlsSource, open_stream
from scheduler.serving.serving import self_signed_tls_context
from tests.kube.test_watchhttp import LINES, PAYLOAD, WatchServer, event, head, stop_streams
from tests.socket_server import LocalSocketServer, read_request_head

REQUEST = b"GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.fixture(scope="module")
def certificate() -> tuple[ssl.SSLContext, bytes]:
    """A server context and its CA (PEM), made once for the module."""
    return self_signed_tls_context()


class MemoryPeer:
    """The server's end of a TLS connection, in memory: what the client sends goes through a server-side TLS
    object; what the client receives is scripted (``pieces``, one recv each: the records' bytes split where a
    test wants), so a test decides exactly which bytes each of the client's reads finds."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self._in, self._out, server_side=True)
        self.pieces: deque[bytes] = deque()
        self.received = b""  # the client's plaintext
        self.recvs = 0

    def sendall(self, data: bytes) -> None:
        self._in.write(data)
        try:
            self.tls.do_handshake()
            while self._in.pending:
                self.received += self.tls.read(65536)
        except ssl.SSLWantReadError:
            pass
        self._queue_output()

    def _queue_output(self) -> None:
        out = self._out.read()
        if out:
            self.pieces.append(out)

    def records(self, plaintexts: list[bytes]) -> bytes:
        """The bytes of one TLS record for each plaintext, as a server writes each event."""
        wire = b""
        for text in plaintexts:
            self.tls.write(text)
            wire += self._out.read()
        return wire

    def close_notify(self) -> bytes:
        with contextlib.suppress(ssl.SSLWantReadError):  # the client's close_notify is not awaited
            self.tls.unwrap()
        return self._out.read()

    def recv(self, size: int) -> bytes:
        self.recvs += 1
        if not self.pieces:
            return b""  # the server's end of file
        piece = self.pieces.popleft()
        if len(piece) > size:
            self.pieces.appendleft(piece[size:])
        return piece[:size]

    def recv_into(self, buffer: memoryview) -> int:
        piece = self.recv(len(buffer))
        buffer[: len(piece)] = piece
        return len(piece)


def connected(certificate: tuple[ssl.SSLContext, bytes]) -> tuple[TlsSource, MemoryPeer]:
    """A client source that completed its handshake with a MemoryPeer and sent it REQUEST. The server's last
    handshake bytes (TLS 1.3's session tickets) stay queued: the first read handles them."""
    server_context, ca = certificate
    peer = MemoryPeer(server_context)
    client = TlsSource(peer, ssl.create_default_context(cadata=ca.decode()), "localhost")  # type: ignore[arg-type]
    client.handshake()
    client.send(REQUEST)
    assert peer.received == REQUEST
    return client, peer


def chunks(payload: bytes, size: int) -> list[bytes]:
    """``payload`` as chunks of ``size`` bytes, each framed as it goes on the wire, then the last chunk."""
    out = [b"%x\r\n%s\r\n" % (len(payload[at : at + size]), payload[at : at + size])
           for at in range(0, len(payload), size)]
    return [*out, b"0\r\n\r\n"]


def test_records_split_at_every_byte_give_the_same_lines(certificate: tuple[ssl.SSLContext, bytes]) -> None:
    """A response of several records (the head, one chunk each), its bytes arriving in two reads split at every
    position (inside a record's header, inside its body, between records): the same lines every time."""
    client, peer = connected(certificate)
    texts = [head(), *chunks(PAYLOAD, 40)]
    wire = peer.records(texts)
    peer.pieces.append(wire)  # whole, after the session tickets
    assert list(StreamedResponse(client).read_head().lines()) == LINES
    for at in range(1, len(wire)):
        wire = peer.records(texts)  # anew: a record is sealed with its sequence number
        peer.pieces.extend([wire[:at], wire[at:]])
        response = StreamedResponse(client).read_head()
        assert list(response.lines()) == LINES, at
        assert not peer.pieces  # every byte was read, none beyond the response


def test_many_records_in_one_recv_are_one_read(certificate: tuple[ssl.SSLContext, bytes]) -> None:
    client, peer = connected(certificate)
    framed = chunks(PAYLOAD, 10)
    peer.pieces.append(peer.records(framed))
    recvs = peer.recvs
    assert client.read() == b"".join(framed)  # the session tickets' read, then every record of the one recv
    assert peer.recvs == recvs + 2


def test_more_plaintext_than_the_buffer_in_one_read(certificate: tuple[ssl.SSLContext, bytes],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Records that decrypt to more than a read's buffer holds come out whole, in order, however they split."""
    monkeypatch.setattr(watchhttp, "RECV_SIZE", 3000)  # the buffers are sized when the source is made
    client, peer = connected(certificate)
    texts = [bytes([65 + i % 26]) * (500 + 97 * i) for i in range(40)]
    wire = peer.records(texts)
    peer.pieces.extend(wire[at : at + 7001] for at in range(0, len(wire), 7001))
    got = b""
    while len(got) < sum(map(len, texts)):
        got += client.read()
    assert got == b"".join(texts)


@pytest.mark.parametrize("cut", [1, 5, 6, 30])
def test_end_of_file_mid_record_is_a_cut_stream(certificate: tuple[ssl.SSLContext, bytes], cut: int) -> None:
    """The connection ends inside the last record (its header or body): the complete lines come out, then
    ConnectionClosed, so the stream resumes from the last event handled."""
    client, peer = connected(certificate)
    framed = chunks(LINES[0] + b"\n" + LINES[1] + b"\n", 1000)
    whole = peer.records([head(), framed[0]])
    peer.pieces.append(whole + peer.records([b'1e\r\n{"type":"ADDED"'])[:cut])
    response = StreamedResponse(client).read_head()
    got: list[bytes] = []
    with pytest.raises(ConnectionClosed):
        got.extend(response.lines())
    assert got == LINES[:2]
    assert client.read() == b""  # ended for good


def test_close_notify_mid_chunk_is_a_cut_stream_and_after_the_body_an_end(
        certificate: tuple[ssl.SSLContext, bytes]) -> None:
    client, peer = connected(certificate)
    peer.pieces.append(peer.records([head(), b'40\r\n{"type":"ADDED"']) + peer.close_notify())
    with pytest.raises(ConnectionClosed):
        list(StreamedResponse(client).read_head().lines())
    client, peer = connected(certificate)
    peer.pieces.append(peer.records([head(extra=""), PAYLOAD]) + peer.close_notify())  # a read-to-close body
    assert list(StreamedResponse(client).read_head().lines()) == LINES


# ----- over a real TLS socket ----------------------------------------------------------------------------


class TlsWatchServer(WatchServer):
    """WatchServer behind TLS, each scripted response written as one record a line (as kube-apiserver flushes
    each watch event)."""

    def __init__(self, script: list[bytes | None], context: ssl.SSLContext) -> None:
        self.context = context
        super().__init__(script)

    def handle(self, conn: socket.socket) -> None:
        try:
            tls = self.context.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError):
            conn.close()
            return
        super().handle(_RecordWriter(tls))  # type: ignore[arg-type]


class _RecordWriter:
    """An SSL socket whose ``sendall`` writes each line as a record of its own."""

    def __init__(self, tls: ssl.SSLSocket) -> None:
        self.tls = tls

    def recv(self, size: int) -> bytes:
        return self.tls.recv(size)

    def sendall(self, data: bytes) -> None:
        for line in data.splitlines(keepends=True):
            self.tls.sendall(line)

    def __enter__(self) -> _RecordWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.tls.close()


def test_open_stream_over_tls_verifies_the_server_and_reads_the_lines(
        certificate: tuple[ssl.SSLContext, bytes]) -> None:
    server_context, ca = certificate
    server = TlsWatchServer([head() + b"".join(chunks(PAYLOAD, 30)), None], server_context)
    try:
        pool = Http11Pool(f"https://127.0.0.1:{server.port}", ssl.create_default_context(cadata=ca.decode()))
        response = open_stream(pool, "/api/v1/pods?watch=1", {"Accept": "application/json"}, 10, 10).read_head()
        assert response.status == 200
        assert list(response.lines()) == LINES
        response.close()
        stranger = Http11Pool(f"https://127.0.0.1:{server.port}", ssl.create_default_context())  # not our CA
        with pytest.raises(ssl.SSLCertVerificationError):
            open_stream(stranger, "/api/v1/pods?watch=1", {}, 10, 10)
    finally:
        server.close()


class TlsLister:
    """PodStream's API over TLS: one page of pods at resourceVersion "1"."""

    def __init__(self, host: str, ca_file: Path) -> None:
        self.host = host
        self.cfg = type("Cfg", (), {"host": host, "ssl_ca_cert": str(ca_file), "verify_ssl": True,
                                    "cert_file": None, "key_file": None})()

    def auth_headers(self) -> dict[str, str]:
        return {}

    def request(self, method: str, path: str, **_: Any) -> bytes:
        return b'{"metadata":{"resourceVersion":"1"},"items":[]}'


@pytest.fixture
def tls_stream(certificate: tuple[ssl.SSLContext, bytes], tmp_path: Path) -> Iterator[Any]:
    made: list[tuple[PodStream, TlsWatchServer]] = []

    def start(script: list[bytes | None], watches: int) -> tuple[PodStream, TlsWatchServer, list[Any]]:
        server_context, ca = certificate
        (tmp_path / "ca.pem").write_bytes(ca)
        server = TlsWatchServer(script, server_context)
        events: list[tuple[str, str]] = []
        api = TlsLister(f"https://127.0.0.1:{server.port}", tmp_path / "ca.pem")
        stream = PodStream(api, lambda t, o: events.append((t, o["metadata"]["uid"])))  # type: ignore[arg-type]
        made.append((stream, server))
        stream.start()
        for _ in range(watches):
            assert server.served.acquire(timeout=30), "the stream did not watch again"
        return stream, server, events

    yield start
    stop_streams(made)


def test_a_tls_watch_cut_mid_chunk_resumes_and_stop_ends_a_blocked_read(tls_stream: Any) -> None:
    cut = head() + b"".join(chunks(event("ADDED", "a", 5) + event("MODIFIED", "a", 6), 100))[:-20]
    stream, server, events = tls_stream([cut, None], watches=2)
    assert events == [("ADDED", "a")]
    assert [q["resourceVersion"] for q in server.queries] == [["1"], ["5"]]
    stream.stop()  # the second watch is held open and silent: only the abort ends the read (45 s timeout)
    stream._thread.join(10)
    assert not stream._thread.is_alive()


class _Silent(LocalSocketServer):
    def handle(self, conn: socket.socket) -> None:
        with conn:
            read_request_head(conn)
            threading.Event().wait(5)


def test_a_silent_connection_times_out_as_a_timeout() -> None:
    server = _Silent()
    try:
        pool = Http11Pool(f"http://127.0.0.1:{server.port}", None)
        response = open_stream(pool, "/api/v1/pods?watch=1", {}, 10, 0.2)
        with pytest.raises(TimeoutError):
            response.read_head()
        response.close()
    finally:
        server.close()
