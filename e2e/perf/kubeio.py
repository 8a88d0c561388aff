"""The harness's own API traffic: a pod watcher in a separate process, and parallel pod creators.

Both run outside the scheduler under test and record monotonic timestamps (CLOCK_MONOTONIC is
system-wide, so times from the watcher process and the creators compare directly):

* ``PodWatcher``: one process, one watch on all pods; for each pod the arrival time of the first event
  that shows it (ADDED) and of the first event with ``spec.nodeName`` set. It runs in its own process so
  that pod creation in the harness cannot delay the timestamps.
* ``create_pods``: asyncio + aiohttp, ``concurrency`` requests in flight under a token bucket
  (QPS/burst), bodies serialized beforehand; returns the time each POST was answered.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import ssl
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.sharedctypes import Synchronized
from typing import Any

from e2e.perf.workloads import NAMESPACES


@dataclass(frozen=True)
class Conn:
    """Where and how to reach kube-apiserver, from a kubeconfig."""

    host: str
    headers: dict[str, str]
    ca_file: str | None
    verify: bool

    @classmethod
    def from_kubeconfig(cls, path: str) -> Conn:
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(config_file=path, client_configuration=cfg)
        headers = {}
        auth = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
        if auth:
            prefix = cfg.api_key_prefix.get("authorization")
            headers["Authorization"] = f"{prefix} {auth}" if prefix else auth
        return cls(cfg.host, headers, cfg.ssl_ca_cert, bool(cfg.verify_ssl))

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca_file) if self.verify else ssl.create_default_context()
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx


# --------------------------------------------------------------------------------------------------
# watcher


@dataclass
class WatchResult:
    added: dict[str, float]  # "ns/name" -> first time seen
    bound: dict[str, float]  # "ns/name" -> first time seen with spec.nodeName
    nodes: dict[str, str]  # "ns/name" -> node
    errors: list[str]


def _watch_loop(conn: Conn, rv: str, res: WatchResult, counts: Sequence[Synchronized], stop: threading.Event) -> None:
    import urllib3

    http = urllib3.PoolManager(
        ssl_context=conn.ssl_context(), cert_reqs="CERT_REQUIRED" if conn.verify else "CERT_NONE"
    )
    ns_index = {ns: i for i, ns in enumerate(NAMESPACES)}
    mono = time.monotonic
    loads = json.loads
    while not stop.is_set():
        url = f"{conn.host}/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=3600&resourceVersion={rv}"
        try:
            resp = http.request("GET", url, headers=conn.headers, preload_content=False,
                                timeout=urllib3.Timeout(connect=10, read=None))  # fmt: skip
            if resp.status == 410:
                raise RuntimeError("410 Gone")
            if resp.status != 200:
                raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:300]!r}")
            buf = b""
            for chunk in resp.stream(amt=None, decode_content=False):
                t = mono()
                buf += chunk
                while True:
                    i = buf.find(b"\n")
                    if i < 0:
                        break
                    line, buf = buf[:i], buf[i + 1 :]
                    if not line:
                        continue
                    ev = loads(line)
                    obj = ev.get("object") or {}
                    meta = obj.get("metadata") or {}
                    if meta.get("resourceVersion"):
                        rv = meta["resourceVersion"]
                    typ = ev.get("type")
                    if typ == "ERROR":
                        if obj.get("code") == 410:
                            raise RuntimeError("410 Gone")
                        res.errors.append(str(obj)[:300])
                        continue
                    if typ not in ("ADDED", "MODIFIED"):
                        continue
                    key = f"{meta.get('namespace')}/{meta.get('name')}"
                    if key not in res.added:
                        res.added[key] = t
                    node = (obj.get("spec") or {}).get("nodeName")
                    if node and key not in res.bound:
                        res.bound[key] = t
                        res.nodes[key] = node
                        idx = ns_index.get(meta.get("namespace", ""))
                        if idx is not None:
                            with counts[idx].get_lock():
                                counts[idx].value += 1
            resp.release_conn()
        except Exception as e:  # keep watching; the run reports the errors
            res.errors.append(f"{type(e).__name__}: {e}"[:300])
            if "410" in str(e):
                rv = _relist(http, conn, res, counts, ns_index)
            time.sleep(0.2)


def _relist(http: Any, conn: Conn, res: WatchResult, counts: Sequence[Synchronized], ns_index: dict[str, int]) -> str:
    """After 410 Gone: record bound pods from a LIST (at the current time) and return its resourceVersion."""
    resp = http.request("GET", f"{conn.host}/api/v1/pods", headers=conn.headers)
    data = json.loads(resp.data)
    t = time.monotonic()
    for obj in data.get("items", []):
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        res.added.setdefault(key, t)
        node = obj["spec"].get("nodeName")
        if node and key not in res.bound:
            res.bound[key] = t
            res.nodes[key] = node
            idx = ns_index.get(meta["namespace"])
            if idx is not None:
                with counts[idx].get_lock():
                    counts[idx].value += 1
    return str(data["metadata"]["resourceVersion"])


def _watcher_main(conn: Conn, rv: str, counts: Sequence[Synchronized], stop: Any, out: Connection) -> None:
    res = WatchResult({}, {}, {}, [])
    tstop = threading.Event()
    th = threading.Thread(target=_watch_loop, args=(conn, rv, res, counts, tstop), daemon=True)
    th.start()
    stop.wait()
    tstop.set()
    # the reader thread may be blocked in a read; the snapshot is taken under the GIL
    snap = WatchResult(dict(res.added), dict(res.bound), dict(res.nodes), list(res.errors))
    out.send(snap)
    out.close()


class PodWatcher:
    """A watch on all pods from resourceVersion ``rv``, in a child process; ``bound_count(ns)`` while it
    runs, ``stop()`` for the timestamps."""

    def __init__(self, conn: Conn, rv: str) -> None:
        ctx = mp.get_context("fork")
        self._counts = [ctx.Value("l", 0) for _ in NAMESPACES]
        self._stop = ctx.Event()
        self._rx, tx = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=_watcher_main, args=(conn, rv, self._counts, self._stop, tx), daemon=True)
        self._proc.start()
        tx.close()

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def bound_count(self, namespace: str) -> int:
        return int(self._counts[NAMESPACES.index(namespace)].value)

    def stop(self, timeout: float = 60.0) -> WatchResult:
        self._stop.set()
        try:
            if not self._rx.poll(timeout):
                raise RuntimeError("pod watcher did not answer")
            res: WatchResult = self._rx.recv()
        finally:
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join(5)
        return res


# --------------------------------------------------------------------------------------------------
# creators


class AsyncTokenBucket:
    """``qps`` tokens per second, at most ``burst`` saved up (client-go's flowcontrol shape)."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps, self.burst = qps, max(1, burst)
        self._tokens = float(self.burst)
        self._last = time.monotonic()

    async def wait(self) -> None:
        if self.qps <= 0:
            return
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens < 0:
            await asyncio.sleep(-self._tokens / self.qps)


async def _create(
    conn: Conn, bodies: Sequence[tuple[str, str, bytes]], qps: float, burst: int, concurrency: int
) -> tuple[dict[str, float], list[str]]:
    import aiohttp

    done: dict[str, float] = {}
    errors: list[str] = []
    bucket = AsyncTokenBucket(qps, burst)
    headers = {**conn.headers, "Content-Type": "application/json", "Accept": "application/json"}
    it = iter(bodies)
    connector = aiohttp.TCPConnector(limit=concurrency, ssl=conn.ssl_context())
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(conn.host, connector=connector, timeout=timeout, headers=headers) as session:

        async def worker() -> None:
            for ns, name, body in it:
                for attempt in range(6):
                    await bucket.wait()
                    try:
                        async with session.post(f"/api/v1/namespaces/{ns}/pods", data=body) as resp:
                            await resp.read()
                            if resp.status in (200, 201):
                                done[f"{ns}/{name}"] = time.monotonic()
                                break
                            if resp.status == 409:  # created by an earlier attempt
                                break
                            err = f"{ns}/{name}: HTTP {resp.status}"
                    except (TimeoutError, aiohttp.ClientError) as e:
                        err = f"{ns}/{name}: {type(e).__name__}: {e}"
                    if attempt == 5:
                        errors.append(err)
                    else:
                        await asyncio.sleep(0.1 * 2**attempt)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done, errors


def create_pods(
    conn: Conn, pods: Sequence[dict[str, Any]], qps: float = 5000, burst: int = 5000, concurrency: int = 32
) -> tuple[dict[str, float], list[str]]:
    """POST ``pods`` (each with metadata.namespace and .name) in parallel; returns
    ("ns/name" -> monotonic time the POST was answered, errors)."""
    bodies = [(p["metadata"]["namespace"], p["metadata"]["name"], json.dumps(p).encode()) for p in pods]
    if not bodies:
        return {}, []
    return asyncio.run(_create(conn, bodies, qps, burst, concurrency))


def list_resource_version(conn: Conn) -> str:
    """The resourceVersion of a (one-item) LIST of pods: where a watch that misses nothing starts."""
    import urllib3

    reqs = "CERT_REQUIRED" if conn.verify else "CERT_NONE"
    http = urllib3.PoolManager(ssl_context=conn.ssl_context(), cert_reqs=reqs)
    resp = http.request("GET", f"{conn.host}/api/v1/pods?limit=1", headers=conn.headers)
    if resp.status != 200:
        raise RuntimeError(f"LIST pods: HTTP {resp.status}")
    return str(json.loads(resp.data)["metadata"]["resourceVersion"])


def wait_until(pred: Any, timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return bool(pred())


__all__ = ["Conn", "PodWatcher", "WatchResult", "create_pods", "list_resource_version", "wait_until"]
