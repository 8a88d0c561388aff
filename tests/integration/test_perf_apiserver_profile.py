"""The benchmark's ``--profile apiserver``: Go CPU profiles from a real kube-apiserver, merged by go tool pprof."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.cluster.cluster import LocalCluster
from e2e.perf.apiprofile import SLICE_SECONDS, ApiServerProfiler, top
from e2e.perf.kubeio import Conn
from scheduler.kube.client import RawApi, load_api_client


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path_factory.mktemp("apiprof") / "cluster", profiling=True)
    c.up(lean=True)
    try:
        yield c
    finally:
        c.down()


def test_slices_cover_the_window_and_merge_into_one_top(profiled: LocalCluster, tmp_path: Path) -> None:
    raw = RawApi(load_api_client(str(profiled.kubeconfig)))
    prof = ApiServerProfiler(Conn.from_kubeconfig(str(profiled.kubeconfig)), tmp_path)
    prof.start()
    deadline = time.monotonic() + SLICE_SECONDS + 0.5  # work into a second slice
    while time.monotonic() < deadline:
        raw.request("GET", "/api/v1/namespaces?limit=50")
    files = prof.stop()
    assert prof.errors == []
    assert len(files) >= 2 and all(f.stat().st_size > 0 for f in files)
    if shutil.which("go") is None:
        pytest.skip("no go toolchain to read the profiles")
    out = top(files, nodecount=10)
    assert "kube-apiserver" in out and "flat%" in out


def test_without_profiles_there_is_nothing_to_show() -> None:
    assert top([]) == ""
