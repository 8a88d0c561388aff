"""Binders: the API server's Binding subresource (live) and an in-memory recorder (simulate)."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.kube.client import ApiWriter
from scheduler.model.pod import Pod


class ApiBinder:
    """POST pods/{name}/binding with retries for transient errors (ApiWriter); raises on failure."""

    def __init__(self, writer: ApiWriter) -> None:
        self.writer = writer

    def bind(self, pod: Pod, node_name: str) -> None:
        self.writer.bind(pod.namespace, pod.name, pod.uid, node_name)


@dataclass(slots=True)
class RecordingBinder:
    """Records bindings instead of posting them; `simulate` confirms them into the cache itself."""

    bindings: list[tuple[str, str]] = field(default_factory=list)

    def bind(self, pod: Pod, node_name: str) -> None:
        self.bindings.append((pod.key, node_name))
