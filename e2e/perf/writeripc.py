"""The scheduler-side CPU of the writer-process hand-off (scheduler/kube/writerproc.py), no API server:
``python -m e2e.perf.writeripc [--pods N --threads T]`` sends N bindings (from T binding threads, as the
binding workers do) and N Scheduled events to a writer child whose binder and event writer do nothing, and
prints the parent's CPU microseconds per pod (framing, pipe writes, the outcome's read and hand-back).
That is what the scheduling process still pays per pod instead of the Binding POST and the event POST."""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from scheduler.kube.recorder import ApiEventSink
from scheduler.kube.writerproc import ChildWriter, ProcessBinder, ProcessEventSink, WriterProcess
from scheduler.model.pod import Pod, pod_from_api


class _NoBinder:
    def bind(self, pod: Pod, node_name: str) -> None:
        """Bound at once: only the hand-off is measured."""


class _NoWrites:
    def create_event(self, namespace: str, body: dict[str, Any]) -> str:
        return "e"

    def patch_event(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Not measured."""

    def patch_pod_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Not measured."""

    def get(self, path: str) -> bytes:
        return b"{}"


def child() -> None:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    writer = ChildWriter(_NoBinder(), ApiEventSink(_NoWrites()), out)
    if writer.serve(sys.stdin.buffer):
        writer.finish()
    os._exit(0)


def measure(pods: int, threads: int) -> float:
    """Parent CPU microseconds per pod (one Binding and one event) through one writer child."""
    proc = WriterProcess([sys.executable, "-m", "e2e.perf.writeripc", "--child"])
    binder = ProcessBinder([proc])
    sink = ProcessEventSink(binder, ApiEventSink(_NoWrites()))
    items = [pod_from_api({"metadata": {"namespace": "ns", "name": f"p{i}", "uid": f"u{i}", "resourceVersion": "1"}})
             for i in range(pods)]

    def one(p: Pod) -> None:
        binder.bind(p, "node-1")
        sink.event(p, "Normal", "Scheduled", "Binding", f"Successfully assigned {p.key} to node-1", "py-scheduler")

    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, items[:200]))  # warm-up
            cpu0 = time.process_time()
            list(pool.map(one, items[200:]))
            cpu = time.process_time() - cpu0
    finally:
        proc.close()
    return cpu / max(pods - 200, 1) * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m e2e.perf.writeripc", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=5000)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child()
    print(f"writer hand-off: {measure(args.pods, args.threads):.1f} us of the scheduler's CPU per pod "
          f"(binding + Scheduled event, {args.threads} binding threads, {args.pods} pods)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
