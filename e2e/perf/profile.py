"""Summaries of py-spy ``--format raw`` profiles (collapsed stacks: ``frame;frame;... count``).

``python -m e2e.perf.profile FILE [--top 20]`` prints the top functions by self and by inclusive samples,
and the samples per package/module (which part of the stack a sample's leaf frame is in).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from e2e.perf import sysprofile
from e2e.perf.apiprofile import top as pprof_top
from e2e.perf.procstat import thread_group

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
_THREAD = re.compile(r"^thread \(\d+\)(?:: (?P<name>.*))?$")


def parse_raw(lines: Iterable[str]) -> list[tuple[list[str], int]]:
    """[(frames root..leaf, samples)] from collapsed-stack lines; frames keep function and file, not line."""
    out = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        try:
            n = int(count)
        except ValueError:
            continue
        frames = []
        for fr in stack.split(";"):
            m = _FRAME.match(fr.strip())
            frames.append(f"{m['func']} ({m['file']})" if m else fr.strip())
        out.append((frames, n))
    return out


def by_thread(stacks: Sequence[tuple[list[str], int]]) -> dict[str, list[tuple[list[str], int]]]:
    """py-spy ``--threads`` stacks split by thread group (the root frame's name without its worker number),
    the root frame dropped; stacks without a thread frame go under ``?``."""
    out: dict[str, list[tuple[list[str], int]]] = {}
    for frames, n in stacks:
        m = _THREAD.match(frames[0]) if frames else None
        if m is None:
            out.setdefault("?", []).append((frames, n))
        else:
            out.setdefault(thread_group(m["name"] or "?"), []).append((frames[1:], n))
    return out


def area(frame: str) -> str:
    """A coarse bucket for a frame: ``scheduler/<module or subpackage>``, else the top-level package or module
    (py-spy names files relative to their sys.path entry: ``urllib3/util/wait.py``, ``ssl.py``)."""
    m = _FRAME.match(frame)
    path = m["file"] if m else frame
    if "site-packages/" in path:
        path = path.split("site-packages/", 1)[1]
    parts = [p for p in path.split("/") if p]
    if "scheduler" in parts[:-1]:
        rest = parts[parts.index("scheduler") + 1 :]
        return "scheduler/" + rest[0].removesuffix(".py")
    if not parts:
        return "?"
    if len(parts) > 1 and parts[0] in ("usr", "lib", "root", "opt", "home", "tmp", "work"):
        return Path(path).name.removesuffix(".py")
    return parts[0].removesuffix(".py")


def summarize(stacks: Sequence[tuple[list[str], int]], top: int = 20) -> dict[str, Any]:
    total = sum(n for _, n in stacks)
    self_c: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    areas: Counter[str] = Counter()
    for frames, n in stacks:
        if not frames:
            continue
        self_c[frames[-1]] += n
        areas[area(frames[-1])] += n
        for fr in set(frames):
            incl[fr] += n
    return {
        "samples": total,
        "self": self_c.most_common(top),
        "inclusive": incl.most_common(top),
        "areas": areas.most_common(top),
    }


def format_summary(s: Mapping[str, Any], title: str = "") -> str:
    total = max(int(s["samples"]), 1)
    out = [f"== {title} ({s['samples']} samples)" if title else f"== {s['samples']} samples"]
    for key, head in (("areas", "self samples by package/module"), ("self", "top functions, self"),
                      ("inclusive", "top functions, inclusive")):  # fmt: skip
        out.append(f"-- {head}")
        out += [f"{100 * n / total:6.1f}%  {n:7d}  {name}" for name, n in s[key]]
    return "\n".join(out) + "\n"


def summarize_file(path: str | Path, top: int = 20) -> str:
    """The whole profile's summary, then one per thread group when py-spy named the threads, busiest first."""
    with open(path) as f:
        stacks = parse_raw(f)
    out = format_summary(summarize(stacks, top), str(path))
    threads = by_thread(stacks)
    if set(threads) != {"?"}:
        ranked = sorted(threads.items(), key=lambda kv: -sum(n for _, n in kv[1]))
        out += "".join(format_summary(summarize(st, top), f"thread {name}") for name, st in ranked)
    return out


def summarize_runs(runs: Sequence[Mapping[str, Any]], top: int = 20) -> str:
    """Summaries of the profiles the runs recorded: py-spy's (``run["profile"]``) and kube-apiserver's
    (``run["apiserver_profile"]``)."""
    parts = []
    for r in runs:
        head = (f"{r['workload']} {r['nodes']}n/{r['pods']}p {r['scheduler']} #{r['repeat']}: "
                f"{r.get('pods_per_second')} pods/s, CPU {r.get('cpu_seconds_per_1000')} s/1000 pods")  # fmt: skip
        path = r.get("profile")
        if path and Path(path).exists():
            parts.append(head + "\n" + summarize_file(path, top))
        native = r.get("native_profile")
        if native and Path(native).exists():
            kind = "perf" if native.endswith(".data") else "perf-trace"
            parts.append(head + "\n" + sysprofile.summarize(kind, Path(native), int(r.get("bound") or 1)))
        api = [Path(p) for p in r.get("apiserver_profile") or () if Path(p).exists()]
        if api:
            cpu = r.get("kube-apiserver_cpu_seconds_per_1000")
            parts.append(f"{head}; kube-apiserver {cpu} CPU s/1000 pods\n" + pprof_top(api, nodecount=top)
                         + pprof_top(api, nodecount=top, cumulative=True))
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m e2e.perf.profile", description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--top", type=int, default=20)
    args = p.parse_args(argv)
    for f in args.files:
        sys.stdout.write(summarize_file(f, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
