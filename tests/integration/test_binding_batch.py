"""Bindings posted in a batch (ApiBinder.bind_batch over Http11Pool.fanout) against the real 1.37.2 API server:
each Binding goes out on a connection of its own, each answer stays with its pod, and a batch's error is taken
up by bind_after as util.BindPod would (a 409 for a pod already bound resolved by reading the pod)."""

from __future__ import annotations

import pytest
from kubernetes import client

from e2e.kube import pod_manifest
from scheduler.edge import BoundElsewhereError
from scheduler.kube.binder import ApiBinder
from scheduler.kube.client import ApiWriter, RawApi
from scheduler.kube.ratelimit import TokenBucket
from scheduler.model.apierrors import ConflictError, NotFoundError
from scheduler.model.pod import Pod, pod_from_api


def _created(api: client.ApiClient, core: client.CoreV1Api, ns: str, name: str) -> Pod:
    made = core.create_namespaced_pod(ns, pod_manifest(name, scheduler_name="nobody"))
    return pod_from_api(api.sanitize_for_serialization(made))


def _node_of(core: client.CoreV1Api, ns: str, name: str) -> str:
    return core.read_namespaced_pod(name, ns).spec.node_name or ""


def test_a_batch_binds_each_pod_on_its_own_connection_and_keeps_each_error_with_its_pod(
        api: client.ApiClient, core: client.CoreV1Api, ns: str) -> None:
    raw = RawApi(api)
    binder = ApiBinder(ApiWriter(raw, TokenBucket(0, 1)))
    pods = [_created(api, core, ns, f"b{i}") for i in range(5)]
    gone = pod_from_api({"metadata": {"namespace": ns, "name": "never-made", "uid": "u-gone"}, "spec": {}})
    outcomes = binder.bind_batch([(p, f"node-{i}") for i, p in enumerate(pods)] + [(gone, "node-x")])
    assert outcomes[:5] == [None] * 5
    assert isinstance(outcomes[5], NotFoundError)
    assert [_node_of(core, ns, p.name) for p in pods] == [f"node-{i}" for i in range(5)]
    assert len(raw._direct._idle) >= 5  # type: ignore[union-attr]  # one connection each, kept for the next batch

    again = binder.bind_batch([(pods[0], "node-0"), (pods[1], "node-9")])
    assert all(isinstance(o, ConflictError) for o in again), "a bound pod's second Binding is a 409"
    first, second = again
    assert first is not None and second is not None
    binder.bind_after(pods[0], "node-0", first)  # bound to our node already: success
    with pytest.raises(BoundElsewhereError) as raised:
        binder.bind_after(pods[1], "node-9", second)
    assert raised.value.node == "node-1"
    assert _node_of(core, ns, pods[1].name) == "node-1"

