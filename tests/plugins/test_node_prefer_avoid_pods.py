"""NodePreferAvoidPods: pods of an RC/RS a node's preferAvoidPods annotation names score 0 there."""

from __future__ import annotations

import json

from scheduler.framework.interface import CycleState
from scheduler.model.node import node_from_api
from scheduler.model.pod import pod_from_api
from scheduler.plugins.legacy.node_prefer_avoid_pods import PREFER_AVOID_PODS_ANNOTATION, NodePreferAvoidPods
from tests.plugins.util import FakeHandle, node_info


def node(annotation: str | None) -> object:
    meta: dict[str, object] = {"name": "n"}
    if annotation is not None:
        meta["annotations"] = {PREFER_AVOID_PODS_ANNOTATION: annotation}
    return node_info(node_from_api({"metadata": meta, "status": {"allocatable": {"cpu": "1", "pods": "10"}}}))


def owned_pod(kind: str, uid: str) -> object:
    return pod_from_api({"metadata": {"name": "p", "namespace": "default", "uid": "p1", "ownerReferences": [
        {"kind": kind, "uid": uid, "name": "o", "apiVersion": "apps/v1", "controller": True}]},
        "spec": {"containers": [{"name": "c"}]}})


AVOID_RS = json.dumps({"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "rs1"}}}]})


def test_avoided_controller_scores_zero_others_max() -> None:
    pl = NodePreferAvoidPods({}, FakeHandle())
    s = CycleState()
    assert pl.score(s, owned_pod("ReplicaSet", "rs1"), node(AVOID_RS)) == (0, None)  # type: ignore[arg-type]
    assert pl.score(s, owned_pod("ReplicaSet", "rs2"), node(AVOID_RS)) == (100, None)  # type: ignore[arg-type]
    # Only RCs and ReplicaSets are avoided; a StatefulSet's pod with a matching uid is not.
    assert pl.score(s, owned_pod("StatefulSet", "rs1"), node(AVOID_RS)) == (100, None)  # type: ignore[arg-type]
    assert pl.score(s, owned_pod("ReplicaSet", "rs1"), node("not json")) == (100, None)  # type: ignore[arg-type]
    assert pl.score(s, owned_pod("ReplicaSet", "rs1"), node(None)) == (100, None)  # type: ignore[arg-type]
