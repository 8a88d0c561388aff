"""CheckNodeMemoryPressure: the seed-era (v1.16) predicate ``CheckNodeMemoryPressurePredicate``.

Reproduces v1.16: only a BestEffort pod (``qos.GetPodQOS``: no container or init container has a
positive cpu or memory request or limit) is rejected, and only by a node whose ``MemoryPressure``
condition is ``True``, with ``node(s) had memory pressure``. Burstable and Guaranteed pods pass.
v1.16 counted node conditions as unresolvable by preemption, hence UnschedulableAndUnresolvable.
A pod whose resource quantities do not parse is rejected by a node under memory pressure with the
parse error as the reason (its QoS class cannot be known).
"""

from __future__ import annotations

from scheduler.framework.status import Status, unresolvable
from scheduler.model.errors import InvalidObjectError
from scheduler.model.pod import Pod
from scheduler.plugins.legacy.node_condition_predicate import NodeConditionPredicate
from scheduler.plugins.legacy.non_zero_requests import legacy_pod_view

NAME = "CheckNodeMemoryPressure"
ERR_REASON = "node(s) had memory pressure"


class CheckNodeMemoryPressure(NodeConditionPredicate):
    """Keeps BestEffort pods off nodes reporting memory pressure (v1.16 semantics)."""

    name = NAME
    condition = "MemoryPressure"
    reason = ERR_REASON

    def reject(self, pod: Pod) -> Status | None:
        try:
            best_effort = legacy_pod_view(pod).best_effort
        except InvalidObjectError as exc:  # the QoS class cannot be known: do not guess
            return unresolvable(str(exc))
        return unresolvable(ERR_REASON) if best_effort else None
