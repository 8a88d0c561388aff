"""``python -m e2e.perf.watchtransport``: the pod watch's transport alone, in process (issue 28).

A server child process writes live-shaped watch lines (``e2e.perf.podhandoff``'s, managedFields and all)
as one chunked HTTP/1.1 response, each event its own chunk and its own write (one TLS record), as
kube-apiserver flushes a watch, ``--per-write`` events back to back between pauses of ``--pause-us``. The
measuring process reads the response with each reader and counts its lines (no decoding, no handler):
``blocking`` is kube.watchhttp as PodStream reads a watch now; ``aiohttp`` is the path it replaced (an
event loop, aiohttp's StreamReader and its chunked parser, the lines split from ``iter_any``'s blocks).
It prints the reading process's CPU microseconds per event (process time: the server's is its own) for
each reader, over interleaved rounds. For instruction counts, run one reader under
``valgrind --tool=callgrind`` at two ``--pods`` and divide the difference by the difference in events.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from e2e.perf.podhandoff import lines_of
from scheduler.kube.http11 import Http11Pool
from scheduler.kube.watchhttp import open_stream

READERS = ("blocking", "aiohttp")
PATH = "/api/v1/pods?watch=1"


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate and key for 127.0.0.1 (openssl), for the TLS server."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out",
                    str(cert)], check=True, capture_output=True)  # fmt: skip
    return cert, key


def serve(pods: int, per_write: int, pause_us: int, cert: str) -> None:
    """The server child: prints its port, then answers every connection with the whole watch."""
    lines = lines_of(pods, 100, 0.0, "live")
    chunks = [b"%x\r\n%s\n\r\n" % (len(line) + 1, line) for line in lines]
    ctx = None
    if cert:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(cert, str(Path(cert).with_name("key.pem")))
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ctx is not None:
            conn = ctx.wrap_socket(conn, server_side=True)
        with conn:
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            for at in range(0, len(chunks), per_write):
                for chunk in chunks[at : at + per_write]:
                    conn.sendall(chunk)
                if pause_us:
                    time.sleep(pause_us / 1e6)
            conn.sendall(b"0\r\n\r\n")


def read_blocking(host: str, ctx: ssl.SSLContext) -> int:
    response = open_stream(Http11Pool(host, ctx), PATH, {"Accept": "application/json"}, 10, 60).read_head()
    try:
        return sum(1 for _ in response.lines())
    finally:
        response.close()


async def _read_aiohttp(host: str, ctx: ssl.SSLContext) -> int:
    count = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=4)) as session, \
            session.get(f"{host}{PATH}", headers={"Accept": "application/json"}) as resp:
        pending = b""
        async for chunk in resp.content.iter_any():
            pending += chunk
            if b"\n" not in chunk:
                continue
            *lines, pending = pending.split(b"\n")
            count += sum(1 for line in lines if line.strip())
    return count


def read_aiohttp(host: str, ctx: ssl.SSLContext) -> int:
    return asyncio.run(_read_aiohttp(host, ctx))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=1000, help="pods (4 events each)")
    ap.add_argument("--readers", default=",".join(READERS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-write", type=int, default=1, help="events written back to back between pauses")
    ap.add_argument("--pause-us", type=int, default=0, help="pause after each group of events")
    ap.add_argument("--plain", action="store_true", help="no TLS")
    ap.add_argument("--serve", default=None, help=argparse.SUPPRESS)  # the server child: its certificate
    args = ap.parse_args()
    if args.serve is not None:
        serve(args.pods, args.per_write, args.pause_us, args.serve)
        return
    with tempfile.TemporaryDirectory() as tmp:
        cert = "" if args.plain else str(self_signed(Path(tmp))[0])
        cmd = [sys.executable, "-m", "e2e.perf.watchtransport", "--serve", cert, "--pods", str(args.pods),
               "--per-write", str(args.per_write), "--pause-us", str(args.pause_us)]  # fmt: skip
        server = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        try:
            assert server.stdout is not None
            port = int(server.stdout.readline())
            host = f"{'http' if args.plain else 'https'}://127.0.0.1:{port}"
            ctx = ssl.create_default_context(cafile=cert or None)
            readers = {"blocking": read_blocking, "aiohttp": read_aiohttp}
            chosen = args.readers.split(",")
            results: dict[str, list[float]] = {r: [] for r in chosen}
            for round_ in range(args.rounds):
                for name in chosen[round_ % len(chosen):] + chosen[: round_ % len(chosen)]:  # rotated order
                    t0 = time.process_time()
                    events = readers[name](host, ctx)
                    results[name].append((time.process_time() - t0) / events * 1e6)
                    assert events == args.pods * 4, (name, events)
            for name, values in results.items():
                print(f"{name:9s} CPU us/event: median {statistics.median(values):.2f} "
                      f"(min {min(values):.2f}, max {max(values):.2f}) over {len(values)} rounds of {args.pods * 4}")
        finally:
            server.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(5)


if __name__ == "__main__":
    main()
