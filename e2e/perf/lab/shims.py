"""The C shims of e2e/perf (gilshim.c, cgmark.c), compiled when a tool needs one."""

from __future__ import annotations

import os
import subprocess


def build_shim(directory: str, name: str = "gilshim") -> str:
    """``name``.c of this directory compiled into ``directory``; the shared object's path."""
    out = os.path.join(directory, f"{name}.so")
    src = os.path.join(os.path.dirname(__file__), f"{name}.c")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", out, src, "-ldl"], check=True)
    return out
