"""Unit tests of the benchmark's per-process CPU (process_cpu_seconds_per_1000, the busiest process) and of
the Go ceiling binder's wiring (its command, ratio column and the py/ceiling goal held against it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.perf import goals, procstat, stats
from e2e.perf.runner import ROOT_PROCESS, per_process
from e2e.perf.schedulers import GO_CEILING_BINARY, go_ceiling_command


def _run(sched: str, pps: float, **kw: object) -> dict[str, object]:
    r: dict[str, object] = {
        "workload": "SchedulingBasic", "nodes": 1000, "pods": 3000, "scheduler": sched, "repeat": 1,
        "pods_per_second": pps, "latency_p50_ms": 10.0, "latency_p90_ms": 20.0, "latency_p99_ms": 30.0,
        "cpu_seconds_per_1000": 1.0, "peak_rss_mb": 100.0, "all_bound": True,
    }  # fmt: skip
    r.update(kw)
    return r


# ---- /proc


def test_parse_comm_keeps_spaces_and_parentheses() -> None:
    assert procstat.parse_comm("123 (py sched (x)) S 1 2 3") == "py sched (x)"
    assert procstat.parse_comm("7 (writer) R 1") == "writer"


def test_process_cpu_names_a_child_by_its_main_thread() -> None:
    """A child that names its main thread shows under that name, with the CPU it spent; this process too."""
    code = (
        "import sys, time; from scheduler.app import threadnames; threadnames.name_current_thread('perf-child');"
        "t = time.process_time();\nwhile time.process_time() - t < 0.05: pass\n"
        "print('ready', flush=True); sys.stdin.read()"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        procs = procstat.process_cpu_seconds(os.getpid())
    finally:
        child.communicate(b"")
    assert procs[child.pid][0] == "perf-child" and procs[child.pid][1] >= 0.01
    assert os.getpid() in procs
    assert procstat.process_cpu_seconds(2**22 + 12345) == {}  # no such process: nothing, no error


# ---- per-process CPU per pod


def test_per_process_labels_the_root_main_and_sorts_busiest_first() -> None:
    before = {10: ("python3", 5.0), 20: ("writer", 1.0), 21: ("writer", 2.0), 30: ("decoder", 0.5)}
    after = {10: ("python3", 6.0), 20: ("writer", 1.25), 21: ("writer", 4.0), 31: ("decoder", 0.1)}
    out = per_process(10, before, after, bound=500)
    # writer 21 spent 2.0 s over 500 pods; the decoder that replaced pid 30 counts from zero; pid 30 is gone
    assert out == {"writer-2": 4.0, ROOT_PROCESS: 2.0, "writer": 0.5, "decoder": 0.2}
    assert next(iter(out)) == "writer-2"


def test_per_process_recycled_pid_under_another_name_counts_from_zero() -> None:
    out = per_process(1, {1: ("x", 1.0), 2: ("old", 9.0)}, {1: ("x", 1.0), 2: ("new", 0.3)}, bound=1000)
    assert out == {"new": 0.3, ROOT_PROCESS: 0.0}


def test_process_medians_and_the_busiest_process_in_the_report() -> None:
    runs = [
        _run("py", 100.0, repeat=1, process_cpu_seconds_per_1000={"main": 1.0, "writer": 0.5}),
        _run("py", 110.0, repeat=2, process_cpu_seconds_per_1000={"main": 1.2, "writer": 1.5}),
        _run("py", 90.0, repeat=3, process_cpu_seconds_per_1000={"main": 1.1, "writer": 1.4}),
        _run("kube", 200.0, process_cpu_seconds_per_1000={"main": 2.0}),
    ]
    assert stats.process_medians(runs, "SchedulingBasic", 1000, 3000, "py") == {"writer": 1.4, "main": 1.1}
    md = stats.markdown(stats.document({}, runs))
    assert "| SchedulingBasic | 1000 | 3000 | py | writer | 1.400 | writer 1.400, main 1.100 |" in md
    assert "| SchedulingBasic | 1000 | 3000 | kube | main | 2.000 | main 2.000 |" in md
    assert "busiest process" not in stats.markdown(stats.document({}, [_run("py", 1.0)]))


# ---- the Go ceiling


def test_go_ceiling_ratio_column_only_where_it_ran() -> None:
    runs = [_run("py", 900.0), _run("kube", 1000.0), _run("ceiling", 1100.0), _run("ceiling-go", 1500.0)]
    (s,) = stats.summarize(runs)
    assert s["py_over_ceiling_go"] == pytest.approx(0.6)
    assert s["py_over_ceiling_go_events"] is None
    md = stats.markdown(stats.document({}, runs))
    assert "| workload | nodes | pods | py / kube | py / ceiling | py / ceiling-go |" in md
    assert "| SchedulingBasic | 1000 | 3000 | 0.900 | 0.818 | 0.600 |" in md
    assert "py / ceiling-go" not in stats.markdown(stats.document({}, runs[:3]))


def test_ceiling_goal_uses_the_go_binder_when_it_ran() -> None:
    runs = [_run("py", 900.0), _run("ceiling", 950.0), _run("ceiling-go", 1500.0)]
    by_name = {g.name: g for g in goals.evaluate(runs)}
    goal = by_name["SchedulingBasic 1000/3000: py/ceiling-go pods/s"]
    assert goal.value == pytest.approx(0.6) and goal.met is False
    assert "SchedulingBasic 1000/3000: py/ceiling pods/s" not in by_name
    python_only = {g.name: g for g in goals.evaluate(runs[:2])}
    assert python_only["SchedulingBasic 1000/3000: py/ceiling pods/s"].met is True  # 900/950 >= 0.9


def test_go_ceiling_command(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="EXTRA_BINS=ceiling-binder"):
        go_ceiling_command(tmp_path, "kc", "bench", "5000", "5000", events=False)
    (tmp_path / GO_CEILING_BINARY).write_bytes(b"")
    cmd = go_ceiling_command(tmp_path, "kc", "bench", "5000", "100", events=True)
    assert cmd == [str(tmp_path / GO_CEILING_BINARY), "--kubeconfig", "kc", "--scheduler-name", "bench", "--qps",
                   "5000", "--burst", "100", "--events"]  # fmt: skip
    assert "--events" not in go_ceiling_command(tmp_path, "kc", "bench", "1", "1", events=False)


def test_schedulers_list_and_ceilings_agree() -> None:
    assert set(stats.CEILINGS) <= set(stats.SCHEDULERS)
    assert {"ceiling-go", "ceiling-go-events"} <= set(stats.SCHEDULERS)
    assert goals.GO_CEILING in stats.CEILINGS
