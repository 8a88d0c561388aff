"""ServiceAffinity: keep a Service's pods on nodes with the same values of some labels (legacy predicate).

Seed era: the Policy predicate ``{"argument": {"serviceAffinity": {"labels": ["region"]}}}``
(``CheckServiceAffinity``, ``k8s.io/kubernetes@v1.16.0/pkg/scheduler/algorithm/predicates/predicates.go``); 1.18-1.21
the ``ServiceAffinity`` framework plugin with args ``affinityLabels`` (filter) and ``antiAffinityLabelsPreference``
(score). The scoring half is the ``ServiceAntiAffinity`` plugin here; given ``antiAffinityLabelsPreference`` this
plugin still scores the 1.18 way through the same code.

Filter: the values the pod must find on the node are its nodeSelector's values for the affinity labels;
labels it does not pin are back-filled from the node running the first "pod of the same service" (a pod of
the namespace carrying all the incoming pod's labels), provided some Service selects the incoming pod. A
node without the resulting values fails with ``node(s) didn't match service affinity`` (Unschedulable).
Only that first pod matters, so the pods are listed only when a label has to be back-filled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import ServiceAffinityArgs
from scheduler.framework.interface import CycleState, Handle, NodeScore, PreFilterResult
from scheduler.framework.status import Status, error, skip, unschedulable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.pod import Pod
from scheduler.plugins.helper.spreading import as_node, as_pod, pod_services, selector_from_set
from scheduler.plugins.legacy.service_anti_affinity import ServiceAntiAffinityScorer

NAME = "ServiceAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't match service affinity"


class _PreFilterState:
    """Pods of the same service (with the node each is on) and whether a Service selects the pod."""

    __slots__ = ("has_services", "matching_pods")

    def __init__(self, has_services: bool, matching_pods: list[tuple[Pod, str]]) -> None:
        self.has_services = has_services
        self.matching_pods = matching_pods

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.has_services, list(self.matching_pods))


def pinned_labels(labels: Sequence[str], node_selector: Mapping[str, str]) -> dict[str, str]:
    """findLabelsInSet: the affinity labels the pod's nodeSelector already fixes."""
    return {label: node_selector[label] for label in labels if label in node_selector}


def _same_service(pod: Pod, other: Pod) -> bool:
    """Same namespace and carrying all of the pod's labels (a pod without labels matches every pod)."""
    return other.namespace == pod.namespace and all(other.labels.get(k) == v for k, v in pod.labels.items())


class ServiceAffinity:
    """PreFilter/Filter on ``affinityLabels``; PreScore/Score/NormalizeScore on ``antiAffinityLabelsPreference``."""

    name = NAME

    def __init__(self, args: ServiceAffinityArgs | Mapping[str, Any], handle: Handle) -> None:
        a = plugin_args(ServiceAffinityArgs, args)
        self.affinity_labels = a.affinity_labels
        self.handle = handle
        self._scorer = ServiceAntiAffinityScorer(a.anti_affinity_labels_preference, handle, "PreScore" + NAME)

    # --- PreFilter / Filter ----------------------------------------------------------------------

    def _needs_backfill(self, pod: Pod) -> bool:
        return len(self.affinity_labels) > len(pinned_labels(self.affinity_labels, pod.node_selector))

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Find the Services selecting the pod and, when a label must be back-filled, the service's pods."""
        if not self.affinity_labels:
            return None, skip()
        has_services = bool(pod_services(pod, self.handle.objects()))
        matching: list[tuple[Pod, str]] = []
        if has_services and self._needs_backfill(pod):
            for ni in self.handle.snapshot().list():
                matching.extend((p, ni.name) for p in ni.pods.values() if _same_service(pod, p))
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(has_services, matching))
        return None, None

    def pre_filter_extensions(self) -> ServiceAffinity:
        return self

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if s.has_services and self._needs_backfill(pod) and _same_service(pod, pod_to_add):
            s.matching_pods.append((pod_to_add, node_info.name))
        return None

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        for i, (p, _) in enumerate(s.matching_pods):
            if p.name == pod_to_remove.name and p.namespace == pod_to_remove.namespace:
                del s.matching_pods[i]
                break
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        node = node_info.node
        if node is None:
            return error("node not found")
        wanted = pinned_labels(self.affinity_labels, pod.node_selector)
        if len(self.affinity_labels) > len(wanted) and s.has_services:
            first = _first_present(s.matching_pods, node_info)
            if first is not None:
                ref = self.handle.snapshot().get(first)
                if ref is None or ref.node is None:
                    return error("node not found")
                for label in self.affinity_labels:
                    if label not in wanted and label in ref.node.labels:
                        wanted[label] = ref.node.labels[label]
        if selector_from_set(wanted).matches(node.labels):
            return None
        return unschedulable(ERR_REASON)

    # --- scoring (1.18: the anti-affinity half of this plugin) -----------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        return self._scorer.pre_score(state, pod, nodes)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return self._scorer.score(state, pod, node_info)

    def score_extensions(self) -> ServiceAffinity:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        return self._scorer.normalize_score(state, pod, scores)

    # --- queueing hints --------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Nodes that appear or are relabelled; service pods that go away or stop matching; Services that
        change (the back-filling only happens while a Service selects the pod)."""
        pod_actions = ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
        svc_actions = ActionType.ADD | ActionType.UPDATE | ActionType.DELETE
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, pod_actions), self.is_schedulable_after_pod_change),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_actions), self.is_schedulable_after_node_change),
            ClusterEventWithHint(
                ClusterEvent(EventResource.SERVICE, svc_actions), self.is_schedulable_after_service_change
            ),
        ]

    def is_schedulable_after_pod_change(self, pod: Pod, old_obj: object, new_obj: object) -> QueueingHint:
        """An assigned pod of the same service deleted, or relabelled out of it: the reference node may change.
        The pod's own relabelling changes which pods count as its service's."""
        old, new = as_pod(old_obj), as_pod(new_obj)
        if new is not None and new.uid == pod.uid:
            return QueueingHint.QUEUE
        if old is None or not old.node_name or not _same_service(pod, old):
            return QueueingHint.QUEUE_SKIP
        if new is not None and _same_service(pod, new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_node_change(self, pod: Pod, old_obj: object, new_obj: object) -> QueueingHint:
        """A node (newly) carrying every affinity label, or changing the value of one of them."""
        old, new = as_node(old_obj), as_node(new_obj)
        if new is None or not all(label in new.labels for label in self.affinity_labels):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        changed = any(old.labels.get(label) != new.labels.get(label) for label in self.affinity_labels)
        return QueueingHint.QUEUE if changed else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_service_change(self, pod: Pod, old_obj: object, new_obj: object) -> QueueingHint:
        """Only Services of the pod's namespace can select it."""
        for obj in (new_obj, old_obj):
            if isinstance(obj, Mapping):
                ns = (obj.get("metadata") or {}).get("namespace") or "default"
                return QueueingHint.QUEUE if ns == pod.namespace else QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


def _first_present(matching: Sequence[tuple[Pod, str]], node_info: NodeInfo) -> str | None:
    """NodeInfo.FilterOutPods then the first pod's node: a pod claiming this node but no longer in this
    NodeInfo (removed for preemption) does not count."""
    here = node_info.name
    for p, node_name in matching:
        if node_name != here or p.uid in node_info.pods:
            return node_name
    return None
