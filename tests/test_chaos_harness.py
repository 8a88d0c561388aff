"""The chaos suite's verdicts (e2e/chaos/harness.py) on hand-made objects: a figure that cannot count
what it claims to would report a clean run whatever happened."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from e2e.chaos.harness import Figures, _error_lines, _overcommitted


def node(name: str, cpu: str = "1", memory: str = "1Gi", pods: str = "2") -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}}


def pod(node_name: str, cpu: str = "500m", memory: str = "100Mi", phase: str = "Running") -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory}
    return {"spec": {"nodeName": node_name, "containers": [{"resources": {"requests": requests}}]},
            "status": {"phase": phase}}


def test_overcommitted_counts_cpu_memory_and_pod_count() -> None:
    nodes = {n: node(n) for n in ("fits", "cpu", "mem", "count", "done")}
    pods = [pod("fits"), pod("fits"),
            pod("cpu", "600m"), pod("cpu", "500m"),
            pod("mem", "1m", "2Gi"),
            pod("count", "1m"), pod("count", "1m"), pod("count", "1m"),
            pod("done", "2"), pod("done", "2", phase="Succeeded")]
    assert _overcommitted(nodes, pods) == 4  # cpu, mem, count, and "done" (its running pod alone asks 2 > 1)
    assert _overcommitted({"done": node("done", cpu="2")}, [pod("done", "2"), pod("done", "2", phase="Failed")]) == 0


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
