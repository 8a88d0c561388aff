"""Start the schedulers under test as child processes, with the same client QPS/burst.

* ``py``: py-scheduler through ``e2e.process.start_scheduler`` (``--qps --burst --scheduler-name``, plus
  ``--config`` when a workload enables extra plugins).
* ``kube``: the kube-scheduler binary built by ``e2e/cluster/build.sh`` with a KubeSchedulerConfiguration
  (clientConnection kubeconfig + qps/burst, leader election off, one profile named like the pods'
  schedulerName, otherwise defaults) and ``--secure-port=0``.
* ``ceiling``: ``python -m e2e.perf.ceiling`` (see that module); ``ceiling-events``: the same with
  ``--events``, writing each pod's Scheduled event too (a diagnostic: the control plane's cost of that event).
* ``py-base``: py-scheduler from the checkout named by ``$BENCH_BASE_REPO`` (same interpreter and harness),
  for interleaved A/B runs of a change against its base in one batch on one control plane. ``$BENCH_PY_ARGS``
  (split like a shell line) adds arguments to ``py`` alone: a flag's A/B against ``py-base`` on the same code.
* ``ceiling-go``: the Go binder ``ceiling-binder`` from the bin dir (e2e/cluster/gobin/cmd/ceiling-binder,
  built by build.sh from the control plane's pinned client-go): the same algorithm-free binder, but its
  bindings run on every core, so it is a ceiling where the control plane has cores of its own;
  ``ceiling-go-events``: the same with ``--events``.
"""

from __future__ import annotations

import copy
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from e2e.process import start_scheduler, stop_scheduler, wait_started

REPO = Path(__file__).resolve().parents[2]


def kube_scheduler_config(kubeconfig: str, scheduler_name: str, qps: float, burst: int,
                          base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``base`` (a KubeSchedulerConfiguration, e.g. a scheduler_perf test case's schedulerConfigPath) with
    this harness's client connection, no leader election, and its profiles named ``scheduler_name``."""
    return {
        **with_scheduler_name(base, scheduler_name),
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": qps, "burst": burst},
        "leaderElection": {"leaderElect": False},
    }


def with_scheduler_name(base: Mapping[str, Any] | None, scheduler_name: str) -> dict[str, Any]:
    """A KubeSchedulerConfiguration (``base`` or the default one) whose first profile is ``scheduler_name``'s."""
    cfg: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           **copy.deepcopy(dict(base or {}))}  # fmt: skip
    profiles = cfg.get("profiles") or [{}]
    profiles[0]["schedulerName"] = scheduler_name
    cfg["profiles"] = profiles
    return cfg


def py_scheduler_config(scheduler_name: str, score_plugins: Mapping[str, int]) -> dict[str, Any]:
    """The default profile plus extra score plugins (SelectorSpread for SchedulingSelectorSpread), enabled
    through multiPoint so that their preScore runs too (as upstream's multiPoint expansion does)."""
    enabled = [{"name": n, "weight": w} for n, w in score_plugins.items()]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": scheduler_name, "plugins": {"multiPoint": {"enabled": enabled}}}],
    }


GO_CEILING_BINARY = "ceiling-binder"


def go_ceiling_command(bin_dir: Path, kubeconfig: str, scheduler_name: str, qps: str, burst: str,
                       events: bool) -> list[str]:  # fmt: skip
    """The Go ceiling binder's command line; a clear error when build.sh could not build it (no Go
    toolchain and no packed binary), rather than a run that binds nothing."""
    exe = bin_dir / GO_CEILING_BINARY
    if not exe.is_file():
        raise FileNotFoundError(f"{exe} is missing: build it with `bash e2e/cluster/build.sh` (needs Go) or pack "
                                f"it (EXTRA_BINS={GO_CEILING_BINARY})")  # fmt: skip
    cmd = [str(exe), "--kubeconfig", kubeconfig, "--scheduler-name", scheduler_name, "--qps", qps, "--burst", burst]
    return [*cmd, "--events"] if events else cmd


# py-scheduler and its variants: the value of --api-writer-processes each passes (None: the default).
PY_VARIANTS: dict[str, int | None] = {"py": None, "py-w0": 0, "py-w1": 1, "py-base": None}
BASE_REPO_ENV = "BENCH_BASE_REPO"


def base_repo() -> Path:
    """The checkout ``py-base`` runs: $BENCH_BASE_REPO, which must hold a ``scheduler`` package."""
    path = Path(os.environ.get(BASE_REPO_ENV, ""))
    if not os.environ.get(BASE_REPO_ENV) or not (path / "scheduler" / "__init__.py").is_file():
        raise ValueError(f"py-base needs ${BASE_REPO_ENV} naming a checkout with a scheduler package")
    return path


def is_py(which: str) -> bool:
    return which in PY_VARIANTS


def start(
    which: str,
    *,
    kubeconfig: str,
    bin_dir: Path,
    workdir: Path,
    scheduler_name: str,
    qps: float,
    burst: int,
    py_score_plugins: Mapping[str, int] | None = None,
    feature_gates: str = "",
    config: Mapping[str, Any] | None = None,
) -> subprocess.Popen[bytes]:
    """Start scheduler ``which`` (py, kube or one of the ceiling binders); its log goes to ``workdir/<which>.log``.
    ``feature_gates`` (``Gate=bool,...``) and ``config`` (a KubeSchedulerConfiguration) go to py-scheduler and
    kube-scheduler alike."""
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / f"{which}.log"
    q, b = f"{qps:g}", str(burst)
    if is_py(which):
        extra = ["--qps", q, "--burst", b, "--scheduler-name", scheduler_name]
        writers = PY_VARIANTS[which]
        if writers is not None:
            extra += ["--api-writer-processes", str(writers)]
        if feature_gates:
            extra += ["--feature-gates", feature_gates]
        if which == "py":
            extra += shlex.split(os.environ.get("BENCH_PY_ARGS", ""))
        if py_score_plugins or config:
            cfg = workdir / "py-scheduler-config.yaml"
            body = (py_scheduler_config(scheduler_name, py_score_plugins) if py_score_plugins
                    else with_scheduler_name(config, scheduler_name))  # fmt: skip
            cfg.write_text(yaml.safe_dump(body, sort_keys=False))
            extra += ["--config", str(cfg.resolve())]  # py-base runs in its own checkout
        return start_scheduler(kubeconfig, log_path, extra, cwd=base_repo() if which == "py-base" else None)
    if which == "kube":
        cfg = workdir / "kube-scheduler-config.yaml"
        cfg.write_text(yaml.safe_dump(kube_scheduler_config(kubeconfig, scheduler_name, qps, burst, config),
                                      sort_keys=False))
        cmd = [str(bin_dir / "kube-scheduler"), f"--config={cfg}", "--secure-port=0"]
        if feature_gates:
            cmd.append(f"--feature-gates={feature_gates}")
    elif which in ("ceiling", "ceiling-events"):
        cmd = [sys.executable, "-m", "e2e.perf.ceiling", "--kubeconfig", kubeconfig,
               "--scheduler-name", scheduler_name, "--qps", q, "--burst", b]  # fmt: skip
        if which == "ceiling-events":
            cmd.append("--events")
    elif which in ("ceiling-go", "ceiling-go-events"):
        cmd = go_ceiling_command(bin_dir, kubeconfig, scheduler_name, q, b, events=which == "ceiling-go-events")
    else:
        raise ValueError(f"unknown scheduler {which!r}: want py, py-w0, py-w1, py-base, kube, ceiling, ceiling-events, "
                         "ceiling-go or ceiling-go-events")  # fmt: skip
    log = open(log_path, "ab")  # noqa: SIM115 - owned by the child for its lifetime
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO, start_new_session=True)


def wait_ready(which: str, proc: subprocess.Popen[bytes], workdir: Path, timeout: float = 120.0) -> None:
    """Return once scheduler ``which`` started by :func:`start` schedules: py-scheduler once it logs that its
    caches are synced (about a CPU second of imports and set-up before); the others at once (kube-scheduler
    logs no such line at its default verbosity, and a Go binary is up in a fraction of that)."""
    if is_py(which):
        wait_started(proc, workdir / f"{which}.log", timeout)


def stop(proc: subprocess.Popen[bytes]) -> int:
    return stop_scheduler(proc)
