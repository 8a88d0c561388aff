"""Every pod's scheduling state, from one watch in a child process, for barriers and measurements.

scheduler_perf's ops ask a pod informer: how many pods of these namespaces (and labels) are scheduled,
how many were attempted (have a PodScheduled condition), and when each was bound. Here a child process
watches all pods (so that creating pods in the harness cannot delay the timestamps, as in
``e2e.perf.kubeio.PodWatcher``) and answers those questions over a pipe.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from e2e.perf.kubeio import Conn


@dataclass
class PodState:
    namespace: str
    labels: dict[str, str]
    added: float
    bound: float | None = None
    node: str | None = None
    attempted: bool = False
    deleted: bool = False
    group: str | None = None  # spec.schedulingGroup.podGroupName


def _matches(p: PodState, namespaces: Sequence[str], selector: Mapping[str, str]) -> bool:
    return (not namespaces or p.namespace in namespaces) and all(p.labels.get(k) == v for k, v in selector.items())


def _apply(pods: dict[str, PodState], typ: str, obj: Mapping[str, Any], t: float) -> None:
    meta = obj.get("metadata") or {}
    key = f"{meta.get('namespace')}/{meta.get('name')}"
    p = pods.get(key)
    if p is None:
        p = pods[key] = PodState(str(meta.get("namespace")), dict(meta.get("labels") or {}), t)
    if typ == "DELETED":
        p.deleted = True
        return
    p.labels = dict(meta.get("labels") or {})
    spec = obj.get("spec") or {}
    p.group = (spec.get("schedulingGroup") or {}).get("podGroupName")
    node = spec.get("nodeName")
    if node and p.bound is None:
        p.bound, p.node = t, node
    conds = (obj.get("status") or {}).get("conditions") or ()
    p.attempted = p.attempted or any(c.get("type") == "PodScheduled" for c in conds)


def _watch(conn: Conn, pods: dict[str, PodState], lock: threading.Lock, stop: threading.Event) -> None:
    import urllib3

    reqs = "CERT_REQUIRED" if conn.verify else "CERT_NONE"
    http = urllib3.PoolManager(ssl_context=conn.ssl_context(), cert_reqs=reqs)
    rv = ""
    while not stop.is_set():
        try:
            if not rv:  # (re)list: what exists now, then watch from there
                resp = http.request("GET", f"{conn.host}/api/v1/pods", headers=conn.headers)
                data = json.loads(resp.data)
                t = time.monotonic()
                with lock:
                    for obj in data.get("items", []):
                        _apply(pods, "ADDED", obj, t)
                rv = str(data["metadata"]["resourceVersion"])
            url = f"{conn.host}/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=3600&resourceVersion={rv}"
            resp = http.request("GET", url, headers=conn.headers, preload_content=False,
                                timeout=urllib3.Timeout(connect=10, read=None))  # fmt: skip
            buf = b""
            for chunk in resp.stream(amt=None, decode_content=False):
                t = time.monotonic()
                *lines, buf = (buf + chunk).split(b"\n")
                for line in filter(None, lines):
                    ev = json.loads(line)
                    obj = ev.get("object") or {}
                    if ev.get("type") == "ERROR":
                        rv = "" if obj.get("code") == 410 else rv
                        raise RuntimeError(str(obj)[:200])
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if ev.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        with lock:
                            _apply(pods, ev["type"], obj, t)
        except Exception:  # keep watching: a broken stream is picked up again from rv (or a relist)
            time.sleep(0.2)


def _serve(conn: Conn, rx: Connection) -> None:
    pods: dict[str, PodState] = {}
    lock = threading.Lock()
    stop = threading.Event()
    threading.Thread(target=_watch, args=(conn, pods, lock, stop), daemon=True).start()
    while True:
        req = rx.recv()
        if req[0] == "stop":
            stop.set()
            rx.close()
            return
        _, namespaces, selector = req
        with lock:
            sel = [(k, p) for k, p in pods.items() if _matches(p, namespaces, selector)]
            rx.send([(k, p.added, p.bound, p.attempted, p.deleted, p.node, p.group) for k, p in sel])


@dataclass(frozen=True)
class PodView:
    key: str
    added: float
    bound: float | None
    attempted: bool
    deleted: bool
    node: str | None
    group: str | None = None


class PodTracker:
    """The watch process; ``pods(namespaces, selector)`` is the informer's list at this moment."""

    def __init__(self, conn: Conn) -> None:
        ctx = mp.get_context("fork")
        self._rx, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(conn, child), daemon=True)
        self._proc.start()
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def pods(self, namespaces: Sequence[str] = (), selector: Mapping[str, str] | None = None) -> list[PodView]:
        with self._lock:
            self._rx.send(("query", list(namespaces), dict(selector or {})))
            return [PodView(*row) for row in self._rx.recv()]

    def stop(self) -> None:
        with self._lock, contextlib.suppress(OSError):
            self._rx.send(("stop",))
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
