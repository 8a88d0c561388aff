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
import sys
import threading
from types import FrameType
from typing import Any

PR_SET_NAME = 15
MAX_NAME_BYTES = 15

_libc: Any = None


def _prctl() -> Any:
    global _libc
    if _libc is None:
        path = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
        _libc = ctypes.CDLL(path, use_errno=True) if path else False
    return _libc.prctl if _libc else None


def name_current_thread(name: str) -> bool:
    """Set the calling OS thread's name (cut to 15 bytes); False where that is not possible."""
    prctl = _prctl()
    if prctl is None:
        return False
    raw = name.encode("utf-8", "replace")[:MAX_NAME_BYTES]
    return bool(prctl(PR_SET_NAME, ctypes.c_char_p(raw), 0, 0, 0) == 0)


def _on_thread_start(frame: FrameType, event: str, arg: object) -> None:
    sys.setprofile(None)  # this thread only, before anything else it runs
    name_current_thread(threading.current_thread().name)


def install() -> None:
    """Name every thread started from now on. The main thread keeps its name: on Linux it is the process's
    name in `ps` and `top`. A profiler that already hooks new threads (threading.setprofile) keeps its hook."""
    if _prctl() is not None and threading.getprofile() is None:
        threading.setprofile(_on_thread_start)
