"""OS-level thread names: what `top -H` and the benchmark's per-thread CPU read."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.app import threadnames

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_NAME) is Linux's")


@pytest.fixture
def installed() -> Iterator[None]:
    threadnames.install()
    try:
        yield
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]


def _seen_from_inside(name: str) -> tuple[str, object]:
    out: dict[str, object] = {}

    def body() -> None:
        out["comm"] = Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()
        out["profile"] = sys.getprofile()

    t = threading.Thread(target=body, name=name)
    t.start()
    t.join()
    return str(out["comm"]), out["profile"]


def test_new_threads_carry_their_python_name_and_the_hook_leaves_them(installed: None) -> None:
    comm, profile = _seen_from_inside("binding_7")
    assert comm == "binding_7"
    assert profile is None  # the one-shot hook removed itself before the thread's own code ran


def test_long_names_are_cut_to_the_kernel_limit(installed: None) -> None:
    comm, _ = _seen_from_inside("scheduling-queue-flush")
    assert comm == "scheduling-queue-flush"[: threadnames.MAX_NAME_BYTES]


def test_the_main_thread_keeps_the_process_name(installed: None) -> None:
    before = Path("/proc/self/comm").read_text()
    _seen_from_inside("other")
    assert Path("/proc/self/comm").read_text() == before


def test_without_the_hook_threads_keep_the_process_name() -> None:
    comm, _ = _seen_from_inside("binding_7")
    assert comm == Path("/proc/self/comm").read_text().strip()


def test_a_profilers_thread_hook_is_left_in_place() -> None:
    def theirs(frame: object, event: str, arg: object) -> None:
        return None

    threading.setprofile(theirs)  # type: ignore[arg-type]
    try:
        threadnames.install()
        assert threading.getprofile() is theirs
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
