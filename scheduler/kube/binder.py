"""The live Binder: the API server's Binding subresource (simulate's is app.offline.RecordingBinder)."""

from __future__ import annotations

import orjson
import structlog

from scheduler.edge import BoundElsewhereError, ConflictError
from scheduler.kube.client import ApiWriter, PodIdentity, api_error, pod_path

log = structlog.get_logger(__name__)


class ApiBinder:
    """POST pods/{name}/binding with retries for transient errors (ApiWriter).

    A Binding whose first POST died after the API server committed it (connection reset, 5xx) is
    retried and answered 409; so a 409 is looked into rather than reported: the pod bound to our node
    is success, bound to another node is BoundElsewhereError, and a pod recreated under the same name
    (the uid precondition failed) is gone, like a 404."""

    def __init__(self, writer: ApiWriter) -> None:
        self.writer = writer

    def bind(self, pod: PodIdentity, node_name: str) -> None:
        try:
            self.writer.bind(pod.namespace, pod.name, pod.uid, node_name)
        except ConflictError as exc:
            self._resolve_conflict(pod, node_name, exc)

    def _resolve_conflict(self, pod: PodIdentity, node_name: str, conflict: ConflictError) -> None:
        current = orjson.loads(self.writer.get(pod_path(pod.namespace, pod.name)))
        if (current.get("metadata") or {}).get("uid") != pod.uid:
            message = orjson.dumps({"message": f"pod {pod.key} was deleted and recreated"}).decode()
            raise api_error(404, "Not Found", message) from conflict
        bound_to = (current.get("spec") or {}).get("nodeName") or ""
        if bound_to == node_name:
            log.info("binding had already succeeded", pod=pod.key, node=node_name)
            return
        if bound_to:
            raise BoundElsewhereError(pod.key, bound_to) from conflict
        raise conflict
