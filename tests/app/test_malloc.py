"""The glibc allocator levers (scheduler/app/malloc.py) against the real C library of this process."""

from __future__ import annotations

import threading

import pytest

from scheduler.app import malloc

glibc = pytest.mark.skipif(malloc._glibc() is None, reason="not glibc")


@glibc
def test_heap_info_sees_a_large_allocation_and_its_release() -> None:
    before = malloc.heap_info()
    assert before is not None
    block = bytearray(64 * 2**20)  # above the mmap threshold: a mapping of its own
    during = malloc.heap_info()
    del block
    after = malloc.heap_info()
    assert during is not None and after is not None
    assert during.mmap_bytes - before.mmap_bytes >= 64 * 2**20
    assert during.mmap_bytes - after.mmap_bytes >= 64 * 2**20


@glibc
def test_trim_returns_the_free_pages_of_a_fragmented_heap() -> None:
    blocks = [bytearray(4000) for _ in range(20000)]  # ~80 MB of heap chunks, not mmaps
    keep = blocks[::50]  # one survivor every 200 KB pins the heap's top, so free space stays inside it
    del blocks
    info = malloc.heap_info()
    assert info is not None and info.free_bytes >= 40 * 2**20
    assert malloc.trim() is True  # pages inside the heap went back to the kernel
    assert len(keep) == 400


def test_arena_cap_of_zero_leaves_glibc_alone() -> None:
    assert malloc.limit_arenas(0) is False


@glibc
def test_arena_cap_is_accepted() -> None:
    assert malloc.limit_arenas(8 * 64) is True  # glibc's default ceiling for 64 cores: no change for this test run


def test_trimmer_trims_until_stopped() -> None:
    trimmer = malloc.Trimmer(0.01).start()
    done = threading.Event()
    for _ in range(500):
        if trimmer.trims >= 2:
            done.set()
            break
        threading.Event().wait(0.01)
    trimmer.stop()
    trimmer._thread.join(5)
    assert done.is_set() and not trimmer._thread.is_alive()
