"""The "ceiling" binder: what the API server allows a Python scheduler with no algorithm at all.

It uses the same HTTP stack as py-scheduler (the official kubernetes client, urllib3, a token bucket at
the same QPS/burst, a pool of binding threads): it lists the nodes once, watches pods of its
schedulerName that have no node (``spec.schedulerName=<name>,spec.nodeName=`` field selector, as a
LIST then a WATCH), and POSTs a Binding for each new pod, round-robin over the nodes. No cache, no
filters, no scores, no status updates, and no events unless ``--events``: then each binding is followed
by the Scheduled event py-scheduler and kube-scheduler write (events.k8s.io/v1, from the same binding
thread), so that the control plane's cost of that event can be told from a scheduler's own.

``python -m e2e.perf.ceiling --kubeconfig K --scheduler-name NAME [--qps 5000 --burst 5000 --workers 16 --events]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, cast


class TokenBucket:
    """Thread-safe; ``qps`` tokens per second, ``burst`` at most."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps, self.burst = qps, max(1, burst)
        self._tokens = float(self.burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def wait(self) -> None:
        if self.qps <= 0:
            return
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            delay = 0.0 if self._tokens >= 0 else -self._tokens / self.qps
        if delay > 0:
            time.sleep(delay)


class Binder:
    def __init__(self, api: Any, scheduler_name: str, qps: float, burst: int, workers: int,
                 events: bool = False) -> None:
        from kubernetes import client

        self.core: Any = cast(Any, client.CoreV1Api(api))
        self.events_api: Any = cast(Any, client.EventsV1Api(api)) if events else None  # None: no events
        self.name = scheduler_name
        self.bucket = TokenBucket(qps, burst)
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bind")
        self.seen: set[str] = set()
        self.nodes: Iterator[str] = iter(())
        self.bound = 0
        self.failed = 0

    def load_nodes(self) -> int:
        resp = self.core.list_node(_preload_content=False)
        names = [n["metadata"]["name"] for n in json.loads(resp.data)["items"]]
        self.nodes = itertools.cycle(names)
        return len(names)

    def _bind_and_record(self, ns: str, name: str, uid: str, node: str, rv: str) -> None:
        # The event goes out after _bind returned: its binding response, released unread, must be collected
        # first, or the pool hands the event that connection with the response still open and it fails.
        if self._bind(ns, name, uid, node) and self.events_api is not None:
            self._event(ns, name, uid, node, rv)

    def _bind(self, ns: str, name: str, uid: str, node: str) -> bool:
        from kubernetes.client.exceptions import ApiException

        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        for attempt in range(5):
            self.bucket.wait()
            try:
                resp = self.core.create_namespaced_pod_binding(name, ns, body, _preload_content=False)
                resp.release_conn()
                self.bound += 1
                return True
            except ApiException as e:
                if e.status in (404, 409):
                    return False
                err: Exception = e
            except Exception as e:  # connection errors: retry
                err = e
            time.sleep(0.05 * 2**attempt)
        self.failed += 1
        print(f"ceiling: bind {ns}/{name} failed: {err}", file=sys.stderr, flush=True)
        return False

    def _event(self, ns: str, name: str, uid: str, node: str, rv: str) -> None:
        """The Scheduled event, with the fields py-scheduler's recorder sets; one attempt, like a dropped event."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        body = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{name}.{time.time_ns():x}", "namespace": ns},
            "eventTime": now, "reportingController": self.name, "reportingInstance": f"{self.name}-ceiling",
            "action": "Binding", "reason": "Scheduled", "type": "Normal",
            "note": f"Successfully assigned {ns}/{name} to {node}",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name, "uid": uid,
                          "resourceVersion": rv},
        }  # fmt: skip
        self.bucket.wait()
        try:
            resp = self.events_api.create_namespaced_event(ns, body, _preload_content=False)
            resp.read()
            resp.release_conn()
        except Exception as e:
            print(f"ceiling: event for {ns}/{name} failed: {e}", file=sys.stderr, flush=True)

    def connections_opened(self) -> int:
        """Connections the client's pools opened so far: a few when they are kept alive, one per request when not."""
        pools = self.core.api_client.rest_client.pool_manager.pools
        return sum(pools[k].num_connections for k in list(pools.keys()))

    def offer(self, obj: dict[str, Any]) -> None:
        meta, spec = obj["metadata"], obj.get("spec") or {}
        uid = meta["uid"]
        if spec.get("nodeName") or uid in self.seen or meta.get("deletionTimestamp"):
            return
        self.seen.add(uid)
        self.pool.submit(self._bind_and_record, meta["namespace"], meta["name"], uid, next(self.nodes),
                         meta.get("resourceVersion", ""))

    def run(self, stop: threading.Event) -> None:
        rv = ""
        while not stop.is_set():
            try:
                rv = self._watch_once(stop, rv)
            except Exception as e:  # dropped connection and such: list again
                print(f"ceiling: watch: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                rv = ""
                time.sleep(0.2)

    def _watch_once(self, stop: threading.Event, rv: str) -> str:
        selector = f"spec.schedulerName={self.name},spec.nodeName="
        if not rv:
            resp = self.core.list_pod_for_all_namespaces(field_selector=selector, _preload_content=False)
            data = json.loads(resp.data)
            for obj in data["items"]:
                self.offer(obj)
            rv = data["metadata"]["resourceVersion"]
        resp = self.core.list_pod_for_all_namespaces(
            field_selector=selector, watch=True, resource_version=rv, allow_watch_bookmarks=True,
            timeout_seconds=300, _preload_content=False,
        )  # fmt: skip
        buf = b""
        for chunk in resp.stream(amt=None, decode_content=False):
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if not line:
                    continue
                ev = json.loads(line)
                obj = ev["object"]
                if ev["type"] == "ERROR":
                    rv = ""  # 410 Gone or similar: list again
                    break
                rv = obj["metadata"].get("resourceVersion", rv)
                if ev["type"] in ("ADDED", "MODIFIED"):
                    self.offer(obj)
            if not rv or stop.is_set():
                break
        resp.release_conn()
        return rv


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m e2e.perf.ceiling", description=__doc__.splitlines()[0])
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--scheduler-name", required=True)
    p.add_argument("--qps", type=float, default=5000)
    p.add_argument("--burst", type=int, default=5000)
    p.add_argument("--workers", type=int, default=16, help="binding threads (py-scheduler's --bind-workers default)")
    p.add_argument("--events", action="store_true", help="write each pod's Scheduled event after its binding")
    args = p.parse_args(argv)

    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=args.kubeconfig, client_configuration=cfg)
    cfg.connection_pool_maxsize = args.workers + 2
    binder = Binder(client.ApiClient(cfg), args.scheduler_name, args.qps, args.burst, args.workers, args.events)
    n = binder.load_nodes()
    print(f"ceiling: {n} nodes, scheduler name {args.scheduler_name}, qps {args.qps}/{args.burst}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    th = threading.Thread(target=binder.run, args=(stop,), daemon=True)
    th.start()
    while not stop.wait(1.0):
        if not th.is_alive():
            print("ceiling: watch loop died", file=sys.stderr, flush=True)
            return 1
    binder.pool.shutdown(wait=False, cancel_futures=True)
    print(f"ceiling: bound {binder.bound}, failed {binder.failed}, connections opened {binder.connections_opened()}",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
