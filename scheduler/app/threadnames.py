"""Give the scheduler's threads their Python names at the OS level, so `top -H`, `ps -L` and
/proc/<pid>/task/<tid>/comm tell the scheduling loop from the binding, event and watch threads.

Where the scheduler's CPU goes is a question of which thread spends it (the benchmark reports it per thread),
and without this every thread is called "python". CPython 3.11 does not set native names itself, so the
app installs a one-shot ``threading.setprofile`` hook: it runs once as each new thread starts, names that
thread with prctl(PR_SET_NAME) and removes itself from the thread. Linux only; elsewhere nothing happens.
Names are cut to the kernel's 15 bytes (``binding_12``, ``events-3`` and the like fit).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
import threading
from types import FrameType
from typing import Any

PR_SET_NAME = 15
MAX_NAME_BYTES = 15


@functools.cache
def _prctl() -> Any | None:
    """libc's prctl on Linux, else None (looked up once)."""
    path = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    return ctypes.CDLL(path, use_errno=True).prctl if path else None


def name_current_thread(name: str) -> None:
    """Set the calling OS thread's name (cut to 15 bytes) where the OS allows it."""
    prctl = _prctl()
    if prctl is not None:
        prctl(PR_SET_NAME, ctypes.c_char_p(name.encode("utf-8", "replace")[:MAX_NAME_BYTES]), 0, 0, 0)


def _on_thread_start(frame: FrameType, event: str, arg: object) -> None:
    sys.setprofile(None)  # this thread only, before anything else it runs
    name_current_thread(threading.current_thread().name)


def install() -> None:
    """Name every thread started from now on. The main thread keeps its name: on Linux it is the process's
    name in `ps` and `top`. A profiler that already hooks new threads (threading.setprofile) keeps its hook."""
    if _prctl() is not None and threading.getprofile() is None:
        threading.setprofile(_on_thread_start)
