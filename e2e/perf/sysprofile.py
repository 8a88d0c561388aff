"""Native profiles of py-scheduler's threads during the measured batch: ``perf`` (where its CPU goes below
Python: libssl, libcrypto, the kernel, libpython, per thread group) and ``perf-trace`` (the system calls a
pod of each thread group). py-spy sees only Python frames, and the binding and event threads spend most of
their CPU outside them (TLS, system calls, wake-ups), so these two tell what py-spy cannot.

Both attach to the scheduler's pid (every thread) and stop on SIGINT; needs ``perf`` and root or
``perf_event_paranoid`` <= 1 for the kernel's part. ``python -m e2e.perf.sysprofile perf.data|trace.txt
--pods N`` summarizes a kept file again.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from e2e.perf.procstat import thread_group

KINDS = ("perf", "perf-trace")
PERF_RATE = 997  # samples a second a thread (cpu-clock, a software event: it works in VMs without PMU)


def start(kind: str, pid: int, run_dir: Path) -> subprocess.Popen[bytes]:
    """Attach ``kind`` to every thread of ``pid``; its output goes under ``run_dir``."""
    if kind == "perf":
        cmd = ["perf", "record", "-e", "cpu-clock", "-F", str(PERF_RATE), "-g", "-p", str(pid),
               "-o", str(run_dir / "perf.data")]  # fmt: skip
    elif kind == "perf-trace":
        cmd = ["perf", "trace", "-s", "-p", str(pid), "-o", str(run_dir / "perf-trace.txt")]
    else:
        raise ValueError(f"unknown native profile {kind!r}: want one of {KINDS}")
    log = open(run_dir / f"{kind}.log", "ab")  # noqa: SIM115 - owned by the child
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(p: subprocess.Popen[bytes]) -> None:
    p.send_signal(signal.SIGINT)
    try:
        p.wait(120)
    except subprocess.TimeoutExpired:
        p.kill()


_THREAD = re.compile(r"^\s*(\S.*?) \((\d+)\), (\d+) events")
_SYSCALL = re.compile(r"^\s+([a-z_0-9]+)\s+(\d+)\s+(\d+)\s+([\d.]+)")


def syscalls_by_group(text: str) -> dict[str, dict[str, int]]:
    """``perf trace -s`` output -> thread group -> system call -> calls (summed over the group's threads)."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    group = ""
    for line in text.splitlines():
        m = _THREAD.match(line)
        if m:
            group = thread_group(m.group(1))
            continue
        s = _SYSCALL.match(line)
        if s and group:
            out[group][s.group(1)] += int(s.group(2))
    return {g: dict(calls) for g, calls in out.items()}


def format_syscalls(by_group: dict[str, dict[str, int]], pods: int, top: int = 8) -> str:
    """Calls a pod of each group, busiest group first, its commonest calls named."""
    lines = []
    for g, calls in sorted(by_group.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(calls.values()) / max(pods, 1)
        if total < 0.05:
            continue
        ranked = sorted(calls.items(), key=lambda kv: -kv[1])[:top]
        lines.append(f"  {g}: {total:.1f} calls/pod: " + ", ".join(f"{c} {n / max(pods, 1):.2f}" for c, n in ranked))
    return "system calls a pod, per thread group:\n" + "\n".join(lines) + "\n"


def perf_report(data: Path, top: int = 12) -> str:
    """Samples per thread group, split by shared object, and each group's top symbols (self time)."""
    out = subprocess.run(
        ["perf", "report", "-i", str(data), "--stdio", "--no-children", "-g", "none", "--sort", "comm,dso,sym",
         "-t", "\t", "--percent-limit", "0"],
        capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
    by_dso: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    by_sym: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for line in out.splitlines():
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) < 4 or not parts[0].endswith("%"):
            continue
        pct, comm, dso, sym = float(parts[0][:-1]), parts[1], parts[2], parts[3]
        g = thread_group(comm)
        by_dso[g][dso] += pct
        by_sym[g][f"{sym} ({dso})"] += pct
    lines = ["perf samples (% of all), per thread group:"]
    for g, dsos in sorted(by_dso.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(dsos.values())
        if total < 0.5:
            continue
        split = ", ".join(f"{d} {v / total * 100:.0f}%" for d, v in sorted(dsos.items(), key=lambda kv: -kv[1])[:6])
        lines.append(f"  {g} {total:.1f}%: {split}")
        for sym, v in sorted(by_sym[g].items(), key=lambda kv: -kv[1])[:top]:
            lines.append(f"      {v / total * 100:5.1f}%  {sym}")
    return "\n".join(lines) + "\n"


def summarize(kind: str, path: Path, pods: int) -> str:
    if kind == "perf":
        return perf_report(path)
    return format_syscalls(syscalls_by_group(path.read_text(errors="replace")), pods)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m e2e.perf.sysprofile", description=(__doc__ or "").splitlines()[0])
    p.add_argument("file")
    p.add_argument("--pods", type=int, default=1, help="bound pods of the batch (calls are divided by it)")
    args = p.parse_args(argv)
    path = Path(args.file)
    sys.stdout.write(summarize("perf" if path.suffix == ".data" else "perf-trace", path, args.pods))
    return 0


if __name__ == "__main__":
    sys.exit(main())
