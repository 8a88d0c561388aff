"""One benchmark size: a fresh lean control plane, nodes, then interleaved runs of the schedulers.

A run (one scheduler, one repeat):

1. start the pod watcher (its own process, from a fresh resourceVersion) and the scheduler under test;
2. create the init pods in ``sched-0`` and wait until the scheduler has placed them all (not measured);
3. sample the scheduler's CPU time, create the measured pods in ``sched-1`` with parallel creators, wait
   until all are bound (or the timeout), sample CPU time and VmHWM, stop the scheduler;
4. throughput = bound pods / (first creation -> last binding seen by the watch), latency per pod =
   binding seen - creation (POST answered or ADDED seen, earlier wins), all on the monotonic clock;
   with ``rate`` (paced mode) the measured pods are created at that fixed rate instead of as fast as
   possible, so that below both schedulers' capacity the latency is scheduling delay, not queueing;
5. delete the pods (grace 0) and their events, and wait until they are gone, for the next run.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from kubernetes.client.exceptions import ApiException

from e2e.cluster.cluster import LocalCluster, create_nodes
from e2e.perf import dra, procstat, schedulers, sysprofile
from e2e.perf.apiprofile import ApiServerProfiler
from e2e.perf.kubeio import Conn, PodWatcher, WatchResult, create_pods, list_resource_version
from e2e.perf.stats import batch_metrics, creation_rate
from e2e.perf.workloads import (
    INIT_NAMESPACE,
    MEASURE_NAMESPACE,
    NAMESPACES,
    NODE_CPU,
    NODE_MEMORY,
    NODE_PODS,
    ZONES,
    Workload,
    claim_for_pod,
    pod_body,
    priority_class,
    violations,
)


@dataclass
class Options:
    schedulers: list[str] = field(default_factory=lambda: ["py", "kube", "ceiling"])
    repeat: int = 3
    qps: float = 5000
    burst: int = 5000
    timeout: float = 900.0  # measured batch: creation start -> all bound
    stall: float = 120.0  # give up when no pod got bound for this long
    init_timeout: float = 900.0
    scheduler_name: str = "bench-scheduler"
    creators: int = 32
    init_pods: int | None = None
    out_dir: Path = Path(".bench")
    profile: str | None = None  # "py-spy", "py-spy-gil", "py-spy-threads": py-scheduler; "apiserver": kube-apiserver
    profile_rate: int = 100
    wait_idle: float = 0.0  # before each run, wait up to this long for the machine to be idle
    rate: float | None = None  # paced mode: measured pods created at this many per second
    feature_gates: str = ""  # passed to py-scheduler and kube-scheduler
    idle_cores: float = 0.5  # "idle": fewer busy CPUs than this (our own idle control plane included)


def log(msg: str) -> None:
    print(f"[perf] {msg}", file=sys.stderr, flush=True)


def _api_pids(cluster: LocalCluster) -> dict[str, int]:
    st = cluster.state() or {}
    return {k: int(v) for k, v in (st.get("pids") or {}).items() if k in ("kube-apiserver", "etcd")}


class SizeRunner:
    """A lean control plane with ``nodes`` nodes, used for every run of one workload and size."""

    def __init__(self, workload: Workload, nodes: int, pods: int, opts: Options, bin_dir: Path) -> None:
        self.wl, self.nodes, self.opts, self.bin_dir = workload, nodes, opts, bin_dir
        self.n_init, self.pods = workload.sizes(nodes, pods, opts.init_pods)
        self._tmp = tempfile.TemporaryDirectory(prefix="py-scheduler-perf-")
        controllers = workload.dra.controllers if workload.dra else ()
        # KCM runs only for the DRA template workload's resourceclaim controller; like every client of the bench
        # (and upstream's scheduler_perf, whose controller client has QPS 5000), it is not rate limited here.
        kcm = {"kube-controller-manager": {"controllers": ",".join(("serviceaccount-controller", *controllers)),
                                           "kube-api-qps": str(opts.qps), "kube-api-burst": str(opts.burst)}}
        self.cluster = LocalCluster(Path(self._tmp.name) / "cluster", bin_dir=str(bin_dir),
                                    profiling=opts.profile == "apiserver", flags=kcm)
        self.log_dir = opts.out_dir / "logs" / f"{workload.name}-{nodes}n-{self.pods}p"

    # ---- set-up / tear-down ----
    def __enter__(self) -> SizeRunner:
        t0 = time.monotonic()
        self.cluster.up(lean=True, build=False)
        self.kubeconfig = str(self.cluster.kubeconfig)
        self.conn = Conn.from_kubeconfig(self.kubeconfig)
        from kubernetes import client, config

        self.api = config.new_client_from_config(config_file=self.kubeconfig)
        self.core: Any = cast(Any, client.CoreV1Api(self.api))
        if self.wl.dra and self.wl.dra.controllers:  # KCM (those controllers only), no kwok
            self.cluster.start_extras("kube-controller-manager")
        node_names = create_nodes(self.kubeconfig, self.nodes, zones=ZONES, cpu=NODE_CPU, memory=NODE_MEMORY,
                                  pods=NODE_PODS, workers=32)  # fmt: skip
        for ns in NAMESPACES:
            self.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for make in self.wl.services:
            self.core.create_namespaced_service(MEASURE_NAMESPACE, make())
        sched_api = client.SchedulingV1Api(self.api)
        for name, value in self.wl.priority_classes:
            sched_api.create_priority_class(priority_class(name, value))
        if self.wl.dra:
            dra.setup(self.api, self.wl.dra, node_names)
        log(f"{self.wl.name}: control plane + {self.nodes} nodes ready in {time.monotonic() - t0:.1f} s")
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.api.close()
        # keep the apiserver/etcd logs next to the run logs
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for name in ("kube-apiserver", "etcd"):
            with contextlib.suppress(OSError):
                src = self.cluster.log_file(name)
                (self.log_dir / f"{name}.log").write_bytes(src.read_bytes()[-2_000_000:])
        self.cluster.down()
        self._tmp.cleanup()

    def _cleanup_pods(self) -> None:
        """Delete every pod (grace 0) and event of the run and wait until the pods are gone."""
        for ns in NAMESPACES:
            self._delete_pods(ns)
            with contextlib.suppress(Exception):
                self.core.delete_collection_namespaced_event(ns, _request_timeout=300)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            left = self.core.list_pod_for_all_namespaces(limit=1, _preload_content=False)
            if not json.loads(left.data)["items"]:
                return
            time.sleep(0.5)
        raise RuntimeError("pods of the previous run were not deleted in 300 s")

    def _delete_pods(self, ns: str, tries: int = 5) -> None:
        """DeleteCollection of a namespace's pods, tried again after the API server's own 60 s request
        timeout (a 504 on a loaded machine, which had thrown away the measured run's results); it is
        idempotent: what the timed-out call deleted stays deleted."""
        for attempt in range(tries):
            try:
                self.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0, _request_timeout=300)
                return
            except ApiException as exc:
                if exc.status != 504 or attempt == tries - 1:
                    raise
                log(f"deleting the pods of {ns}: 504 (API server timeout), trying again")

    # ---- one run ----
    def _bodies(self, template_fn: Callable[[], dict[str, Any]], ns: str, prefix: str, n: int) -> list[dict[str, Any]]:
        tmpl = template_fn()
        bodies = [pod_body(tmpl, f"{prefix}-{i}", ns, self.opts.scheduler_name) for i in range(n)]
        if self.wl.dra and self.wl.dra.shared_claims:
            for i, body in enumerate(bodies):
                claim_for_pod(body, i)
        return bodies

    def _wait_bound(
        self, watcher: PodWatcher, ns: str, n: int, timeout: float, proc: subprocess.Popen[bytes], what: str
    ) -> bool:
        t0 = time.monotonic()
        last_report = last_change = t0
        last_got = -1
        while True:
            got = watcher.bound_count(ns)
            if got >= n:
                return True
            now = time.monotonic()
            if got != last_got:
                last_got, last_change = got, now
            elif now - last_change > self.opts.stall:
                log(f"  {what}: no progress for {self.opts.stall:.0f} s ({got}/{n} bound): giving up")
                return False
            if proc.poll() is not None:
                log(f"  {what}: scheduler exited with code {proc.returncode} ({got}/{n} bound)")
                return False
            if now - t0 > timeout:
                log(f"  {what}: timeout after {timeout:.0f} s ({got}/{n} bound)")
                return False
            if now - last_report > 30:
                log(f"  {what}: {got}/{n} bound after {now - t0:.0f} s")
                last_report = now
            time.sleep(0.02)

    def _wait_idle(self) -> dict[str, Any]:
        """Wait (up to ``opts.wait_idle`` s) until other work on a shared machine calms down."""
        t0 = time.monotonic()
        busy = procstat.busy_cores(2.0)
        while busy >= self.opts.idle_cores and time.monotonic() - t0 < self.opts.wait_idle:
            busy = procstat.busy_cores(2.0)
        waited = time.monotonic() - t0
        if busy >= self.opts.idle_cores:
            log(f"  machine still busy ({busy:.2f} CPUs) after {waited:.0f} s: running anyway")
        return {"busy_cores_before": round(busy, 2), "waited_for_idle_seconds": round(waited, 1)}

    def run(self, which: str, repeat: int) -> dict[str, Any]:
        opts = self.opts
        idle = self._wait_idle() if opts.wait_idle > 0 else {}
        t_start = time.monotonic()
        run_dir = self.log_dir / f"{which}-{repeat}"
        run_dir.mkdir(parents=True, exist_ok=True)
        watcher = PodWatcher(self.conn, list_resource_version(self.conn))
        proc = schedulers.start(
            which, kubeconfig=self.kubeconfig, bin_dir=self.bin_dir, workdir=run_dir,
            scheduler_name=opts.scheduler_name, qps=opts.qps, burst=opts.burst,
            py_score_plugins=self.wl.py_score_plugins, feature_gates=opts.feature_gates,
        )  # fmt: skip
        profiler: subprocess.Popen[bytes] | None = None
        native: subprocess.Popen[bytes] | None = None
        api_profiler: ApiServerProfiler | None = None
        label = f"{self.wl.name} @{opts.rate:g}/s" if opts.rate else self.wl.name
        if opts.feature_gates:
            label += f" [{opts.feature_gates}]"
        result: dict[str, Any] = {
            "workload": label, "rate": opts.rate, "nodes": self.nodes, "pods": self.pods, "scheduler": which,
            "repeat": repeat, "pods_per_second": None, "latency_p50_ms": None, "latency_p90_ms": None,
            "latency_p99_ms": None, "cpu_seconds_per_1000": None, "peak_rss_mb": None, "all_bound": False,
            "init_pods": self.n_init, "started_at": datetime.now(UTC).isoformat(timespec="seconds"), **idle,
        }  # fmt: skip
        if schedulers.is_py(which):
            repo = schedulers.base_repo() if which == "py-base" else schedulers.REPO
            result["py_source_hash"] = procstat.source_hash(repo / "scheduler")
        watch: WatchResult | None = None
        try:
            init_errors: list[str] = []
            if self.wl.dra:
                dra.create_run_claims(self.api, self.wl.dra, self.n_init, self.pods)
            if self.n_init:
                init_bodies = self._bodies(self.wl.init_template, INIT_NAMESPACE, "init", self.n_init)
                _, init_errors = create_pods(self.conn, init_bodies, opts.qps, opts.burst, opts.creators)
                if not self._wait_bound(watcher, INIT_NAMESPACE, self.n_init, opts.init_timeout, proc, "init pods"):
                    result["error"] = "init pods not all bound"
                    return result
            time.sleep(1.0)  # let the scheduler finish the init pods' events
            pids = {"scheduler": proc.pid, **_api_pids(self.cluster), "watcher": watcher.pid or 0}
            cpu0 = {k: procstat.cpu_seconds(p) for k, p in pids.items()}
            threads0 = procstat.thread_cpu_seconds(proc.pid) if schedulers.is_py(which) else {}
            procs0 = procstat.process_cpu_seconds(proc.pid)
            switches0 = procstat.context_switches(proc.pid)
            self0, busy0 = procstat.self_cpu_seconds(), procstat.machine_busy_seconds()
            if opts.profile in ("py-spy", "py-spy-gil", "py-spy-threads") and schedulers.is_py(which):
                profiler = self._start_py_spy(proc.pid, run_dir)
            elif opts.profile in sysprofile.KINDS and schedulers.is_py(which):
                native = sysprofile.start(opts.profile, proc.pid, run_dir)
            elif opts.profile == "apiserver":
                api_profiler = ApiServerProfiler(self.conn, run_dir)
                api_profiler.start()
            bodies = self._bodies(self.wl.measure_template, MEASURE_NAMESPACE, "pod", self.pods)
            t_create, t_create_wall = time.monotonic(), time.time()
            qps, burst = (opts.rate, 1) if opts.rate else (opts.qps, opts.burst)
            posted, errors = create_pods(self.conn, bodies, qps, burst, opts.creators)
            ok = self._wait_bound(watcher, MEASURE_NAMESPACE, self.pods,
                                  opts.timeout - (time.monotonic() - t_create), proc, "measured pods")  # fmt: skip
            cpu1 = {k: procstat.cpu_seconds(p) for k, p in pids.items()}
            threads1 = procstat.thread_cpu_seconds(proc.pid) if schedulers.is_py(which) else {}
            procs1 = procstat.process_cpu_seconds(proc.pid)
            switches1, groups1 = procstat.context_switches_by_thread(proc.pid)
            self1, busy1 = procstat.self_cpu_seconds(), procstat.machine_busy_seconds()
            result["peak_rss_mb"] = procstat.peak_rss_mb(proc.pid)
            result["loadavg_1m"] = procstat.loadavg()
            if profiler is not None:
                result["profile"] = self._stop_py_spy(profiler, run_dir)
            if native is not None:
                sysprofile.stop(native)
                native_file = run_dir / ("perf.data" if opts.profile == "perf" else "perf-trace.txt")
                result["native_profile"] = str(native_file)
            if api_profiler is not None:
                result["apiserver_profile"] = [str(f) for f in api_profiler.stop()]
                if api_profiler.errors:
                    result["apiserver_profile_errors"] = api_profiler.errors[:3]
            watch = watcher.stop()
            prefix = MEASURE_NAMESPACE + "/"
            added = {k: t for k, t in watch.added.items() if k.startswith(prefix)}
            created = {k: min(posted.get(k, math.inf), added.get(k, math.inf)) for k in set(posted) | set(added)}
            bound = {k: t for k, t in watch.bound.items() if k.startswith(prefix)}
            result.update(batch_metrics(created, bound, self.pods))
            write_pod_times(run_dir / "pod-times.json", t_create, t_create_wall, created, bound)
            result["all_bound"] = result["all_bound"] and ok
            result.update(cpu_breakdown(cpu0, cpu1, self1 - self0, busy1 - busy0, result["bound"]))
            result["context_switches_per_pod"] = per_pod(procstat.switches_between(switches0, switches1),
                                                          result["bound"])
            if schedulers.is_py(which):
                result["thread_context_switches_per_pod"] = {
                    g: per_pod(n, result["bound"])
                    for g, n in sorted(procstat.switches_by_group(switches0, switches1, groups1).items(),
                                       key=lambda kv: -sum(kv[1])) if sum(n) >= result["bound"] / 10}
            if procs1:
                result["process_cpu_seconds_per_1000"] = per_process(proc.pid, procs0, procs1, result["bound"])
                result["busiest_process"] = next(iter(result["process_cpu_seconds_per_1000"]))
            if threads1:
                result["thread_cpu_seconds_per_1000"] = per_thread_group(threads0, threads1, result["bound"])
            result["creation_pods_per_second"] = creation_rate(posted.values())
            result["constraint_violations"] = violations(self.wl.name, watch.nodes)
            if self.wl.dra:
                self._check_claims(result)
            errs = errors + init_errors + watch.errors
            if errs:
                result["errors"] = errs[:5]
        finally:
            for p in (profiler, native):
                if p is not None and p.poll() is None:
                    p.kill()
            if api_profiler is not None:
                api_profiler.stop()
            schedulers.stop(proc)
            if watch is None:
                with contextlib.suppress(Exception):
                    watcher.stop(10)
            self._cleanup_pods()
            if self.wl.dra:
                dra.delete_run_claims(self.api, self.wl.dra)
            result["wall_seconds"] = round(time.monotonic() - t_start, 1)
        return result

    def _check_claims(self, result: dict[str, Any]) -> None:
        """Record how many measured claims ended allocated and reserved; a bound pod without its devices
        is no success."""
        assert self.wl.dra is not None
        expected = self.pods if not self.wl.dra.shared_claims else dra.shared_claims(self.pods)
        done, total = dra.allocated_claims(self.api)
        result["claims_allocated"], result["claims_expected"] = done, expected
        if done < expected:
            result["all_bound"] = False
            result["error"] = f"{done}/{expected} measured claims allocated ({total} claims exist)"

    # ---- profiling ----
    def _start_py_spy(self, pid: int, run_dir: Path) -> subprocess.Popen[bytes]:
        exe = Path(sys.executable).with_name("py-spy")
        cmd = [
            str(exe if exe.exists() else "py-spy"), "record", "--pid", str(pid), "--format", "raw",
            "--rate", str(self.opts.profile_rate), "--nonblocking", "--output", str(run_dir / "py-spy.raw.txt"),
        ]  # fmt: skip
        if self.opts.profile == "py-spy-gil":
            cmd.append("--gil")  # only the thread holding the GIL: Python CPU time
        elif self.opts.profile == "py-spy-threads":
            cmd.append("--threads")  # each stack's root frame names its thread
        log_f = open(run_dir / "py-spy.log", "ab")  # noqa: SIM115 - owned by the child
        p = subprocess.Popen(cmd, stdout=log_f, stderr=subprocess.STDOUT, start_new_session=True)
        time.sleep(0.5)
        return p

    def _stop_py_spy(self, p: subprocess.Popen[bytes], run_dir: Path) -> str:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
        return str(run_dir / "py-spy.raw.txt")


def cpu_breakdown(
    cpu0: dict[str, float], cpu1: dict[str, float], harness: float, machine_busy: float, bound: int
) -> dict[str, Any]:
    """CPU seconds per 1000 bound pods of the scheduler (``cpu_seconds_per_1000``), kube-apiserver, etcd and
    the harness (creators + watcher), and ``foreign_cpu_seconds``: what the rest of the machine used
    meanwhile (other users of a shared machine; large values mean a noisy run)."""
    per = 1000.0 / max(bound, 1)
    d = {k: cpu1[k] - cpu0[k] for k in cpu0}
    ours = sum(d.values()) + harness
    harness += d.pop("watcher", 0.0)
    out: dict[str, Any] = {"cpu_seconds_per_1000": round(d.pop("scheduler", 0.0) * per, 3)}
    for k, v in d.items():
        out[f"{k}_cpu_seconds_per_1000"] = round(v * per, 3)
    out["harness_cpu_seconds_per_1000"] = round(harness * per, 3)
    out["foreign_cpu_seconds"] = round(max(machine_busy - ours, 0.0), 2)
    return out


def per_thread_group(before: dict[str, float], after: dict[str, float], bound: int) -> dict[str, float]:
    """CPU seconds per 1000 bound pods of each thread group over the batch, largest first (groups that spent
    under 1 ms are left out)."""
    per = 1000.0 / max(bound, 1)
    spent = {g: after[g] - before.get(g, 0.0) for g in after}
    return {g: round(v * per, 3) for g, v in sorted(spent.items(), key=lambda kv: -kv[1]) if v >= 0.001}


ROOT_PROCESS = "main"  # the label of the scheduler's own process in process_cpu_seconds_per_1000


def per_process(
    root: int, before: Mapping[int, tuple[str, float]], after: Mapping[int, tuple[str, float]], bound: int
) -> dict[str, float]:
    """CPU seconds per 1000 bound pods of each process of a scheduler over the batch, largest first: its own
    process is ``main``, each descendant is named by its comm, with ``-2``, ``-3``... in pid order where
    several share a name. One process runs on one GIL, so the largest entry is what caps throughput.
    A process started during the batch counts from zero; one that ended during it is missing (its CPU
    cannot be read any more), so a restarted child shows as its successor only."""
    per = 1000.0 / max(bound, 1)
    seen: dict[str, int] = {}
    out: dict[str, float] = {}
    for pid in sorted(after, key=lambda p: (p != root, p)):
        name, cpu = after[pid]
        if pid == root:
            label = ROOT_PROCESS
        else:
            seen[name] = seen.get(name, 0) + 1
            label = name if seen[name] == 1 else f"{name}-{seen[name]}"
        prev = before.get(pid)
        out[label] = round(max(cpu - (prev[1] if prev and prev[0] == name else 0.0), 0.0) * per, 3)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def per_pod(increments: tuple[int, ...], bound: int) -> list[float]:
    """Counter increments over the batch per bound pod (context switches: voluntary, involuntary)."""
    return [round(n / max(bound, 1), 1) for n in increments]


def round_order(schedulers: list[str], rep: int) -> list[str]:
    """The order of round ``rep`` (from 1): the list rotated by one place per round (py, kube, ceiling; kube,
    ceiling, py; ceiling, py, kube; ...). The control plane of a size is shared by all its runs and drifts
    (the API server's heap grew 115 -> 780 MB over three runs, its CPU per pod with it): with a fixed order,
    one scheduler would always run first and another always after it; rotated, over as many rounds as
    schedulers each takes every place once."""
    k = (rep - 1) % len(schedulers) if schedulers else 0
    return schedulers[k:] + schedulers[:k]


def run_size(
    workload: Workload, nodes: int, pods: int, opts: Options, bin_dir: Path, on_run: Callable[[dict[str, Any]], None]
) -> list[dict[str, Any]]:
    """Every scheduler ``opts.repeat`` times, interleaved, the order rotated each round (round_order);
    the ceiling binder only where it can stand for the workload."""
    out = []
    which_list = [s for s in opts.schedulers if not s.startswith("ceiling") or workload.ceiling]
    with SizeRunner(workload, nodes, pods, opts, bin_dir) as sr:
        for rep in range(1, opts.repeat + 1):
            for which in round_order(which_list, rep):
                r = sr.run(which, rep)
                out.append(r)
                on_run(r)
    return out


def ensure_binaries(build: bool = True) -> Path:
    """The bin dir with kube-apiserver, etcd and kube-scheduler (build.sh builds them when missing, unless
    ``build`` is false: another build may be running)."""
    from e2e.cluster.cluster import build_binaries

    return build_binaries(build=build)


def write_pod_times(path: Path, t0: float, t0_wall: float, created: Mapping[str, float],
                    bound: Mapping[str, float]) -> None:
    """Keep each measured pod's creation and binding times (seconds after the batch began, and the batch's
    wall-clock start) beside the run's logs, so a latency tail can be matched with the scheduler's log."""
    pods = {n: [round(t - t0, 4), round(bound[n] - t0, 4) if n in bound else None] for n, t in created.items()}
    path.write_text(json.dumps({"start_wall": t0_wall, "pods": pods}, sort_keys=True))
