"""VolumeBinding's Score (v1.37, StorageCapacityScoring beta and on): the free storage of the pod's classes."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config.types_pluginargs import UtilizationShapePoint
from scheduler.framework.features import Features
from scheduler.framework.status import Code
from scheduler.plugins.volume_binding import VolumeBinding
from scheduler.plugins.volume_binding_score import DEFAULT_SHAPE, build_scorer, volume_capacity_scorer
from tests.plugins.test_volume_binding import PROV, WAIT, Env, one, wait_pv
from tests.plugins.volume_objects import capacity, csi_driver, pvc


def scores(env: Env, pod: Any) -> dict[str, int]:
    """PreFilter, Filter on both nodes, PreScore, then Score per node."""
    state, s = env.prefilter(pod)
    if s is None:
        for n in ("node-1", "node-2"):
            assert env.filter(state, pod, n) is None
    assert env.pl.pre_score(state, pod, []) is None
    out = {}
    for n in ("node-1", "node-2"):
        value, status = env.pl.score(state, pod, env.handle.snapshot().get(n))
        assert status is None
        out[n] = value
    return out


def provisioning(request: str = "10Gi") -> list[dict[str, Any]]:
    return [pvc("c", cls=PROV, request=request), csi_driver("csi.example.com", True),
            capacity("cap-a", PROV, "20Gi", {"zone": "a"}), capacity("cap-b", PROV, "40Gi", {"zone": "b"})]


def test_default_shape_prefers_the_node_with_more_free_capacity() -> None:
    # 10Gi of 20Gi: 50 % -> 100 - 50 = 50; of 40Gi: 25 % -> 75
    assert scores(Env(provisioning()), one("c")) == {"node-1": 50, "node-2": 75}


def test_static_binding_scores_the_claim_against_the_pv() -> None:
    # the 1Gi claim takes the 4Gi PV on node-1: 25 % -> 75; node-2 has no PV and fails Filter, so only node-1
    env = Env([pvc("c", cls=WAIT, request="1Gi"), wait_pv("pv", "node-1", size="4Gi")])
    pod = one("c")
    state, s = env.prefilter(pod)
    assert s is None and env.filter(state, pod, "node-1") is None
    assert env.pl.pre_score(state, pod, []) is None
    assert env.pl.score(state, pod, env.handle.snapshot().get("node-1")) == (75, None)


def test_a_pod_without_claims_is_scored_zero_not_skipped() -> None:
    """PreScore skips only with the gate off, so every pod gets VolumeBinding's 0 (and upstream logs it)."""
    env = Env()
    assert scores(env, one()) == {"node-1": 0, "node-2": 0}
    state, _ = env.prefilter(one())
    assert env.pl.score_nodes(state, one(), [env.handle.snapshot().get("node-1")]) == ([0], None)


def test_a_configured_shape_replaces_the_default() -> None:
    env = Env(provisioning())
    env.pl = VolumeBinding({"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
                           env.handle)
    assert scores(env, one("c")) == {"node-1": 50, "node-2": 25}


def test_gate_off_skips_scoring_and_refuses_a_shape() -> None:
    env = Env(provisioning())
    env.handle.gates = Features(enable_storage_capacity_scoring=False)
    pl = VolumeBinding({}, env.handle)
    state, _ = env.prefilter(one("c"))
    s = pl.pre_score(state, one("c"), [])
    assert s is not None and s.code == Code.SKIP
    with pytest.raises(ValueError, match="turn on the feature gate StorageCapacityScoring"):
        VolumeBinding({"shape": [{"utilization": 0, "score": 10}]}, env.handle)
    assert volume_capacity_scorer(None, False) is None


def test_classes_average_rounded_half_away_from_zero() -> None:
    score = build_scorer(DEFAULT_SHAPE)
    # one class at 50 % (50), one at 25 % (75): (50 + 75) / 2 = 62.5 -> 63; over capacity or none -> 0
    assert score({"a": (5, 10), "b": (1, 4)}) == 63
    assert score({"a": (11, 10)}) == 0 and score({"a": (1, 0)}) == 0 and score({}) == 0
    assert build_scorer([UtilizationShapePoint(50, 10)])({"a": (1, 10)}) == 100
