"""`python -m e2e.soak_core`: the soak's churn through the scheduler core alone, in process, no API server.

Why: `make soak`'s RSS mixes the core (cache, queue, framework, plugins, metrics) with the API edge (kopf,
the pod stream, HTTP clients, threads) and the machine's load sets its churn rate. This drives the same pod
shapes (e2e/soak.py's, a third with preferred pod anti-affinity) through ``Scheduler`` as fast as the core
goes: each pod is added, scheduled, confirmed bound by a MODIFIED event with its node, and deleted once
``--live`` newer pods exist, with the scheduler's own memory settings (two malloc arenas, the GC policy) and
its once-a-second housekeeping (the metrics' fold) every ``--refresh`` pods. RSS is printed every
``--step`` pods; exit status 1 when it grew by more than ``--max-growth-mb`` over the second half, or a pod
was left unbound.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

import structlog

from e2e.cluster.cluster import node_manifest
from e2e.soak import SCHEDULER, pod_body, rss_mb, second_half_growth
from scheduler.app import gcpolicy, malloc
from scheduler.config.load import build_registry, load_text
from scheduler.eventhandlers import ADDED, DELETED, MODIFIED
from scheduler.metrics import Metrics
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import RecordingBinder, RecordingEventSink

CONFIG = f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles: [{{schedulerName: {SCHEDULER}}}]
"""


class CoreChurn:
    """The core with recording edges, and the pods it has placed (index -> node)."""

    def __init__(self, nodes: int) -> None:
        cfg = load_text(CONFIG, "soak_core")
        self.binder = RecordingBinder()
        self.sink = RecordingEventSink()
        self.sched = Scheduler(cfg, build_registry(cfg), self.binder, self.sink, Metrics(), synchronous_binding=True)
        self.versions: Iterator[int] = itertools.count(1)
        self.placed: dict[int, str] = {}
        for i in range(nodes):
            self.sched.on_node_event(ADDED, node_manifest(f"n{i}", i, zones=3, cpu="64", memory="256Gi", pods=500,
                                                          now="2026-01-01T00:00:00Z"))

    def pod(self, i: int, node: str | None = None) -> dict[str, Any]:
        body = pod_body(f"p-{i}", anti_affinity=i % 3 == 0)
        body["metadata"].update(namespace="soak", uid=f"uid-{i}", resourceVersion=str(next(self.versions)))
        if node is not None:
            body["spec"]["nodeName"] = node
        return body

    def run(self, start: int, count: int, live: int, refresh: int) -> None:
        """Pods start .. start+count-1 through their life; the pod ``live`` places back is deleted."""
        for i in range(start, start + count):
            self.sched.on_pod_event(ADDED, self.pod(i))
            while self.sched.schedule_one(timeout=0):
                pass
            for key, node in self.binder.bindings:
                j = int(key.rsplit("-", 1)[1])
                self.placed[j] = node
                self.sched.on_pod_event(MODIFIED, self.pod(j, node))
            self.binder.bindings.clear()
            if i >= live:
                self.sched.on_pod_event(DELETED, self.pod(i - live, self.placed.pop(i - live, None)))
            if i % refresh == 0:
                self.sched.metrics.refresh(self.sched.cache, self.sched.queue)
        self.sink.events.clear()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m e2e.soak_core", description=__doc__.split("\n")[0])
    p.add_argument("--pods", type=int, default=60000)
    p.add_argument("--step", type=int, default=5000, help="pods between RSS samples")
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--live", type=int, default=400, help="pods alive at once")
    p.add_argument("--refresh", type=int, default=100, help="pods between housekeeping passes")
    p.add_argument("--max-growth-mb", type=float, default=5.0)
    args = p.parse_args(argv)
    malloc.limit_arenas(2)
    churn = CoreChurn(args.nodes)
    policy = gcpolicy.install()
    samples: list[tuple[float, float]] = [(0.0, rss_mb(os.getpid()))]
    try:
        for done in range(args.step, args.pods + 1, args.step):
            churn.run(done - args.step, args.step, args.live, args.refresh)
            malloc.trim()
            samples.append((float(done), rss_mb(os.getpid())))
            print(f"[soak-core] pods={done} rss={samples[-1][1]:.1f} MB", flush=True)
    finally:
        gcpolicy.uninstall(policy)
    unbound = sum(churn.sched.queue.lengths().values())
    growth = second_half_growth(samples, float(args.pods))
    print(f"[soak-core] RSS {samples[0][1]:.1f} -> {samples[-1][1]:.1f} MB; second half {growth:+.1f} MB; "
          f"pods left in the queue {unbound}", flush=True)
    return 1 if growth > args.max_growth_mb or unbound else 0


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))  # no "bound" lines
    sys.exit(main())
