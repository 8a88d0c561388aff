"""A writer child for tests/kube/test_writerproc.py: the real ChildWriter loop with a binder that needs no
API server. argv: a marker file; a pod named ``hang`` blocks (never answered) until the marker exists,
which this child creates: the first child hangs, the restarted one answers."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from scheduler.edge import BoundElsewhereError
from scheduler.kube.client import api_error
from scheduler.kube.recorder import ApiEventSink
from scheduler.kube.writerproc import ChildWriter
from scheduler.model.pod import Pod


class FakeBinder:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def bind(self, pod: Pod, node_name: str) -> None:
        if pod.name == "hang":
            if not self.marker.exists():
                self.marker.write_text(str(os.getpid()))
                threading.Event().wait()  # in flight until this child is killed
            return
        if pod.name == "elsewhere":
            raise BoundElsewhereError(pod.key, "other-node")
        if pod.name == "gone":
            raise api_error(404, "Not Found", '{"message": "pods \\"gone\\" not found"}')
        if pod.name == "broken":
            raise ConnectionError("reset by peer")


class NoWrites:
    def create_event(self, namespace: str, body: dict[str, object]) -> str:
        sys.stderr.write(f"event {body['reason']} {body['regarding']}\n")
        return "e1"

    def patch_event(self, namespace: str, name: str, patch: dict[str, object]) -> None: ...
    def patch_pod_status(self, namespace: str, name: str, patch: dict[str, object]) -> None: ...
    def get(self, path: str) -> bytes:
        return b"{}"


if __name__ == "__main__":
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    child = ChildWriter(FakeBinder(Path(sys.argv[1])), ApiEventSink(NoWrites()), out)
    if child.serve(sys.stdin.buffer):
        child.finish()
    os._exit(0)
