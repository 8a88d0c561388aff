"""`python -m e2e.soak` (`make soak`): steady create/delete churn against py-scheduler on a fresh local control
plane, long enough to see where its memory settles.

Every ``--interval`` seconds ``--batch`` pods are created, each deleted ``--lifetime`` seconds later; a third
carry a preferred pod anti-affinity (InterPodAffinity state), the rest only requests. py-scheduler's RSS is
sampled every ``--sample`` seconds. The report (stdout and ``--out`` JSON) gives the samples, the growth over
the second half of the churn, the pods left pending at the end, and the scheduler's error lines. Exit status 1
when the scheduler died, pods were left pending, or RSS grew by more than ``--max-growth-mb`` over the
second half.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from kubernetes import client, config

from e2e.cluster.cluster import LocalCluster, create_nodes
from e2e.kube import create_namespace, wait_for
from e2e.process import start_scheduler, stop_scheduler

SCHEDULER = "soak"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pod_body(name: str, anti_affinity: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER, "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
    }
    if anti_affinity:
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"soak": "spread"}},
                                             "topologyKey": "kubernetes.io/hostname"}}]}}
    labels = {"soak": "spread" if anti_affinity else "plain"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}


def second_half_growth(samples: list[tuple[float, float]], end: float) -> float:
    """RSS at the end minus RSS at the churn's half-way point (the sample nearest to each)."""
    half = [mb for t, mb in samples if t >= end / 2]
    return round(half[-1] - half[0], 1) if len(half) >= 2 else 0.0


def churn(core: client.CoreV1Api, ns: str, args: argparse.Namespace, stop: threading.Event) -> int:
    """Create and delete pods until ``stop``; returns how many were created."""
    due: deque[tuple[float, str]] = deque()
    created = 0
    next_batch = time.monotonic()
    while not stop.is_set():
        now = time.monotonic()
        while due and due[0][0] <= now:
            _, name = due.popleft()
            try:
                core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
        if now >= next_batch:
            for _ in range(args.batch):
                name = f"p-{created}"
                core.create_namespaced_pod(ns, pod_body(name, created % 3 == 0))
                due.append((time.monotonic() + args.lifetime, name))
                created += 1
            next_batch += args.interval
        stop.wait(0.1)
    for _, name in due:  # the rest are deleted at the end
        try:
            core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
    return created


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m e2e.soak", description=__doc__)
    p.add_argument("--minutes", type=float, default=30.0, help="churn duration (default 30)")
    p.add_argument("--nodes", type=int, default=50)
    p.add_argument("--batch", type=int, default=40, help="pods created per interval (default 40)")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between batches (default 2)")
    p.add_argument("--lifetime", type=float, default=20.0, help="seconds a pod lives (default 20)")
    p.add_argument("--sample", type=float, default=30.0, help="seconds between RSS samples (default 30)")
    p.add_argument("--max-growth-mb", type=float, default=5.0, help="allowed RSS growth over the second half")
    p.add_argument("--out", type=Path, default=Path(".soak/soak.json"))
    p.add_argument("--scheduler-arg", action="append", default=[], help="extra py-scheduler flag (repeatable)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="py-scheduler-soak-") as d:
        cluster = LocalCluster(Path(d) / "cluster")
        cluster.up()
        try:
            return run(cluster, Path(d), args)
        finally:
            cluster.down(keep_logs=False)


def run(cluster: LocalCluster, workdir: Path, args: argparse.Namespace) -> int:
    create_nodes(str(cluster.kubeconfig), args.nodes, zones=3, prefix="soak")
    api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    core = client.CoreV1Api(api)
    ns = create_namespace(core, "soak")
    log = workdir / "scheduler.log"
    proc = start_scheduler(cluster.kubeconfig, log, ["--scheduler-name", SCHEDULER, *args.scheduler_arg])
    wait_for(lambda: "py-scheduler started" in log.read_text(errors="replace"), 120, what="scheduler started")
    stop = threading.Event()
    result: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: result.update(created=churn(core, ns, args, stop)), daemon=True)
    began = time.monotonic()
    samples: list[tuple[float, float]] = [(0.0, rss_mb(proc.pid))]
    worker.start()
    duration = args.minutes * 60
    try:
        while time.monotonic() - began < duration and proc.poll() is None:
            time.sleep(min(args.sample, max(0.0, duration - (time.monotonic() - began))))
            if proc.poll() is None:
                samples.append((round(time.monotonic() - began, 1), round(rss_mb(proc.pid), 1)))
                print(f"[soak] t={samples[-1][0]:7.1f}s rss={samples[-1][1]:6.1f} MB", file=sys.stderr, flush=True)
    finally:
        stop.set()
        worker.join(120)
    alive = proc.poll() is None

    def nothing_pending() -> bool | None:
        pods = core.list_namespaced_pod(ns).items
        return all(p.spec.node_name or p.metadata.deletion_timestamp for p in pods) or None

    try:
        wait_for(nothing_pending, 60, what="no pod pending")
        pending = 0
    except AssertionError:
        pending = sum(1 for p in core.list_namespaced_pod(ns).items if not p.spec.node_name)
    errors = [line for line in log.read_text(errors="replace").splitlines() if '"level": "error"' in line
              or '"level":"error"' in line]
    stop_scheduler(proc)
    growth = second_half_growth(samples, duration)
    report = {"minutes": args.minutes, "nodes": args.nodes, "created": result.get("created", 0),
              "alive": alive, "pending": pending, "error_lines": len(errors), "errors": errors[:5],
              "rss_mb": samples, "second_half_growth_mb": growth}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "rss_mb"}))
    print(f"[soak] RSS {samples[0][1]} -> {samples[-1][1]} MB; second half {growth:+} MB; pending {pending}; "
          f"alive {alive}; report {args.out}", file=sys.stderr)
    return 0 if alive and pending == 0 and growth <= args.max_growth_mb else 1


if __name__ == "__main__":
    sys.exit(main())
