"""One upstream workload at one size, each scheduler on a fresh control plane, interleaved over repeats.

Upstream starts a fresh API server for every workload; so does this: a run is a lean control plane
(etcd + kube-apiserver, plus kube-controller-manager's resourceclaim controller for DRA cases), the
scheduler under test, upstream's ops (``executor``), then the measured windows turned into the harness's
rows (``e2e.perf.stats``' keys, plus ``size``, ``upstream_workload`` and upstream's ``threshold``).
kube-apiserver runs without the Priority admission plugin, as upstream's test API server does (its
templates set ``spec.priority`` without a PriorityClass), and with the workload's feature gates, which
the schedulers and KCM get too.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster.cluster import LocalCluster
from e2e.perf import procstat, schedulers
from e2e.perf.kubeio import Conn
from e2e.perf.runner import Options, log, per_process, round_order
from e2e.perf.stats import batch_metrics
from e2e.perf.suite import config
from e2e.perf.suite.executor import Executor, Rest, Window
from e2e.perf.suite.tracker import PodTracker, PodView
from e2e.process import gate_flag

DRA_CONTROLLERS = "serviceaccount-controller,resourceclaim-controller"


def py_gate_check(gates: Mapping[str, bool]) -> str | None:
    """Why py-scheduler cannot run with these gates (it implements only some gates both ways), or None."""
    from scheduler.framework.features import parse_feature_gates

    try:
        parse_feature_gates(gate_flag(gates))
    except ValueError as e:
        return f"py-scheduler: {e}"
    return None


def needs_claim_controller(case: config.TestCase) -> bool:
    """DRA cases whose pods name ResourceClaimTemplates: KCM's resourceclaim controller makes their claims."""
    return case.group.split("/")[0] == "dra"


def cluster_flags(opts: Options, kcm: bool) -> dict[str, dict[str, str | None]]:
    """The lean control plane's flags beyond LocalCluster's (which adds the feature gates, and the API
    versions they need, to kube-apiserver and kube-controller-manager)."""
    api: dict[str, str | None] = {"disable-admission-plugins": "ServiceAccount,TaintNodesByCondition,Priority"}
    flags: dict[str, dict[str, str | None]] = {"kube-apiserver": api}
    if kcm:
        flags["kube-controller-manager"] = {"controllers": DRA_CONTROLLERS, "kube-api-qps": str(opts.qps),
                                            "kube-api-burst": str(opts.burst)}  # fmt: skip
    return flags


def row_label(case: config.TestCase, size: config.Size) -> str:
    return case.name if size.name == config.TWO_CORE else f"{case.name}/{size.name}"


class Probe:
    """CPU and memory of the scheduler (its process tree) and kube-apiserver at a window's edges."""

    def __init__(self, pid: int, api_pid: int | None) -> None:
        self.pid, self.api_pid = pid, api_pid

    def __call__(self) -> dict[str, Any]:
        return {"scheduler": procstat.cpu_seconds(self.pid), "procs": procstat.process_cpu_seconds(self.pid),
                "apiserver": procstat.cpu_seconds(self.api_pid) if self.api_pid else 0.0}  # fmt: skip


def group_metrics(pods: Iterable[PodView], created: Mapping[str, float],
                  bound: Mapping[str, float]) -> dict[str, Any]:  # fmt: skip
    """PodGroups of a window's pods (``spec.schedulingGroup``): how many had every pod bound, and those per
    second over the window's first creation -> the last group's completion (its last pod bound); nothing
    when its pods belong to no group."""
    members: dict[str, list[str]] = {}
    for p in pods:
        if p.group and p.key in created:
            members.setdefault(f"{p.key.split('/', 1)[0]}/{p.group}", []).append(p.key)
    if not members:
        return {}
    done = [max(bound[k] for k in keys) for keys in members.values() if all(k in bound for k in keys)]
    span = max(done) - min(created.values()) if done else 0.0
    return {"groups": len(members), "groups_bound": len(done),
            "groups_per_second": round(len(done) / span, 2) if span > 0 else None}  # fmt: skip


def window_row(w: Window, pid: int) -> dict[str, Any]:
    """The harness's metrics of one window: pods of its namespaces not yet bound at its start, created (or
    the window opened, whichever is later) -> bound."""
    created: dict[str, float] = {}
    bound: dict[str, float] = {}
    for p in w.result["pods"]:
        if p.bound is not None and p.bound < w.start:
            continue
        created[p.key] = max(p.added, w.start)
        if p.bound is not None and p.bound <= w.result["stop"]:
            bound[p.key] = p.bound
    row = batch_metrics(created, bound, len(created))
    row.update(group_metrics(w.result["pods"], created, bound))
    if w.steady:  # pods still in flight at the close are not missing: the drain after it saw them bound
        row["all_bound"] = bool(row["bound"]) and bool(w.result.get("drained"))
    before, after = w.probe, w.result["probe"]
    per = 1000.0 / max(row["bound"], 1)
    row["cpu_seconds_per_1000"] = round((after["scheduler"] - before["scheduler"]) * per, 3)
    row["kube-apiserver_cpu_seconds_per_1000"] = round((after["apiserver"] - before["apiserver"]) * per, 3)
    procs = per_process(pid, before["procs"], after["procs"], row["bound"])
    if procs:
        row["process_cpu_seconds_per_1000"] = procs
        row["busiest_process"] = next(iter(procs))
    return row


def run_once(case: config.TestCase, size: config.Size, which: str, repeat: int, opts: Options, bin_dir: Path,
             scheduler_config: Mapping[str, Any] | None) -> list[dict[str, Any]]:  # fmt: skip
    """One scheduler, one repeat: a fresh control plane, the ops, a row per measured window."""
    gates = case.gates(size.upstream)
    kcm = needs_claim_controller(case)
    label = row_label(case, size)
    base: dict[str, Any] = {
        "workload": label, "nodes": size.nodes, "pods": size.pods, "scheduler": which, "repeat": repeat,
        "size": size.name, "upstream_workload": size.upstream.name, "threshold": size.upstream.threshold,
        "feature_gates": gate_flag(gates), "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "pods_per_second": None, "latency_p50_ms": None, "latency_p90_ms": None, "latency_p99_ms": None,
        "cpu_seconds_per_1000": None, "peak_rss_mb": None, "all_bound": False,
    }  # fmt: skip
    t0 = time.monotonic()
    run_dir = opts.out_dir / "logs" / f"{label.replace('/', '_')}" / f"{which}-{repeat}"
    run_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="py-scheduler-suite-") as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", bin_dir=str(bin_dir), flags=cluster_flags(opts, kcm),
                               feature_gates=gates)  # fmt: skip
        tracker: PodTracker | None = None
        proc = None
        try:
            cluster.up(lean=True, build=False)
            if kcm:
                cluster.start_extras("kube-controller-manager")
            kubeconfig = str(cluster.kubeconfig)
            conn = Conn.from_kubeconfig(kubeconfig)
            tracker = PodTracker(conn)
            proc = schedulers.start(which, kubeconfig=kubeconfig, bin_dir=bin_dir, workdir=run_dir,
                                    scheduler_name=opts.scheduler_name, qps=opts.qps, burst=opts.burst,
                                    feature_gates=gate_flag(gates), config=scheduler_config)  # fmt: skip
            # upstream's harness runs the workload once the scheduler's informers are synced: its start-up
            # is no part of a measured window
            schedulers.wait_ready(which, proc, run_dir)
            api_pid = int((cluster.state() or {}).get("pids", {}).get("kube-apiserver") or 0) or None
            ex = Executor(case, config.resolve_ops(case, size.params), Rest(conn), conn, tracker,
                          opts.scheduler_name, Probe(proc.pid, api_pid), log, opts.creators, gates)  # fmt: skip
            windows = ex.run()
            rss = procstat.peak_rss_mb(proc.pid)
            if proc.poll() is not None:
                raise RuntimeError(f"{which} exited with code {proc.returncode} (log: {run_dir})")
            rows = []
            for w in windows:
                measured = window_row(w, proc.pid)
                row = {**base, **measured, "pods": len(w.result["pods"]), "peak_rss_mb": rss, "window": w.name}
                if ex.errors:
                    row["errors"] = ex.errors[:5]
                rows.append(row)
            if not rows:
                raise RuntimeError("the workload measured nothing (no collectMetrics window)")
        except Exception as e:  # the row says what failed; the other runs go on
            log(f"{label} {which} #{repeat}: {type(e).__name__}: {e}")
            rows = [{**base, "error": f"{type(e).__name__}: {e}"[:500]}]
        finally:
            if proc is not None:
                schedulers.stop(proc)
            if tracker is not None:
                tracker.stop()
            with contextlib.suppress(Exception):
                tail = cluster.log_file("kube-apiserver").read_bytes()[-1_000_000:]
                (run_dir / "kube-apiserver.log").write_bytes(tail)
            cluster.down()
    for r in rows:
        r["wall_seconds"] = round(time.monotonic() - t0, 1)
    return rows


def load_scheduler_config(case: config.TestCase) -> dict[str, Any] | None:
    """The test case's own KubeSchedulerConfiguration (schedulerConfigPath), when it has one."""
    if not case.scheduler_config:
        return None
    return dict(yaml.safe_load(case.path(case.scheduler_config).read_text()))


def run_case(case: config.TestCase, size: config.Size, opts: Options, bin_dir: Path,
             on_run: Callable[[dict[str, Any]], None]) -> None:  # fmt: skip
    """Every scheduler ``opts.repeat`` times, the order rotated each round; ceiling binders are left out
    (they neither preempt nor allocate, and upstream's cases need both)."""
    which_list = [s for s in opts.schedulers if not s.startswith("ceiling")]
    sched_cfg = load_scheduler_config(case)
    for rep in range(1, opts.repeat + 1):
        for which in round_order(which_list, rep):
            for row in run_once(case, size, which, rep, opts, bin_dir, sched_cfg):
                on_run(row)
