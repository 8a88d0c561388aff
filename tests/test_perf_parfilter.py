"""The measurement tools of issue 28 steps 4 and 2 (e2e/perf/parfilter.py, gilshim.c, podhandoff.py): the
parallel walk prototype decides as the sequential walk, the shim sees numpy's GIL releases, and the
pod-stream hand-off delivers every event."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.perf import parfilter, podhandoff
from e2e.perf.watchreplay import PHASES

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("n", "parallelism", "size"), [(5000, 16, 70), (5000, 2, 70), (100, 16, 7), (10, 16, 1),
                                                        (1, 16, 1), (0, 16, 1)])
def test_chunk_size_is_upstreams(n: int, parallelism: int, size: int) -> None:
    assert parfilter.chunk_size_for(n, parallelism) == size


def test_parallel_walk_decides_as_the_sequential_walk() -> None:
    variants, differed = parfilter.compare("SchedulingPodAntiAffinity", 120, 30, [2, 16], batching=False, seed=3)
    assert [v.workers for v in variants] == [0, 2, 16]
    assert differed == 0
    assert all(len(v.wall) == len(variants[0].wall) > 0 for v in variants)


SHIM_CHECK = """
import ctypes, os, time, numpy as np
free = ctypes.CDLL(os.environ["LD_PRELOAD"]).gilshim_free_ns
free.restype = ctypes.c_longlong
def share(n):
    a = np.arange(n, dtype=np.int64)
    cpu, f = time.thread_time(), free()
    while time.thread_time() - cpu < 0.2:
        a * 7 % 1_000_003
    return (free() - f) / 1e9 / (time.thread_time() - cpu)
print(share(2_000_000), share(500))
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_gil_shim_sees_numpy_release_the_gil_only_over_500_elements(tmp_path: Path) -> None:
    shim = parfilter.build_shim(str(tmp_path))
    env = {**os.environ, "LD_PRELOAD": shim}
    out = subprocess.run([sys.executable, "-c", SHIM_CHECK], env=env, check=True, capture_output=True,
                         text=True).stdout
    large, small = map(float, out.split())
    assert large > 0.5
    assert small < 0.02


@pytest.mark.parametrize("fmt", podhandoff.FORMATS)
def test_every_record_format_hands_over_every_event(fmt: str) -> None:
    lines = podhandoff.lines_of(20, 4, 0.25, "live")
    sched = podhandoff.build_scheduler(4)
    seen: list[str] = []
    on_pod_event = sched.on_pod_event

    def spy(type_: str, obj: object) -> object:
        seen.append(type_)
        return on_pod_event(type_, obj)  # type: ignore[arg-type]

    sched.on_pod_event = spy  # type: ignore[method-assign]
    handle = podhandoff._handler(fmt, sched)
    try:
        for rec in podhandoff._records(fmt, lines):
            handle(rec)
    finally:
        podhandoff.eventhandlers.pod_from_api = podhandoff.pod_from_api
    assert seen == [podhandoff.orjson.loads(line)["type"] for line in lines]
    assert not sched.cache.get_pod("00000000-0000-0000-0000-000000000019")  # deleted at the end


def test_handoff_runs_a_decoding_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    parent, child, events, reads, size = podhandoff.handoff("json", 10, 5, 0.0, "live")
    assert events == 10 * len(PHASES)
    assert reads >= 1 and size > 0 and parent > 0 and child > 0


def test_live_shape_adds_managed_fields_and_a_running_status() -> None:
    lines = podhandoff.lines_of(4, 2, 0.0, "live")
    running = podhandoff.orjson.loads(lines[-5])["object"]  # the last RUNNING event
    assert {m["manager"] for m in running["metadata"]["managedFields"]} == {"python", "py-scheduler", "kwok"}
    assert running["status"]["containerStatuses"][0]["state"]["running"]
    parts = podhandoff.split(4, 2, 0.0, "live")
    assert parts["decode"] > 0 and parts["pod_from_api"] > 0
