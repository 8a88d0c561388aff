"""ServiceAntiAffinity: spread a Service's pods over the values of node labels (legacy priority, 0-100).

Seed era: the Policy priority ``{"argument": {"serviceAntiAffinity": {"label": "zone"}}}``, implemented by
``CalculateAntiAffinityPriority``
(``k8s.io/kubernetes@v1.16.0/pkg/scheduler/algorithm/priorities/selector_spreading.go``, 0-10). In 1.18 it became the
Score half of the ``ServiceAffinity`` plugin, args ``antiAffinityLabelsPreference`` (several labels, each contributing
1/len of the score). Here the filter and the score are two plugins, because they are two different things with two
different arg lists; ``ServiceAffinity`` still scores when given ``antiAffinityLabelsPreference``, through the same
code (``ServiceAntiAffinityScorer``).

Score: the pods on the node (same namespace, not terminating) matched by the selector of the *first* Service
selecting the pod. NormalizeScore, per label L: with N = Σ scores over the scored nodes and C(v) = Σ scores
of the scored nodes whose L is v, a node with L = v gets ``100·(N - C(v))/N`` (100 when N = 0) divided by
the number of labels; a node without L gets nothing for it. The sum over labels is truncated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import ServiceAntiAffinityArgs
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle, NodeScore
from scheduler.framework.status import Status, error, skip
from scheduler.framework.types import ClusterEventWithHint, NodeInfo
from scheduler.model.labels import LabelSelector
from scheduler.model.pod import Pod
from scheduler.plugins.helper.spreading import count_matching_pods, pod_services, selector_from_set

NAME = "ServiceAntiAffinity"


class _PreScoreState:
    __slots__ = ("selector",)

    def __init__(self, selector: LabelSelector) -> None:
        self.selector = selector

    def clone(self) -> _PreScoreState:
        return self


def label_spread_scores(counts: Sequence[int], values: Sequence[Sequence[str | None]], n_labels: int) -> list[int]:
    """The reduce over all labels: ``values[j][i]`` is node i's value of label j (None: no such label)."""
    total = [0.0] * len(counts)
    num = sum(counts)
    top = float(MAX_NODE_SCORE)
    for per_node in values:
        pod_counts: dict[str, int] = {}
        for c, v in zip(counts, per_node, strict=True):
            if v is not None:
                pod_counts[v] = pod_counts.get(v, 0) + c
        for i, v in enumerate(per_node):
            if v is None:
                continue
            f = top
            if num > 0:
                f = top * (float(num - pod_counts[v]) / float(num))
            total[i] += f / float(n_labels)
    return [int(t) for t in total]


class ServiceAntiAffinityScorer:
    """PreScore/Score/NormalizeScore shared by ServiceAntiAffinity and ServiceAffinity (1.18 form)."""

    def __init__(self, labels: tuple[str, ...], handle: Handle, state_key: str) -> None:
        self.labels = labels
        self.handle = handle
        self.state_key = state_key

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Pick the first selecting Service's selector once per cycle; no labels → nothing to score."""
        if not self.labels:
            return skip()
        services = pod_services(pod, self.handle.objects())
        sel = ((services[0].get("spec") or {}).get("selector") or {}) if services else {}
        state.write(self.state_key, _PreScoreState(selector_from_set(sel)))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(self.state_key)
        if not isinstance(s, _PreScoreState):
            return 0, error(f'error reading "{self.state_key}" from cycleState: not found')
        return count_matching_pods(node_info.pods.values(), s.selector, pod.namespace), None

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        snapshot = self.handle.snapshot()
        node_labels = []
        for ns in scores:
            ni = snapshot.get(ns.name)
            if ni is None or ni.node is None:
                return error(f'getting node "{ns.name}" from Snapshot: not found')
            node_labels.append(ni.node.labels)
        values = [[labels.get(label) for labels in node_labels] for label in self.labels]
        for ns, value in zip(
            scores, label_spread_scores([ns.score for ns in scores], values, len(self.labels)), strict=True
        ):
            ns.score = value
        return None


class ServiceAntiAffinity:
    """Score-only plugin: spread the pods of the pod's first Service over the values of the given labels."""

    name = NAME

    def __init__(self, args: ServiceAntiAffinityArgs | Mapping[str, Any], handle: Handle) -> None:
        labels = plugin_args(ServiceAntiAffinityArgs, args).anti_affinity_labels_preference
        self._scorer = ServiceAntiAffinityScorer(labels, handle, "PreScore" + NAME)

    @property
    def labels(self) -> tuple[str, ...]:
        return self._scorer.labels

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        return self._scorer.pre_score(state, pod, nodes)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return self._scorer.score(state, pod, node_info)

    def score_extensions(self) -> ServiceAntiAffinity:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        return self._scorer.normalize_score(state, pod, scores)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A score plugin never rejects a pod, so no event can be needed to retry one."""
        return []
