"""The measurement tools of issue 28 step 4 (e2e/perf/lab/parfilter.py, gilshim.c): the parallel walk prototype
decides as the sequential walk, and the shim sees numpy's GIL releases."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.perf.lab import parfilter


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
