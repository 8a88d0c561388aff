"""``python -m e2e.perf.lab.writecost``: what the API server and etcd spend on py-scheduler's writes, by answer format.

A lean local control plane (no scheduler, no kwok) gets ``--nodes`` nodes; each round creates ``--pods`` pods and
makes, through py's ApiWriter, the writes of one kind for each of them while it reads kube-apiserver's and etcd's CPU
from /proc:

- ``evict``: preemption's eviction of bound pods (grace 0, as the benchmark's victims): the DisruptionTarget status
  patch, then the DELETE; ``delete``: the DELETE alone;
- ``unschedulable``: the recorder's conditional PodScheduled=False status patch of pending pods;
- ``bind``: the Binding POST of those pending pods;
- ``event``: one named events.k8s.io/v1 Event POST per pod.

Each write is asked for in every ``--accept`` in turn (``json``: application/json, what py asks today; ``protobuf``:
application/vnd.kubernetes.protobuf, what client-go's clientset asks for core kinds), interleaved and repeated
``--repeat`` times, since the machine is shared. Pod creation and clean-up are outside the measured window. The
table gives writes a second and CPU milliseconds per write of kube-apiserver, etcd and this process.
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from e2e.cluster.cluster import LocalCluster, create_nodes
from e2e.perf import procstat
from e2e.perf.apiprofile import ApiServerProfiler, top
from e2e.perf.kubeio import Conn
from e2e.perf.workloads import pod_default
from scheduler.kube.client import JSON, ApiWriter, RawApi, load_api_client, pod_path
from scheduler.kube.ratelimit import TokenBucket
from scheduler.model.timefmt import micro_time, rfc3339

NAMESPACE = "writecost"
ACCEPTS = {"json": JSON, "protobuf": "application/vnd.kubernetes.protobuf",
           "protobuf+json": "application/vnd.kubernetes.protobuf, application/json"}
OPS = ("evict", "delete", "unschedulable", "bind", "event")


class Accepting:
    """A Requester that asks every request's answer in one format (ApiWriter asks for JSON)."""

    def __init__(self, raw: RawApi, accept: str) -> None:
        self.raw, self.accept = raw, accept

    def request(self, method: str, path: str, body: Any = None, content_type: str = JSON,
                timeout: float | None = None, accept: str = JSON) -> bytes:
        return self.raw.request(method, path, body, content_type, timeout, self.accept)


def _condition(type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastProbeTime": None,
            "lastTransitionTime": rfc3339(), "observedGeneration": 1}


def _pods(raw: RawApi, count: int, bound: bool, nodes: Sequence[str], workers: int) -> list[dict[str, Any]]:
    """``count`` new pods (bound round-robin to ``nodes`` or pending), as the API server returned them."""
    tag = uuid.uuid4().hex[:6]

    def create(i: int) -> dict[str, Any]:
        body = pod_default()
        body["metadata"] = {"name": f"p-{tag}-{i}", "labels": {"app": "writecost"}}
        body["spec"].update(terminationGracePeriodSeconds=0, priority=0,
                            schedulerName="writecost-nobody", **({"nodeName": nodes[i % len(nodes)]} if bound else {}))
        out: dict[str, Any] = orjson.loads(raw.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body))
        return out

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(create, range(count)))


def _clean(raw: RawApi) -> None:
    """Delete what a round left (pods, events) and wait until no pod is left."""
    raw.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods?gracePeriodSeconds=0")
    raw.request("DELETE", f"/apis/events.k8s.io/v1/namespaces/{NAMESPACE}/events")
    for _ in range(600):
        if not orjson.loads(raw.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?limit=1"))["items"]:
            return
        time.sleep(0.1)


def _writes(op: str, writer: ApiWriter, pods: list[dict[str, Any]], nodes: Sequence[str]) -> list[Callable[[], None]]:
    """One call per pod making op's writes for it."""
    calls: list[Callable[[], None]] = []
    for i, pod in enumerate(pods):
        meta = pod["metadata"]
        ns, name, uid, rv = meta["namespace"], meta["name"], meta["uid"], meta["resourceVersion"]
        if op == "evict":
            cond = _condition("DisruptionTarget", "True", "PreemptionByScheduler",
                              "default-scheduler: preempting to accommodate a higher priority pod")

            def evict(ns: str = ns, name: str = name, cond: dict[str, Any] = cond) -> None:
                writer.patch_pod_status(ns, name, {"status": {"conditions": [cond]}})
                writer.delete_pod(ns, name)
            calls.append(evict)
        elif op == "delete":
            calls.append(functools.partial(writer.delete_pod, ns, name))
        elif op == "unschedulable":
            cond = _condition("PodScheduled", "False", "Unschedulable",
                              f"0/{len(nodes)} nodes are available: {len(nodes)} Insufficient cpu. preemption: "
                              f"0/{len(nodes)} nodes are available: {len(nodes)} No preemption victims found "
                              "for incoming pod.")
            patch = {"metadata": {"resourceVersion": rv}, "status": {"conditions": [cond]}}
            calls.append(functools.partial(writer.patch_pod_status, ns, name, patch))
        elif op == "bind":
            calls.append(functools.partial(writer.bind, ns, name, uid, nodes[i % len(nodes)]))
        elif op == "event":
            body = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                    "metadata": {"name": f"{name}.{uuid.uuid4().hex[:16]}", "namespace": ns},
                    "eventTime": micro_time(), "reportingController": "default-scheduler",
                    "reportingInstance": "default-scheduler-writecost", "action": "Binding", "reason": "Scheduled",
                    "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name, "uid": uid,
                                  "resourceVersion": rv},
                    "note": f"Successfully assigned {ns}/{name} to {nodes[i % len(nodes)]}", "type": "Normal"}

            def event(ns: str = ns, body: dict[str, Any] = body) -> None:
                writer.create_event(ns, body)
            calls.append(event)
    return calls


def _measure(calls: list[Callable[[], None]], pids: dict[str, int], workers: int,
             profiler: ApiServerProfiler | None) -> dict[str, float]:
    if profiler is not None:
        profiler.start()
    cpu0 = {k: procstat.cpu_seconds(p) for k, p in pids.items()}
    self0, busy0, t0 = procstat.self_cpu_seconds(), procstat.machine_busy_seconds(), time.monotonic()
    if workers <= 1:
        for call in calls:
            call()
    else:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda c: c(), calls))
    wall = time.monotonic() - t0
    if profiler is not None:
        profiler.stop()
    out = {k: procstat.cpu_seconds(p) - cpu0[k] for k, p in pids.items()}
    out["self"] = procstat.self_cpu_seconds() - self0
    out["machine"] = procstat.machine_busy_seconds() - busy0
    out["wall"] = wall
    return out


def _print_encoding(op: str, accept: str, files: list[Path]) -> None:
    """The cumulative share of the API server's CPU in the functions that encode or decode objects."""
    pattern = re.compile(r"(?i)(serializ|encod|decod|json|protobuf|Marshal|writeObject|patch)")
    for line in top(files, nodecount=400, cumulative=True).splitlines():
        if line.startswith(("Showing", "      flat")) or pattern.search(line):
            print(f"  {op} {accept}: {line}")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="python -m e2e.perf.lab.writecost")
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--ops", default="evict,unschedulable,bind", help=f"of {','.join(OPS)}")
    ap.add_argument("--accept", default="json,protobuf", help=f"of {','.join(ACCEPTS)}")
    ap.add_argument("--workers", type=int, default=1, help="writes side by side (1: one after another)")
    ap.add_argument("--bin-dir", default=str(Path.home() / ".cache/py-scheduler/bin/v1.37.2"))
    ap.add_argument("--profile", metavar="DIR",
                    help="kube-apiserver's CPU profile of each window into DIR; prints its encoders' share")
    ap.add_argument("--show-error", action="store_true",
                    help="print the answer to a PATCH of a missing pod in each --accept, then stop")
    args = ap.parse_args(argv)
    ops, accepts = args.ops.split(","), args.accept.split(",")
    with tempfile.TemporaryDirectory(prefix="py-scheduler-writecost-") as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", bin_dir=args.bin_dir, profiling=bool(args.profile))
        cluster.up(lean=True, build=False)
        try:
            raw = RawApi(load_api_client(str(cluster.kubeconfig)))
            nodes = create_nodes(str(cluster.kubeconfig), args.nodes, workers=8)
            raw.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": NAMESPACE}})
            if args.show_error:
                for a in accepts:
                    r = raw._direct.request("PATCH", pod_path(NAMESPACE, "missing", "status"),  # type: ignore[union-attr]
                                            raw._header_lines(ACCEPTS[a], "application/strategic-merge-patch+json"),
                                            b'{"status":{}}', timeout=10)
                    print(a, r.status, dict(r.headers).get("content-type"), repr(r.body))
                return
            st = cluster.state() or {}
            pids = {k: int(v) for k, v in st["pids"].items() if k in ("kube-apiserver", "etcd")}
            rows: dict[tuple[str, str], list[dict[str, float]]] = {}
            for rep in range(args.repeat):
                for op in ops:
                    for a in (accepts if rep % 2 == 0 else accepts[::-1]):
                        writer = ApiWriter(Accepting(raw, ACCEPTS[a]), TokenBucket(1e9, 1 << 30))
                        pods = _pods(raw, args.pods, op in ("evict", "delete"), nodes, 8)
                        time.sleep(1.0)  # the creations' watch fan-out settles outside the window
                        profiler = None
                        if args.profile:
                            pdir = Path(args.profile) / f"{op}-{a}-{rep}"
                            pdir.mkdir(parents=True, exist_ok=True)
                            profiler = ApiServerProfiler(Conn.from_kubeconfig(str(cluster.kubeconfig)), pdir)
                        m = _measure(_writes(op, writer, pods, nodes), pids, args.workers, profiler)
                        if profiler is not None:
                            _print_encoding(op, a, profiler.files)
                        rows.setdefault((op, a), []).append(m)
                        n = args.pods
                        print(f"rep {rep} {op:13s} {a:13s} {n / m['wall']:7.1f}/s  apiserver "
                              f"{1000 * m['kube-apiserver'] / n:5.2f} ms  etcd {1000 * m['etcd'] / n:5.2f} ms  "
                              f"self {1000 * m['self'] / n:5.2f} ms  machine {1000 * m['machine'] / n:5.2f} ms "
                              f"per pod  load {procstat.loadavg():.2f}", flush=True)
                        _clean(raw)
            print("\nmedians per pod (ms CPU), writes/s:")
            for (op, a), ms in rows.items():
                def med(k: str, ms: list[dict[str, float]] = ms) -> float:
                    return statistics.median(1000 * m[k] / args.pods for m in ms)
                rate = statistics.median(args.pods / m["wall"] for m in ms)
                print(f"{op:13s} {a:13s} {rate:7.1f}/s  apiserver {med('kube-apiserver'):5.2f}  "
                      f"etcd {med('etcd'):5.2f}  self {med('self'):5.2f}  machine {med('machine'):5.2f}")
        finally:
            cluster.down()


if __name__ == "__main__":
    main()
