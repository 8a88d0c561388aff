"""``python -m e2e.perf``: the scheduler benchmark (see ``e2e/perf/__init__.py``).

Examples::

    python -m e2e.perf --workload PreemptionBasic    # upstream's test case, its 2-core size, py and kube
    python -m e2e.perf --workload SchedulingBasic --size 5000Nodes_10000Pods   # one of upstream's sizes
    python -m e2e.perf --suite quick                 # every runnable upstream case at 2-core (make bench)
    python -m e2e.perf --suite full                  # every runnable upstream workload labelled performance
    python -m e2e.perf --list                        # upstream's cases: sizes, or why one is skipped

    python -m e2e.perf --workload SchedulingBasic --nodes 500 --pods 1000 --schedulers py,kube,ceiling \\
        --repeat 3 --out .bench/results.json
    python -m e2e.perf --skip-large                  # every workload at 500/1000 and 1000/3000
    python -m e2e.perf --suite bench                 # what `make bench` runs
    python -m e2e.perf --workload SchedulingBasic --nodes 1000 --pods 3000 --schedulers py,kube --rate 100 \
        --repeat 1 --out .bench/paced.json           # paced: latency at 100 pods/s, below both capacities
    python -m e2e.perf --workload SchedulingBasic --nodes 1000 --pods 3000 --schedulers py --repeat 1 \\
        --profile py-spy --out .bench/profile.json  # + py-spy raw profile and its top costs
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from e2e.perf import goals, procstat
from e2e.perf.runner import Options, ensure_binaries, log, run_size
from e2e.perf.schedulers import GO_CEILING_BINARY
from e2e.perf.stats import SCHEDULERS, document, markdown, suite_markdown
from e2e.perf.suite.config import TINY, TWO_CORE
from e2e.perf.suite.plan import suite_cases, suite_listing, suite_plan
from e2e.perf.suite.run import row_label, run_case
from e2e.perf.workloads import LARGE_NODES, SIZES, WORKLOADS, default_suite


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """``500x1000,1000x3000`` -> [(500, 1000), (1000, 3000)]."""
    out = []
    for part in text.split(","):
        n, sep, p = part.strip().lower().partition("x")
        if not sep:
            raise argparse.ArgumentTypeError(f"bad size {part!r}: want NODESxPODS")
        out.append((int(n), int(p)))
    return out


def _names(args: argparse.Namespace) -> list[str]:
    return [w for part in args.workload for w in part.split(",") if w]


def hand_made(args: argparse.Namespace) -> bool:
    """The hand-made workloads (workloads.py) run with ``--suite all/bench`` or with NODESxPODS sizes; an
    upstream test case's name alone runs upstream's ops (e2e/perf/suite)."""
    if args.suite in ("quick", "full") or args.size:
        return False
    if args.suite == "bench" or args.nodes or args.pods or args.sizes or args.rate:
        return True
    names = _names(args)
    return not names or any(n not in suite_cases() for n in names)


def plan(args: argparse.Namespace) -> list[tuple[str, int, int]]:
    """(workload, nodes, measured pods) to run, in order."""
    if args.suite == "bench":
        return default_suite(skip_large=args.skip_large)
    names = _names(args) or list(WORKLOADS)
    for n in names:
        if n not in WORKLOADS:
            raise SystemExit(f"unknown workload {n!r}; known: {', '.join(WORKLOADS)}")
    if args.nodes or args.pods:
        if not (args.nodes and args.pods):
            raise SystemExit("--nodes and --pods go together")
        sizes = [(args.nodes, args.pods)]
    else:
        sizes = args.sizes or list(SIZES)
    sizes = [s for s in sizes if not (args.skip_large and s[0] >= LARGE_NODES)]
    return [(w, n, p) for w in names for n, p in sizes]


def main(argv: Sequence[str] | None = None) -> int:
    usage = __doc__ or ""
    p = argparse.ArgumentParser(
        prog="python -m e2e.perf", description=usage.splitlines()[0], epilog=usage.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    p.add_argument("--workload", action="append", default=[], help=f"repeatable or comma list; {', '.join(WORKLOADS)}")
    p.add_argument("--nodes", type=int, default=0)
    p.add_argument("--pods", type=int, default=0, help="measured pods")
    p.add_argument("--init-pods", type=int, default=None, help="override the workload's init pods")
    p.add_argument("--sizes", type=parse_sizes, default=None, help="NODESxPODS list [500x1000,1000x3000,5000x10000]")
    p.add_argument("--skip-large", action="store_true", help=f"leave out sizes with >= {LARGE_NODES} nodes")
    p.add_argument("--suite", choices=["all", "bench", "quick", "full"], default="all",
                   help="quick: every upstream scheduler_perf case that runs here, at its 2-core size (make bench); "
                        "full: each at every upstream size labelled performance; all: the hand-made workloads x "
                        "sizes (default without an upstream name); bench: the hand-made suite of before")  # fmt: skip
    p.add_argument("--size", default=None,
                   help=f"size of an upstream case: {TWO_CORE} (default), {TINY} (its smallest workload) or one of "
                        "upstream's workload names (e.g. 500Nodes)")  # fmt: skip
    p.add_argument("--list", action="store_true", help="list upstream's test cases, their sizes or skip reasons")
    p.add_argument("--schedulers", default=None,
                   help="[py,kube,ceiling; py,kube for upstream's cases] comma list of py, kube, ceiling, "
                        "ceiling-events (the ceiling writing Scheduled events too), "
                        "ceiling-go, ceiling-go-events (the Go binder, e2e/cluster/gobin/cmd/ceiling-binder)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--repeat-large", type=int, default=None,
        help=f"repeats at >= {LARGE_NODES} nodes [--repeat; 1 with --suite bench]",
    )  # fmt: skip
    p.add_argument("--qps", type=float, default=5000, help="client QPS of every scheduler and of the creators")
    p.add_argument("--burst", type=int, default=5000)
    p.add_argument("--creators", type=int, default=32, help="pod creation requests in flight")
    p.add_argument("--feature-gates", default="", metavar="GATE=BOOL,...",
                   help="feature gates for py-scheduler and kube-scheduler, e.g. SchedulerAsyncPreemption=false; "
                        "rows are labelled with them")
    p.add_argument("--rate", type=float, default=None, metavar="N",
                   help="paced mode: create the measured pods at N per second (below the schedulers' capacity, "
                        "so latency shows scheduling delay rather than queue build-up); rows are labelled @N/s")
    p.add_argument("--timeout", type=float, default=900, help="seconds for the measured batch to be bound")
    p.add_argument("--scheduler-name", default="bench-scheduler")
    p.add_argument(
        "--wait-idle",
        type=float,
        default=0,
        metavar="S",
        help="before each run wait up to S s until fewer than --idle-cores CPUs are busy (shared machines)",
    )
    p.add_argument("--idle-cores", type=float, default=0.5)
    p.add_argument(
        "--profile", default=None,
        choices=["py-spy", "py-spy-gil", "py-spy-threads", "apiserver", "perf", "perf-trace"],
        help="py-spy record py-scheduler during the measured batch (raw stacks + top costs); py-spy: all threads "
        "not idle, py-spy-gil: only the thread holding the GIL, py-spy-threads: all threads not idle, summed "
        "per thread name (the scheduling thread's own profile); apiserver: Go CPU profiles of kube-apiserver "
        "during every scheduler's batch (go tool pprof -top); perf: perf record of py-scheduler's threads (CPU by "
        "thread group and shared object: TLS, kernel, libpython), perf-trace: its system calls a pod per thread group",
    )  # fmt: skip
    p.add_argument("--no-build", action="store_true", help="use the binaries as they are (build.sh not run)")
    p.add_argument("--out", default=".bench/results.json")
    args = p.parse_args(argv)

    if args.list:
        print(suite_listing())
        return 0
    if args.schedulers is None:
        args.schedulers = "py,kube,ceiling" if hand_made(args) else "py,kube"
    scheds = [s for s in args.schedulers.split(",") if s]
    bad = [s for s in scheds if s not in SCHEDULERS]
    if bad:
        raise SystemExit(f"unknown scheduler(s) {bad}; want {', '.join(SCHEDULERS)}")
    todo = plan(args) if hand_made(args) else []
    suite_todo = [] if todo else suite_plan(args)
    if args.suite == "bench" and args.repeat_large is None:
        args.repeat_large = 1  # keeps `make bench` within an hour on 2 cores
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    bin_dir = ensure_binaries(build=not args.no_build)
    go_binder = bin_dir / GO_CEILING_BINARY
    if any(s.startswith("ceiling-go") for s in scheds) and not go_binder.is_file():
        raise SystemExit(f"{go_binder} is missing (build.sh builds it where Go is installed; a packed bench "
                         f"carries it with EXTRA_BINS={GO_CEILING_BINARY})")  # fmt: skip
    from e2e.cluster.cluster import pinned_versions
    from e2e.perf.schedulers import REPO

    machine = {**procstat.machine_info(), **procstat.git_info(REPO), "versions": pinned_versions()}
    notes = {
        "method": "fresh lean control plane (etcd + kube-apiserver) per workload/size; runs interleaved; "
        "throughput = bound / (first creation -> last binding seen by a watch); latency = binding seen - creation",
        "SchedulingSelectorSpread": WORKLOADS["SchedulingSelectorSpread"].note,
        "qps_burst": f"{args.qps:g}/{args.burst} for py, kube, ceiling and the creators",
        "other CPU s": "CPU seconds used during the measured batch by processes other than the scheduler, "
        "kube-apiserver, etcd and the harness (other users of a shared machine): large values mean a noisy run",
    }
    runs: list[dict[str, Any]] = []
    failures: list[str] = []

    def write() -> dict[str, Any]:
        extra = {"wall_seconds": round(time.monotonic() - t0, 1), **({"failed": failures} if failures else {})}
        doc = document(machine, runs, {**notes, **extra})
        doc["goals"] = [g.as_dict() for g in goals.evaluate(runs)]
        out.write_text(json.dumps(doc, indent=2) + "\n")
        return doc

    def on_run(r: dict[str, Any]) -> None:
        runs.append(r)
        write()
        f = {k: ("-" if r.get(k) is None else r.get(k)) for k in r}
        viol = "" if r.get("constraint_violations") is None else f" violations {r['constraint_violations']}"
        log(
            f"{r['workload']} {r['nodes']}n/{r['pods']}p {r['scheduler']:<7} #{r['repeat']}: "
            f"{f['pods_per_second']} pods/s, p50/p90/p99 {f['latency_p50_ms']}/{f['latency_p90_ms']}/"
            f"{f['latency_p99_ms']} ms, CPU {f['cpu_seconds_per_1000']} s/1000, RSS {f['peak_rss_mb']} MB, "
            f"bound {r.get('bound', 0)}/{r['pods']}{'' if r['all_bound'] else ' (NOT ALL)'}{viol}, "
            f"created {f.get('creation_pods_per_second', '-')}/s, "
            f"apiserver CPU {f.get('kube-apiserver_cpu_seconds_per_1000', '-')} s/1000, "
            f"others on the machine {f.get('foreign_cpu_seconds', '-')} CPU s, run {r.get('wall_seconds')} s"
            + (", context switches/pod {}+{}".format(*r["context_switches_per_pod"])
               if r.get("context_switches_per_pod") else "")
            + (f", PodGroups bound {r.get('groups_bound')}/{r['groups']}, {f.get('groups_per_second')} groups/s"
               if r.get("groups") else "")
            + (f", errors {r['errors'][:2]}" if r.get("errors") else "")
        )
        procs = r.get("process_cpu_seconds_per_1000") or {}
        if procs:
            log("  its processes, CPU s/1000 (busiest first: the one that caps throughput): "
                + ", ".join(f"{p} {v}" for p, v in procs.items()))  # fmt: skip
        threads = r.get("thread_cpu_seconds_per_1000") or {}
        if threads:
            log("  its threads, CPU s/1000: " + ", ".join(f"{g} {v}" for g, v in threads.items()))
        switches = r.get("thread_context_switches_per_pod") or {}
        if switches:
            log("  its threads, context switches/pod (vol+invol): "
                + ", ".join(f"{g} {v}+{i}" for g, (v, i) in switches.items()))  # fmt: skip

    log(f"plan: {len(todo) + len(suite_todo)} sizes x {scheds}; results -> {out}")
    interrupted = False
    try:
        for case, size in suite_todo:
            opts = Options(schedulers=scheds, repeat=args.repeat, qps=args.qps, burst=args.burst,
                           scheduler_name=args.scheduler_name, creators=args.creators, out_dir=out.parent)  # fmt: skip
            log(f"{case.name} at {size.name} (upstream {size.upstream.name}): {size.nodes} nodes, {size.pods} pods")
            run_case(case, size, opts, bin_dir, on_run)
            failures += [f"{r['workload']} {r['scheduler']} #{r['repeat']}: {r['error']}" for r in runs
                         if r.get("error") and r["workload"] == row_label(case, size)]  # fmt: skip
        for wl, nodes, pods in todo:
            rep = args.repeat_large if (args.repeat_large is not None and nodes >= LARGE_NODES) else args.repeat
            opts = Options(
                schedulers=scheds, repeat=rep, qps=args.qps, burst=args.burst, timeout=args.timeout,
                init_timeout=args.timeout, scheduler_name=args.scheduler_name, creators=args.creators,
                init_pods=args.init_pods, out_dir=out.parent, profile=args.profile,
                wait_idle=args.wait_idle, idle_cores=args.idle_cores, rate=args.rate,
                feature_gates=args.feature_gates,
            )  # fmt: skip
            try:
                run_size(WORKLOADS[wl], nodes, pods, opts, bin_dir, on_run)
            except Exception as e:  # one broken size must not lose the others
                log(f"{wl} {nodes}n/{pods}p failed: {type(e).__name__}: {e}")
                failures.append(f"{wl} {nodes}n/{pods}p: {type(e).__name__}: {e}")
    except KeyboardInterrupt:
        interrupted = True
        log("interrupted: writing what was measured")
    doc = write()
    md = (suite_markdown(doc) if suite_todo else "") + markdown(doc)
    out.with_suffix(".md").write_text(md)
    from e2e.perf.plot import plot

    png = plot(doc, out.with_suffix(".png"))
    if args.profile:
        from e2e.perf.profile import summarize_runs

        prof = summarize_runs(runs)
        if prof:
            out.with_name(out.stem + "-profile.txt").write_text(prof)
            print(prof)
    print(md)
    log(f"wrote {out}, {out.with_suffix('.md')}{', ' + str(png) if png else ''}; "
        f"wall time {time.monotonic() - t0:.0f} s")  # fmt: skip
    if failures:
        log("failed sizes: " + "; ".join(failures))
    return 130 if interrupted else (1 if failures else 0)


if __name__ == "__main__":
    sys.exit(main())
