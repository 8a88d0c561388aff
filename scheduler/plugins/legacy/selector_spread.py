"""SelectorSpread: prefer nodes and zones with fewer pods of the pod's workload (legacy, 0-100 framework form).

This is the seed-era SelectorSpreadPriority
(``k8s.io/kubernetes@v1.16.0/pkg/scheduler/algorithm/priorities/selector_spreading.go``, scores 0-10) in the shape it
had as a framework plugin from 1.19 to 1.28 (``plugins/selectorspread``, scores 0-100), when it was removed in favour
of PodTopologySpread's system defaults.

The workload group: 1.16 collected one selector per Service / RC / ReplicaSet / StatefulSet matching the pod
and counted pods matching *all* of them; the framework form merged them into one selector
(``helper.DefaultSelector``: the Services selecting the pod plus the pod's controller). We use the merged
form. For Services both are the same ("matching all" = matching the merged requirements); for controllers
the framework form looks only at the pod's own controller (ownerReferences) instead of every controller
whose selector happens to match the pod.

Score: pods of the group on the node. NormalizeScore (the old Reduce), per node with count c:
``node = 100·(maxNode - c)/maxNode`` (100 when maxNode is 0); when some scored node has a zone and this node
has one, ``zone = 100·(maxZone - zoneCount)/maxZone`` and ``score = node·(1 - 2/3) + zone·2/3``; truncated.
Zones come first because losing a zone loses all its nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from scheduler.framework.batch import SignsByTemplate
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle, NodeScore, ScoreRow
from scheduler.framework.status import Status, error, skip
from scheduler.framework.types import ClusterEventWithHint, NodeInfo
from scheduler.model.labels import LabelSelector
from scheduler.model.pod import Pod
from scheduler.plugins.helper.generation_memo import GenerationMemo
from scheduler.plugins.helper.spreading import COUNTED_SELECTORS, default_selector, matching_pod_counter

NAME = "SelectorSpread"
PRE_SCORE_STATE_KEY = "PreScore" + NAME

# When zone information is present, 2/3 of the weight goes to zone spreading, 1/3 to node spreading.
ZONE_WEIGHTING = 2.0 / 3.0


class _PreScoreState:
    __slots__ = ("count", "nodes", "selector")

    def __init__(self, selector: LabelSelector, count: Callable[[NodeInfo], int], nodes: Sequence[NodeInfo]) -> None:
        self.selector = selector
        self.count = count  # matching pods on a node (matching_pod_counter)
        # PreScore's nodes, which Score and NormalizeScore get in the same order: the score row's zones
        self.nodes = nodes

    def clone(self) -> _PreScoreState:
        return self


def skip_selector_spread(pod: Pod) -> bool:
    """Pods with their own topologySpreadConstraints are spread by PodTopologySpread, not here."""
    raw = (pod.raw.get("spec") or {}).get("topologySpreadConstraints")
    return isinstance(raw, list) and len(raw) > 0


def spread_scores(counts: Sequence[int], zones: Sequence[str]) -> list[int]:
    """The Reduce step on 0-100: ``counts[i]`` pods on node i, ``zones[i]`` its zone key ("" = none).

    Float arithmetic in the same order as upstream so truncation lands on the same integers. A node's score
    follows from its (count, zone) alone, and a cycle's nodes have few distinct ones: each is computed once.
    """
    max_node = max(counts, default=0)
    by_zone: dict[str, int] = {}
    for c, z in zip(counts, zones, strict=True):
        if z:
            by_zone[z] = by_zone.get(z, 0) + c
    max_zone = max(by_zone.values(), default=0)
    top = float(MAX_NODE_SCORE)
    known: dict[tuple[int, str], int] = {}
    out = []
    for pair in zip(counts, zones, strict=True):
        value = known.get(pair)
        if value is None:
            c, z = pair
            f = top
            if max_node > 0:
                f = top * (float(max_node - c) / float(max_node))
            if z:  # a zone of its own implies some scored node has one
                zone_score = top
                if max_zone > 0:
                    zone_score = top * (float(max_zone - by_zone[z]) / float(max_zone))
                f = (f * (1.0 - ZONE_WEIGHTING)) + (ZONE_WEIGHTING * zone_score)
            value = known[pair] = int(f)
        out.append(value)
    return out


class SelectorSpread(SignsByTemplate):
    """PreScore (deduce the workload selector once), Score (count on the node), NormalizeScore (reduce)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        self._counts: GenerationMemo[int] = GenerationMemo(COUNTED_SELECTORS)

    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable: a score plugin rejects no node; its scores are recomputed each cycle."""
        return ()

    def rescore_each_cycle(self, pod: Pod) -> bool:
        """Its scores count the workload's pods per node and zone, which every placement changes."""
        return True

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Skip pods with explicit spread constraints (upstream then scores every node 0: same effect)."""
        if skip_selector_spread(pod):
            return skip()
        selector = default_selector(pod, self.handle.objects())
        counter = matching_pod_counter(self._counts, selector, pod.namespace, len(self.handle.snapshot().list()))
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(selector, counter, nodes))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        """Live pods of the pod's namespace on this node matched by the workload selector."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return 0, error(f'Error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return s.count(node_info), None

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """``score`` for every node in one call."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return [], error(f'Error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return list(map(s.count, nodes)), None

    def score_extensions(self) -> SelectorSpread:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        snapshot = self.handle.snapshot()
        zones = []
        for ns in scores:
            ni = snapshot.get(ns.name)
            if ni is None or ni.node is None:
                return error(f'getting node "{ns.name}" from Snapshot: not found')
            zones.append(ni.node.zone_key)
        for ns, value in zip(scores, spread_scores([ns.score for ns in scores], zones), strict=True):
            ns.score = value
        return None

    def normalize_values(self, state: CycleState, pod: Pod, values: ScoreRow) -> Status | None:
        """``normalize_score`` on the framework's score row, the zones read from PreScore's nodes (the row's,
        in its order) instead of a snapshot lookup by name per node."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return error(f'Error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        if len(s.nodes) != len(values):
            return error(f"{len(values)} scores for the {len(s.nodes)} nodes of PreScore")
        try:
            zones = [ni.node.zone_key for ni in s.nodes]  # type: ignore[union-attr]  # None: AttributeError
        except AttributeError:  # a NodeInfo without its node
            missing = next(ni.name for ni in s.nodes if ni.node is None)
            return error(f'getting node "{missing}" from Snapshot: not found')
        values[:] = spread_scores(values.tolist(), zones)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A score plugin never rejects a pod, so no event can be needed to retry one."""
        return []
