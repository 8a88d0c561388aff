"""One streamed HTTP/1.1 response read with blocking I/O: the pod watch's transport.

A watch is a single response that lasts minutes, its events newline-delimited JSON in the chunked
transfer coding. Http11Pool reads whole responses, so this module reads one incrementally: the status
line and headers, then the body in large blocks (one recv may carry several events), decoded from the
chunked coding (or a Content-Length or read-to-close body) and split into complete lines. It runs in the
reading thread with no event loop: the loop's iterations, selector calls and the stream reader's
buffering were most of what the watch cost the scheduler's process on top of decoding the events.

The connection is Http11Pool's (its TLS context, SNI name and TCP_NODELAY), made anew for each watch and
closed after it: a watch's connection is never reused for other requests.
"""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Iterator, Mapping

from scheduler.kube.http11 import ConnectionClosed, Http11Pool, parse_header_lines

RECV_SIZE = 65536
MAX_HEAD = 65536  # a status line and headers longer than this are not an API server's
MAX_SIZE_LINE = 4096  # a chunk-size line, extensions included
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")

# The chunked decoder's states other than "n bytes of chunk data still to come" (n > 0).
_SIZE_LINE = 0
_DATA_CRLF = -1
_TRAILER = -2
_DONE = -3


class ChunkedDecoder:
    """The chunked transfer coding (RFC 9112 section 7.1) undone incrementally: ``feed`` takes the bytes as
    they arrive, split anywhere, and returns the payload they complete. ``done`` once the last chunk and its
    trailer section arrived; a malformed size line or a missing CRLF after a chunk raises ValueError."""

    __slots__ = ("_buf", "_state")

    def __init__(self) -> None:
        self._buf = b""  # an incomplete size line, chunk CRLF or trailer line
        self._state = _SIZE_LINE

    @property
    def done(self) -> bool:
        return self._state == _DONE

    def feed(self, data: bytes) -> bytes:
        buf = self._buf + data if self._buf else data
        pos, end, state = 0, len(buf), self._state
        out: list[bytes] = []
        while pos < end and state != _DONE:
            if state > 0:  # chunk data: as much of it as this block holds
                take = min(state, end - pos)
                out.append(buf[pos : pos + take])
                pos += take
                state = state - take or _DATA_CRLF
            elif state == _DATA_CRLF:
                if end - pos < 2:
                    break
                if buf[pos : pos + 2] != b"\r\n":
                    raise ValueError("chunk data not followed by CRLF")
                pos += 2
                state = _SIZE_LINE
            else:
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    if end - pos > MAX_SIZE_LINE:
                        raise ValueError("chunk-size line too long")
                    break
                line, pos = buf[pos:eol], eol + 2
                state = _size(line) if state == _SIZE_LINE else state if line else _DONE
        self._buf, self._state = buf[pos:], state
        return out[0] if len(out) == 1 else b"".join(out)


def _size(line: bytes) -> int:
    """The state after a chunk-size line: its size in bytes, or the trailer section after the last chunk."""
    digits = line.split(b";", 1)[0].strip(b" \t")  # chunk extensions are ignored, as RFC 9112 allows
    if not _HEX.fullmatch(digits):
        raise ValueError(f"malformed chunk-size line {line[:40]!r}")
    return int(digits, 16) or _TRAILER


class LengthDecoder:
    """A Content-Length body: passes its bytes through and is ``done`` after the last."""

    __slots__ = ("_left",)

    def __init__(self, length: int) -> None:
        self._left = length

    @property
    def done(self) -> bool:
        return self._left <= 0

    def feed(self, data: bytes) -> bytes:
        take = data[: self._left] if len(data) > self._left else data
        self._left -= len(take)
        return take


class CloseDecoder:
    """A body that ends when the server closes the connection: never ``done`` by itself."""

    done = False

    def feed(self, data: bytes) -> bytes:
        return data


Decoder = ChunkedDecoder | LengthDecoder | CloseDecoder


class LineSplitter:
    """Complete lines out of a byte stream split anywhere; a line's pieces are joined once, when its
    newline arrives (a large object spread over many blocks is not copied block by block)."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    @property
    def pending(self) -> bytes:
        """The started line that has no newline yet."""
        return b"".join(self._parts)

    def feed(self, data: bytes) -> list[bytes]:
        """The lines ``data`` completes. Found with ``find`` (memchr) rather than ``split``, which tests a line of
        one event's 3-4 KB byte by byte: ~18,000 instructions an event, half of what the framing cost."""
        end = data.find(b"\n")
        if end < 0:
            if data:
                self._parts.append(data)
            return []
        if self._parts:
            end += sum(len(part) for part in self._parts)  # no newline in the parts held
            self._parts.append(data)
            data = b"".join(self._parts)
            self._parts = []
        lines = []
        start = 0
        while end >= 0:
            lines.append(data[start:end])
            start = end + 1
            end = data.find(b"\n", start)
        if start < len(data):
            self._parts.append(data[start:])
        return lines


class StreamedResponse:
    """A response read from ``sock`` as it arrives; owns the socket (``close``). ``read_head`` reads the
    status line and headers; ``lines`` then yields the body's non-empty lines."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.status, self.reason = 0, ""
        self.headers: dict[str, str] = {}
        self.decoder: Decoder = CloseDecoder()
        self._rest = b""

    def read_head(self) -> StreamedResponse:
        head, self._rest = _read_head(self.sock)
        self.status, self.reason, self.headers = parse_head(head)
        self.decoder = body_decoder(self.headers)
        return self

    def lines(self) -> Iterator[bytes]:
        """The body's complete, non-empty lines until it ends. A body cut short (the connection closed
        mid-chunk, before the Content-Length, or mid-line) raises ConnectionClosed: its last line may be
        missing, so the caller resumes from the last event it handled."""
        split, decoder, data = LineSplitter(), self.decoder, self._rest
        self._rest = b""
        while True:
            if data:
                for line in split.feed(decoder.feed(data)):
                    if line and not line.isspace():
                        yield line
            if decoder.done:
                tail = split.pending
                if tail.strip():
                    yield tail
                return
            data = self.sock.recv(RECV_SIZE)
            if not data:
                if isinstance(decoder, CloseDecoder) and not split.pending.strip():
                    return
                raise ConnectionClosed("the server closed the watch mid-response")

    def read_body(self, limit: int = MAX_HEAD) -> bytes:
        """The body (up to ``limit`` bytes), for an error status's message; a body cut short gives what came."""
        got: list[bytes] = []
        size = 0
        data, self._rest = self._rest, b""
        with contextlib.suppress(OSError, ValueError):
            while size < limit:
                if data:
                    piece = self.decoder.feed(data)
                    got.append(piece)
                    size += len(piece)
                if self.decoder.done:
                    break
                data = self.sock.recv(RECV_SIZE)
                if not data:
                    break
        return b"".join(got)[:limit]

    def abort(self) -> None:
        """End a read blocked in another thread now (it sees the connection closed). Shuts the socket down
        below TLS: the SSL object stays in place for the reader, which then finds end of file."""
        with contextlib.suppress(OSError):
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """The status line and headers (without the blank line), and the body bytes read past them."""
    buf = b""
    while True:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if sep:
            return head, rest
        if len(buf) > MAX_HEAD:
            raise ValueError("response head too long")
        data = sock.recv(RECV_SIZE)
        if not data:
            raise ConnectionClosed("connection closed before the response head")
        buf += data


def parse_head(head: bytes) -> tuple[int, str, dict[str, str]]:
    """Status code, reason and headers (lower-case names, the last of a repeated one) of a response head."""
    status_line, *fields = head.decode("latin-1").split("\r\n")
    version, _, rest = status_line.partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/") or not code.isdigit():
        raise ValueError(f"malformed status line {status_line[:80]!r}")
    return int(code), reason, parse_header_lines(fields)


def body_decoder(headers: Mapping[str, str]) -> Decoder:
    """How the body is framed: chunked, by Content-Length, or by the server closing the connection."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return ChunkedDecoder()
    if "content-length" in headers:
        return LengthDecoder(int(headers["content-length"]))
    return CloseDecoder()


def open_stream(pool: Http11Pool, path: str, headers: Mapping[str, str], connect_timeout: float,
                read_timeout: float) -> StreamedResponse:
    """GET ``path`` on a new connection of ``pool``; the response's head is still to be read (``read_head``:
    a caller that may ``abort`` a read from another thread can hold the response first). ``read_timeout``
    bounds every read: a watch that stays silent longer is a dead connection."""
    sock = pool._connect(connect_timeout).sock  # the pool's TLS and socket set-up, outside its idle set
    try:
        sock.settimeout(read_timeout)
        sock.sendall(pool._head("GET", path, headers, None))  # the pool's request line and headers
    except BaseException:
        with contextlib.suppress(OSError):
            sock.close()
        raise
    return StreamedResponse(sock)
