"""CPU profiles of kube-apiserver (Go pprof) during a measured batch.

The API server spends more CPU per pod than any scheduler in these runs; its own profile says on what
(which requests, which decoders and encoders, its garbage collector). kube-apiserver serves
``/debug/pprof/profile?seconds=N`` with ``--profiling`` (upstream's default; the local control plane turns
it on only for this mode). A batch's length is not known in advance, so a thread takes consecutive short
profiles until stopped, and ``go tool pprof`` merges them.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
import urllib.request
from pathlib import Path

from e2e.perf.kubeio import Conn

SLICE_SECONDS = 2


class ApiServerProfiler:
    """Consecutive ``SLICE_SECONDS`` CPU profiles of kube-apiserver into ``out_dir``, from start() to stop()."""

    def __init__(self, conn: Conn, out_dir: Path) -> None:
        self.conn, self.out_dir = conn, out_dir
        self.files: list[Path] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="apiserver-pprof", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> list[Path]:
        """Ends after the slice in flight (at most SLICE_SECONDS and a little more)."""
        self._stop.set()
        self._thread.join(SLICE_SECONDS + 10)
        return list(self.files)

    def _loop(self) -> None:
        ctx: ssl.SSLContext = self.conn.ssl_context()
        url = f"{self.conn.host}/debug/pprof/profile?seconds={SLICE_SECONDS}"
        while not self._stop.is_set():
            req = urllib.request.Request(url, headers=self.conn.headers)
            try:
                with urllib.request.urlopen(req, context=ctx, timeout=SLICE_SECONDS + 30) as resp:
                    data = resp.read()
            except Exception as e:  # reported with the run; the batch goes on unprofiled
                self.errors.append(f"{type(e).__name__}: {e}")
                return
            path = self.out_dir / f"apiserver-{len(self.files):03d}.pb.gz"
            path.write_bytes(data)
            self.files.append(path)


def top(files: list[Path], nodecount: int = 40, cumulative: bool = False) -> str:
    """``go tool pprof -top`` over the merged slices (empty if there are none or no go)."""
    go = shutil.which("go")
    if not files or go is None:
        return ""
    cmd = [go, "tool", "pprof", "-top", f"-nodecount={nodecount}"]
    if cumulative:
        cmd.append("-cum")
    res = subprocess.run([*cmd, *map(str, files)], capture_output=True, text=True, timeout=300, check=False)
    return res.stdout if res.returncode == 0 else res.stderr
