"""Installing Debian packages with apt-get, once for every fixture that needs a host tool.

The Prometheus and browser test fixtures and the e2e-node host all install what is missing the same way:
root and apt-get required, ``apt-get update`` then a non-interactive ``install --no-install-recommends``,
and a failure that says which command failed and what it printed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence

__all__ = ["AptError", "apt_install", "ensure_binary"]


class AptError(RuntimeError):
    """The packages could not be installed (no root, no apt-get, or apt-get failed)."""


def apt_install(packages: Sequence[str]) -> None:
    """Install ``packages`` from the configured Debian archive; raises AptError saying why it could not."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise AptError(f"{' '.join(packages)} is not installed and cannot be (needs root and apt-get): "
                       f"apt-get install {' '.join(packages)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]
    for argv in (["apt-get", "update", "-qq"], install):
        res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise AptError(f"{shlex.join(argv)} failed: {res.stderr.strip()[-2000:]}")


def ensure_binary(name: str) -> str:
    """Path of the binary ``name``, installing the Debian package of the same name when it is missing.

    Quick and idempotent once installed."""
    found = shutil.which(name)
    if found:
        return found
    apt_install([name])
    found = shutil.which(name)
    if not found:
        raise AptError(f"apt-get installed {name} but the binary is not on PATH")
    return found
