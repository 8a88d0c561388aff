"""Gang scheduling benchmark: PodGroups (Coscheduling) on a lean control plane, py-scheduler only.

kube-scheduler v1.37.2 cannot run this workload: its own gang scheduling (GangScheduling on the
Workload API's scheduling.k8s.io/v1beta1 PodGroups) sits behind the GenericWorkload gate, beta and off,
and reads other objects than scheduler-plugins' PodGroups; scheduler-plugins' Coscheduling is a separate
binary, so there is no side-by-side number. Groups of ``--size`` pods each with ``minMember = size``; ``--unfit`` of the
groups ask more CPU per member than a node has, so they can never be placed and must stay wholly
pending while the others are placed around them. Reported: groups per second (complete groups /
first creation -> last complete group), time to the last complete group, and the partial groups seen
at the end (must be 0).

    python -m e2e.perf.gang --nodes 500 --groups 100 --size 10 --unfit 10 --out .bench/gang.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster.cluster import LocalCluster, create_nodes
from e2e.perf.kubeio import Conn, PodWatcher, create_pods, list_resource_version
from e2e.perf.runner import ensure_binaries, log
from e2e.perf.workloads import MEASURE_NAMESPACE, NODE_CPU, NODE_MEMORY, NODE_PODS, ZONES, pod_body, pod_default
from e2e.process import start_scheduler, stop_scheduler, wait_started
from e2e.rbac import apply_podgroup_crd

ROOT = Path(__file__).resolve().parents[2]
LABEL = "scheduling.x-k8s.io/pod-group"
GROUP, VERSION = "scheduling.x-k8s.io", "v1alpha1"
SCHEDULER = "gang-bench"


def scheduler_config(qps: float, burst: int) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False}, "clientConnection": {"qps": qps, "burst": burst},
        "profiles": [{
            "schedulerName": SCHEDULER,
            "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
            "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 30}}],
        }],
    }  # fmt: skip


def members(groups: int, size: int, unfit: int) -> tuple[list[dict[str, Any]], set[str]]:
    """Pod bodies, group by group (upstream's pod template), and the names of the unfit groups."""
    tmpl = pod_default()
    bodies, unfit_groups = [], set()
    for g in range(groups):
        name = f"pg-{g:04d}"
        big = g % max(1, groups // max(1, unfit)) == 0 and len(unfit_groups) < unfit
        if big:
            unfit_groups.add(name)
        for i in range(size):
            body = pod_body(tmpl, f"{name}-{i}", MEASURE_NAMESPACE, SCHEDULER)
            body["metadata"]["labels"] = {LABEL: name}
            if big:  # more than a node's 4 CPU: the group can never be placed
                for c in body["spec"]["containers"]:
                    c["resources"] = {"requests": {"cpu": "5"}, "limits": {"cpu": "5"}}
            bodies.append(body)
    return bodies, unfit_groups


def run(nodes: int, groups: int, size: int, unfit: int, qps: float, burst: int, timeout: float) -> dict[str, Any]:
    from kubernetes import client, config

    bin_dir = ensure_binaries()
    with tempfile.TemporaryDirectory(prefix="py-scheduler-gang-") as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", bin_dir=str(bin_dir))
        cluster.up(lean=True, build=False)
        proc = None
        try:
            kubeconfig = str(cluster.kubeconfig)
            api = config.new_client_from_config(config_file=kubeconfig)
            create_nodes(kubeconfig, nodes, zones=ZONES, cpu=NODE_CPU, memory=NODE_MEMORY, pods=NODE_PODS, workers=32)
            client.CoreV1Api(api).create_namespace({"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": MEASURE_NAMESPACE}})
            apply_podgroup_crd(kubeconfig)
            objs = client.CustomObjectsApi(api)
            for g in range(groups):
                objs.create_namespaced_custom_object(GROUP, VERSION, MEASURE_NAMESPACE, "podgroups", {
                    "apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup",
                    "metadata": {"name": f"pg-{g:04d}"}, "spec": {"minMember": size}})  # fmt: skip
            cfg = Path(tmp) / "config.yaml"
            cfg.write_text(yaml.safe_dump(scheduler_config(qps, burst)))
            sched_log = Path(tmp) / "py-scheduler.log"
            proc = start_scheduler(kubeconfig, sched_log, ["--config", str(cfg)])
            wait_started(proc, sched_log)
            conn = Conn.from_kubeconfig(kubeconfig)
            watcher = PodWatcher(conn, list_resource_version(conn))
            bodies, unfit_groups = members(groups, size, unfit)
            want = (groups - len(unfit_groups)) * size
            t0 = time.monotonic()
            posted, errors = create_pods(conn, bodies, qps, burst, 32)
            while watcher.bound_count(MEASURE_NAMESPACE) < want and time.monotonic() - t0 < timeout:
                time.sleep(0.05)
            time.sleep(2.0)  # anything bound after the last complete group would be a partial group
            result = watcher.stop()
            return summarize(posted, result.bound, groups, size, unfit_groups, nodes, errors)
        finally:
            if proc is not None:
                stop_scheduler(proc)
            cluster.down()


def summarize(
    posted: dict[str, float], bound: dict[str, float], groups: int, size: int, unfit_groups: set[str], nodes: int,
    errors: list[str],
) -> dict[str, Any]:
    prefix = MEASURE_NAMESPACE + "/"
    per_group = Counter(k[len(prefix):].rsplit("-", 1)[0] for k in bound if k.startswith(prefix))
    complete = [g for g, n in per_group.items() if n == size]
    partial = [g for g, n in per_group.items() if 0 < n < size]
    first = min(posted.values()) if posted else 0.0
    done_at = {g: max(t for k, t in bound.items() if k.startswith(f"{prefix}{g}-")) for g in complete}
    last = max(done_at.values()) if done_at else first
    span = last - first
    return {
        "workload": "GangScheduling", "scheduler": "py", "nodes": nodes, "groups": groups, "group_size": size,
        "unfit_groups": len(unfit_groups), "complete_groups": len(complete), "partial_groups": len(partial),
        "unfit_groups_bound_pods": sum(per_group.get(g, 0) for g in unfit_groups),
        "groups_per_second": round(len(complete) / span, 2) if span > 0 else None,
        "seconds_to_last_complete_group": round(span, 2),
        "pods_per_second": round(len(complete) * size / span, 1) if span > 0 else None,
        "errors": errors[:5],
        "note": "py-scheduler only: kube-scheduler v1.37 gangs only with GenericWorkload on (off by default)",
    }  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m e2e.perf.gang", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--groups", type=int, default=100)
    p.add_argument("--size", type=int, default=10, help="pods per group (= minMember)")
    p.add_argument("--unfit", type=int, default=10, help="groups that can never be placed")
    p.add_argument("--qps", type=float, default=5000)
    p.add_argument("--burst", type=int, default=5000)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--out", default=".bench/gang.json")
    args = p.parse_args(argv)
    r = run(args.nodes, args.groups, args.size, args.unfit, args.qps, args.burst, args.timeout)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(r, indent=2) + "\n")
    log(f"GangScheduling {args.nodes}n {args.groups}x{args.size} ({args.unfit} unfit): "
        f"{r['groups_per_second']} groups/s, last complete group after {r['seconds_to_last_complete_group']} s, "
        f"{r['complete_groups']} complete, {r['partial_groups']} partial -> {out}")
    return 0 if r["partial_groups"] == 0 and r["unfit_groups_bound_pods"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
