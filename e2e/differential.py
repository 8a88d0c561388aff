"""Differential test: kube-scheduler v1.37.2 on the local control plane against `py-scheduler simulate`
on the same objects read back from the API.

Each seed builds a random scenario (2-6 nodes with random sizes, zones, labels and taints; bound pods
with random requests, labels and host ports; one pending pod with random requests, pod-level resources,
tolerations, node affinity, pod (anti-)affinity, spread constraints and host ports). kube-scheduler
decides first; then every Node, Namespace and bound Pod is read back and given to `simulate` with the
pending pod. They must agree: the same verdict, the same node when one has the best total (kube's among
simulate's best when several tie: v1.37's tie-break follows the order its parallel filters finish), the same
FailedScheduling message byte for byte, and, where kube-scheduler logged them
(`--vmodule=schedule_one=10`), the same weighted score per plugin and node.

`python -m e2e.differential --scenarios 200` runs a batch on a fresh local control plane (`make
differential N=200`); tests/integration/test_differential.py runs a small seeded batch in `make test`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from e2e.cluster.cluster import LocalCluster, build_binaries, create_nodes, node_manifest
from e2e.kube import create_namespace, delete_namespace, wait_for
from e2e.process import start_kube_scheduler, stop_scheduler
from scheduler.config.defaults import DEFAULT_MULTIPOINT
from scheduler.whatif.simulate import run_simulation

KUBE = "kube-diff"
NOBODY = "diff-nobody"  # schedulerName of the bound pods the scenario places itself
SCENARIO_LABEL = "diff.py-scheduler.io/scenario"
ZONE, HOSTNAME = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
ZONES = ("zone-a", "zone-b", "zone-c")
APPS = ("web", "db", "cache")
IMAGE = "registry.k8s.io/pause:3.10"
WEIGHTS = {p.name: p.default_weight for p in DEFAULT_MULTIPOINT if p.default_weight}
LOG_FLAGS = ("--v=2", "--vmodule=schedule_one=10")
_SCORE_LINE = re.compile(r'"Plugin scored node for pod" pod="([^"]+)" plugin="([^"]+)" node="([^"]+)" score=(-?\d+)')


@dataclass
class Scenario:
    seed: int
    nodes: list[dict[str, Any]]
    bound: list[dict[str, Any]]
    pod: dict[str, Any]


@dataclass
class Verdict:
    """One scenario's comparison; `problems` is empty when both schedulers agree."""

    seed: int
    kube_node: str | None
    py_node: str | None
    kube_message: str
    py_message: str
    scored_nodes: int
    problems: list[str] = field(default_factory=list)


# ----- random scenarios -----------------------------------------------------------------------------


def _requests(r: random.Random, cpus: tuple[str | None, ...], mems: tuple[str | None, ...]) -> dict[str, str]:
    out = {"cpu": r.choice(cpus), "memory": r.choice(mems)}
    return {k: v for k, v in out.items() if v}


def _container(name: str, requests: dict[str, str], host_port: int | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": IMAGE, "resources": {"requests": requests}}
    if host_port:
        c["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    return c


def _node(r: random.Random, seed: int, i: int) -> dict[str, Any]:
    taints = []
    if r.random() < 0.3:
        taints.append({"key": "dedicated", "value": r.choice("ab"),
                       "effect": r.choice(["NoSchedule", "PreferNoSchedule"])})
    labels = {SCENARIO_LABEL: f"s{seed}", "disk": r.choice(["ssd", "hdd"]), "cores": str(r.choice([2, 4, 8, 16])),
              ZONE: r.choice(ZONES)}
    return node_manifest(f"df{seed}-{i}", i, zones=0, regions=0, cpu=str(r.choice([1, 2, 4, 8, 16])),
                         memory=f"{r.choice([2, 4, 8, 16, 32])}Gi", pods=r.choice([4, 110]), labels=labels,
                         taints=taints)


def _bound(r: random.Random, i: int, node: str) -> dict[str, Any]:
    requests = _requests(r, (None, "100m", "500m", "1", "2"), (None, "128Mi", "1Gi", "3Gi"))
    port = 8080 if r.random() < 0.15 else None
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"b{i}", "labels": {"app": r.choice(APPS)}},
            "spec": {"schedulerName": NOBODY, "nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [_container("c", requests, port)]}}


def _affinity_term(r: random.Random) -> dict[str, Any]:
    return {"topologyKey": r.choice([ZONE, HOSTNAME]),
            "labelSelector": {"matchLabels": {"app": r.choice(APPS)}}}


def _affinity(r: random.Random) -> dict[str, Any]:
    aff: dict[str, Any] = {}
    if r.random() < 0.4:
        key, values = r.choice([("disk", ["ssd"]), (ZONE, [r.choice(ZONES)])])
        aff["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": r.randint(1, 100), "preference": {"matchExpressions": [
                {"key": key, "operator": "In", "values": values}]}}]}
    if r.random() < 0.2:
        aff.setdefault("nodeAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "cores", "operator": r.choice(["Gt", "Lt"]), "values": [str(r.choice([2, 4, 8]))]}]}]}
    for kind in ("podAffinity", "podAntiAffinity"):
        if r.random() < 0.25:
            aff.setdefault(kind, {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": r.randint(1, 100), "podAffinityTerm": _affinity_term(r)}]
    if r.random() < 0.1:
        aff.setdefault("podAntiAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = [
            _affinity_term(r)]
    return aff


def _pending(r: random.Random, seed: int) -> dict[str, Any]:
    pod_level = r.random() < 0.25
    small = ((None, "100m", "500m"), (None, "64Mi", "512Mi"))
    wide = ((None, "100m", "250m", "1", "2", "4"), (None, "64Mi", "512Mi", "2Gi", "8Gi"))
    cpus, mems = small if pod_level else wide
    port = 8080 if r.random() < 0.1 else None
    containers = [_container(f"c{i}", _requests(r, cpus, mems), port if i == 0 else None)
                  for i in range(r.randint(1, 2))]
    spec: dict[str, Any] = {"schedulerName": KUBE, "terminationGracePeriodSeconds": 0,
                            "nodeSelector": {SCENARIO_LABEL: f"s{seed}"}, "containers": containers}
    if pod_level:  # at least the containers' sum (at most 1 cpu, 1Gi), as the API server requires
        spec["resources"] = {"requests": {"cpu": r.choice(["1", "2", "3"]), "memory": r.choice(["1Gi", "2Gi", "6Gi"])}}
    elif r.random() < 0.2:
        spec["initContainers"] = [_container("init", _requests(r, *wide))]
    if r.random() < 0.3:
        spec["tolerations"] = [r.choice([
            {"key": "dedicated", "operator": "Equal", "value": r.choice("ab"), "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Exists"},
            {"key": "dedicated", "operator": "Equal", "value": "a", "effect": "PreferNoSchedule"}])]
    affinity = _affinity(r)
    if affinity:
        spec["affinity"] = affinity
    if r.random() < 0.3:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": r.randint(1, 2), "topologyKey": r.choice([ZONE, HOSTNAME]),
            "whenUnsatisfiable": r.choice(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": {"matchLabels": {"app": r.choice(APPS)}}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": r.choice(APPS)}},
            "spec": spec}


def generate(seed: int) -> Scenario:
    """The scenario of `seed`: the same objects on every machine."""
    r = random.Random(seed)
    nodes = [_node(r, seed, i) for i in range(r.randint(2, 6))]
    bound = [_bound(r, i, r.choice(nodes)["metadata"]["name"]) for i in range(r.randint(0, 2 * len(nodes)))]
    return Scenario(seed, nodes, bound, _pending(r, seed))


# ----- running one scenario -------------------------------------------------------------------------


def _raw(resp: Any, kind: str) -> list[dict[str, Any]]:
    """Items of a raw list response, with the kind the list leaves out."""
    return [{"apiVersion": "v1", "kind": kind, **item} for item in json.loads(resp.data)["items"]]


def kube_scores(log: Path, pod_key: str) -> dict[str, dict[str, int]]:
    """Per node, per plugin, the weighted scores kube-scheduler logged for the pod's last scoring."""
    scores: dict[str, dict[str, int]] = defaultdict(dict)
    for line in log.read_text(errors="replace").splitlines():
        m = _SCORE_LINE.search(line)
        if m and m.group(1) == pod_key:
            scores[m.group(3)][m.group(2)] = int(m.group(4))
    return dict(scores)


@contextmanager
def scenario_namespace(
    core: client.CoreV1Api, prefix: str, nodes: list[dict[str, Any]], bound: list[dict[str, Any]]
) -> Iterator[str]:
    """Create a scenario's nodes and bound pods, the pods in a fresh namespace (its name, yielded, starts
    with ``prefix``); remove them afterwards."""
    ns = create_namespace(core, prefix)
    try:
        for n in nodes:
            core.create_node(n)
        for p in bound:
            core.create_namespaced_pod(ns, p)
        for p in bound:  # kwok runs them: both schedulers' watches have seen them by now
            wait_for(lambda p=p: core.read_namespaced_pod(p["metadata"]["name"], ns).status.phase
                     == "Running", 60, what=f"{p['metadata']['name']} running")
        time.sleep(1.0)
        yield ns
    finally:
        delete_namespace(core, ns)
        for n in nodes:
            try:
                core.delete_node(n["metadata"]["name"])
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
        time.sleep(1.0)  # kube-scheduler's cache forgets them before the next scenario counts nodes


class Differential:
    """kube-scheduler serving `kube-diff` next to the test, and the scenarios run against it."""

    def __init__(self, kubeconfig: Path, workdir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.workdir = workdir
        self.api = config.new_client_from_config(config_file=str(kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.proc = start_kube_scheduler(build_binaries(build=False), kubeconfig, workdir, KUBE, log_flags=LOG_FLAGS)
        self.log = workdir / f"kube-scheduler-{KUBE}.log"

    def close(self) -> None:
        stop_scheduler(self.proc)
        self.api.close()

    def _placed(self, sc: Scenario) -> AbstractContextManager[str]:
        return scenario_namespace(self.core, f"diff-{sc.seed}", sc.nodes, sc.bound)

    def decision(self, ns: str, name: str = "p") -> tuple[str | None, str]:
        """kube-scheduler's node, or its PodScheduled=False message. An error of the binding cycle
        (``running PreBind ...``, e.g. a write conflict) is retried by kube-scheduler: not a verdict."""
        def decided() -> tuple[str | None, str] | None:
            pod = self.core.read_namespaced_pod(name, ns)
            if pod.spec.node_name:
                return pod.spec.node_name, ""
            for c in pod.status.conditions or []:
                if c.type == "PodScheduled" and c.status == "False" and not c.message.startswith("running PreBind"):
                    return None, c.message
            return None

        return wait_for(decided, 60, what=f"kube-scheduler's decision on {ns}/{name}")

    def _snapshot(self, ns: str, workdir: Path) -> tuple[Path, Path]:
        """The cluster as the API has it (nodes, namespaces, bound pods) and the pending pod, as simulate files."""
        nodes = _raw(self.core.list_node(_preload_content=False), "Node")
        namespaces = _raw(self.core.list_namespace(_preload_content=False), "Namespace")
        pods = _raw(self.core.list_pod_for_all_namespaces(_preload_content=False), "Pod")
        mine = next(p for p in pods if p["metadata"]["namespace"] == ns and p["metadata"]["name"] == "p")
        bound = [p for p in pods if p is not mine and p["spec"].get("nodeName")
                 and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
        pending = {**mine, "spec": {k: v for k, v in mine["spec"].items() if k != "nodeName"}, "status": {}}
        cluster_path, pods_path = workdir / "cluster.yaml", workdir / "pods.yaml"
        cluster_path.write_text(yaml.safe_dump_all(nodes + namespaces + bound))
        pods_path.write_text(yaml.safe_dump(pending))
        return cluster_path, pods_path

    def run(self, sc: Scenario) -> Verdict:
        with self._placed(sc) as ns, tempfile.TemporaryDirectory(prefix="diff-") as tmp:
            self.core.create_namespaced_pod(ns, sc.pod)
            kube_node, kube_message = self.decision(ns)
            cluster_path, pods_path = self._snapshot(ns, Path(tmp))
            sim = run_simulation(str(cluster_path), str(pods_path), tie_break="name")
            logged = kube_scores(self.log, f"{ns}/p")
        (result,) = sim.results
        v = Verdict(sc.seed, kube_node, result["node"], kube_message, result["message"], len(logged))
        v.problems.extend(f"simulate rejected {e}" for e in sim.invalid)
        compare(v, logged, result["scores"])
        return v


def compare(v: Verdict, logged: dict[str, dict[str, int]], py_scores: dict[str, dict[str, int]]) -> None:
    """Add to `v.problems` every way simulate's result differs from kube-scheduler's."""
    if v.kube_node is None:
        if v.py_node is not None:
            v.problems.append(f"kube: unschedulable ({v.kube_message}); simulate: {v.py_node}")
        elif v.py_message != v.kube_message:
            v.problems.append(f"messages differ:\n  kube: {v.kube_message}\n  py:   {v.py_message}")
        return
    if v.py_node is None:
        v.problems.append(f"kube: {v.kube_node}; simulate: unschedulable ({v.py_message})")
        return
    totals = {n: s.get("total", 0) for n, s in py_scores.items()}
    best = {n for n, t in totals.items() if t == max(totals.values())} if totals else {v.py_node}
    # kube-scheduler v1.37 pops its winner from a heap over the feasible nodes in the order its parallel
    # filters found them: deterministic when one node has the best total (then it must be that node),
    # a race between equal ones otherwise (then any of them will do).
    if len(best) == 1 and v.kube_node != v.py_node:
        v.problems.append(f"kube chose {v.kube_node}, simulate's unique best is {v.py_node} (totals {totals})")
    elif v.kube_node not in best:
        v.problems.append(f"kube chose {v.kube_node}, simulate's best are {sorted(best)} (totals {totals})")
    if set(logged) != set(py_scores):
        v.problems.append(f"scored nodes differ: kube {sorted(logged)}, py {sorted(py_scores)}")
    for node in sorted(set(logged) & set(py_scores)):
        py = {p: s * WEIGHTS.get(p, 1) for p, s in py_scores[node].items() if p != "total"}
        if py != logged[node]:
            v.problems.append(f"{node}: kube scores {logged[node]}, py (weighted) {py}")


def report(label: str, v: Verdict, detail: str) -> bool:
    """Print one verdict (and its problems, indented); True when the schedulers disagree."""
    status = "ok" if not v.problems else "DIFF"
    print(f"{label}: {status} kube={v.kube_node or 'unschedulable'} py={v.py_node or 'unschedulable'} {detail}",
          flush=True)
    for p in v.problems:
        print(f"    {p}", flush=True)
    return bool(v.problems)


def batch_args(argv: list[str] | None, prog: str, doc: str, scenarios: int) -> argparse.Namespace:
    """--scenarios and --first-seed of a batch run."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    ap.add_argument("--scenarios", type=int, default=scenarios)
    ap.add_argument("--first-seed", type=int, default=1)
    return ap.parse_args(argv)


@contextmanager
def batch_cluster(
    prefix: str, make: Callable[[Path, Path], Any], feature_gates: Mapping[str, bool] | None = None,
    prepare: Callable[[str], object] | None = None,
) -> Iterator[Any]:
    """A fresh local control plane (with ``feature_gates``) for a batch run from the command line: ``prepare``
    gets its kubeconfig, ``make(kubeconfig, workdir)`` builds the differential; all of it stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", feature_gates=feature_gates)
        cluster.up()
        try:
            if prepare is not None:
                prepare(str(cluster.kubeconfig))
            diff = make(cluster.kubeconfig, Path(tmp))
            try:
                yield diff
            finally:
                diff.close()
        finally:
            cluster.down()


@contextmanager
def differential_cluster(prefix: str, base_nodes: int, zones: int) -> Iterator[Differential]:
    """A fresh local control plane with ``base_nodes`` zoned nodes and kube-scheduler serving KUBE."""
    def prepare(kubeconfig: str) -> None:
        create_nodes(kubeconfig, base_nodes, zones=zones, prefix="base")

    with batch_cluster(prefix, Differential, prepare=prepare) as diff:
        yield diff

def main(argv: list[str] | None = None) -> int:
    args = batch_args(argv, "python -m e2e.differential", __doc__, 200)
    failed = 0
    with differential_cluster("py-scheduler-diff-", base_nodes=4, zones=3) as diff:
        for seed in range(args.first_seed, args.first_seed + args.scenarios):
            v = diff.run(generate(seed))
            failed += report(f"seed {seed}", v, f"scored={v.scored_nodes}")
    print(f"{args.scenarios - failed}/{args.scenarios} scenarios agree")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
