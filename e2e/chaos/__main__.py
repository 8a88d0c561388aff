"""`python -m e2e.chaos` (`make chaos`): every fault scenario on a fresh local control plane, one after
the other, each with its own nodes, namespace and scheduler processes; prints one line of figures per
scenario and writes them as JSON. Exit status 1 if any scenario lost a pod, overcommitted a node, bound
to a missing node, left a false PodScheduled=False, kept logging errors or did not converge.

Scenarios (a fault injected when a third of the pods are bound):
  baseline          no fault
  apiserver-kill9   kill -9 kube-apiserver, restart it at once
  apiserver-down    kill -9 kube-apiserver, restart it 30 s later
  etcd-kill9        kill -9 etcd, restart it at once
  scheduler-kill9   kill -9 py-scheduler, start it again
  writer-kill9      py-scheduler with --api-writer-processes 1; kill -9 its writer child (it is restarted and
                    sent the bindings it had in flight)
  leader-kill9      two replicas with leader election; kill -9 the leader
  leader-sigstop    two replicas; SIGSTOP the leader for 20 s, then SIGCONT
  competing-binder  a second binder binds every other pending pod for 15 s
  nodes-deleted     the two busiest nodes deleted through the API
  nodes-410         kube-apiserver killed, the two busiest nodes deleted in etcd, kube-apiserver restarted:
                    the schedulers' node watch resumes from a resourceVersion the new watch cache does not
                    hold (410 Gone) and must learn the deletions from the relist

Gang scenarios (e2e/chaos/gangs.py), on a second control plane with the Workload API gates on: gangs of
PodGroups (gang policy, minCount the size or less) whose members all fit; three strikes, each when a gang is
seen half bound. Exit status 1 also if a gang is left below minCount or with a member unbound once settled.
  gang-baseline         no fault
  gang-scheduler-kill9  kill -9 py-scheduler, start it again
  gang-apiserver-kill9  kill -9 kube-apiserver, restart it at once
  gang-both-kill9       kill -9 both, restart kube-apiserver then py-scheduler
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from e2e.chaos.gangs import GANG_SCENARIOS, gang_line, run_gang_scenario
from e2e.chaos.harness import Figures, Run, as_json, summary
from e2e.cluster.cluster import WORKLOAD_GATES, LocalCluster

Heal = Callable[[], None]


def _apiserver_kill(down_s: float) -> Callable[[Run], Heal]:
    def inject(run: Run) -> Heal:
        run.cluster.kill("kube-apiserver")

        def heal() -> None:
            time.sleep(down_s)
            run.cluster.restart("kube-apiserver")
        return heal
    return inject


def _etcd_kill(run: Run) -> Heal:
    run.cluster.kill("etcd")
    return lambda: run.cluster.restart("etcd")


def _scheduler_kill(run: Run) -> Heal:
    (s,) = run.schedulers
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait(10)
    return s.start


def _writer_kill(run: Run) -> Heal:
    (s,) = run.schedulers
    children = s.children()
    if not children:
        raise RuntimeError("py-scheduler has no writer process to kill")
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    return lambda: None  # the scheduler restarts its writer itself


def _leader_kill(run: Run) -> Heal:
    leader = run.leader()
    leader.proc.send_signal(signal.SIGKILL)
    leader.proc.wait(10)
    return leader.start


def _leader_stop(run: Run) -> Heal:
    leader = run.leader()
    leader.proc.send_signal(signal.SIGSTOP)

    def heal() -> None:
        time.sleep(20)
        leader.proc.send_signal(signal.SIGCONT)
    return heal


def _competitor(run: Run) -> Heal:
    return lambda: run.compete(15)


def _delete_nodes(run: Run) -> Heal:
    run.delete_nodes(2)
    return lambda: None


def _nodes_410(run: Run) -> Heal:
    run.cluster.kill("kube-apiserver")
    run.delete_nodes(2, behind_the_api=True)
    return lambda: run.cluster.restart("kube-apiserver")


SCENARIOS: dict[str, tuple[Callable[[Run], Heal] | None, int]] = {  # name -> (fault, replicas)
    "baseline": (None, 1),
    "apiserver-kill9": (_apiserver_kill(0), 1),
    "apiserver-down": (_apiserver_kill(30), 1),
    "etcd-kill9": (_etcd_kill, 1),
    "scheduler-kill9": (_scheduler_kill, 1),
    "writer-kill9": (_writer_kill, 1),
    "leader-kill9": (_leader_kill, 2),
    "leader-sigstop": (_leader_stop, 2),
    "competing-binder": (_competitor, 1),
    "nodes-deleted": (_delete_nodes, 1),
    "nodes-410": (_nodes_410, 1),
}
SCHEDULER_ARGS: dict[str, list[str]] = {"writer-kill9": ["--api-writer-processes", "1"]}


def run_scenario(cluster: LocalCluster, workdir: Path, name: str, nodes: int, pods: int) -> Figures:
    fault, replicas = SCENARIOS[name]
    run = Run(cluster, workdir, name, nodes=nodes, pods=pods, replicas=replicas,
              scheduler_args=SCHEDULER_ARGS.get(name, ()))
    try:
        with run.running():
            run.wait_bound(pods // 3)
            injected_at = time.monotonic()
            heal = fault(run) if fault else None
            if heal is not None:
                heal()
            run.converge(injected_at, time.monotonic())
        return run.check()
    finally:
        run.cleanup()


def line(f: Figures) -> str:
    return (f"{f.scenario:<17} {summary(f)} fault-to-all-bound={f.fault_to_all_bound_s} s "
            f"(removed with deleted nodes: {f.removed_with_deleted_nodes})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m e2e.chaos", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", action="append", choices=sorted([*SCENARIOS, *GANG_SCENARIOS]),
                    help="repeatable; default all")
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--pods", type=int, default=300)
    ap.add_argument("--gang-pods", type=int, default=200, help="gang members per gang scenario")
    ap.add_argument("--seed", type=int, action="append", help="gang scenarios' seeds, repeatable; default 1")
    ap.add_argument("--out", default=".chaos/results.json")
    ap.add_argument("--keep-logs", default=None, help="copy the scheduler and control-plane logs here")
    args = ap.parse_args(argv)
    chosen = args.scenario or [*SCENARIOS, *GANG_SCENARIOS]
    plain = [n for n in chosen if n in SCENARIOS]
    gangs = [n for n in chosen if n in GANG_SCENARIOS]
    results: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="py-scheduler-chaos-") as tmp:
        try:
            if plain:
                with _cluster(Path(tmp) / "cluster", {}) as cluster:
                    for name in plain:
                        f = run_scenario(cluster, Path(tmp), name, args.nodes, args.pods)
                        results.append(f)
                        print(line(f), flush=True)
            if gangs:
                with _cluster(Path(tmp) / "workload-cluster", WORKLOAD_GATES) as cluster:
                    for seed in args.seed or [1]:
                        for name in gangs:
                            g = run_gang_scenario(cluster, Path(tmp), name, args.gang_pods, seed)
                            results.append(g)
                            print(gang_line(g), *(f"    {n}" for n in g.notes), sep="\n", flush=True)
        finally:
            if args.keep_logs:
                import shutil

                shutil.copytree(tmp, args.keep_logs, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("etcd", "pki", "*.sock"))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(as_json(results) + "\n")
    return 0 if all(f.clean for f in results) else 1


@contextlib.contextmanager
def _cluster(directory: Path, gates: dict[str, bool]) -> Iterator[LocalCluster]:
    """A control plane for the body of the with (the Workload API's when `gates` say so)."""
    cluster = LocalCluster(directory, feature_gates=gates or None)
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


if __name__ == "__main__":
    sys.exit(main())
