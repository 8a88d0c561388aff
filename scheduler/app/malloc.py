"""Keep the C allocator's footprint from creeping under pod churn (glibc only; a no-op elsewhere).

Objects above pymalloc's 512 bytes (watch buffers, JSON, numpy rows, TLS records) come from glibc's malloc.
glibc gives each thread that allocates its own arena, up to 8 a core: the binding, event, watch and
server threads each fragment a heap of their own, and free memory inside a heap stays resident unless it
sits at the heap's top. Under steady create/delete churn that showed as RSS creeping up for half an hour
while the count of live Python objects stayed flat (docs/robustness.md, "Memory under churn"). Two levers,
both glibc's own: ``mallopt(M_ARENA_MAX)`` caps the arenas (set before the threads start), and a periodic
``malloc_trim(0)`` hands the free pages inside every arena back to the kernel. The trim holds each arena's
lock while it walks the free chunks, and a thread that allocates from that arena waits. The scheduler's heap
under churn has few free runs of whole pages (18-31 released per trim in a soak), so a trim is short; a
deliberately fragmented 85 MB heap (69 MB free in 2 KB holes) took 30-85 ms, which is why it runs once a
minute, not on every collection.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
import time
from dataclasses import dataclass

import structlog

log = structlog.get_logger(__name__)

M_ARENA_MAX = -8  # glibc malloc.h


@dataclass(frozen=True)
class HeapInfo:
    """``mallinfo2``'s totals over every arena, in bytes."""

    arena_bytes: int  # obtained from the kernel with brk/mmap for the heaps (not counting large mmaps)
    in_use_bytes: int  # handed out to the program
    free_bytes: int  # free inside the heaps: fragmentation when it stays high
    mmap_bytes: int  # large blocks mapped on their own


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The process's C library when it is glibc (it has ``malloc_trim``), else None (musl, macOS). Looked
    up once: ``find_library`` runs ``ldconfig`` in a subprocess, and the trimmer asks every minute."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


def limit_arenas(count: int) -> bool:
    """Cap glibc's malloc arenas at ``count`` (0 leaves glibc's default); True when it took effect.

    Only arenas created afterwards are affected, so this runs before the scheduler starts its threads."""
    libc = _glibc()
    if count <= 0 or libc is None:
        return False
    return bool(libc.mallopt(ctypes.c_int(M_ARENA_MAX), ctypes.c_int(count)))


def trim() -> bool:
    """Return free heap pages to the kernel; True when glibc released any."""
    libc = _glibc()
    return bool(libc.malloc_trim(ctypes.c_size_t(0))) if libc is not None else False


def heap_info() -> HeapInfo | None:
    """The allocator's totals (glibc 2.33+), for the logs and the soak; None where unavailable."""
    libc = _glibc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        return None
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return HeapInfo(info.arena, info.uordblks, info.fordblks, info.hblkhd)


class Trimmer:
    """A daemon thread that calls :func:`trim` every ``period`` seconds until :meth:`stop`."""

    def __init__(self, period: float) -> None:
        self.period = period
        self.trims = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="malloc-trim", daemon=True)

    def start(self) -> Trimmer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            began = time.perf_counter()
            trim()
            took_ms = (time.perf_counter() - began) * 1e3
            self.trims += 1
            info = heap_info()
            if info is not None:
                log.debug("malloc heap trimmed", took_ms=round(took_ms, 1),
                          in_use_mb=round(info.in_use_bytes / 2**20, 1), free_mb=round(info.free_bytes / 2**20, 1),
                          arena_mb=round(info.arena_bytes / 2**20, 1))
