"""The images the node runs, all made on this machine (it reaches no image registry):

* a Python base: Debian bookworm with its python3.11, made by mmdebstrap from Debian's archive and
  passed to the Dockerfile as ``PYTHON_IMAGE`` (cached: it only depends on the archive);
* py-scheduler from the repo's Dockerfile, built by buildah (daemonless), wheels from PyPI;
* the pod sandbox's pause image around build.sh's ``pause`` binary.

buildah keeps its own storage under the cache directory, so removing that directory removes every
image and layer cache this module made. Images reach containerd as docker-archive tarballs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from e2e.node.host import PAUSE_IMAGE, NodeError, log, mounts_under, run

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("PY_SCHEDULER_NODE_CACHE", Path.home() / ".cache" / "py-scheduler" / "node"))
BASE_IMAGE = "localhost/py-scheduler-python:3.11-bookworm"
APP_IMAGE = "localhost/py-scheduler:e2e"
# What the Dockerfile needs of its base: `python` and `pip` on PATH (the official image has both), the
# venv module, CA certificates for PyPI, and groupadd/useradd.
BASE_PACKAGES = ("python3", "python3-venv", "python3-pip", "python-is-python3", "passwd", "ca-certificates")
DEBIAN_SOURCES = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
# The host's CA bundle, mounted into the build's RUN steps only: where egress to PyPI passes a TLS
# proxy with its own CA (as here), pip in the build trusts what the host trusts; the image is unchanged.
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def buildah(*args: str, timeout: float = 1800.0) -> str:
    """buildah on this module's own storage (under the cache dir), never the host's default one."""
    store = ["--root", str(CACHE / "storage"), "--runroot", str(CACHE / "run")]
    return run(["buildah", *store, *args], timeout=timeout).stdout.strip()


def _exists(image: str) -> bool:
    store = ["--root", str(CACHE / "storage"), "--runroot", str(CACHE / "run")]
    return run(["buildah", *store, "inspect", "--type", "image", image], check=False).returncode == 0


def timed(what: str, fn: Callable[[], object], timings: dict[str, float]) -> None:
    t0 = time.monotonic()
    fn()
    timings[what] = round(time.monotonic() - t0, 1)
    log(f"{what}: {timings[what]} s")


def base_image() -> None:
    """bookworm + python3.11 as an image; made once, then taken from buildah's storage."""
    if _exists(BASE_IMAGE):
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        rootfs = Path(tmp) / "rootfs.tar"
        run([
            "mmdebstrap", "--quiet", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
            "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
            "--dpkgopt=path-exclude=/usr/share/locale/*", "bookworm", str(rootfs), *DEBIAN_SOURCES,
        ], timeout=1800)  # fmt: skip
        container = buildah("from", "scratch")
        try:
            buildah("add", "--quiet", container, str(rootfs), "/")
            buildah("config", "--env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "--env", "LANG=C.UTF-8", "--cmd", "python3", container)  # fmt: skip
            buildah("commit", "--quiet", container, BASE_IMAGE)
        finally:
            buildah("rm", container)
    check = buildah("from", "--pull=never", BASE_IMAGE)
    try:
        version = buildah("run", "--network", "host", check, "python", "--version")
    finally:
        buildah("rm", check)
    if not version.startswith("Python 3.11"):
        raise NodeError(f"the base image's python is {version!r}, not 3.11")


def app_image() -> None:
    """The repo's Dockerfile, unchanged, on the local base; --layers keeps its dependency layer cached."""
    volumes = ["-v", f"{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro"] if HOST_CA_BUNDLE.is_file() else []
    buildah(
        "bud", "--quiet", "--layers", "--network", "host", "--pull=never", *volumes,
        "--build-arg", f"PYTHON_IMAGE={BASE_IMAGE}", "-t", APP_IMAGE, "-f", str(REPO / "Dockerfile"), str(REPO),
    )  # fmt: skip


def pause_image(pause_binary: Path) -> None:
    """FROM scratch with build.sh's pause as entrypoint, as the upstream image (unprivileged user)."""
    container = buildah("from", "scratch")
    try:
        buildah("copy", "--quiet", container, str(pause_binary), "/pause")
        buildah("config", "--entrypoint", '["/pause"]', "--user", "65535:65535", container)
        buildah("commit", "--quiet", container, PAUSE_IMAGE)
    finally:
        buildah("rm", container)


def export(image: str, dest: Path) -> Path:
    """``image`` as a docker-archive that keeps its name (what ``ctr images import`` reads)."""
    dest.unlink(missing_ok=True)
    buildah("push", "--quiet", image, f"docker-archive:{dest}:{image}")
    return dest


def remove_cache() -> None:
    """Every image and layer this module made (for a cold run). Without buildah (its package removed
    too) its storage is only unmounted and deleted."""
    if CACHE.exists():
        store = ["--root", str(CACHE / "storage"), "--runroot", str(CACHE / "run")]
        if shutil.which("buildah"):
            run(["buildah", *store, "rm", "--all"], check=False)
            run(["buildah", *store, "rmi", "--all", "--force"], check=False)
        for target in sorted(mounts_under(CACHE), key=lambda p: -len(p.parts)):
            run(["umount", "--lazy", str(target)], check=False)
        shutil.rmtree(CACHE, ignore_errors=True)
