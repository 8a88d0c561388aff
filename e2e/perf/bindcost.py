"""``python -m e2e.perf.bindcost``: the binding side of a scheduled pod alone, in process, and its two requests.

The live binding-batch thread takes the plain pods scheduled since its last round, posts their Bindings side by
side and ends each binding cycle (the cache's confirmation, metrics, the "bound" log line, the Scheduled event's
hand-off to the event writers); an event writer then sends the queued Scheduled events pipelined. Here a
Scheduler built as ``e2e.perf.inproc`` builds it (SchedulingBasic, the live profile, metrics on) schedules
``--batch`` pods, then its ``binding_batch`` runs on them in this thread, then the event writer's round on the
events they queued, then the pods' confirming watch events arrive; and again, until every measured pod is bound.

``--binder fake`` answers every Binding at once without a request (the binding cycle's own Python);
``--binder http`` posts them through the live ApiBinder, ApiWriter, RawApi and Http11Pool to a server child
that answers each request as soon as it has read it (plain HTTP on 127.0.0.1; kube-apiserver's answer
headers). The events are always written through the live ApiEventSink and ApiWriter to that server.

It reports the CPU microseconds a pod of each part (thread time; the machine is shared, so compare variants
alternately and take medians). Under ``valgrind --tool=callgrind --instr-atstart=no`` with ``--callgrind PART``
(``binding``: the binding_batch rounds, including the "bound" log line and, with ``--binder http``, the
Bindings' requests; ``events``: the event writer's rounds) only that part of the measured pods is counted
(e2e/perf/cgmark.c), dumped into ``callgrind.out.<pid>.1``; divide by ``--pods``. The log lines go to
/dev/null at ``--log-level`` (INFO, as live).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from e2e.perf.inproc import _pod, build
from e2e.perf.shims import build_shim
from e2e.perf.workloads import INIT_NAMESPACE, MEASURE_NAMESPACE, WORKLOADS
from scheduler.app import gcpolicy
from scheduler.app.logging import configure
from scheduler.binding_cycle import AssumedPod
from scheduler.eventhandlers import ADDED, MODIFIED
from scheduler.kube.binder import ApiBinder
from scheduler.kube.client import ApiWriter, RawApi
from scheduler.kube.ratelimit import TokenBucket
from scheduler.kube.recorder import MAX_EVENT_BATCH, ApiEventSink
from scheduler.model.pod import Pod
from scheduler.scheduler import Scheduler

# kube-apiserver's answer to a Binding (the Status it writes), and the header lines of its answers.
BINDING_ANSWER = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}'
ANSWER_HEAD = ("HTTP/1.1 201 Created\r\nAudit-Id: 2f0c5b7e-6d1a-4c4e-9a57-0d8e3b1f4a21\r\nCache-Control: no-cache, "
               "private\r\nContent-Type: application/json\r\nX-Kubernetes-Pf-Flowschema-Uid: 8d0f3a52-1b7e-4f0e-"
               "b1c4-5e2a9c7d3f60\r\nX-Kubernetes-Pf-Prioritylevel-Uid: 3c9e7b1a-2d4f-4a6b-8e0c-7f1d2a3b4c5d\r\n"
               "Date: Fri, 27 Nov 2026 10:00:00 GMT\r\nContent-Length: ")


def serve(listener: socket.socket) -> None:
    """Answer every request on every connection at once: a Binding with its Status, anything else (an Event)
    with its own body (the created object is about that size). Runs until the parent closes stdin."""
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    sel.register(sys.stdin, selectors.EVENT_READ, "stdin")
    buffers: dict[socket.socket, bytes] = {}
    while True:
        for key, _ in sel.select():
            if key.data == "stdin":
                return
            if key.fileobj is listener:
                conn, _ = listener.accept()
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sel.register(conn, selectors.EVENT_READ, "conn")
                buffers[conn] = b""
                continue
            conn = key.fileobj  # type: ignore[assignment]
            data = conn.recv(1 << 20)
            if not data:
                sel.unregister(conn)
                conn.close()
                del buffers[conn]
                continue
            buffers[conn] = _answer(conn, buffers[conn] + data)


def _answer(conn: socket.socket, buf: bytes) -> bytes:
    """Answer every whole request in ``buf`` in one send; what is left of it."""
    out: list[bytes] = []
    while True:
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            break
        head = buf[:end].lower()
        at = head.find(b"content-length:")
        length = int(head[at + 15 : head.find(b"\r\n", at) if head.find(b"\r\n", at) > 0 else None]) if at >= 0 else 0
        if len(buf) < end + 4 + length:
            break
        body, buf = buf[end + 4 : end + 4 + length], buf[end + 4 + length :]
        answer = BINDING_ANSWER if head.split(b" ", 2)[1].endswith(b"/binding") else body
        out.append(f"{ANSWER_HEAD}{len(answer)}\r\n\r\n".encode() + answer)
    if out:
        conn.sendall(b"".join(out))
    return buf


@contextlib.contextmanager
def answering_server() -> Iterator[str]:
    """A server child (``serve``; not under valgrind, which follows no exec) on 127.0.0.1; yields its URL."""
    child = subprocess.Popen([sys.executable, "-m", "e2e.perf.bindcost", "--serve"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)


def raw_api(url: str) -> RawApi:
    """The live RawApi (Http11Pool underneath) for ``url``, as the scheduler builds it from a kubeconfig."""
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = url
    return RawApi(client.ApiClient(cfg))


class FakeBatchBinder:
    """Answers every Binding at once, no request: the binding cycle's own Python."""

    def bind(self, pod: Pod, node_name: str) -> None:
        pass

    def bind_batch(self, bindings: Sequence[tuple[Pod, str]]) -> list[Exception | None]:
        return [None] * len(bindings)

    def bind_after(self, pod: Pod, node_name: str, first_error: Exception | None) -> None:
        pass


class _Collect:
    """Stands in for the binding-batch worker: keeps the pods handed to it for ``binding_batch`` in this thread."""

    def __init__(self) -> None:
        self.items: list[AssumedPod] = []

    def submit(self, item: AssumedPod) -> None:
        self.items.append(item)

    def shutdown(self, wait: bool = True) -> None:
        pass


@dataclass
class Cost:
    """Thread CPU seconds of the binding rounds and of the event writer's rounds."""

    binding: float = 0.0
    events: float = 0.0


class _Marks:
    """cgmark's client requests around one part, or nothing (``marks`` None or another part)."""

    def __init__(self, marks: Any, part: str | None) -> None:
        self.marks, self.part = marks, part

    def resume(self, part: str) -> None:
        if self.marks is not None and part == self.part:
            self.marks.cgmark_resume()

    def pause(self, part: str) -> None:
        if self.marks is not None and part == self.part:
            self.marks.cgmark_pause()


def bind_rounds(sched: Scheduler, sink: ApiEventSink, pods: list[dict[str, Any]], batch: int,
                cost: Cost, marks: _Marks) -> int:
    """Schedule ``pods`` ``batch`` at a time; after each round of cycles, its binding_batch, the event writer's
    round and the pods' confirmations. Returns the pods bound."""
    collect = sched._bind_batch
    assert isinstance(collect, _Collect)
    for obj in pods:
        sched.on_pod_event(ADDED, obj)
    by_key = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in pods}
    bound = 0
    while True:
        popped = 0
        while popped < batch and sched.schedule_one(timeout=0):
            popped += 1
        if not collect.items:
            return bound
        taken, collect.items = collect.items, []
        marks.resume("binding")
        t0 = time.thread_time()
        sched.binding_batch(taken)
        t1 = time.thread_time()
        marks.pause("binding")
        cost.binding += t1 - t0
        creates = _drain(sink)
        marks.resume("events")
        t0 = time.thread_time()
        for i in range(0, len(creates), MAX_EVENT_BATCH):
            sink._create_all(creates[i : i + MAX_EVENT_BATCH])
        t1 = time.thread_time()
        marks.pause("events")
        cost.events += t1 - t0
        for p in taken:
            obj = by_key[p.assumed.key]
            sched.on_pod_event(MODIFIED, {**obj, "spec": {**obj["spec"], "nodeName": p.host}})
        bound += len(taken)


def _drain(sink: ApiEventSink) -> list[Any]:
    """The new Events queued for the (absent) event writers."""
    out = []
    while not sink._creates.empty():
        out.append(sink._creates.get_nowait())
    return out


def run(nodes: int, pods: int, batch: int, binder_kind: str, url: str, seed: int, marks: _Marks) -> Cost:
    """CPU seconds a measured pod of each part."""
    writer = ApiWriter(raw_api(url), TokenBucket(5000, 5000))  # the live benchmark's client QPS and burst
    sink = ApiEventSink(writer, workers=0, event_writers=0)
    binder = FakeBatchBinder() if binder_kind == "fake" else ApiBinder(writer)
    sched = build(nodes, None, seed, "SchedulingBasic", metrics=True, binder=binder, recorder=sink,
                  synchronous_binding=False)
    sched._bind_batch = _Collect()  # type: ignore[assignment]
    w = WORKLOADS["SchedulingBasic"]
    n_init, n_pods = w.sizes(nodes, pods)
    bind_rounds(sched, sink, [_pod(w.init_template(), INIT_NAMESPACE, i) for i in range(n_init)], batch, Cost(),
                _Marks(None, None))
    measured = [_pod(w.measure_template(), MEASURE_NAMESPACE, i) for i in range(n_pods)]
    cost = Cost()
    policy = gcpolicy.install()  # the live scheduler's, as inproc runs under
    try:
        if marks.marks is not None:
            marks.marks.cgmark_start()
            marks.marks.cgmark_pause()
        bound = bind_rounds(sched, sink, measured, batch, cost, marks)
        if marks.marks is not None:
            marks.marks.cgmark_stop()
    finally:
        gcpolicy.uninstall(policy)
    if bound != n_pods:
        raise SystemExit(f"only {bound}/{n_pods} pods were bound")
    unwritten = sum(1 for s in sink._series.values() if not s.name)
    if unwritten:
        raise SystemExit(f"{unwritten} Scheduled events were not written")
    return Cost(cost.binding / n_pods, cost.events / n_pods)


@contextlib.contextmanager
def stderr_to_null() -> Iterator[None]:
    """fd 2 to /dev/null (the log lines are written, as live, and thrown away); restored after."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=8, help="pods a binding round takes (live: what queued meanwhile)")
    ap.add_argument("--binder", choices=("fake", "http"), default="fake")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log-level", default="INFO", help="the scheduler's log level (INFO, as live, logs every binding)")
    ap.add_argument("--callgrind", choices=("binding", "events"), default=None,
                    help="under `valgrind --tool=callgrind --instr-atstart=no`: count this part of the measured pods")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        listener = socket.create_server(("127.0.0.1", 0))
        print(listener.getsockname()[1], flush=True)
        serve(listener)
        return
    configure(args.log_level, json_lines=True)
    marks = None
    if args.callgrind:
        with tempfile.TemporaryDirectory() as tmp:
            marks = ctypes.CDLL(build_shim(tmp, "cgmark"))
    binding, events = [], []
    with answering_server() as url:
        for _ in range(args.repeat):
            with stderr_to_null():
                cost = run(args.nodes, args.pods, args.batch, args.binder, url, args.seed,
                           _Marks(marks, args.callgrind))
            binding.append(cost.binding * 1e6)
            events.append(cost.events * 1e6)
            print(f"binding ({args.binder}) {binding[-1]:.1f} us a pod, events {events[-1]:.1f} us a pod", flush=True)
    print(f"median over {args.repeat}: binding {statistics.median(binding):.1f}, "
          f"events {statistics.median(events):.1f} CPU us a pod")


if __name__ == "__main__":
    main()
