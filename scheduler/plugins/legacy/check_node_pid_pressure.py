"""CheckNodePIDPressure: the seed-era (v1.16) predicate ``CheckNodePIDPressurePredicate``.

Reproduces v1.16: every pod is rejected by a node whose ``PIDPressure`` condition is ``True``, with
``node(s) had pid pressure``
(UnschedulableAndUnresolvable: v1.16 counted node conditions as unresolvable by preemption).
"""

from __future__ import annotations

from scheduler.plugins.legacy.node_condition_predicate import NodeConditionPredicate

NAME = "CheckNodePIDPressure"
ERR_REASON = "node(s) had pid pressure"


class CheckNodePIDPressure(NodeConditionPredicate):
    """Keeps all pods off nodes reporting PID pressure (v1.16 semantics)."""

    name = NAME
    condition = "PIDPressure"
    reason = ERR_REASON
