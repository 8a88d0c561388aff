"""The pod watch's streamed HTTP/1.1 reader (scheduler.kube.watchhttp) on hand-made bytes, and PodStream
over it against a scripted local server: resumption, relists, errors and stop()."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.kube.http11 import ConnectionClosed
from scheduler.kube.podstream import PodStream
from scheduler.kube.watchhttp import ChunkedDecoder, LineSplitter, PlainSource, StreamedResponse, parse_head
from tests.socket_server import LocalSocketServer, read_request_head

LINES = [b'{"type":"ADDED","object":{"n":1}}', b'{"type":"MODIFIED","object":{"n":2}}', b'{"x":"' + b"y" * 70 + b'"}']
PAYLOAD = b"".join(line + b"\n" for line in LINES)


def chunked(payload: bytes, size: int, extension: bytes = b"", trailer: bytes = b"") -> bytes:
    """``payload`` in chunks of ``size`` bytes, then the last chunk and its trailer section."""
    out = b""
    for at in range(0, len(payload), size):
        piece = payload[at : at + size]
        out += b"%x%s\r\n%s\r\n" % (len(piece), extension, piece)
    return out + b"0\r\n" + trailer + b"\r\n"


def decode(pieces: list[bytes]) -> tuple[list[bytes], ChunkedDecoder]:
    decoder, split = ChunkedDecoder(), LineSplitter()
    lines = [line for piece in pieces for line in split.feed(decoder.feed(piece))]
    return lines, decoder


@pytest.mark.parametrize("size", [1, 2, 7, 34, 35, 36, len(PAYLOAD) - 1, len(PAYLOAD)])
def test_lines_survive_any_split_of_chunks_and_blocks(size: int) -> None:
    """Chunk boundaries at every size (inside lines, at a newline, several lines in one chunk), and the
    bytes arriving in two blocks split at every position: the same lines every time."""
    wire = chunked(PAYLOAD, size)
    for at in range(len(wire) + 1):
        lines, decoder = decode([wire[:at], wire[at:]])
        assert lines == LINES, at
        assert decoder.done


def test_one_byte_at_a_time_and_extensions_and_trailers() -> None:
    wire = chunked(PAYLOAD, 20, extension=b';name="v";x', trailer=b"X-Trailer: 1\r\nY: 2\r\n")
    lines, decoder = decode([wire[i : i + 1] for i in range(len(wire))])
    assert lines == LINES and decoder.done


def test_the_decoder_stops_at_the_last_chunk_and_waits_for_its_trailer() -> None:
    decoder = ChunkedDecoder()
    assert decoder.feed(b"5\r\nhello\r\n0\r\n") == b"hello"
    assert not decoder.done  # the trailer section's blank line is still to come
    assert decoder.feed(b"\r\nHTTP/1.1 garbage after the response") == b""
    assert decoder.done


@pytest.mark.parametrize("wire", [b"zz\r\n", b"-5\r\nhello\r\n", b"0x5\r\nhello\r\n", b"5\r\nhelloXY",
                                  b"1" * 5000])
def test_malformed_chunking_is_a_value_error(wire: bytes) -> None:
    with pytest.raises(ValueError):
        ChunkedDecoder().feed(wire)


def test_a_large_line_over_many_blocks() -> None:
    line = b"a" * 200_000
    split = LineSplitter()
    got = [out for at in range(0, len(line), 1000) for out in split.feed(line[at : at + 1000])]
    assert got == [] and split.pending == line
    assert split.feed(b"\nb\nc") == [line, b"b"] and split.pending == b"c"


def head(status: str = "200 OK", extra: str = "Transfer-Encoding: chunked\r\n") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}\r\n".encode()


def response_of(wire: bytes, close: bool = True) -> StreamedResponse:
    """A StreamedResponse reading ``wire`` from one end of a socket pair (closed after it)."""
    ours, theirs = socket.socketpair()
    theirs.sendall(wire)
    if close:
        theirs.close()
    return StreamedResponse(PlainSource(ours)).read_head()


def test_a_streamed_response_yields_its_lines_and_ends_at_the_last_chunk() -> None:
    response = response_of(head() + chunked(PAYLOAD + b"\n\n", 30), close=False)  # blank lines are skipped
    assert (response.status, response.reason, response.headers["content-type"]) == (200, "OK", "application/json")
    assert list(response.lines()) == LINES  # ended by the last chunk, not by the connection


def test_a_body_read_to_close_or_by_length() -> None:
    assert list(response_of(head(extra="") + PAYLOAD).lines()) == LINES
    framed = head(extra=f"Content-Length: {len(PAYLOAD)}\r\n") + PAYLOAD + b"ignored"
    assert list(response_of(framed, close=False).lines()) == LINES


@pytest.mark.parametrize("cut", [b"", b"1", b"1e\r\n", b'1e\r\n{"type":"ADDED"',
                                 b'1c\r\n{"type":"ADDED","object":{}}\r\n'])
def test_a_body_cut_short_raises_after_the_complete_lines(cut: bytes) -> None:
    """The server gone mid-chunk or between chunks, before the last chunk: the lines that were complete come
    out, then ConnectionClosed, so the stream resumes from the last one it handled."""
    two = LINES[0] + b"\n" + LINES[1] + b"\n"
    response = response_of(head() + chunked(two, 64)[: -len(b"0\r\n\r\n")] + cut)
    got: list[bytes] = []
    with pytest.raises(ConnectionClosed):
        got.extend(response.lines())
    assert got == LINES[:2]


def test_a_read_to_close_body_cut_mid_line_raises() -> None:
    response = response_of(head(extra="") + PAYLOAD + b'{"type":"MOD')
    with pytest.raises(ConnectionClosed):
        list(response.lines())


def test_error_statuses_and_their_bodies() -> None:
    body = b'{"kind":"Status","code":410,"message":"too old resource version"}'
    response = response_of(head("410 Gone", f"Content-Length: {len(body)}\r\n") + body, close=False)
    assert (response.status, response.reason) == (410, "Gone")
    assert response.read_body() == body
    chunked_error = response_of(head("500 Internal Server Error") + chunked(body, 10), close=False)
    assert chunked_error.status == 500 and chunked_error.read_body() == body
    assert parse_head(b"HTTP/1.1 403 \r\nA: 1\r\nA: 2") == (403, "", {"a": "2"})
    with pytest.raises(ValueError):
        parse_head(b"SSH-2.0-OpenSSH\r\n")
    with pytest.raises(ConnectionClosed):
        response_of(b"HTTP/1.1 200 OK\r\n")


# ----- PodStream over the reader, against a scripted server ---------------------------------------


def event(type_: str, uid: str, rv: int) -> bytes:
    return orjson.dumps({"type": type_, "object": {"metadata": {"uid": uid, "resourceVersion": str(rv)}}}) + b"\n"


class WatchServer(LocalSocketServer):
    """Answers the n-th watch request with the n-th scripted response (None: hold the connection open
    until the client closes it) and records each request's query."""

    def __init__(self, script: list[bytes | None]) -> None:
        self.script = script
        self.queries: list[dict[str, list[str]]] = []
        self.served = threading.Semaphore(0)
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        with conn:
            buf = read_request_head(conn)
            if buf is None:
                return
            target = buf.split(b" ", 2)[1].decode()
            index = len(self.queries)
            self.queries.append(parse_qs(urlsplit(target).query))
            response = self.script[index] if index < len(self.script) else None
            self.served.release()
            if response is None:
                while conn.recv(65536):
                    pass
                return
            conn.sendall(response)


class Lister:
    """The API a PodStream lists through: one page of pods at resourceVersion "1"; counts the lists."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.cfg = type("Cfg", (), {"host": host, "ssl_ca_cert": None, "verify_ssl": False, "cert_file": None,
                                    "key_file": None})()
        self.lists = 0

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": "Bearer t"}

    def request(self, method: str, path: str, **_: Any) -> bytes:
        self.lists += 1
        return orjson.dumps({"metadata": {"resourceVersion": "1"}, "items": [{"metadata": {"uid": "listed"}}]})


@pytest.fixture
def run_stream() -> Iterator[Any]:
    running: list[tuple[PodStream, WatchServer]] = []

    def start(script: list[bytes | None], watches: int) -> tuple[PodStream, WatchServer, Lister, list[Any]]:
        server = WatchServer(script)
        api = Lister(f"http://127.0.0.1:{server.port}")
        events: list[tuple[str, str]] = []
        stream = PodStream(api, lambda t, o: events.append((t, o["metadata"]["uid"])))  # type: ignore[arg-type]
        running.append((stream, server))
        stream.start()
        for _ in range(watches):
            assert server.served.acquire(timeout=30), "the stream did not watch again"
        return stream, server, api, events

    yield start
    stop_streams(running)


def stop_streams(running: Sequence[tuple[PodStream, LocalSocketServer]]) -> None:
    """A fixture's teardown: stop each stream, wait for its thread, close its server."""
    for stream, server in running:
        stream.stop()
        stream._thread.join(30)
        server.close()


def test_a_watch_the_server_ends_resumes_from_its_last_event_without_a_relist(run_stream: Any) -> None:
    first = head() + chunked(event("ADDED", "a", 5) + event("BOOKMARK", "", 7), 40)
    _, server, api, events = run_stream([first], watches=2)
    assert events == [("ADDED", "listed"), ("ADDED", "a")] and api.lists == 1
    assert [q["resourceVersion"] for q in server.queries] == [["1"], ["7"]]
    assert server.queries[0]["allowWatchBookmarks"] == ["true"] and server.queries[0]["watch"] == ["1"]


def test_a_cut_watch_resumes_and_a_410_relists(run_stream: Any) -> None:
    cut = head() + chunked(event("ADDED", "a", 5) + event("MODIFIED", "a", 6), 100)[:-20]
    gone = head("410 Gone", "Content-Length: 0\r\n")
    error = head("500 Internal Server Error", "Content-Length: 2\r\n") + b"{}"
    expired = head() + chunked(orjson.dumps({"type": "ERROR", "object": {"code": 410}}) + b"\n", 100)
    _, server, api, events = run_stream([cut, gone, error, expired], watches=5)
    # The cut chunk held the MODIFIED event: resumed from the ADDED one's version, then the 410 relisted
    # (list 2), the 500 resumed from that list's version, the ERROR event relisted again (list 3).
    assert [q["resourceVersion"] for q in server.queries] == [["1"], ["5"], ["1"], ["1"], ["1"]]
    assert api.lists == 3
    assert events[:2] == [("ADDED", "listed"), ("ADDED", "a")]
    assert ("DELETED", "a") in events  # the relist did not list it again


def test_stop_ends_a_watch_blocked_in_a_read(run_stream: Any) -> None:
    stream, _, _, _ = run_stream([None], watches=1)  # the server holds the watch open and silent
    stream.stop()
    stream._thread.join(10)  # the read timeout is 45 s: only the abort ends it sooner
    assert not stream._thread.is_alive()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"x", b"\n")), max_size=8))
def test_the_splitter_gives_the_lines_of_any_blocks(blocks: list[bytes]) -> None:
    """Whatever the blocks (newlines anywhere, several or none in a block, empty lines), the lines are the
    stream's newline-terminated pieces and the rest is held."""
    split = LineSplitter()
    got = [line for block in blocks for line in split.feed(block)]
    *lines, rest = b"".join(blocks).split(b"\n")
    assert got == lines and split.pending == rest
