"""Integration fixtures: a real local control plane (etcd, kube-apiserver, kube-controller-manager,
kwok) started once per session, and py-scheduler processes started against it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kubernetes import client, config

from e2e.cluster.cluster import LocalCluster, create_nodes
from e2e.kube import create_namespace, delete_namespace
from e2e.process import start_scheduler, stop_scheduler

BASE_NODES = 10


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="py-scheduler-it-") as d:
        yield Path(d)
        keep = os.environ.get("IT_LOGS_DIR")  # the schedulers' own logs too, beside the control plane's
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            for log in Path(d).glob("*.log"):
                shutil.copy2(log, keep)


@pytest.fixture(scope="session")
def cluster(workdir: Path) -> Iterator[LocalCluster]:
    c = LocalCluster(workdir / "cluster", audit=True)  # the handover test reads who bound each pod
    c.up()
    try:
        create_nodes(str(c.kubeconfig), BASE_NODES, zones=3, prefix="base")
        yield c
    finally:
        keep = os.environ.get("IT_LOGS_DIR")  # copy the control plane's logs out before the workdir goes
        if keep and (c.dir / "logs").is_dir():
            shutil.copytree(c.dir / "logs", keep, dirs_exist_ok=True)
        c.down(keep_logs=False)


@pytest.fixture(scope="session")
def api(cluster: LocalCluster) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(cluster.kubeconfig))


@pytest.fixture(scope="session")
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SchedulerProc:
    def __init__(self, proc: subprocess.Popen[bytes], log: Path, metrics_port: int) -> None:
        self.proc = proc
        self.log = log
        self.metrics_port = metrics_port

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            return str(r.read().decode())

    def metric(self, name: str, labels: str = "") -> float | None:
        """Value of one sample, e.g. metric("scheduler_cache_size", 'type="assumed_pods"')."""
        want = f"{name}{{{labels}}}" if labels else name
        for line in self.metrics().splitlines():
            if line.startswith(want + " "):
                return float(line.split()[-1])
        return None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture(scope="session")
def start_py_scheduler(cluster: LocalCluster, workdir: Path) -> Iterator[Callable[..., SchedulerProc]]:
    """Factory: start a py-scheduler process; every process is stopped at session end."""
    started: list[SchedulerProc] = []

    def start(*extra: str, name: str = "sched") -> SchedulerProc:
        port = free_port()
        log = workdir / f"{name}-{len(started)}.log"
        proc = start_scheduler(cluster.kubeconfig, log, ["--metrics-port", str(port), *extra])
        sp = SchedulerProc(proc, log, port)
        started.append(sp)
        return sp

    yield start
    for sp in started:
        stop_scheduler(sp.proc)


@pytest.fixture(scope="session")
def scheduler(start_py_scheduler: Callable[..., SchedulerProc]) -> SchedulerProc:
    """The session's main scheduler, serving `py-scheduler`."""
    return start_py_scheduler(name="main")


@pytest.fixture
def ns(core: client.CoreV1Api) -> Iterator[str]:
    name = create_namespace(core, "it")
    yield name
    delete_namespace(core, name)


@contextmanager
def temporary_nodes(kubeconfig: str, count: int, prefix: str, **kw: object) -> Iterator[list[str]]:
    names = create_nodes(kubeconfig, count, prefix=prefix, **kw)  # type: ignore[arg-type]
    try:
        yield names
    finally:
        api = config.new_client_from_config(config_file=kubeconfig)
        core = client.CoreV1Api(api)
        for n in names:
            try:
                core.delete_node(n)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise


def create_priority_classes(api: client.ApiClient, classes: Iterable[tuple[str, int]]) -> None:
    """PriorityClasses (name, value) for pods to refer to; ones that exist already are kept."""
    sched_api = client.SchedulingV1Api(api)
    for name, value in classes:
        try:
            sched_api.create_priority_class({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                             "metadata": {"name": name}, "value": value})
        except client.ApiException as exc:
            if exc.status != 409:
                raise


def env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0", "false")
