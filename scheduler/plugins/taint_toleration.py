"""TaintToleration (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go``).

Filter: the first node taint with effect NoSchedule or NoExecute that no pod toleration tolerates
rejects the node as UnschedulableAndUnresolvable (preemption cannot remove a taint), with the reason
``node(s) had untolerated taint(s)``, without the taint (as since v1.34; releases before printed
``{key: value}``).
Score: the number of PreferNoSchedule taints not tolerated by the pod's tolerations whose effect is
empty or PreferNoSchedule; NormalizeScore reverses it (100 - 100·c/max; all zero → 100).
Toleration matching is core/v1 ToleratesTaint: an empty effect matches every effect, an empty key
with Exists matches every key, Equal compares values.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from scheduler.framework.batch import SignsByTemplate
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeScore,
    PreFilterResult,
    ScoreRow,
    score_by_batch,
)
from scheduler.framework.status import Status, error, unresolvable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, Taint, Toleration, first_untolerated
from scheduler.plugins.helper.normalize_score import default_normalize_score, default_normalize_values

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME

DO_NOT_SCHEDULE = frozenset({NO_SCHEDULE, NO_EXECUTE})


UNTOLERATED_REASON = "node(s) had untolerated taint(s)"


def prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> tuple[Toleration, ...]:
    """Tolerations that can tolerate a PreferNoSchedule taint: empty effect or PreferNoSchedule."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def count_intolerable_prefer_no_schedule(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int:
    """The raw score: PreferNoSchedule taints the pod does not tolerate (more is worse)."""
    return sum(
        1 for taint in taints if taint.effect == PREFER_NO_SCHEDULE and not any(t.tolerates(taint) for t in tolerations)
    )


def _field_error(obj: Pod | Node, prefix: str) -> str | None:
    """The object's parse error if it concerns `prefix` (its tolerations or taints could not be read)."""
    err = obj.parse_error
    return str(err) if err is not None and err.field.startswith(prefix) else None


class TaintToleration(SignsByTemplate):
    """Keeps pods off nodes whose NoSchedule/NoExecute taints they do not tolerate."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable: verdicts and scores depend on the pod template and the one node only."""
        return ()

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """v1.37's PreFilter: nothing to do (it skips only for a deferred resize, an alpha gate's case)."""
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return error("node not found")
        taints = node.taints
        if not taints and node.parse_error is None and pod.parse_error is None:
            return None  # the common untainted node
        problem = _field_error(pod, "spec.tolerations") or _field_error(node, "spec.taints")
        if problem is not None:  # unreadable tolerations/taints: never guess that a taint is tolerated
            return unresolvable(problem)
        taint = first_untolerated(taints, pod.tolerations, DO_NOT_SCHEDULE)
        if taint is None:
            return None
        return unresolvable(UNTOLERATED_REASON)

    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None] | None:
        """Untainted, well-formed nodes pass at the cost of one attribute read; the rest go to ``filter``."""
        if pod.parse_error is not None:
            return lambda node_info: self.filter(state, pod, node_info)

        def check(node_info: NodeInfo) -> Status | None:
            node = node_info.node
            if node is not None and not node.taints and node.parse_error is None:
                return None
            return self.filter(state, pod, node_info)

        return check

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, prefer_no_schedule_tolerations(pod.tolerations))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return score_by_batch(self, state, pod, node_info)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """``score`` for every node; untainted nodes cost one attribute read."""
        tolerations = state.get(PRE_SCORE_STATE_KEY)
        if tolerations is None:
            return [], error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        out: list[int] = []
        append = out.append
        for ni in nodes:
            node = ni.node
            if node is None:
                return [], error("node not found")
            taints = node.taints
            if not taints:
                append(0)
            else:
                append(count_intolerable_prefer_no_schedule(taints, tolerations))
        return out, None

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None

    def normalize_values(self, state: CycleState, pod: Pod, values: ScoreRow) -> Status | None:
        default_normalize_values(MAX_NODE_SCORE, True, values)
        return None

    def score_extensions(self) -> TaintToleration:
        return self

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node gaining a tolerable taint set, or the pod gaining tolerations, may help."""
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue only when the node goes from having an untolerated taint to having none."""
        if new is None:
            return QueueingHint.QUEUE
        was_untolerated = old is None or first_untolerated(old.taints, pod.tolerations, DO_NOT_SCHEDULE) is not None
        is_untolerated = first_untolerated(new.taints, pod.tolerations, DO_NOT_SCHEDULE) is not None
        return QueueingHint.QUEUE if was_untolerated and not is_untolerated else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """Only the pending pod's own new tolerations can change this plugin's verdict for it."""
        if new is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if new.uid == pod.uid else QueueingHint.QUEUE_SKIP
