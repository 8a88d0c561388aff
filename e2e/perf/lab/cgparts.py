"""``python -m e2e.perf.lab.cgparts``: instructions a call of parts of a scheduling cycle, under callgrind.

A Scheduler as ``inproc`` builds it (``--nodes`` nodes, the workload's init pods scheduled), then each
expression of ``--parts`` (one a line; ``#`` starts a comment) is evaluated for ``--calls`` measured pods
between cgmark's client requests, so each part's counts land in a dump of their own
(``callgrind.out.<pid>.<n>``, in the order printed): ``total / calls`` is its cost a call, repeatable on a
loaded machine where profilers' times are not. Names the expressions may use: ``fwk`` (the profile's
Framework), ``sched``, ``snap`` (the snapshot), ``nodes`` (its node list), ``P`` (plugins by name), ``p`` (the
call's pod, its memo filled as a cycle fills it), ``s`` (a CycleState after that pod's PreFilter),
``CycleState`` and ``template_key``. A line ``0`` measures the loop's own cost, to subtract. Run it as
``PYTHONHASHSEED=0 valgrind --tool=callgrind --instr-atstart=no python -m e2e.perf.lab.cgparts --parts FILE``;
outside valgrind the requests do nothing.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import tempfile
from collections.abc import Callable
from typing import Any

from e2e.perf.lab import inproc
from e2e.perf.lab.shims import build_shim
from e2e.perf.workloads import INIT_NAMESPACE, MEASURE_NAMESPACE, WORKLOADS
from scheduler.app.logging import configure
from scheduler.framework.batch import template_key
from scheduler.framework.interface import CycleState
from scheduler.model.pod import pod_from_api

WARMUP = 20  # calls before the measured ones: the interpreter specialises a code path after a few runs


def setup(workload: str, nodes: int, calls: int) -> dict[str, Any]:
    """The names the parts are evaluated with (see the module's docstring)."""
    w = WORKLOADS[workload]
    n_init, _ = w.sizes(nodes, calls)
    sched = inproc.build(nodes, None, 1, workload, metrics=True)
    inproc.schedule(sched, [inproc._pod(w.init_template(), INIT_NAMESPACE, i) for i in range(n_init)], 30, True)
    fwk = next(iter(sched.frameworks.values()))
    snap = sched.snapshot
    sched.cache.update_snapshot(snap)
    all_nodes = snap.list()
    pods = [pod_from_api(inproc._pod(w.measure_template(), MEASURE_NAMESPACE, i)) for i in range(calls + WARMUP)]
    states = []
    for pod in pods:
        fwk.sign_pod(pod)
        state = CycleState()
        fwk.run_pre_filter_plugins(state, pod, all_nodes)
        states.append(state)
    return {"fwk": fwk, "sched": sched, "snap": snap, "nodes": all_nodes, "P": fwk.plugins_by_name, "pods": pods,
            "states": states, "CycleState": CycleState, "template_key": template_key}


def measure(names: dict[str, Any], parts: list[str], calls: int, marks: Any,
            report: Callable[[int, str], None] = lambda n, part: print(f"{n} {part}", flush=True)) -> None:
    """Evaluate each part ``WARMUP`` times, then ``calls`` times between the marks (a dump each)."""
    pods, states = names["pods"], names["states"]
    gc.collect()
    gc.freeze()  # no collection inside a measured loop: its cost would land on whichever part triggered it
    gc.disable()
    try:
        for n, part in enumerate(parts, 1):
            code = compile(part, "<part>", "eval")
            for i in range(WARMUP):
                eval(code, names, {"p": pods[calls + i], "s": states[calls + i]})
            marks.cgmark_start()
            for i in range(calls):
                eval(code, names, {"p": pods[i], "s": states[i]})
            marks.cgmark_stop()
            report(n, part)
    finally:
        gc.enable()
        gc.unfreeze()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="SchedulingBasic", choices=sorted(WORKLOADS))
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--parts", required=True, help="a file of expressions, one a line")
    args = ap.parse_args()
    configure("WARNING", json_lines=True)
    with open(args.parts, encoding="utf-8") as f:
        parts = [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]
    with tempfile.TemporaryDirectory() as tmp:
        marks = ctypes.CDLL(build_shim(tmp, "cgmark"))
    measure(setup(args.workload, args.nodes, args.calls), parts, args.calls, marks)


if __name__ == "__main__":
    main()
