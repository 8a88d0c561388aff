"""NodeDeclaredFeatures (v1.37): pods that need a node-declared feature fit only nodes declaring it."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import QueueingHint
from scheduler.model.node import Node, node_from_api
from scheduler.model.pod import Pod, pod_from_api
from scheduler.plugins.node_declared_features import (
    ERR_REASON,
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    VOLUME_BIND_MOUNT_OPTIONS,
    NodeDeclaredFeatures,
    required_features,
)
from tests.builders import make_node, make_pod
from tests.plugins.util import FakeHandle, node_info


def pod_with(**spec: Any) -> Pod:
    base = make_pod()
    raw = dict(base.raw)
    raw["spec"] = {**(raw.get("spec") or {}), **spec}
    return pod_from_api(raw)


def declaring(*features: str) -> Node:
    raw = dict(make_node().raw)
    raw["status"] = {**(raw.get("status") or {}), "declaredFeatures": list(features)}
    return node_from_api(raw)


RESTART_ALL = [{"name": "c", "image": "x", "restartPolicyRules": [
    {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]}]
BIND_MOUNT = [{"name": "c", "image": "x", "volumeMounts": [
    {"name": "v", "mountPath": "/v", "bindMountOptions": {"recursiveReadOnly": True}}]}]


@pytest.mark.parametrize(("spec", "want"), [
    ({}, set()),
    ({"containers": RESTART_ALL}, {RESTART_ALL_CONTAINERS}),
    ({"initContainers": RESTART_ALL}, {RESTART_ALL_CONTAINERS}),
    ({"hostNetwork": True, "hostUsers": False}, {USER_NAMESPACES_HOST_NETWORK}),
    ({"hostNetwork": True}, set()),
    ({"hostUsers": False}, set()),
    ({"containers": BIND_MOUNT}, {VOLUME_BIND_MOUNT_OPTIONS}),
    ({"ephemeralContainers": BIND_MOUNT}, {VOLUME_BIND_MOUNT_OPTIONS}),
    ({"ephemeralContainers": RESTART_ALL}, set()),
    ({"containers": [{"name": "a", "image": "x", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}, *BIND_MOUNT],
      "initContainers": RESTART_ALL}, {RESTART_ALL_CONTAINERS, VOLUME_BIND_MOUNT_OPTIONS}),
], ids=["none", "restart-all", "restart-all-init", "userns-hostnetwork", "hostnetwork-only", "userns-only",
        "bind-mount-options", "bind-mount-options-ephemeral", "restart-all-ephemeral-ignored", "both-later"])
def test_required_features(spec: dict[str, Any], want: set[str]) -> None:
    assert required_features(pod_with(**spec)) == want


def test_a_pod_needing_nothing_is_skipped() -> None:
    _, status = NodeDeclaredFeatures({}, FakeHandle()).pre_filter(CycleState(), make_pod(), [])
    assert status is not None and status.code == Code.SKIP


def test_filter_wants_every_required_feature_declared() -> None:
    pl, state = NodeDeclaredFeatures({}, FakeHandle()), CycleState()
    pod = pod_with(hostNetwork=True, hostUsers=False, containers=BIND_MOUNT)
    assert pl.pre_filter(state, pod, []) == (None, None)
    both = declaring(USER_NAMESPACES_HOST_NETWORK, VOLUME_BIND_MOUNT_OPTIONS, "SomethingElse")
    assert pl.filter(state, pod, node_info(both)) is None
    for node in (declaring(USER_NAMESPACES_HOST_NETWORK), make_node()):
        s = pl.filter(state, pod, node_info(node))
        assert s is not None and (s.code, s.message) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)


def test_hints_queue_only_when_the_features_change() -> None:
    pl = NodeDeclaredFeatures({}, FakeHandle())
    pod = pod_with(containers=BIND_MOUNT)
    same = declaring(VOLUME_BIND_MOUNT_OPTIONS)
    assert pl.is_schedulable_after_node_change(pod, same, declaring(VOLUME_BIND_MOUNT_OPTIONS)) \
        == QueueingHint.QUEUE_SKIP
    assert pl.is_schedulable_after_node_change(pod, make_node(), same) == QueueingHint.QUEUE
    assert pl.is_schedulable_after_node_change(pod, None, same) == QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_update(pod, pod, pod_with()) == QueueingHint.QUEUE
    assert pl.is_schedulable_after_pod_update(pod, pod, pod_with(containers=BIND_MOUNT)) == QueueingHint.QUEUE_SKIP
