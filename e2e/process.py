"""Start and stop `py-scheduler run` as a child process (tests, the e2e runner and the demo)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


def start_scheduler(
    kubeconfig: str | os.PathLike[str], log_path: str | os.PathLike[str], extra: Sequence[str] = (),
    cwd: str | os.PathLike[str] | None = None, feature_gates: Mapping[str, bool] | None = None,
) -> subprocess.Popen[bytes]:
    """Run the scheduler with this interpreter, logging JSON lines to `log_path`. Its secure port is off
    unless `extra` names one: the harnesses run several schedulers on one host, and 10259 is one port.
    ``cwd``: run the ``scheduler`` package of another checkout (``-m`` imports from the working directory).
    ``feature_gates`` become ``--feature-gates``, as for kube-scheduler (start_kube_scheduler)."""
    if feature_gates:
        extra = [*extra, "--feature-gates", gate_flag(feature_gates)]
    if not any(a == "--secure-port" or a.startswith("--secure-port=") for a in extra):
        extra = [*extra, "--secure-port", "0"]
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "ab")  # noqa: SIM115 - owned by the child for its lifetime
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "scheduler.app.cli", "run", "--kubeconfig", str(kubeconfig), *extra]
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=cwd)


def gate_flag(gates: Mapping[str, bool]) -> str:
    """``Gate=true,Other=false`` (sorted): every Kubernetes component's ``--feature-gates`` syntax."""
    return ",".join(f"{name}={str(on).lower()}" for name, on in sorted(gates.items()))


STARTED = "py-scheduler started"  # scheduler/app/server.py logs it once its caches are synced


def wait_started(proc: subprocess.Popen[bytes], log_path: str | os.PathLike[str], timeout: float = 120.0,
                 poll: float = 0.05) -> None:
    """Return once the scheduler started by :func:`start_scheduler` logs that it runs (caches synced);
    RuntimeError if it exits or ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    path = Path(log_path)
    while STARTED not in (path.read_text(errors="replace") if path.exists() else ""):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"py-scheduler did not start; see {path}")
        time.sleep(poll)


def stop_scheduler(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> int:
    """SIGTERM (clean shutdown), then SIGKILL if it does not exit in time."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return proc.returncode


def pid_runs(pid: int, binary: str) -> bool:
    """True if ``pid`` is a live (non-zombie) process of ``binary``: guards against recycled PIDs when a
    harness stops what its pid files name."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X") and Path(argv0).name == binary


def start_kube_scheduler(
    bin_dir: Path, kubeconfig: str | os.PathLike[str], workdir: Path, scheduler_name: str,
    plugins: dict[str, object] | None = None, qps: int = 50, burst: int = 100,
    log_flags: Sequence[str] = ("--v=2",), secure_port: int = 0, feature_gates: Mapping[str, bool] | None = None,
) -> subprocess.Popen[bytes]:
    """Run upstream kube-scheduler (built by e2e/cluster) serving `scheduler_name`, for parity tests
    and benchmarks. `plugins` is a profile's `plugins` stanza; `log_flags` set klog's verbosity (the
    differential test reads per-plugin scores at --vmodule=schedule_one=10); `secure_port` (0: none)
    serves /metrics there to anyone, as the metrics parity test reads it; `feature_gates` become its
    ``--feature-gates`` (e2e.cluster's WORKLOAD_GATES for the Workload API)."""
    import json

    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": qps, "burst": burst},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": scheduler_name, **({"plugins": plugins} if plugins else {})}],
    }
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"kube-scheduler-{scheduler_name}.yaml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    log = open(workdir / f"kube-scheduler-{scheduler_name}.log", "ab")  # noqa: SIM115 - owned by the child
    serving = ["--secure-port=0"]
    if secure_port:
        serving = [f"--secure-port={secure_port}", "--bind-address=127.0.0.1",
                   "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"]
    gates = gate_flag(feature_gates or {})
    cmd = [str(bin_dir / "kube-scheduler"), f"--config={path}", *serving, *log_flags,
           *([f"--feature-gates={gates}"] if gates else [])]
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
