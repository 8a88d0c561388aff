"""Small helpers the e2e and integration tests share: pods, waiting, events."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kubernetes import client

T = TypeVar("T")


def wait_for(fn: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.25, what: str = "") -> T:
    """Poll until fn returns a truthy value; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what or fn}; last value: {last!r}")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def pod_manifest(
    name: str,
    *,
    scheduler_name: str = "py-scheduler",
    cpu: str | None = "100m",
    memory: str | None = "64Mi",
    priority_class: str | None = None,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    extra_spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": requests}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    spec.update(extra_spec or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec}


def create_namespace(core: client.CoreV1Api, prefix: str = "e2e") -> str:
    name = unique(prefix)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def delete_if_present(call: Callable[[], object]) -> None:
    """Run a delete call; an object already gone (404) is fine, other API errors propagate."""
    try:
        call()
    except client.ApiException as exc:
        if exc.status != 404:
            raise


def delete_namespace(core: client.CoreV1Api, name: str) -> None:
    """Delete the pods at once (grace 0), then the namespace. A DeleteCollection of thousands of pods can outlast
    the API server's 60 s request timeout on a loaded host (504): it goes on server-side, and the namespace's
    deletion removes whatever is left, so that is no failure."""
    try:
        core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
    except client.ApiException as exc:
        if exc.status not in (404, 504):
            raise
    try:
        core.delete_namespace(name)
    except client.ApiException as exc:
        if exc.status != 404:
            raise


def node_of(core: client.CoreV1Api, ns: str, name: str) -> str | None:
    return core.read_namespaced_pod(name, ns).spec.node_name


def gone(core: client.CoreV1Api, ns: str, name: str) -> bool:
    """The pod no longer exists (404); other API errors propagate."""
    try:
        core.read_namespaced_pod(name, ns)
    except client.ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def scheduled_condition(core: client.CoreV1Api, ns: str, name: str) -> Any:
    for c in core.read_namespaced_pod(name, ns).status.conditions or []:
        if c.type == "PodScheduled":
            return c
    return None


def events_for(api: client.ApiClient, ns: str, name: str, reason: str) -> list[Any]:
    """events.k8s.io/v1 events regarding pod ns/name with this reason. The reason is selected by the server:
    the client's Event model rejects events without eventTime (core/v1 ones such as the node controller's
    NodeNotReady about a pod), and one of them in the list would fail the whole read."""
    selector = f"regarding.name={name},reason={reason}"
    return list(client.EventsV1Api(api).list_namespaced_event(ns, field_selector=selector).items)
