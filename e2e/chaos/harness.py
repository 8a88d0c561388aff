"""One chaos run: py-scheduler schedules a stream of pods on the local control plane while a fault is
injected (when a third of the pods are bound) and healed; afterwards the run checks what must hold.

Figures per run: lost pods (created, never bound, not removed with a node the run deleted), overcommitted
nodes (requests above allocatable), pods bound to missing nodes (bound after their node was deleted, or
bound to a node that never existed), false PodScheduled=False on bound pods, error loops (error lines the
schedulers still log in a quiet window after convergence) and the time to converge (heal to last pod
bound). A poller lists the pods every half second, through API outages, so bindings are timed without
depending on a watch.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from e2e.cluster.cluster import LocalCluster, create_nodes
from e2e.kube import create_namespace, delete_namespace
from e2e.process import start_scheduler, stop_scheduler
from scheduler.model.quantity import parse

SCHEDULER = "py-scheduler"
LEASE_S, RENEW_S, RETRY_S = 4, 3, 1
QUIET_S = 10.0  # the window after convergence in which no error may be logged
CONVERGE_TIMEOUT_S = 240.0


@dataclass
class Figures:
    scenario: str
    pods: int
    nodes: int
    lost: int = 0
    overcommitted_nodes: int = 0
    bound_to_missing_nodes: int = 0
    false_unschedulable: int = 0
    error_lines_after_convergence: int = 0
    converge_s: float | None = None
    fault_to_all_bound_s: float | None = None
    removed_with_deleted_nodes: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.lost or self.overcommitted_nodes or self.bound_to_missing_nodes
                    or self.false_unschedulable or self.error_lines_after_convergence) and self.converge_s is not None


@dataclass
class Scheduler:
    """One py-scheduler process of the run; restartable after a kill."""

    args: list[str]
    log: Path
    kubeconfig: Path
    proc: Any = None

    def start(self) -> None:
        self.proc = start_scheduler(self.kubeconfig, self.log, self.args)

    def stop(self) -> None:
        if self.proc is not None:
            stop_scheduler(self.proc)

    def children(self) -> list[int]:
        """The pids of this process's children (its API writer processes), from every thread's list."""
        pids: list[int] = []
        for f in Path(f"/proc/{self.proc.pid}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                pids += [int(p) for p in f.read_text().split()]
        return sorted(set(pids))


class Run:
    """The cluster-side state of one scenario: its nodes, namespace, schedulers and observations."""

    def __init__(self, cluster: LocalCluster, workdir: Path, name: str, *, nodes: int, pods: int,
                 replicas: int = 1, seed: int = 1, scheduler_args: Sequence[str] = ()) -> None:
        self.cluster, self.name, self.pods, self.seed = cluster, name, pods, seed
        self.workdir = workdir / name
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.api = cluster.api_client()
        self.api.configuration.retries = 0
        self.core = client.CoreV1Api(self.api)
        self.ns = create_namespace(self.core, f"chaos-{name}")
        self.node_names = create_nodes(str(cluster.kubeconfig), nodes, zones=3, prefix=f"c-{name}", cpu="4",
                                       memory="16Gi", labels={"chaos": name})
        self.scheduler_args = list(scheduler_args)
        self.schedulers = [self._scheduler(i, replicas > 1) for i in range(replicas)]
        self.created: set[str] = set()
        self.bound_at: dict[str, tuple[str, float]] = {}  # pod -> (node, first seen bound)
        self.deleted_nodes: dict[str, float] = {}  # node -> when the run deleted it
        self.stop = threading.Event()
        self.figures = Figures(name, pods, nodes)

    def _scheduler(self, i: int, leader_elect: bool) -> Scheduler:
        args = ["--metrics-port", "0", "--resync-seconds", "300", *self.scheduler_args]
        if leader_elect:
            cfg = self.workdir / "config.yaml"
            cfg.write_text(yaml.safe_dump({
                "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": True, "leaseDuration": f"{LEASE_S}s",
                                   "renewDeadline": f"{RENEW_S}s", "retryPeriod": f"{RETRY_S}s",
                                   "resourceLock": "leases", "resourceNamespace": self.ns,
                                   "resourceName": "py-scheduler"},
                "profiles": [{"schedulerName": SCHEDULER}],
            }))
            args += ["--config", str(cfg)]
        return Scheduler(args, self.workdir / f"scheduler-{i}.log", self.cluster.kubeconfig)

    # ----- workload and observation -------------------------------------------------------------

    def _pod(self, i: int, rng: random.Random) -> dict[str, Any]:
        cpu = rng.choice(["100m", "200m", "300m"])
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "labels": {"app": "chaos"}},
                "spec": {"schedulerName": SCHEDULER, "terminationGracePeriodSeconds": 0,
                         "nodeSelector": {"chaos": self.name},
                         "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]}}

    def _create_all(self) -> None:
        """Create the pods at ~40/s, retrying each through API outages (409: it was created)."""
        rng = random.Random(self.seed)
        for i in range(self.pods):
            body = self._pod(i, rng)
            self.create(self.pod_creator(body))
            self.created.add(f"p{i}")
            time.sleep(0.025)

    def pod_creator(self, body: Any) -> Callable[[], object]:
        return lambda: self.core.create_namespaced_pod(self.ns, body, _request_timeout=10)

    def create(self, call: Callable[[], object]) -> None:
        """One create, retried through API outages until the run stops (409: an earlier try was committed)."""
        while not self.stop.is_set():
            try:
                call()
                return
            except client.ApiException as exc:
                if exc.status == 409:
                    return
                time.sleep(0.5)
            except Exception:
                time.sleep(0.5)

    def list_pods(self) -> list[dict[str, Any]]:
        resp = self.core.list_namespaced_pod(self.ns, _preload_content=False, _request_timeout=10)
        return list(json.loads(resp.data)["items"])

    def _poll(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(Exception):  # outages are expected: keep polling
                now = time.monotonic()
                for p in self.list_pods():
                    node = p["spec"].get("nodeName")
                    if node and p["metadata"]["name"] not in self.bound_at:
                        self.bound_at[p["metadata"]["name"]] = (node, now)
            self.stop.wait(0.5)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Schedulers up, pods being created and bindings observed, for the body of the with."""
        for s in self.schedulers:
            s.start()
        threads = [threading.Thread(target=f, daemon=True) for f in (self._create_all, self._poll)]
        for t in threads:
            t.start()
        try:
            yield
        finally:
            self.stop.set()
            for t in threads:
                t.join(30)
            for s in self.schedulers:
                s.stop()

    def wait_bound(self, count: int, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.bound_at) < count and time.monotonic() < deadline:
            time.sleep(0.2)

    # ----- faults ---------------------------------------------------------------------------------

    def delete_nodes(self, count: int, *, behind_the_api: bool = False) -> list[str]:
        """Delete the `count` nodes holding most pods, through the API or straight from etcd."""
        load: dict[str, int] = {}
        for node, _ in self.bound_at.values():
            load[node] = load.get(node, 0) + 1
        victims = sorted(self.node_names, key=lambda n: -load.get(n, 0))[:count]
        for n in victims:
            if behind_the_api:
                self.cluster.etcd_delete(f"/registry/minions/{n}")
            else:
                self.core.delete_node(n)
            self.deleted_nodes[n] = time.monotonic()
        return victims

    def leader(self) -> Scheduler:
        """The replica holding the Lease (its identity is logged when it starts campaigning)."""
        holder = client.CoordinationV1Api(self.api).read_namespaced_lease("py-scheduler", self.ns).spec.holder_identity
        for s in self.schedulers:
            if holder and holder in s.log.read_text(errors="replace"):
                return s
        raise RuntimeError(f"no replica holds the lease (holder {holder!r})")

    def compete(self, seconds: float) -> None:
        """A second binder: for `seconds`, bind every other pending pod to the emptiest node by its own count."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                pods = self.list_pods()
                used: dict[str, Decimal] = {n: Decimal(0) for n in self.node_names}
                for p in pods:
                    if p["spec"].get("nodeName") in used:
                        used[p["spec"]["nodeName"]] += _cpu(p)
                pending = [p for p in pods if not p["spec"].get("nodeName")][::2]
                for p in pending[:10]:
                    node = min(used, key=lambda n: used[n])
                    used[node] += _cpu(p)
                    with contextlib.suppress(client.ApiException):
                        self.core.create_namespaced_binding(self.ns, {
                            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": p["metadata"]["name"]},
                            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}, _request_timeout=10)
            time.sleep(0.3)

    # ----- verdict --------------------------------------------------------------------------------

    def converge(self, injected_at: float, healed_at: float) -> None:
        """Wait until every pod created is bound (or gone with a deleted node); time it from the heal
        (0 when all were bound before the fault was healed) and from the fault."""
        deadline = time.monotonic() + CONVERGE_TIMEOUT_S
        while time.monotonic() < deadline:
            if len(self.created) == self.pods and self._unbound(self._pods_or_none()) == 0:
                last = max((t for _, t in self.bound_at.values()), default=healed_at)
                self.figures.converge_s = round(max(0.0, last - healed_at), 1)
                self.figures.fault_to_all_bound_s = round(max(0.0, last - injected_at), 1)
                return
            time.sleep(0.5)

    def _pods_or_none(self) -> list[dict[str, Any]] | None:
        try:
            return self.list_pods()
        except Exception:
            return None

    def _unbound(self, pods: list[dict[str, Any]] | None) -> int:
        if pods is None:
            return self.pods
        return sum(1 for p in pods if not p["spec"].get("nodeName"))

    def check(self) -> Figures:
        f = self.figures
        log_marks = [s.log.stat().st_size if s.log.exists() else 0 for s in self.schedulers]
        time.sleep(QUIET_S)
        pods = self.list_pods()
        node_list = json.loads(self.core.list_node(_preload_content=False).data)["items"]
        nodes = {n["metadata"]["name"]: n for n in node_list}
        existing = {p["metadata"]["name"]: p for p in pods}
        for name in self.created:
            p = existing.get(name)
            if p is not None and p["spec"].get("nodeName"):
                continue
            seen = self.bound_at.get(name)
            if p is None and seen and seen[0] in self.deleted_nodes:
                f.removed_with_deleted_nodes += 1  # pod GC removed it with its node
            else:
                f.lost += 1
        for node, t in self.bound_at.values():
            deleted = self.deleted_nodes.get(node)
            if (deleted is not None and t > deleted + 2.0) or (deleted is None and node not in nodes):
                f.bound_to_missing_nodes += 1
        f.overcommitted_nodes = _overcommitted(nodes, pods)
        for p in pods:
            if p["spec"].get("nodeName") and any(
                    c.get("type") == "PodScheduled" and c.get("status") == "False"
                    for c in p.get("status", {}).get("conditions") or []):
                f.false_unschedulable += 1
        for s, mark in zip(self.schedulers, log_marks, strict=True):
            f.error_lines_after_convergence += _error_lines(s.log, mark)
        return f

    def cleanup(self) -> None:
        with contextlib.suppress(Exception):
            delete_namespace(self.core, self.ns)
        for n in self.node_names:
            with contextlib.suppress(client.ApiException):
                self.core.delete_node(n)
        self.api.close()


def _cpu(pod: dict[str, Any]) -> Decimal:
    return sum((parse(c.get("resources", {}).get("requests", {}).get("cpu", "0"), "", "")
                for c in pod["spec"]["containers"]), Decimal(0))


def _overcommitted(nodes: dict[str, dict[str, Any]], pods: list[dict[str, Any]]) -> int:
    """Nodes whose bound pods request more cpu, memory or pods than allocatable."""
    used: dict[str, list[Decimal]] = {}
    for p in pods:
        node = p["spec"].get("nodeName")
        if not node or p.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        mem = sum((parse(c.get("resources", {}).get("requests", {}).get("memory", "0"), "", "")
                   for c in p["spec"]["containers"]), Decimal(0))
        u = used.setdefault(node, [Decimal(0), Decimal(0), Decimal(0)])
        u[0] += _cpu(p)
        u[1] += mem
        u[2] += 1
    over = 0
    for node, (cpu, mem, count) in used.items():
        alloc = nodes.get(node, {}).get("status", {}).get("allocatable")
        if alloc and (cpu > parse(alloc["cpu"], "", "") or mem > parse(alloc["memory"], "", "")
                      or count > parse(alloc["pods"], "", "")):
            over += 1
    return over


def _error_lines(log: Path, offset: int) -> int:
    """Error records (JSON level error, or stdlib ERROR lines) logged after `offset`."""
    with open(log, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    count = 0
    for line in text.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                count += json.loads(line).get("level") in ("error", "critical")
        elif line.startswith(("ERROR", "CRITICAL", "Traceback")):
            count += 1
    return count


def summary(f: Figures) -> str:
    """The figures every scenario reports, on one line."""
    conv = f"{f.converge_s:.1f} s" if f.converge_s is not None else "NOT CONVERGED"
    return (f"lost={f.lost} overcommitted={f.overcommitted_nodes} bound-to-missing={f.bound_to_missing_nodes} "
            f"false-unschedulable={f.false_unschedulable} errors-after={f.error_lines_after_convergence} "
            f"converge={conv}")


def as_json(figures: list[Figures]) -> str:
    return json.dumps([{**asdict(f), "clean": f.clean} for f in figures], indent=2)


Fault = Callable[[Run], Callable[[], None]]
"""Injects a fault into a run and returns the function that heals it."""
