"""``python -m e2e.perf.podhandoff``: what a pod watch event costs the scheduler process, part by part, and
what decoding the watch in a child process would save it (issue 28, step 2's groundwork; a prototype of
the hand-off, not the feature).

The events are ``e2e.perf.watchreplay``'s (per pod: ADDED pending, MODIFIED bound, MODIFIED running,
DELETED), into a Scheduler with ``--nodes`` nodes, as the pod stream hands them over today
(``PodStream._handle_line``). ``split`` times each part over the same lines: orjson's decode of the
watch line, ``trim`` (managedFields dropped), ``pod_from_api`` (the Pod view), and the rest of the handler
(cache, queue, bookkeeping) as the whole replay minus those three.

``handoff`` runs a child process that decodes the same lines and writes one record per event to a pipe (a
4-byte length, then the record; records packed into writes of up to 64 KiB, as a watch chunk carries
several events), and the scheduler process reads the pipe, rebuilds what the handler needs and hands it
over. Record formats: ``json`` (the trimmed object re-encoded: the parent decodes a smaller line and
builds the Pod itself), ``marshal`` (the same as a marshal of ``(type, object)``), ``pickle-pod`` (the
child also builds the Pod, and the parent unpickles it: the handler's ``pod_from_api`` is skipped). The
parent's CPU (process time: the child's is its own) is compared to the in-process stream's.
Socket reads and the chunked decoding are in neither figure (the child would take them too;
``e2e.perf.watchtransport`` measures them).
"""

from __future__ import annotations

import argparse
import gc
import marshal
import os
import pickle
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

import orjson

import scheduler.eventhandlers as eventhandlers
from e2e.perf.watchreplay import PHASES, build_scheduler, watch_lines
from scheduler.app import gcpolicy
from scheduler.kube.podstream import PodStream
from scheduler.kube.transform import loads_trimmed, trim
from scheduler.model.pod import Pod, pod_from_api
from scheduler.scheduler import Scheduler

FORMATS = ("json", "marshal", "pickle-pod")
WRITE_SIZE = 64 * 1024


def lines_of(pods: int, nodes: int, foreign: float, shape: str) -> list[bytes]:
    return watch_lines(pods, nodes, foreign, shape)


def replay_lines(lines: Sequence[bytes], nodes: int) -> float:
    """CPU seconds to hand ``lines`` to a fresh scheduler as the pod stream does, with the collector's policy
    installed as the scheduler installs it once synced (scheduler/app/gcpolicy.py), unless it is disabled."""
    sched = build_scheduler(nodes)
    stream = PodStream(api=None, on_event=sched.on_pod_event)  # type: ignore[arg-type]
    policy = gcpolicy.install() if gc.isenabled() else None
    try:
        rv = ""
        t0 = time.process_time()
        for line in lines:
            rv = stream._handle_line(line, rv)
        return time.process_time() - t0
    finally:
        if policy is not None:
            gcpolicy.uninstall(policy)


def split(pods: int, nodes: int, foreign: float, shape: str) -> dict[str, float]:
    """CPU seconds per event of each part of the in-process path over one replay's lines. The parts are
    timed with the garbage collector off (decoded objects pile up, and which part a collection lands in is
    chance); ``gc`` is what the collector adds to a whole replay. ``decode`` and ``trim`` (the whole line
    decoded, then managedFields dropped) and ``pod_from_api`` (every view built afresh) are what the stream
    did before it cut managedFields from the bytes (``cut_decode``) and built an update's view from the
    previous one (``pod_from_api_update``: here a bound pod's first event finds only its pending view, as no
    scheduling cycle assumed it); ``handler`` is the rest of today's path."""
    lines = lines_of(pods, nodes, foreign, shape)
    total = replay_lines(lines, nodes)
    gc.disable()
    try:
        t0 = time.process_time()
        decoded = [orjson.loads(line) for line in lines]
        decode = time.process_time() - t0
        objs = [ev["object"] for ev in decoded]
        t0 = time.process_time()
        for obj in objs:
            trim(obj)
        trim_s = time.process_time() - t0
        t0 = time.process_time()
        cut = [loads_trimmed(line) for line in lines]
        cut_decode = time.process_time() - t0
        del cut
        n_foreign = int(pods * foreign)
        built = [obj for i, obj in enumerate(objs) if i % pods >= n_foreign or obj["spec"].get("nodeName")]
        pod_from_api(built[0])  # the resource and toleration memos are warm in a running scheduler
        t0 = time.process_time()
        for obj in built:
            pod_from_api(obj)
        build = time.process_time() - t0
        views: dict[str, Pod] = {}
        t0 = time.process_time()
        for obj in built:
            uid = obj["metadata"]["uid"]
            views[uid] = pod_from_api(obj, views.get(uid))
        update = time.process_time() - t0
        without_gc = replay_lines(lines, nodes)
        records = _records("json", lines)
        t0 = time.process_time()
        for rec in records:
            orjson.loads(rec)
        record_decode = time.process_time() - t0
        blob = b"".join(len(rec).to_bytes(4, "big") + rec for rec in records)
        t0 = time.process_time()
        frames, _ = _frames(blob, lambda rec: None)
        frame = time.process_time() - t0
        assert frames == len(records)
    finally:
        gc.enable()
    n = len(lines)
    return {"bytes": sum(map(len, lines)) / n / 1e6, "decode": decode / n, "trim": trim_s / n,
            "cut_decode": cut_decode / n, "pod_from_api": build / n, "pod_from_api_update": update / n,
            "handler": (without_gc - cut_decode - update) / n,
            "gc": (total - without_gc) / n, "total": total / n, "record_decode": record_decode / n,
            "frame": frame / n}


def _frames(buf: bytes, handle: Callable[[bytes], None]) -> tuple[int, int]:
    """Hand each whole frame of ``buf`` (4-byte length, record) to ``handle``: (frames handed, bytes used);
    the parent keeps the rest for the next read."""
    off, end, count = 0, len(buf), 0
    while end - off >= 4:
        n = int.from_bytes(buf[off:off + 4], "big")
        if end - off - 4 < n:
            break
        handle(buf[off + 4:off + 4 + n])
        off += 4 + n
        count += 1
    return count, off


def _records(fmt: str, lines: Sequence[bytes]) -> list[bytes]:
    """The child's work: each watch line decoded, trimmed and encoded as a ``fmt`` record."""
    out = []
    for line in lines:
        ev = orjson.loads(line)
        obj = trim(ev["object"])
        if fmt == "json":
            out.append(orjson.dumps([ev["type"], obj]))
        elif fmt == "marshal":
            out.append(marshal.dumps((ev["type"], obj)))
        else:
            out.append(pickle.dumps((ev["type"], pod_from_api(obj)), protocol=pickle.HIGHEST_PROTOCOL))
    return out


def child(fmt: str, pods: int, nodes: int, foreign: float, shape: str) -> None:
    """Wait for a byte on stdin, then decode every line and write the framed records to stdout; report
    this process's CPU seconds and the records' bytes on stderr."""
    lines = lines_of(pods, nodes, foreign, shape)
    sys.stdin.buffer.read(1)
    t0 = time.process_time()
    out = sys.stdout.buffer
    pending: list[bytes] = []
    size = written = 0
    for rec in _records(fmt, lines):
        pending += (len(rec).to_bytes(4, "big"), rec)
        size += 4 + len(rec)
        written += len(rec)
        if size >= WRITE_SIZE:
            out.write(b"".join(pending))
            pending, size = [], 0
    out.write(b"".join(pending))
    out.flush()
    print(time.process_time() - t0, written, file=sys.stderr, flush=True)


def _handler(fmt: str, sched: Scheduler) -> Callable[[bytes], None]:
    """The parent's work for one record."""
    if fmt == "json":
        def handle(rec: bytes) -> None:
            type_, obj = orjson.loads(rec)
            sched.on_pod_event(type_, obj)
    elif fmt == "marshal":
        def handle(rec: bytes) -> None:
            type_, obj = marshal.loads(rec)
            sched.on_pod_event(type_, obj)
    else:
        built: list[Pod] = []
        eventhandlers.pod_from_api = lambda obj, previous=None: built.pop()  # the child built it

        def handle(rec: bytes) -> None:
            type_, pod = pickle.loads(rec)
            built.append(pod)
            sched.on_pod_event(type_, pod.raw)
    return handle


def handoff(fmt: str, pods: int, nodes: int, foreign: float, shape: str) -> tuple[float, float, int, int, float]:
    """(the parent's CPU seconds per event, the child's, events, reads, record bytes per event) for one run."""
    sched = build_scheduler(nodes)
    proc = subprocess.Popen([sys.executable, "-m", "e2e.perf.podhandoff", "--child", fmt, "--pods", str(pods),
                             "--nodes", str(nodes), "--foreign", str(foreign), "--shape", shape],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    fd = proc.stdout.fileno()
    events = reads = 0
    buf = b""
    try:
        handle = _handler(fmt, sched)  # pickle-pod swaps the handler's pod_from_api until the finally below
        proc.stdin.write(b"g")
        proc.stdin.flush()
        t0 = time.process_time()
        while chunk := os.read(fd, 1 << 20):
            reads += 1
            buf += chunk
            handled, used = _frames(buf, handle)
            events += handled
            buf = buf[used:]
        parent = time.process_time() - t0
    finally:
        eventhandlers.pod_from_api = pod_from_api
    child_cpu, written = proc.stderr.read().split()
    proc.wait()
    return parent / events, float(child_cpu) / events, events, reads, int(written) / events / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=3000)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--foreign", type=float, default=0.0, help="fraction of pods of another scheduler")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--shape", choices=("replay", "live"), default="live",
                    help="replay: watchreplay's lines; live: with a running pod's status and managedFields")
    ap.add_argument("--child", choices=FORMATS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.pods, args.nodes, args.foreign, args.shape)
        return
    events = args.pods * len(PHASES)
    formats = args.formats.split(",")
    splits: list[dict[str, float]] = []
    results: dict[str, list[tuple[float, float, int, int, float]]] = {f: [] for f in formats}
    for r in range(args.repeat):  # interleaved rounds: the machine is shared
        splits.append(split(args.pods, args.nodes, args.foreign, args.shape))
        for fmt in formats[r % len(formats):] + formats[:r % len(formats)]:
            results[fmt].append(handoff(fmt, args.pods, args.nodes, args.foreign, args.shape))
    print(f"{events} events a run ({args.shape} shape, {splits[0]['bytes'] * 1e6:.0f} bytes a line), {args.nodes} "
          f"nodes, {args.repeat} rounds, CPU us/event, median (min-max):")
    for part in ("decode", "trim", "cut_decode", "pod_from_api", "pod_from_api_update", "handler", "gc", "total"):
        print(f"  in process, {part}: {_summary([s[part] for s in splits])}")
    for part in ("frame", "record_decode"):
        print(f"  the parent's share of a json hand-off, {part}: {_summary([s[part] for s in splits])}")
    for fmt, rs in results.items():
        reads = statistics.median(r[3] for r in rs)
        print(f"  hand-off {fmt}: parent {_summary([r[0] for r in rs])}, child {_summary([r[1] for r in rs])}, "
              f"{events / reads:.0f} events a read, {rs[0][4] * 1e6:.0f} bytes a record")


def _summary(values: Sequence[float]) -> str:
    return f"{statistics.median(values) * 1e6:.1f} ({min(values) * 1e6:.1f}-{max(values) * 1e6:.1f})"


if __name__ == "__main__":
    main()
