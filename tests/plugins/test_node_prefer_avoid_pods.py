"""NodePreferAvoidPods: pods of an RC/RS a node's preferAvoidPods annotation names score 0 there."""

from __future__ import annotations

import json

from scheduler.framework.interface import CycleState
from scheduler.plugins.legacy.node_prefer_avoid_pods import PREFER_AVOID_PODS_ANNOTATION, NodePreferAvoidPods
from scheduler.testing import make_node, make_pod
from tests.plugins.util import FakeHandle, node_info

AVOID_RS = json.dumps({"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "rs1"}}}]})


def test_avoided_controller_scores_zero_others_max() -> None:
    pl = NodePreferAvoidPods({}, FakeHandle())
    s = CycleState()
    avoiding, garbled, plain = (
        node_info(make_node().name("n").annotations(ann).allocatable(cpu="1", pods="10").obj())
        for ann in ({PREFER_AVOID_PODS_ANNOTATION: AVOID_RS}, {PREFER_AVOID_PODS_ANNOTATION: "not json"}, {}))
    rs1, rs2, sts1 = (make_pod().uid("p1").owner_reference("o", kind, uid=uid).obj()
                      for kind, uid in (("ReplicaSet", "rs1"), ("ReplicaSet", "rs2"), ("StatefulSet", "rs1")))
    assert pl.score(s, rs1, avoiding) == (0, None)  # type: ignore[arg-type]
    assert pl.score(s, rs2, avoiding) == (100, None)  # type: ignore[arg-type]
    # Only RCs and ReplicaSets are avoided; a StatefulSet's pod with a matching uid is not.
    assert pl.score(s, sts1, avoiding) == (100, None)  # type: ignore[arg-type]
    assert pl.score(s, rs1, garbled) == (100, None)  # type: ignore[arg-type]
    assert pl.score(s, rs1, plain) == (100, None)  # type: ignore[arg-type]
