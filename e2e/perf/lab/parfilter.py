"""``python -m e2e.perf.lab.parfilter``: would parallel Filter and Score pay? (issue 28, step 4)

kube-scheduler runs Filter and Score over the node list with 16 goroutines (``parallelism``; upstream's
``framework/parallelize``: chunks of ``min(sqrt(n), n/parallelism + 1)`` nodes pulled by the workers).
py-scheduler walks the nodes on the scheduling thread. This measures, in process (no API server, the
scheduler of ``e2e.perf.lab.inproc``), what that walk costs per pod for pods that opportunistic batching
cannot serve (batching off for the measured pods: their Filter and Score run on every node they visit),
and what the same walk costs when split as upstream splits it over a thread pool of 2, 4 or 16 workers.

The parallel walk is a prototype here, not the scheduler's code: chunks are taken in walk order, a chunk
is only started while the finished prefix of chunks holds fewer than numFeasibleNodesToFind feasible
nodes, and the verdicts are then replayed in walk order, so the feasible list, the diagnosis and the
next start index are the sequential walk's (the placements of every variant are checked against the
sequential run's). Score runs each chunk's raw scores on a worker; normalization and selection stay.

It reports, per variant, process CPU and wall milliseconds a pod, and the wall milliseconds of each
phase (PreFilter, Filter, PreScore, Score). ``--gil`` runs the sequential walk with ``gilshim.c``
preloaded (built here with ``cc``), which adds up the scheduling thread's CPU time between each release
of the GIL by an extension module (numpy) and its reacquisition, and prints that share of each phase's
thread CPU: the part that other threads could run beside it. A control of large and 500-element numpy
operations shows that it sees numpy's releases. The machine is shared: variants run interleaved,
``--repeat`` rounds, medians.
"""

from __future__ import annotations

import argparse
import ctypes
import itertools
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from e2e.perf.lab.inproc import _pod, build, schedule
from e2e.perf.lab.shims import build_shim
from e2e.perf.workloads import INIT_NAMESPACE, MEASURE_NAMESPACE, WORKLOADS
from scheduler.app.logging import configure
from scheduler.framework.fit_error import Diagnosis
from scheduler.framework.interface import CycleState, ScorePlugin
from scheduler.framework.runtime.framework import Framework
from scheduler.framework.status import Code, Status, success
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod
from scheduler.schedule_one import NominatedPods, SchedulingAlgorithm
from scheduler.scheduler import Scheduler

SHIM_ENV = "PARFILTER_GIL_SHIM"
WORKLOAD_NAMES = ("SchedulingPodAntiAffinity", "SchedulingPreferredPodAffinity", "TopologySpreading",
                  "SchedulingNodeAffinity")  # fmt: skip
PHASES = ("PreFilter", "Filter", "PreScore", "Score")
def chunk_size_for(n: int, parallelism: int) -> int:
    """Upstream's chunkSizeFor: max(1, min(sqrt(n), n/parallelism + 1))."""
    s = int(math.sqrt(n))
    r = n // parallelism + 1
    return max(1, min(s, r))


def _shim() -> Callable[[], int] | None:
    """The preloaded gilshim's counter of the calling thread's GIL-free CPU nanoseconds, if it is loaded."""
    path = os.environ.get(SHIM_ENV)
    if not path:
        return None
    fn = ctypes.CDLL(path).gilshim_free_ns
    fn.restype = ctypes.c_longlong
    return cast(Callable[[], int], fn)


@dataclass
class PhaseClock:
    """Per phase, summed over the measured pods: wall seconds, the scheduling thread's CPU seconds and,
    with the shim, its CPU seconds with the GIL released."""

    wall: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    cpu: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    gil_free: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    free_ns: Callable[[], int] | None = field(default_factory=_shim)
    enabled: bool = False

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        free_ns = self.free_ns or (lambda: 0)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if not self.enabled:
                return fn(*args, **kwargs)
            wall, cpu, free = time.perf_counter(), time.thread_time(), free_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                self.wall[phase] += time.perf_counter() - wall
                self.cpu[phase] += time.thread_time() - cpu
                self.gil_free[phase] += (free_ns() - free) / 1e9

        return timed


class ParallelWalk:
    """Filter and raw Score over chunks of the node list on a thread pool, replayed in walk order."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="filter")

    def close(self) -> None:
        self.pool.shutdown()

    def filter_chunks(self, run: Callable[[NodeInfo], Status | None], nodes: Sequence[NodeInfo], start: int,
                      k: int) -> Iterator[tuple[NodeInfo, Status | None]]:
        """(node, verdict) in walk order, for a prefix of the walk that holds the first ``k`` feasible nodes
        (or the whole walk): the caller stops where the sequential walk would."""
        n = len(nodes)
        size = chunk_size_for(n, self.workers)
        chunks = -(-n // size)
        results: list[list[Status | None] | None] = [None] * chunks
        lock = threading.Lock()
        taken = itertools.count()
        state = {"done": 0, "feasible": 0, "stop": False}

        def work() -> None:
            while True:
                with lock:
                    if state["stop"]:
                        return
                c = next(taken)
                if c >= chunks:
                    return
                lo = c * size
                verdicts = [run(nodes[(start + i) % n]) for i in range(lo, min(lo + size, n))]
                with lock:
                    results[c] = verdicts
                    while state["done"] < chunks and (done := results[state["done"]]) is not None:
                        state["feasible"] += sum(1 for v in done if success(v))
                        if any(v is not None and v.code == Code.ERROR for v in done):
                            state["stop"] = True
                        state["done"] += 1
                    if state["feasible"] >= k:
                        state["stop"] = True

        for f in [self.pool.submit(work) for _ in range(min(self.workers, chunks))]:
            f.result()
        for c in range(state["done"]):
            verdicts = results[c]
            assert verdicts is not None
            for j, v in enumerate(verdicts):
                yield nodes[(start + c * size + j) % n], v

    def score_nodes(self, fwk: Framework) -> Callable[..., tuple[dict[str, list[int]], Status | None]]:
        """fwk.score_nodes with the nodes split into upstream's chunks, each chunk's raw scores on a worker."""
        serial = fwk.score_nodes

        def parallel(state: CycleState, pod: Pod, nodes: Sequence[NodeInfo],
                     plugins: list[ScorePlugin]) -> tuple[dict[str, list[int]], Status | None]:
            size = chunk_size_for(len(nodes), self.workers)
            parts = list(self.pool.map(lambda lo: serial(state, pod, nodes[lo:lo + size], plugins),
                                       range(0, len(nodes), size)))
            raw: dict[str, list[int]] = {pl.name: [] for pl in plugins}
            for part, status in parts:
                if status is not None:
                    return part, status
                for name, values in part.items():
                    raw[name].extend(values)
            return raw, None

        return parallel


class _Replayed:
    """A framework whose filter runner answers from verdicts computed beforehand, so that the sequential walk
    (SchedulingAlgorithm._filter_nodes itself) replays them: feasible list, diagnosis, metrics, error stop."""

    def __init__(self, fwk: Framework, answer: Callable[[NodeInfo], Status | None]) -> None:
        self._fwk = fwk
        self._answer = answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fwk, name)

    def filter_runner(self, state: CycleState, pod: Pod, *, observe: bool = False) -> Callable[..., Status | None]:
        return self._answer


def parallel_filter_nodes(algo: SchedulingAlgorithm, walk: ParallelWalk) -> Callable[..., Any]:
    """SchedulingAlgorithm._filter_nodes with the verdicts computed over ``walk`` first, when no node holds
    nominated pods (else sequential)."""
    serial = algo._filter_nodes

    def filter_nodes(fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis, nodes: Sequence[NodeInfo],
                     nominator: NominatedPods | None = None) -> tuple[list[NodeInfo], Status | None]:
        if (nominator is not None and nominator.nodes_with_nominated_pods()) or not fwk.has_filter_plugins():
            return serial(fwk, state, pod, diagnosis, nodes, nominator)
        run = fwk.filter_runner(state, pod, observe=True)
        k = algo._num_to_find(fwk, len(nodes))
        verdicts = {id(ni): v for ni, v in walk.filter_chunks(run, nodes, algo.next_start_node_index, k)}

        def answer(ni: NodeInfo) -> Status | None:
            return verdicts[id(ni)] if id(ni) in verdicts else run(ni)  # past the prefix: never, but exact

        return serial(cast(Framework, _Replayed(fwk, answer)), state, pod, diagnosis, nodes, nominator)

    return filter_nodes


def instrument(sched: Scheduler, clock: PhaseClock) -> None:
    """Time the four phases on every profile."""
    algo = sched.algorithm
    algo._filter_nodes = clock.wrap("Filter", algo._filter_nodes)  # type: ignore[method-assign]
    algo._batched_filter = clock.wrap("Filter", algo._batched_filter)  # type: ignore[method-assign]
    for fwk in sched.frameworks.values():
        fwk.run_pre_filter_plugins = clock.wrap("PreFilter", fwk.run_pre_filter_plugins)  # type: ignore[method-assign]
        fwk.run_pre_score_plugins = clock.wrap("PreScore", fwk.run_pre_score_plugins)  # type: ignore[method-assign]
        fwk.score_totals = clock.wrap("Score", fwk.score_totals)  # type: ignore[method-assign]


@dataclass
class Variant:
    """One way of walking the nodes, and what it cost per pod."""

    workers: int  # 0: the sequential walk
    filter_nodes: Callable[..., Any]
    score_nodes: dict[str, Callable[..., Any]]  # per profile
    clock: PhaseClock
    cpu: list[float] = field(default_factory=list)  # process CPU seconds per pod (every thread)
    wall: list[float] = field(default_factory=list)


def compare(workload: str, nodes: int, pods: int, workers: Sequence[int], batching: bool, seed: int
            ) -> tuple[list[Variant], int]:
    """Every measured pod's scheduling algorithm run once per variant, in rotated order, from the same
    start index on the same snapshot; the sequential variant's result is the one used. Returns the
    variants and the number of pods whose result (node, nodes evaluated, feasible nodes, next start
    index, or the error's message) differed from the sequential walk's."""
    w = WORKLOADS[workload]
    n_init, n_pods = w.sizes(nodes, pods)
    sched = build(nodes, None, seed, workload)
    schedule(sched, [_pod(w.init_template(), INIT_NAMESPACE, i) for i in range(n_init)])
    algo = sched.algorithm
    algo.batching = batching
    serial_filter = algo._filter_nodes
    serial_score = {name: fwk.score_nodes for name, fwk in sched.frameworks.items()}
    variants: list[Variant] = []
    walks: list[ParallelWalk] = []
    for n in sorted(set(workers) | {0}):
        clock = PhaseClock(enabled=True)
        if n == 0:
            filter_nodes, score_nodes = serial_filter, dict(serial_score)
        else:
            walks.append(walk := ParallelWalk(n))
            filter_nodes = parallel_filter_nodes(algo, walk)
            score_nodes = {name: walk.score_nodes(fwk) for name, fwk in sched.frameworks.items()}
        variants.append(Variant(n, clock.wrap("Filter", filter_nodes),
                                {k: clock.wrap("Score", v) for k, v in score_nodes.items()}, clock))
    schedule_pod = algo.schedule_pod
    rounds = itertools.count()
    differed = 0

    def each_variant(fwk: Framework, state: CycleState, pod: Pod, snapshot: Any,
                     nominator: NominatedPods | None = None) -> Any:
        nonlocal differed
        start, r = algo.next_start_node_index, next(rounds)
        outcomes: dict[int, tuple[tuple[object, int], Any]] = {}
        for v in variants[r % len(variants):] + variants[:r % len(variants)]:
            algo._filter_nodes = v.filter_nodes  # type: ignore[method-assign]
            fwk.score_nodes = v.score_nodes[fwk.profile_name]  # type: ignore[method-assign]
            algo.next_start_node_index = start
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                res: Any = schedule_pod(fwk, state, pod, snapshot, nominator)
                key: object = (res.suggested_host, res.evaluated_nodes, res.feasible_nodes)
            except Exception as exc:  # compared, then raised as the sequential walk's
                res, key = exc, (type(exc).__name__, str(exc))
            v.cpu.append(time.process_time() - cpu)
            v.wall.append(time.perf_counter() - wall)
            outcomes[v.workers] = ((key, algo.next_start_node_index), res)
        reference, res = outcomes[0]
        differed += any(o != reference for o, _ in outcomes.values())
        algo.next_start_node_index = reference[1]
        if isinstance(res, Exception):
            raise res
        return res

    algo.schedule_pod = each_variant  # type: ignore[method-assign]
    placed = schedule(sched, [_pod(w.measure_template(), MEASURE_NAMESPACE, i) for i in range(n_pods)])
    for walk in walks:
        walk.close()
    if len(placed) != n_pods:
        raise SystemExit(f"only {len(placed)}/{n_pods} pods were placed")
    return variants, differed


@dataclass
class Result:
    cpu_ms: float  # process CPU (every thread) per measured pod
    wall_ms: float
    phases_ms: dict[str, float]  # wall
    placed: list[str]
    clock: PhaseClock
    thread_cpu: float  # the scheduling thread's CPU seconds over the measured pods
    gil_free: float  # of which with the GIL released (with the shim)


def run(workload: str, nodes: int, pods: int, batching: bool, seed: int) -> Result:
    """The sequential walk: init pods placed with batching (as the bench), then ``pods`` measured pods with
    ``batching`` as given, each phase timed."""
    w = WORKLOADS[workload]
    n_init, n_pods = w.sizes(nodes, pods)
    sched = build(nodes, None, seed, workload)
    schedule(sched, [_pod(w.init_template(), INIT_NAMESPACE, i) for i in range(n_init)])
    sched.algorithm.batching = batching
    clock = PhaseClock()
    instrument(sched, clock)
    measured = [_pod(w.measure_template(), MEASURE_NAMESPACE, i) for i in range(n_pods)]
    free_ns = clock.free_ns or (lambda: 0)
    clock.enabled = True
    cpu0, wall0, thread0, free0 = time.process_time(), time.perf_counter(), time.thread_time(), free_ns()
    placed = schedule(sched, measured)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    thread_cpu, gil_free = time.thread_time() - thread0, (free_ns() - free0) / 1e9
    if len(placed) != n_pods:
        raise SystemExit(f"only {len(placed)}/{n_pods} pods were placed")
    per_pod = 1000 / n_pods
    return Result(cpu * per_pod, wall * per_pod, {p: clock.wall[p] * per_pod for p in PHASES}, placed, clock,
                  thread_cpu, gil_free)


CONTROLS: dict[str, Callable[[npt.NDArray[np.int64]], object]] = {
    "ufunc a * 7 % m": lambda a: a * 7 % 1_000_003,
    "np.sort": np.sort,
}


def numpy_control(op: str, size: int, seconds: float = 0.5) -> float:
    """The GIL-free share of the thread's CPU for CONTROLS[op] on ``size`` elements, run for ``seconds``: the
    shim's control (numpy's ufunc loops release the GIL only over more than 500 elements; sorting always)."""
    free_ns = _shim() or (lambda: 0)
    a = np.arange(size, dtype=np.int64)[::-1].copy()
    fn = CONTROLS[op]
    cpu0, free0 = time.thread_time(), free_ns()
    while time.thread_time() - cpu0 < seconds:
        fn(a)
    return (free_ns() - free0) / 1e9 / (time.thread_time() - cpu0)


def gil_report(workload: str, nodes: int, pods: int, batching: bool, seed: int) -> str:
    """The GIL-free share of the scheduling thread's CPU per phase (sequential walk, shim loaded)."""
    res = run(workload, nodes, pods, batching, seed)
    c = res.clock
    parts = [f"{p} {c.cpu[p] * 1000 / pods:.2f} ms ({c.gil_free[p] / c.cpu[p]:.1%})" for p in PHASES if c.cpu[p]]
    rest = res.thread_cpu - sum(c.cpu.values())
    rest_free = res.gil_free - sum(c.gil_free.values())
    parts.append(f"rest of the cycle {rest * 1000 / pods:.2f} ms ({rest_free / rest:.1%})")
    return (f"{workload} {nodes} nodes, batching {'on' if batching else 'off'}: thread CPU a pod (GIL-free share) "
            + ", ".join(parts) + f"; all {res.thread_cpu * 1000 / pods:.2f} ms ({res.gil_free / res.thread_cpu:.1%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default=",".join(WORKLOAD_NAMES), help="comma-separated")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=300)
    ap.add_argument("--workers", default="0,2,4,16", help="comma-separated pool sizes; 0: sequential")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-batching", action="store_true", help="measured pods without opportunistic batching")
    ap.add_argument("--gil", action="store_true", help="the GIL-free share of each phase (sequential, shim loaded)")
    args = ap.parse_args()
    if args.gil and not os.environ.get(SHIM_ENV):
        with tempfile.TemporaryDirectory() as tmp:
            shim = build_shim(tmp)
            env = {**os.environ, SHIM_ENV: shim, "LD_PRELOAD": shim}
            child = subprocess.run([sys.executable, "-m", "e2e.perf.lab.parfilter", *sys.argv[1:]], env=env)
            raise SystemExit(child.returncode)
    configure("WARNING", json_lines=True)
    batching = not args.no_batching
    if args.gil:
        for op in CONTROLS:
            shares = ", ".join(f"{size}: {numpy_control(op, size):.1%}" for size in (2_000_000, 5000, 501, 500))
            print(f"control, {op}, the GIL-free share of the thread's CPU by array size: {shares}", flush=True)
    for workload in args.workload.split(","):
        if args.gil:
            print(gil_report(workload, args.nodes, args.pods, batching, args.seed), flush=True)
            continue
        variants, differed = compare(workload, args.nodes, args.pods, [int(v) for v in args.workers.split(",")],
                                     batching, args.seed)
        serial = variants[0]
        print(f"{workload} {args.nodes} nodes, batching {'on' if batching else 'off'}, {len(serial.cpu)} cycles a "
              f"variant, {differed} differing from the sequential walk's:", flush=True)
        for v in variants:
            n = len(v.cpu)
            ratio = statistics.median(s / p for s, p in zip(serial.wall, v.wall, strict=True))
            filter_ms, score_ms = (v.clock.wall[p] * 1000 / n for p in ("Filter", "Score"))
            print(f"  workers {v.workers:2d}: wall ms/pod median {statistics.median(v.wall) * 1000:.2f} (mean "
                  f"{sum(v.wall) * 1000 / n:.2f}), process CPU ms/pod {sum(v.cpu) * 1000 / n:.2f}; Filter wall "
                  f"{filter_ms:.2f}, raw scores wall {score_ms:.2f}; speed-up against sequential, median per pod "
                  f"{ratio:.2f}x", flush=True)

if __name__ == "__main__":
    main()
