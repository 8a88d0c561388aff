"""What ``python -m e2e.perf`` runs of upstream's suite: the (test case, size) pairs and the listing."""

from __future__ import annotations

import argparse
import functools

from e2e.perf.suite import config
from e2e.perf.suite.run import py_gate_check


@functools.cache
def suite_cases() -> dict[str, config.TestCase]:
    """Upstream's test cases from the module cache; none (hand-made workloads only) when it is missing."""
    try:
        return config.load_cases()
    except config.ConfigError:
        return {}


def skip_reasons(gate_check: config.GateCheck | None = py_gate_check) -> dict[str, str]:
    """Case -> why it does not run here (every workload of it skipped), for the listing and the docs."""
    out = {}
    for name, case in suite_cases().items():
        if not config.sizes(case, gate_check):
            reasons = {config.workload_skip_reason(case, w, gate_check) for w in case.workloads}
            out[name] = "; ".join(sorted(r for r in reasons if r))
    return out


def suite_plan(args: argparse.Namespace) -> list[tuple[config.TestCase, config.Size]]:
    """``--suite quick``: every runnable case at 2-core; ``--suite full``: at each performance size;
    ``--workload NAME [--size S]``: those cases at S (2-core by default). py-scheduler's gates are judged
    only when it is among the schedulers: kube-scheduler alone runs every gate."""
    schedulers = str(getattr(args, "schedulers", None) or "py").split(",")
    check = py_gate_check if any(s.startswith("py") for s in schedulers) else None
    cases = suite_cases()
    if not cases:
        raise SystemExit(f"upstream's scheduler_perf is not in {config.suite_dir()}: run `make binaries` first")
    names = [w for part in args.workload for w in part.split(",") if w] or list(cases)
    unknown = [n for n in names if n not in cases]
    if unknown:
        raise SystemExit(f"unknown test case(s) {unknown}; `python -m e2e.perf --list` shows them")
    out: list[tuple[config.TestCase, config.Size]] = []
    for n in names:
        case = cases[n]
        sizes = config.sizes(case, check)
        if not sizes:
            if args.workload:
                raise SystemExit(f"{n} does not run here: {skip_reasons(check)[n]}")
            continue
        if args.suite == "full" and not args.size:
            out += [(case, s) for s in config.performance_sizes(case, check)]
            continue
        want = args.size or config.TWO_CORE
        if want not in sizes:
            reason = ""
            if any(w.name == want for w in case.workloads):
                reason = f": {config.workload_skip_reason(case, case.workload(want), check)}"
            raise SystemExit(f"{n} has no size {want!r} that runs here{reason}; it has {', '.join(sizes)}")
        out.append((case, sizes[want]))
    return out


def suite_listing() -> str:
    """One line per case: its 2-core size and upstream's performance sizes, or why it is skipped."""
    cases = suite_cases()
    if not cases:
        return f"upstream's scheduler_perf is not in {config.suite_dir()}"
    skipped = skip_reasons()
    lines = []
    for name, case in cases.items():
        if name in skipped:
            lines.append(f"{name} ({case.group}): skipped: {skipped[name]}")
            continue
        sizes = config.sizes(case, py_gate_check)
        two = sizes[config.TWO_CORE]
        perf = ", ".join(s.name for s in config.performance_sizes(case, py_gate_check)) or "-"
        lines.append(f"{name} ({case.group}): 2-core {two.nodes} nodes / {two.pods} pods from "
                     f"{two.upstream.name}; performance: {perf}")  # fmt: skip
        for w in case.workloads:
            reason = config.workload_skip_reason(case, w, py_gate_check)
            if reason:
                lines.append(f"    {w.name}: skipped: {reason}")
    return "\n".join(lines)
