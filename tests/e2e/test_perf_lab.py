"""Every tool of the laboratory (e2e/perf/lab) run from its command line at a tiny size: it starts, measures
and prints what docs/performance.md says it prints (``make lab-smoke``; cgpython's run is
tests/e2e/test_perf_cgpython.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HAS_CALLGRIND_H = Path("/usr/include/valgrind/callgrind.h").exists() and shutil.which("cc") is not None


def lab(tool: str, *args: str) -> str:
    """``python -m e2e.perf.lab.<tool> args`` from the project root; its standard output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0"}
    done = subprocess.run([sys.executable, "-m", f"e2e.perf.lab.{tool}", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_inproc_prints_cpu_a_pod_and_the_median() -> None:
    out = lab("inproc", "--nodes", "30", "--pods", "40", "--repeat", "2")
    assert len(re.findall(r"^SchedulingBasic 30/40: \d+\.\d{3} CPU s per 1000 pods", out, re.M)) == 2
    assert re.search(r"^median \d+\.\d{3} CPU s per 1000 pods over 2 runs$", out, re.M)


@pytest.mark.parametrize("shape", ["first-available", "partitionable", "partitionable-backtracking"])
def test_inproc_dra_shapes_place_every_pod(shape: str) -> None:
    """Upstream's other DRA cases' objects: a partitionable node takes one pod (its two partitions, or 7 of 8
    with backtracking), so 6 pods on 6 nodes are all placed only if the shared counters are counted right."""
    out = lab("inproc", "--workload", "SchedulingWithResourceClaimTemplate", "--nodes", "6", "--pods", "6",
              "--repeat", "1", "--dra-shape", shape)
    assert re.search(r"^SchedulingWithResourceClaimTemplate 6/6: \d+\.\d{3} CPU s per 1000 pods", out, re.M)


@pytest.mark.skipif(not HAS_CALLGRIND_H, reason="cgmark.c needs cc and valgrind's headers")
def test_inproc_callgrind_prints_the_placements_hash_and_same_seed_same_hash() -> None:
    hashes = [re.findall(r"^placements ([0-9a-f]{12})$", lab("inproc", "--nodes", "30", "--pods", "40", "--repeat",
                                                                "1", "--callgrind"), re.M) for _ in range(2)]
    assert len(hashes[0]) == 1 and hashes[0] == hashes[1]


def test_gangpreempt_evicts_every_victim_and_nominates_every_member() -> None:
    """3 nodes, 9 victims (each in the way of a member of 3970m), a gang of 3: all victims go, all members are
    nominated, and the digest is stable for the same cluster."""
    outs = [lab("gangpreempt", "--nodes", "3", "--victims", "9", "--members", "3") for _ in range(2)]
    lines = [re.search(r"^cycle CPU \d+\.\d\d s; preempted 9; nominated 3; digest ([0-9a-f]{12})$", o, re.M)
             for o in outs]
    assert lines[0] is not None and lines[1] is not None
    assert lines[0].group(1) == lines[1].group(1)


def test_watchreplay_prints_cpu_an_event() -> None:
    out = lab("watchreplay", "--pods", "20", "--nodes", "5", "--repeat", "1")
    assert re.search(r"^80 events, best of 1: \d+\.\d{3} CPU s, \d+\.\d CPU us/event$", out, re.M)


def test_parfilter_compares_the_walks_and_none_differs() -> None:
    out = lab("parfilter", "--workload", "SchedulingBasic", "--nodes", "60", "--pods", "10", "--workers", "0,2",
              "--repeat", "1", "--no-batching")
    assert re.search(r"^SchedulingBasic 60 nodes, batching off, \d+ cycles a variant, 0 differing", out, re.M)
    assert re.findall(r"^  workers +(\d+):", out, re.M) == ["0", "2"]


@pytest.mark.skipif(not HAS_CALLGRIND_H, reason="cgmark.c needs cc and valgrind's headers")
def test_cgparts_evaluates_each_part_in_order(tmp_path: Path) -> None:
    parts = tmp_path / "parts"
    parts.write_text("# the loop's own cost\n0\nfwk.sign_pod(p) is not None\n", encoding="utf-8")
    out = lab("cgparts", "--nodes", "20", "--calls", "3", "--parts", str(parts))
    assert out.splitlines() == ["1 0", "2 fwk.sign_pod(p) is not None"]


@pytest.mark.integration
def test_writecost_makes_every_write_in_each_answer_format() -> None:
    """writecost starts a control plane of its own: every write of every kind succeeds (an API error ends the tool)
    in both answer formats, and each gets its median line."""
    ops = ("evict", "delete", "unschedulable", "bind", "event")
    out = lab("writecost", "--nodes", "2", "--pods", "3", "--repeat", "1", "--ops", ",".join(ops))
    medians = re.findall(r"^(\w+) +(json|protobuf) +\d+\.\d/s  apiserver +\d+\.\d\d  etcd +\d+\.\d\d", out, re.M)
    assert sorted(medians) == sorted((op, a) for op in ops for a in ("json", "protobuf"))
