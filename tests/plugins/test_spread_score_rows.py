"""The spreading plugins' score-row paths (Score for every node in one call, NormalizeScore on the framework's
int64 row) against their per-node Score and NodeScore NormalizeScore, which the other tests pin to upstream."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.framework.interface import CycleState, NodeScore
from scheduler.model.pod import Pod
from scheduler.plugins.legacy.selector_spread import SelectorSpread
from scheduler.plugins.pod_topology_spread import PodTopologySpread
from scheduler.testing import make_node, make_pod
from tests.plugins.pod_to_pod_util import cluster, match, service, spread

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
WEB = {"app": "web"}


def _nodes() -> list[Any]:
    """Two zones of two nodes, a zoneless node and a node in a third zone."""
    zones = {"a": "z1", "b": "z1", "c": "z2", "d": "z2", "e": None, "f": "z3"}
    return [make_node().name(n).labels({HOST: n, **({ZONE: z} if z else {})}).obj() for n, z in zones.items()]


def _pods(counts: dict[str, int]) -> list[Any]:
    return [make_pod().name(f"w-{n}-{i}").uid(f"w-{n}-{i}").labels({**WEB, "foo": "bar"}).node(n).obj()
            for n, k in counts.items() for i in range(k)]


def _both_ways(plugin: Any, handle: Any, pod: Pod) -> tuple[list[int], list[int]]:
    """(per-node Score then NormalizeScore, score_nodes then normalize_values) over every node."""
    infos = handle.snapshot().list()
    state = CycleState()
    assert plugin.pre_score(state, pod, infos) is None
    per_node = [plugin.score(state, pod, ni)[0] for ni in infos]
    row, status = plugin.score_nodes(state, pod, infos)
    assert status is None and row == per_node
    scores = [NodeScore(ni.name, v) for ni, v in zip(infos, per_node, strict=True)]
    assert plugin.normalize_score(state, pod, scores) is None
    values = np.array(row, dtype=np.int64)
    assert plugin.normalize_values(state, pod, values) is None
    return [ns.score for ns in scores], values.tolist()


@pytest.mark.parametrize("counts", [{}, {"a": 2, "b": 1, "c": 1}, {"a": 3, "e": 2, "f": 1}, {"e": 4}])
def test_pod_topology_spread_rows(counts: dict[str, int]) -> None:
    """System defaults (hostname and zone), and an explicit zone constraint that ignores the zoneless node."""
    h = cluster(_nodes(), _pods(counts), [service("s", WEB)])
    defaulted = make_pod().name("p").labels(WEB).obj()
    explicit = make_pod().name("q").labels({"foo": "bar"}).spec_field(
        "topologySpreadConstraints", [spread(1, ZONE, match(foo="bar"), "ScheduleAnyway")]).obj()
    for pod in (defaulted, explicit):
        by_node, by_row = _both_ways(PodTopologySpread({}, h), h, pod)
        assert by_row == by_node


@pytest.mark.parametrize("counts", [{}, {"a": 2, "b": 1, "c": 1}, {"a": 3, "e": 2, "f": 1}, {"e": 4}])
def test_selector_spread_rows(counts: dict[str, int]) -> None:
    h = cluster(_nodes(), _pods(counts), [service("s", WEB)])
    by_node, by_row = _both_ways(SelectorSpread({}, h), h, make_pod().name("p").labels(WEB).obj())
    assert by_row == by_node
