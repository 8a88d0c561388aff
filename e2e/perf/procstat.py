"""CPU time and peak memory of a process (and its descendants) from /proc."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CLK_TCK = os.sysconf("SC_CLK_TCK")


def parse_stat(text: str) -> tuple[int, float]:
    """(ppid, utime + stime in seconds) from the text of /proc/<pid>/stat; the comm field may hold spaces
    and parentheses, so fields are counted after the last ')'."""
    rest = text.rsplit(")", 1)[1].split()
    # rest[0] is field 3 (state); ppid is field 4, utime 14, stime 15
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / CLK_TCK


def parse_comm(text: str) -> str:
    """The comm field (the process's name: its main thread's) from the text of /proc/<pid>/stat."""
    return text[text.find("(") + 1 : text.rfind(")")]


def parse_status_kb(text: str, key: str) -> int | None:
    """A ``kB`` value such as VmHWM from the text of /proc/<pid>/status."""
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return None


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return out


def tree(pid: int) -> list[int]:
    """pid and all its live descendants."""
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo += _children(p)
    return seen


def cpu_seconds(pid: int) -> float:
    """utime + stime of pid and its live descendants (0 for a process that is gone)."""
    total = 0.0
    for p in tree(pid):
        try:
            total += parse_stat(Path(f"/proc/{p}/stat").read_text())[1]
        except (OSError, IndexError, ValueError):
            continue
    return total


def process_cpu_seconds(pid: int) -> dict[int, tuple[str, float]]:
    """pid -> (name, utime + stime) of pid and each of its live descendants. A child process is told from its
    parent by its name (comm), which is its main thread's: a child that names its main thread (prctl
    PR_SET_NAME, ``scheduler.app.threadnames.name_current_thread``) shows under that name."""
    out: dict[int, tuple[str, float]] = {}
    for p in tree(pid):
        try:
            text = Path(f"/proc/{p}/stat").read_text()
            out[p] = (parse_comm(text), parse_stat(text)[1])
        except (OSError, IndexError, ValueError):
            continue
    return out


def _task_files(pid: int, *names: str) -> Iterator[tuple[int, list[str]]]:
    """(thread id, the texts of these /proc files) of each live thread of pid; a thread that ends meanwhile
    is skipped."""
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            yield int(task.name), [(task / name).read_text() for name in names]
        except (OSError, ValueError):
            continue


def thread_group(comm: str) -> str:
    """A thread's group: its name without a trailing worker number (``binding_12`` -> ``binding``)."""
    return re.sub(r"[_-]?\d+$", "", comm) or comm


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """utime + stime of pid's threads by group of their OS names (py-scheduler names its threads after
    their Python names; threads that ended are not counted)."""
    out: dict[str, float] = {}
    for _, (comm, stat) in _task_files(pid, "comm", "stat"):
        try:
            group = thread_group(comm.strip())
            out[group] = out.get(group, 0.0) + parse_stat(stat)[1]
        except (IndexError, ValueError):
            continue
    return out


# Thread id -> (voluntary, involuntary) context switches of that thread so far.
SwitchCounts = dict[int, tuple[int, int]]
# Thread id -> its group (thread_group of its OS name), read beside SwitchCounts.
ThreadGroups = dict[int, str]


def context_switches(pid: int) -> SwitchCounts:
    """Context switches of each of pid's live threads so far. A voluntary one is a thread going to sleep (a
    socket read, a lock, the GIL), an involuntary one a preemption; on this VM a wake-up across cores costs
    10-15 us of CPU, so many per pod show as CPU. Per thread, because /proc keeps no count for threads that
    ended: a sum over the live threads drops whenever one exits, so only ``switches_between`` two readings
    is meaningful."""
    return context_switches_by_thread(pid)[0]


def context_switches_by_thread(pid: int) -> tuple[SwitchCounts, ThreadGroups]:
    """``context_switches`` and each thread's group, from one reading (for ``switches_by_group``)."""
    out: SwitchCounts = {}
    groups: ThreadGroups = {}
    for tid, (text,) in _task_files(pid, "status"):
        out[tid] = (parse_status_kb(text, "voluntary_ctxt_switches") or 0,
                    parse_status_kb(text, "nonvoluntary_ctxt_switches") or 0)
        name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Name:")), "")
        groups[tid] = thread_group(name)
    return out, groups


def switches_between(before: SwitchCounts, after: SwitchCounts) -> tuple[int, int]:
    """(voluntary, involuntary) switches made between two readings by the threads alive at the second:
    a thread started meanwhile counts from zero; one that ended meanwhile is not counted (its last
    switches are lost with it, but the total never goes below zero)."""
    vol = invol = 0
    for v, i in _switch_increments(before, after).values():
        vol += v
        invol += i
    return vol, invol


def switches_by_group(before: SwitchCounts, after: SwitchCounts, groups: ThreadGroups) -> dict[str, tuple[int, int]]:
    """``switches_between`` split by thread group (``groups`` read with ``after``): which threads sleep and wake."""
    out: dict[str, tuple[int, int]] = {}
    for tid, (v, i) in _switch_increments(before, after).items():
        g = groups.get(tid, "?")
        v0, i0 = out.get(g, (0, 0))
        out[g] = (v0 + v, i0 + i)
    return out


def _switch_increments(before: SwitchCounts, after: SwitchCounts) -> SwitchCounts:
    """Each live thread's switches between the readings; a reused thread id is a new thread, counted from zero."""
    out: SwitchCounts = {}
    for tid, (v, i) in after.items():
        v0, i0 = before.get(tid, (0, 0))
        if v < v0 or i < i0:
            v0 = i0 = 0
        out[tid] = (v - v0, i - i0)
    return out


def peak_rss_mb(pid: int) -> float | None:
    """Sum of VmHWM over pid and its live descendants, in MiB."""
    kb = 0
    found = False
    for p in tree(pid):
        try:
            v = parse_status_kb(Path(f"/proc/{p}/status").read_text(), "VmHWM")
        except OSError:
            continue
        if v is not None:
            kb += v
            found = True
    return round(kb / 1024.0, 1) if found else None


def parse_proc_stat_busy(text: str) -> float:
    """Busy CPU seconds of the whole machine (all but idle and iowait) from the text of /proc/stat."""
    fields = [int(x) for x in text.splitlines()[0].split()[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    busy = sum(fields[:8]) - fields[3] - fields[4]
    return busy / CLK_TCK


def machine_busy_seconds() -> float:
    return parse_proc_stat_busy(Path("/proc/stat").read_text())


def busy_cores(window: float = 2.0) -> float:
    """Average number of busy CPUs on the machine over ``window`` seconds."""
    b0, t0 = machine_busy_seconds(), time.monotonic()
    time.sleep(window)
    return (machine_busy_seconds() - b0) / max(time.monotonic() - t0, 1e-3)


def self_cpu_seconds() -> float:
    """CPU seconds of this process (all threads)."""
    t = os.times()
    return t.user + t.system


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def source_hash(root: str | Path) -> str:
    """A short hash of the *.py files under ``root`` (names and contents): tells whether the code under
    test changed between runs (other people editing the tree while a long benchmark runs)."""
    h = hashlib.sha1()
    for p in sorted(Path(root).rglob("*.py")):
        with contextlib.suppress(OSError):
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def git_info(repo: str | Path) -> dict[str, Any]:
    """Commit and number of locally changed files (read-only git commands); {} without git."""
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True,
                               timeout=30, check=True).stdout.splitlines()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"git_commit": head, "git_changed_files": len(dirty)}


def machine_info() -> dict[str, Any]:
    """What the results ran on."""
    info: dict[str, Any] = {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        mem_kb = parse_status_kb(Path("/proc/meminfo").read_text(), "MemTotal")
        if mem_kb:
            info["memory_gib"] = round(mem_kb / 1024 / 1024, 1)
        info["loadavg_at_start"] = Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        pass
    return info
