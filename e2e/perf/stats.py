"""Pure parts of the benchmark: per-run metrics from timestamps, medians, ratios, the JSON document and
the markdown table. No I/O here, so ``tests/e2e/test_perf_harness.py`` covers all of it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SCHEDULERS = ("py", "kube", "ceiling", "ceiling-events", "ceiling-go", "ceiling-go-events", "py-w0", "py-w1", "py-base")
# The binders py-scheduler's throughput is compared with (its column in the ratio table: py / <name>).
CEILINGS = ("ceiling", "ceiling-events", "ceiling-go", "ceiling-go-events")

# The keys every entry of "runs" has (more may follow them).
RUN_KEYS = (
    "workload", "nodes", "pods", "scheduler", "repeat", "pods_per_second", "latency_p50_ms", "latency_p90_ms",
    "latency_p99_ms", "cpu_seconds_per_1000", "peak_rss_mb", "all_bound",
)  # fmt: skip
SUMMARY_KEYS = ("workload", "nodes", "pods", "py_over_kube", "py_over_ceiling")


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) with linear interpolation between closest ranks (numpy's default);
    None for no values."""
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} outside 0..100")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _round(x: float | None, digits: int = 2) -> float | None:
    return None if x is None else round(x, digits)


def batch_metrics(created: Mapping[str, float], bound: Mapping[str, float], expected: int) -> dict[str, Any]:
    """Throughput and latency of one measured batch.

    ``created``: pod name -> monotonic time it was created (POST answered or the watch saw it, earlier wins);
    ``bound``: pod name -> monotonic time the watch saw ``spec.nodeName`` set. Throughput is the number of
    bound pods over first creation -> last binding; latencies are per bound pod, in ms.
    """
    lat = [(bound[n] - created[n]) * 1000.0 for n in bound if n in created]
    n_bound = sum(1 for n in bound if n in created)
    first = min(created.values()) if created else None
    last = max((bound[n] for n in bound if n in created), default=None)
    span = (last - first) if (first is not None and last is not None) else None
    pps = n_bound / span if span and span > 0 else None
    return {
        "pods_per_second": _round(pps, 1),
        "latency_p50_ms": _round(percentile(lat, 50), 1),
        "latency_p90_ms": _round(percentile(lat, 90), 1),
        "latency_p99_ms": _round(percentile(lat, 99), 1),
        "bound": n_bound,
        "all_bound": n_bound == expected and expected > 0,
        "span_seconds": _round(span, 3),
    }


def creation_rate(created_times: Iterable[float]) -> float | None:
    """Pods per second over first -> last creation."""
    ts = sorted(created_times)
    if len(ts) < 2 or ts[-1] <= ts[0]:
        return None
    return round((len(ts) - 1) / (ts[-1] - ts[0]), 1)


def median(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.median(xs) if xs else None


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 3)


def groups(runs: Sequence[Mapping[str, Any]]) -> list[tuple[str, int, int]]:
    seen: dict[tuple[str, int, int], None] = {}
    for r in runs:
        seen.setdefault((r["workload"], r["nodes"], r["pods"]), None)
    return list(seen)


def medians(runs: Sequence[Mapping[str, Any]], workload: str, nodes: int, pods: int, scheduler: str) -> dict[str, Any]:
    """Median of every numeric metric over the repeats of one (workload, size, scheduler); n = repeats."""
    want = (workload, nodes, pods, scheduler)
    sel = [r for r in runs if (r["workload"], r["nodes"], r["pods"], r["scheduler"]) == want]
    out: dict[str, Any] = {"n": len(sel)}
    for key in ("pods_per_second", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "cpu_seconds_per_1000",
                "peak_rss_mb", "creation_pods_per_second", "kube-apiserver_cpu_seconds_per_1000",
                "foreign_cpu_seconds", "groups_per_second"):  # fmt: skip
        out[key] = median(r.get(key) for r in sel)
    out["all_bound"] = bool(sel) and all(r.get("all_bound") for r in sel)
    pps = [r["pods_per_second"] for r in sel if r.get("pods_per_second") is not None]
    out["pods_per_second_min"] = min(pps) if pps else None
    out["pods_per_second_max"] = max(pps) if pps else None
    return out


def summarize(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (workload, nodes, pods): ratios of median pods/s, py over kube and py over ceiling."""
    out = []
    for wl, nodes, pods in groups(runs):
        med = {s: medians(runs, wl, nodes, pods, s)["pods_per_second"] for s in SCHEDULERS}
        entry: dict[str, Any] = {
            "workload": wl,
            "nodes": nodes,
            "pods": pods,
            "py_over_kube": ratio(med["py"], med["kube"]),
            "py_over_ceiling": ratio(med["py"], med["ceiling"]),
            "py_over_ceiling_events": ratio(med["py"], med["ceiling-events"]),
            "py_over_ceiling_go": ratio(med["py"], med["ceiling-go"]),
            "py_over_ceiling_go_events": ratio(med["py"], med["ceiling-go-events"]),
        }
        entry.update({f"{s}_pods_per_second": med[s] for s in SCHEDULERS})
        out.append(entry)
    return out


def document(
    machine: Mapping[str, Any], runs: Sequence[Mapping[str, Any]], notes: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The results JSON: ``{"machine", "runs", "summary"}`` (+ ``"notes"`` when given)."""
    doc: dict[str, Any] = {"machine": dict(machine), "runs": [dict(r) for r in runs], "summary": summarize(runs)}
    if notes:
        doc["notes"] = dict(notes)
    return doc


def _fmt(x: Any, digits: int = 1) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "NO"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def markdown(doc: Mapping[str, Any]) -> str:
    """A markdown report: one row per workload/size/scheduler with medians, then the ratios."""
    runs = doc["runs"]
    lines = [
        "| workload | nodes | pods | scheduler | runs | pods/s (median) | pods/s min-max | p50 ms | p90 ms | p99 ms "
        "| CPU s / 1000 pods | peak RSS MB | all bound | create pods/s | apiserver CPU s / 1000 | other CPU s |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for wl, nodes, pods in groups(runs):
        for s in SCHEDULERS:
            m = medians(runs, wl, nodes, pods, s)
            if not m["n"]:
                continue
            lines.append(
                f"| {wl} | {nodes} | {pods} | {s} | {m['n']} | {_fmt(m['pods_per_second'])} "
                f"| {_fmt(m['pods_per_second_min'])}-{_fmt(m['pods_per_second_max'])} | {_fmt(m['latency_p50_ms'])} "
                f"| {_fmt(m['latency_p90_ms'])} | {_fmt(m['latency_p99_ms'])} | {_fmt(m['cpu_seconds_per_1000'], 2)} "
                f"| {_fmt(m['peak_rss_mb'], 0)} | {_fmt(m['all_bound'])} | {_fmt(m['creation_pods_per_second'], 0)} "
                f"| {_fmt(m['kube-apiserver_cpu_seconds_per_1000'], 2)} | {_fmt(m['foreign_cpu_seconds'], 0)} |"
            )
    lines += _ratio_lines(doc["summary"])
    lines += _process_lines(runs)
    lines += _goal_lines(doc.get("goals") or [])
    machine = doc.get("machine") or {}
    if machine:
        lines += ["", "Machine: " + ", ".join(f"{k} {v}" for k, v in machine.items() if not isinstance(v, dict | list))]
    for k, v in (doc.get("notes") or {}).items():
        lines.append(f"- {k}: {v}")
    return "\n".join(lines) + "\n"


def _ratio_key(ceiling: str) -> str:
    return "py_over_" + ceiling.replace("-", "_")


def _ratio_lines(summary: Sequence[Mapping[str, Any]]) -> list[str]:
    """py / kube and py / ceiling always, py / each other binder where one ran."""
    extra = [c for c in CEILINGS[1:] if any(e.get(_ratio_key(c)) is not None for e in summary)]
    head = "| workload | nodes | pods | py / kube | py / ceiling |" + "".join(f" py / {c} |" for c in extra)
    lines = ["", head, "|---|---:|---:|---:|---:|" + "---:|" * len(extra)]
    for e in summary:
        cells = [e["py_over_kube"], e["py_over_ceiling"], *(e.get(_ratio_key(c)) for c in extra)]
        lines.append(f"| {e['workload']} | {e['nodes']} | {e['pods']} |" + "".join(f" {_fmt(x, 3)} |" for x in cells))
    return lines


def process_medians(
    runs: Sequence[Mapping[str, Any]], workload: str, nodes: int, pods: int, scheduler: str
) -> dict[str, float]:
    """Median CPU seconds per 1000 pods of each process of a scheduler over its repeats (a process missing
    from a run is left out of that run's values), largest first: the first is the busiest."""
    want = (workload, nodes, pods, scheduler)
    per: dict[str, list[float]] = {}
    for r in runs:
        if (r["workload"], r["nodes"], r["pods"], r["scheduler"]) == want:
            for name, v in (r.get("process_cpu_seconds_per_1000") or {}).items():
                per.setdefault(name, []).append(v)
    meds = {name: statistics.median(vs) for name, vs in per.items()}
    return dict(sorted(meds.items(), key=lambda kv: -kv[1]))


def _process_lines(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The busiest process of each scheduler and size (it caps throughput: one process, one GIL), with every
    process's CPU per pod; none when the runs measured no processes."""
    rows = []
    for wl, nodes, pods in groups(runs):
        for s in SCHEDULERS:
            meds = process_medians(runs, wl, nodes, pods, s)
            if meds:
                busiest, value = next(iter(meds.items()))
                every = ", ".join(f"{name} {v:.3f}" for name, v in meds.items())
                rows.append(f"| {wl} | {nodes} | {pods} | {s} | {busiest} | {value:.3f} | {every} |")
    if not rows:
        return []
    head = ("| workload | nodes | pods | scheduler | busiest process | its CPU s / 1000 pods "
            "| every process, CPU s / 1000 pods (median) |")  # fmt: skip
    return ["", head, "|---|---:|---:|---|---|---:|---|", *rows]


def _goal_lines(goals: Sequence[Mapping[str, Any]]) -> list[str]:
    """The goals table (``e2e.perf.goals``' checks, as the document holds them); none without goals."""
    if not goals:
        return []
    lines = ["", "| goal | value | target | met |", "|---|---:|---:|---|"]
    for g in goals:
        sign = ">=" if g["at_least"] else "<="
        lines.append(f"| {g['name']} | {g['value']:.3f} | {sign} {g['target']:g} | {_fmt(g['met'])} |")
    return lines


def suite_markdown(doc: Mapping[str, Any]) -> str:
    """The upstream suite's table: per workload and size, pods/s of py and kube, py/kube, PodGroups (gangs)
    per second where the measured pods belong to groups, CPU per pod of py-scheduler's busiest process and of
    kube-scheduler, peak RSS, and upstream's threshold (pods/s on upstream's CI, in-process API server: a
    reference, not comparable)."""
    runs = [r for r in doc["runs"] if r.get("size")]
    lines = ["| workload | size | nodes | pods | py pods/s | kube pods/s | py / kube | py groups/s | kube groups/s "
             "| py busiest process CPU s / 1000 | kube CPU s / 1000 | py peak RSS MB | kube peak RSS MB "
             "| upstream threshold |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for wl, nodes, pods in groups(runs):
        py, kube = (medians(runs, wl, nodes, pods, s) for s in ("py", "kube"))
        busiest = next(iter(process_medians(runs, wl, nodes, pods, "py").values()), py["cpu_seconds_per_1000"])
        first = next(r for r in runs if (r["workload"], r["nodes"], r["pods"]) == (wl, nodes, pods))
        lines.append(
            f"| {wl} | {first['size']} ({first.get('upstream_workload')}) | {nodes} | {pods} "
            f"| {_fmt(py['pods_per_second'])} | {_fmt(kube['pods_per_second'])} "
            f"| {_fmt(ratio(py['pods_per_second'], kube['pods_per_second']), 2)} "
            f"| {_fmt(py['groups_per_second'], 2)} | {_fmt(kube['groups_per_second'], 2)} "
            f"| {_fmt(busiest, 2)} "
            f"| {_fmt(kube['cpu_seconds_per_1000'], 2)} | {_fmt(py['peak_rss_mb'], 0)} "
            f"| {_fmt(kube['peak_rss_mb'], 0)} "
            f"| {_fmt(first.get('threshold'), 0)} |"
        )
    return "\n".join(lines) + "\n\n"
