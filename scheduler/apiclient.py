"""The Kubernetes API edge: client construction and the few writes the scheduler makes.

Every write goes through one token bucket (clientConnection qps/burst) and tenacity retries for
transient failures: connection errors, 5xx and 429 (honouring Retry-After). 404 and 409 are final.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import structlog
import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, stop_after_delay

from scheduler.ratelimit import TokenBucket

log = structlog.get_logger(__name__)

TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})


def load_api_client(kubeconfig: str | None, pool_size: int = 32) -> client.ApiClient:
    """An ApiClient from a kubeconfig path, $KUBECONFIG / ~/.kube/config, or the in-cluster config."""
    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)
        except config.ConfigException:
            config.load_kube_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = pool_size
    return client.ApiClient(cfg)


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ApiException):
        return exc.status in TRANSIENT_STATUSES
    return isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError)


def _wait(state: RetryCallState) -> float:
    """Exponential backoff from 0.1 s, capped at 5 s; a 429's Retry-After wins when present."""
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, ApiException) and exc.status == 429 and exc.headers:
        try:
            return min(30.0, float(exc.headers.get("Retry-After", "1")))
        except ValueError:
            return 1.0
    return min(5.0, 0.1 * (2 ** (state.attempt_number - 1)))


def retrying(max_attempts: int = 6, max_seconds: float = 30.0) -> Retrying:
    return Retrying(
        retry=retry_if_exception(is_transient),
        wait=_wait,
        stop=stop_after_attempt(max_attempts) | stop_after_delay(max_seconds),
        reraise=True,
    )


class ApiWriter:
    """The scheduler's writes: bindings, pod status patches and events, rate limited and retried."""

    def __init__(self, api: client.ApiClient, limiter: TokenBucket) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.events = client.EventsV1Api(api)
        self.limiter = limiter

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        for attempt in retrying():
            with attempt:
                self.limiter.wait()
                return fn(*args, **kwargs)
        raise AssertionError("unreachable")

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST the Binding subresource. The client's response model is broken for Binding
        (kubernetes-client/python#547), so the response is not deserialized."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        resp = self._call(self.core.create_namespaced_pod_binding, name, namespace, body, _preload_content=False)
        resp.release_conn()

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self._call(self.core.patch_namespaced_pod_status, name, namespace, patch, _preload_content=False)

    def delete_pod(self, namespace: str, name: str) -> None:
        """DELETE the pod with default options (graceful), as preemption evicts its victims."""
        resp = self._call(self.core.delete_namespaced_pod, name, namespace, _preload_content=False)
        resp.release_conn()

    def update_object(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        """PUT a PersistentVolume or PersistentVolumeClaim (VolumeBinding's PreBind writes the claimRef /
        the selected-node annotation) and return the object the API server stored. The object's
        resourceVersion makes it a conditional update: a concurrent change is a final 409."""
        body = {**obj, "apiVersion": "v1", "kind": kind}
        meta = obj.get("metadata") or {}
        if kind == "PersistentVolume":
            resp = self._call(self.core.replace_persistent_volume, meta.get("name"), body, _preload_content=False)
        elif kind == "PersistentVolumeClaim":
            resp = self._call(self.core.replace_namespaced_persistent_volume_claim, meta.get("name"),
                              meta.get("namespace"), body, _preload_content=False)
        else:
            raise ValueError(f"update_object: unsupported kind {kind}")
        data: dict[str, Any] = json.loads(resp.data or b"{}")
        return data

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> str:
        resp = self._call(self.events.create_namespaced_event, namespace, body, _preload_content=False)
        data = json.loads(resp.data or b"{}")
        return str((data.get("metadata") or {}).get("name", ""))

    def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self._call(self.events.patch_namespaced_event, name, namespace, patch, _preload_content=False)
