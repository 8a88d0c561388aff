"""Gang chaos: py-scheduler binds Workload API gangs (scheduling.k8s.io/v1beta1 PodGroups with the gang policy)
on a control plane with the Workload gates on, while kube-apiserver and/or py-scheduler are killed with SIGKILL
right after py-scheduler logs a gang scheduled (its members' Bindings just started), then restarted.

What the run checks is what kube-scheduler v1.37.2 guarantees (docs/robustness.md#gangs-under-faults): a gang's
members are bound by one Binding each, after GangScheduling's Permit saw minCount of them assumed, so a kill can
leave a gang torn (some members bound, the others pending), and nothing in the API records the decision. The
restarted scheduler counts the bound members as scheduled and places the rest. So, once the scheduler settled,
with capacity for every member (the run sizes nodes so): every member bound, hence no gang below minCount; at
all times no pod lost, no node overcommitted, no pod bound to a missing node.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from kubernetes import client

from e2e.chaos.harness import SCHEDULER, Figures, Run, summary
from e2e.cluster.cluster import WORKLOAD_GATES, LocalCluster
from e2e.process import gate_flag

GROUP, VERSION, PLURAL = "scheduling.k8s.io", "v1beta1", "podgroups"
CONDITION = "PodGroupInitiallyScheduled"
CYCLE_DONE = b'"Successfully scheduled a pod group"'  # py-scheduler's (and upstream's) log of a group's success
NODE_CPU = Decimal(4)
MAX_DEMAND = Decimal("0.75")  # of all nodes' cpu: with members of at most 400m, every member fits somewhere
CPUS = ("200m", "400m")
# Gangs arrive in bursts of BURST pods, one create every 25 ms, with a pause between bursts: each burst binds
# faster than the API writes (50 qps), so gangs are half bound for a while, and bursts go on through the strikes.
BURST, PAUSE_S = 40, 2.0
# The node lifecycle taints a late kwok heartbeat brings while kube-apiserver is down: the environment's, not
# the gang's; tolerated so that a group waits for capacity only.
TOLERATIONS = [{"key": key, "operator": "Exists", "effect": "NoSchedule"}
               for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]


@dataclass(frozen=True)
class Gang:
    name: str
    size: int
    min_count: int
    cpu: str
    members_first: bool  # members created before their PodGroup (they wait at PreEnqueue)

    def members(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.size)]


@dataclass
class GangFigures(Figures):
    seed: int = 0
    groups: int = 0
    faults: int = 0
    # Gangs with 0 < bound < size (all members created) just after a strike (a scheduler kill) or just after the API
    # server's restart (its kill alone): the window aimed at; and of those, the gangs below minCount.
    torn_at_fault: int = 0
    below_min_at_fault: int = 0
    below_min_count: int = 0  # gangs with 0 < bound < minCount once settled: the guarantee broken
    incomplete: int = 0  # gangs with bound < size once settled (every member fits)
    condition_not_true: int = 0  # fully bound gangs whose PodGroupInitiallyScheduled is not True (not a failure)

    @property
    def clean(self) -> bool:
        return super().clean and not (self.below_min_count or self.incomplete)


def plan(seed: int, members: int) -> list[Gang]:
    """Gangs of 2-8 members until `members` pods; minCount the size or down to half of it."""
    rng = random.Random(seed)
    gangs: list[Gang] = []
    total = 0
    while total < members:
        size = min(rng.randint(2, 8), members - total) if members - total >= 2 else 2
        min_count = rng.randint((size + 1) // 2, size) if rng.random() < 0.5 else size
        gangs.append(Gang(f"g{len(gangs)}", size, min_count, rng.choice(CPUS), rng.random() < 0.25))
        total += size
    return gangs


def nodes_for(gangs: list[Gang]) -> int:
    """Enough 4-cpu nodes that the members ask for at most MAX_DEMAND of them: then a 400m member always finds a
    node with room (a node without 400m free is over 90% full), so every gang fits once settled."""
    demand = sum((Decimal(g.cpu[:-1]) / 1000 * g.size for g in gangs), Decimal(0))
    return int(demand / (NODE_CPU * MAX_DEMAND)) + 1


class GangRun(Run):
    """A Run whose pods are gang members, with a PodGroup per gang; faults land while a gang is being bound."""

    figures: GangFigures

    def __init__(self, cluster: LocalCluster, workdir: Path, name: str, *, members: int, seed: int,
                 nodes: int | None = None) -> None:
        self.gangs = plan(seed, members)
        count = sum(g.size for g in self.gangs)
        # The seed in the run's name keeps each seed's nodes, namespace and logs apart.
        super().__init__(cluster, workdir, f"{name}-s{seed}", nodes=nodes or nodes_for(self.gangs), pods=count,
                         seed=seed,
                         scheduler_args=["--feature-gates", gate_flag(WORKLOAD_GATES)])
        self.custom = client.CustomObjectsApi(self.api)
        self.group_of = {m: g for g in self.gangs for m in g.members()}
        self.figures = GangFigures(name, count, len(self.node_names), seed=seed, groups=len(self.gangs))
        self.left_torn: list[Gang] | None = None  # the torn gangs a killed scheduler left, listed after the kill
        self.bound_now: dict[str, int] = {}  # gang -> members bound, as the last torn() listing saw them

    # ----- workload ---------------------------------------------------------------------------------

    def _member(self, gang: Gang, name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "labels": {"app": "chaos", "gang": gang.name}},
                "spec": {"schedulerName": SCHEDULER, "terminationGracePeriodSeconds": 0,
                         "nodeSelector": {"chaos": self.name}, "tolerations": TOLERATIONS,
                         "schedulingGroup": {"podGroupName": gang.name},
                         "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"requests": {"cpu": gang.cpu, "memory": "128Mi"}}}]}}

    def _pod_group(self, gang: Gang) -> dict[str, Any]:
        return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup", "metadata": {"name": gang.name},
                "spec": {"schedulingPolicy": {"gang": {"minCount": gang.min_count}}}}

    def _create_all(self) -> None:
        """Each gang's PodGroup then its members (or the members first), in bursts."""
        since_pause = 0
        for gang in self.gangs:
            if since_pause >= BURST:
                self.stop.wait(PAUSE_S)
                since_pause = 0
            since_pause += gang.size
            if not gang.members_first:
                self.create(self._group_creator(gang))
            for name in gang.members():
                self.create(self.pod_creator(self._member(gang, name)))
                self.created.add(name)
                time.sleep(0.025)
            if gang.members_first:
                self.create(self._group_creator(gang))

    def _group_creator(self, gang: Gang) -> Callable[[], object]:
        body = self._pod_group(gang)
        return lambda: self.custom.create_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL, body,
                                                                   _request_timeout=10)

    # ----- faults -----------------------------------------------------------------------------------

    def torn(self, pods: list[dict[str, Any]]) -> list[Gang]:
        """Gangs whose members all exist, some bound and some not."""
        bound: dict[str, int] = {}
        exist: dict[str, int] = {}
        for p in pods:
            gang = self.group_of.get(p["metadata"]["name"])
            if gang is not None:
                exist[gang.name] = exist.get(gang.name, 0) + 1
                bound[gang.name] = bound.get(gang.name, 0) + bool(p["spec"].get("nodeName"))
        self.bound_now = bound
        return [g for g in self.gangs if exist.get(g.name) == g.size and 0 < bound.get(g.name, 0) < g.size]

    def wait_group_cycle(self, timeout: float) -> bool:
        """Read the scheduler's log every 5 ms until it reports a gang of two or more members scheduled (its
        members' bindings have just started, so a strike now tears it), or `timeout`: the moment to strike."""
        log = self.schedulers[0].log
        offset = log.stat().st_size if log.exists() else 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(log, "rb") as f:
                f.seek(offset)
                chunk = f.read()
            end = chunk.rfind(b"\n") + 1  # whole lines only; the rest is read again next time
            offset += end
            for line in chunk[:end].splitlines():
                if CYCLE_DONE in line:
                    with contextlib.suppress(ValueError):
                        if json.loads(line).get("scheduledPods", 0) >= 2:
                            return True
            time.sleep(0.005)
        return False

    def wait_progress(self, timeout: float) -> None:
        """Until one more pod is bound (the healed side schedules again) or every pod created is bound."""
        before = len(self.bound_at)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.bound_at) == before < self.pods:
            time.sleep(0.1)

    # ----- verdict ----------------------------------------------------------------------------------

    def check(self) -> GangFigures:
        super().check()
        f = self.figures
        bound: dict[str, int] = {}
        for p in self.list_pods():
            gang = self.group_of.get(p["metadata"]["name"])
            if gang is not None and p["spec"].get("nodeName"):
                bound[gang.name] = bound.get(gang.name, 0) + 1
        resp: Any = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL,
                                                              _preload_content=False)
        conditions = {o["metadata"]["name"]: {c["type"]: c for c in (o.get("status") or {}).get("conditions") or []}
                      for o in json.loads(resp.data)["items"]}
        for g in self.gangs:
            n = bound.get(g.name, 0)
            if 0 < n < g.min_count:
                f.below_min_count += 1
                f.notes.append(f"{g.name}: {n} of {g.size} bound, minCount {g.min_count}")
            if n < g.size:
                f.incomplete += 1
            cond = conditions.get(g.name, {}).get(CONDITION)
            if n == g.size and (cond or {}).get("status") != "True":
                f.condition_not_true += 1
                f.notes.append(f"{g.name}: all bound, {CONDITION} " +
                               (f"{cond['status']} {cond.get('reason')}: {cond.get('message')}" if cond else "absent"))
        return f


Fault = Callable[[GangRun], Callable[[], None]]


def _kill_scheduler(run: GangRun) -> Callable[[], None]:
    (s,) = run.schedulers
    s.proc.kill()
    s.proc.wait(10)
    with contextlib.suppress(Exception):  # nothing binds now: the listing shows exactly what it left
        run.left_torn = run.torn(run.list_pods())
    return s.start


def _kill_apiserver(run: GangRun) -> Callable[[], None]:
    run.cluster.kill("kube-apiserver")
    return lambda: run.cluster.restart("kube-apiserver")


def _kill_both(run: GangRun) -> Callable[[], None]:
    heal_scheduler = _kill_scheduler(run)
    heal_api = _kill_apiserver(run)

    def heal() -> None:
        heal_api()
        heal_scheduler()
    return heal


GANG_SCENARIOS: dict[str, Fault | None] = {
    "gang-baseline": None,
    "gang-scheduler-kill9": _kill_scheduler,
    "gang-apiserver-kill9": _kill_apiserver,
    "gang-both-kill9": _kill_both,
}


def run_gang_scenario(cluster: LocalCluster, workdir: Path, name: str, members: int, seed: int,
                      faults: int = 3) -> GangFigures:
    """`faults` strikes, the k-th once k fifths of the pods are bound (and, after the first, the healed side bound
    one more), right after py-scheduler logs a gang of two or more scheduled (or 20 s later)."""
    fault = GANG_SCENARIOS[name]
    run = GangRun(cluster, workdir, name, members=members, seed=seed)
    try:
        with run.running():
            injected_at = healed_at = time.monotonic()
            for k in range(faults if fault is not None else 0):
                assert fault is not None
                run.wait_bound(run.pods * (k + 1) // (faults + 2), timeout=120)
                if k:
                    run.wait_progress(60)
                run.wait_group_cycle(20)
                run.left_torn = None
                struck_at = time.monotonic()
                heal = fault(run)
                if k == 0:
                    injected_at = struck_at
                heal()
                healed_at = time.monotonic()
                torn = run.left_torn
                if torn is None:  # the API server was down: what the first listing after its restart shows
                    with contextlib.suppress(Exception):
                        torn = run.torn(run.list_pods())
                run.figures.faults += 1
                for g in torn or []:
                    n = run.bound_now.get(g.name, 0)
                    run.figures.torn_at_fault += 1
                    run.figures.below_min_at_fault += n < g.min_count
                    run.figures.notes.append(f"fault {k + 1}: {g.name} {n}/{g.size} bound, minCount {g.min_count}")
            run.converge(injected_at, healed_at)
        return run.check()
    finally:
        run.cleanup()


def gang_line(f: GangFigures) -> str:
    return (f"{f.scenario:<21} seed={f.seed} groups={f.groups} pods={f.pods} nodes={f.nodes} faults={f.faults} "
            f"torn-at-fault={f.torn_at_fault} (below minCount {f.below_min_at_fault}) "
            f"below-minCount={f.below_min_count} incomplete={f.incomplete} {summary(f)} "
            f"condition-not-true={f.condition_not_true}")
