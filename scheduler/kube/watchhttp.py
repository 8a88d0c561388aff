"""One streamed HTTP/1.1 response read with blocking I/O: the pod watch's transport.

A watch is a single response that lasts minutes, its events newline-delimited JSON in the chunked
transfer coding. Http11Pool reads whole responses, so this module reads one incrementally: the status
line and headers, then the body in large blocks (one recv may carry several events), decoded from the
chunked coding (or a Content-Length or read-to-close body) and split into complete lines. It runs in the
reading thread with no event loop: the loop's iterations, selector calls and the stream reader's
buffering were most of what the watch cost the scheduler's process on top of decoding the events.

The connection is Http11Pool's (its TCP_NODELAY socket, TLS context and SNI name), made anew for each watch
and closed after it: a watch's connection is never reused for other requests. Its TLS is decrypted from memory
(``TlsSource``): kube-apiserver flushes each watch event as a TLS record of its own, and an SSL socket returns
one record a recv (each a few reads, a poll and two GIL hand-offs), so the thread read one event a wake. Here one
recv takes every byte the socket holds and all the complete records in it are decrypted before the next
blocking recv: one wake serves every event that arrived while the thread was busy.
"""

from __future__ import annotations

import contextlib
import re
import socket
import ssl
import struct
from collections.abc import Iterator, Mapping

from scheduler.kube.http11 import ConnectionClosed, Http11Pool, parse_header_lines

RECV_SIZE = 262144  # one wake's read: as much as the socket holds, up to this
RECORD_MAX = 16384  # a TLS record's plaintext is at most 2^14 bytes
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
        one event's few KB byte by byte."""
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


class _Reads:
    """A source's socket reads. After ``blocking`` they block in the kernel for at most the read timeout
    (SO_RCVTIMEO rather than a Python timeout, which polls before every recv: a wake is then one system call and
    one GIL hand-off, not two)."""

    __slots__ = ("sock",)

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def blocking(self, seconds: float) -> None:
        """Reads from now on block in the kernel, for at most ``seconds`` each."""
        self.sock.settimeout(None)
        whole = int(seconds)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                             struct.pack("ll", whole, int((seconds - whole) * 1e6)))

    def _recv_into(self, buffer: memoryview) -> int:
        try:
            return self.sock.recv_into(buffer)
        except BlockingIOError:  # SO_RCVTIMEO's expiry
            raise TimeoutError("the watch sent nothing within its read timeout") from None


class PlainSource(_Reads):
    """A connection without TLS: one wake's bytes are one recv's."""

    __slots__ = ("_view",)

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock)
        self._view = memoryview(bytearray(RECV_SIZE))

    def read(self) -> bytes:
        """The bytes that arrived (blocking until some do); b"" once the server closed the connection."""
        return bytes(self._view[: self._recv_into(self._view)])

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)


class TlsSource(_Reads):
    """TLS over a plain socket, decrypted from memory (``ssl.MemoryBIO``): each ``read`` is one recv of the raw
    bytes, then every complete record they hold decrypted at once (an SSL socket's recv returns one record)."""

    __slots__ = ("_ended", "_in", "_out", "_raw", "_tls", "_view")

    def __init__(self, sock: socket.socket, context: ssl.SSLContext, server_name: str) -> None:
        super().__init__(sock)
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._in, self._out, server_hostname=server_name)  # SNI and its check
        self._raw = memoryview(bytearray(RECV_SIZE))  # one wake's ciphertext (no buffer allocated a recv)
        self._view = memoryview(bytearray(RECV_SIZE + RECORD_MAX))  # one wake's plaintext, copied out once
        self._ended = False

    def handshake(self) -> None:
        """The TLS handshake, pumped by hand between the socket and the memory buffers (the context verifies
        the server's certificate and name as ``wrap_socket`` would)."""
        while True:
            try:
                self._tls.do_handshake()
            except ssl.SSLWantReadError:
                self._flush()
                data = self.sock.recv(RECV_SIZE)
                if not data:
                    raise ConnectionClosed("the server closed the connection during the TLS handshake") from None
                self._in.write(data)
            else:
                self._flush()
                return

    def _flush(self) -> None:
        data = self._out.read()
        if data:
            self.sock.sendall(data)

    def send(self, data: bytes) -> None:
        self._tls.write(data)  # a memory buffer takes all of it at once
        self._flush()

    def read(self) -> bytes:
        """The plaintext of every complete record one recv brought (blocking until a record is complete);
        b"" once the connection ended: the server's close_notify, or its end of file even mid-record (the
        body's framing then tells a cut stream)."""
        while not self._ended:
            size = self._recv_into(self._raw)
            if not size:
                self._ended = True
                break
            self._in.write(self._raw[:size])
            plain = self._drain()
            if plain:
                return plain
        return b""

    def _drain(self) -> bytes:
        """Decrypt every complete record buffered. A read returns one record's plaintext; the last read finds
        the buffer empty (no exception raised) unless a record is still incomplete."""
        tls, incoming, view = self._tls, self._in, self._view
        room = len(view) - RECORD_MAX
        pos = 0
        parts: list[bytes] = []
        try:
            while incoming.pending or tls.pending():
                if pos > room:
                    parts.append(bytes(view[:pos]))
                    pos = 0
                got: int = tls.read(RECORD_MAX, view[pos:])  # type: ignore[assignment]  # a count, given a buffer
                if not got:  # close_notify: nothing follows it
                    self._ended = True
                    break
                pos += got
        except ssl.SSLWantReadError:  # the rest of a record is still to come
            pass
        except ssl.SSLZeroReturnError:
            self._ended = True
        if not parts:
            return bytes(view[:pos])
        parts.append(bytes(view[:pos]))
        return b"".join(parts)


Source = PlainSource | TlsSource


class StreamedResponse:
    """A response read from ``source`` as it arrives; owns its socket (``close``). ``read_head`` reads the
    status line and headers; ``lines`` then yields the body's non-empty lines."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.sock = source.sock
        self.status, self.reason = 0, ""
        self.headers: dict[str, str] = {}
        self.decoder: Decoder = CloseDecoder()
        self._rest = b""

    def read_head(self) -> StreamedResponse:
        head, self._rest = _read_head(self.source)
        self.status, self.reason, self.headers = parse_head(head)
        self.decoder = body_decoder(self.headers)
        return self

    def lines(self) -> Iterator[bytes]:
        """The body's complete, non-empty lines until it ends. A body cut short (the connection closed
        mid-chunk, before the Content-Length, or mid-line) raises ConnectionClosed: its last line may be
        missing, so the caller resumes from the last event it handled."""
        split, decoder, data, read = LineSplitter(), self.decoder, self._rest, self.source.read
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
            data = read()
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
                data = self.source.read()
                if not data:
                    break
        return b"".join(got)[:limit]

    def abort(self) -> None:
        """End a read blocked in another thread now (it sees the connection closed): the socket is shut down
        (TLS lies above it, in memory)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _read_head(source: Source) -> tuple[bytes, bytes]:
    """The status line and headers (without the blank line), and the body bytes read past them."""
    buf = b""
    while True:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if sep:
            return head, rest
        if len(buf) > MAX_HEAD:
            raise ValueError("response head too long")
        data = source.read()
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
    a caller that may ``abort`` a read from another thread can hold the response first). ``connect_timeout``
    bounds connecting and the TLS handshake, ``read_timeout`` every read after: a watch that stays silent
    longer is a dead connection."""
    sock = pool.tcp(connect_timeout)
    try:
        source: Source = PlainSource(sock)
        if pool.tls:
            source = TlsSource(sock, pool.ssl_context, pool.server_name)
            source.handshake()
        source.send(pool._head("GET", path, headers, None))  # the pool's request line and headers
        source.blocking(read_timeout)
    except BaseException:
        with contextlib.suppress(OSError):
            sock.close()
        raise
    return StreamedResponse(source)
