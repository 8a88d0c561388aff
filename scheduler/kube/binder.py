"""The live Binder: the API server's Binding subresource (simulate's is app.offline.RecordingBinder)."""

from __future__ import annotations

from scheduler.kube.client import ApiWriter
from scheduler.model.pod import Pod


class ApiBinder:
    """POST pods/{name}/binding with retries for transient errors (ApiWriter); raises on failure."""

    def __init__(self, writer: ApiWriter) -> None:
        self.writer = writer

    def bind(self, pod: Pod, node_name: str) -> None:
        self.writer.bind(pod.namespace, pod.name, pod.uid, node_name)
