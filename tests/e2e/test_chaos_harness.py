"""The chaos suite's verdicts (e2e/chaos/harness.py) on hand-made objects: a figure that cannot count
what it claims to would report a clean run whatever happened."""

from __future__ import annotations

import json
from pathlib import Path

from e2e.chaos.harness import Figures, _error_lines, _overcommitted
from scheduler.testing import make_node, make_pod


def test_overcommitted_counts_cpu_memory_and_pod_count() -> None:
    nodes = {n: make_node().name(n).allocatable(cpu="1", memory="1Gi", pods="2").api()
             for n in ("fits", "cpu", "mem", "count", "done")}
    pods = [make_pod().node(n).req(cpu=cpu, memory=memory).phase(phase).api() for n, cpu, memory, phase in (
        ("fits", "500m", "100Mi", "Running"), ("fits", "500m", "100Mi", "Running"),
        ("cpu", "600m", "100Mi", "Running"), ("cpu", "500m", "100Mi", "Running"),
        ("mem", "1m", "2Gi", "Running"),
        ("count", "1m", "100Mi", "Running"), ("count", "1m", "100Mi", "Running"), ("count", "1m", "100Mi", "Running"),
        ("done", "2", "100Mi", "Running"), ("done", "2", "100Mi", "Succeeded"))]
    assert _overcommitted(nodes, pods) == 4  # cpu, mem, count, and "done" (its running pod alone asks 2 > 1)
    done = {"done": make_node().name("done").allocatable(cpu="2", memory="1Gi", pods="2").api()}
    assert _overcommitted(done, [make_pod().node("done").req(cpu="2", memory="100Mi").phase(phase).api()
                                 for phase in ("Running", "Failed")]) == 0


def test_error_lines_counts_only_errors_after_the_mark(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    before = json.dumps({"level": "error", "event": "old"}) + "\n"
    log.write_text(before + "\n".join([
        json.dumps({"level": "info", "event": "bound"}),
        json.dumps({"level": "error", "event": "binding failed"}),
        "ERROR kopf.objects: watch failed",
        "WARNING kopf: slow",
        "Traceback (most recent call last):",
    ]) + "\n")
    assert _error_lines(log, len(before)) == 3
    assert _error_lines(log, 0) == 4


def test_figures_are_clean_only_when_every_count_is_zero_and_the_run_converged() -> None:
    assert Figures("s", 1, 1, converge_s=1.0).clean
    assert not Figures("s", 1, 1, converge_s=None).clean
    assert not Figures("s", 1, 1, converge_s=1.0, false_unschedulable=1).clean
