"""CheckNodeDiskPressure: the seed-era (v1.16) predicate ``CheckNodeDiskPressurePredicate``.

Reproduces v1.16: every pod is rejected by a node whose ``DiskPressure`` condition is ``True``, with
``node(s) had disk pressure``
(UnschedulableAndUnresolvable: v1.16 counted node conditions as unresolvable by preemption).
"""

from __future__ import annotations

from scheduler.plugins.legacy.node_condition_predicate import NodeConditionPredicate

NAME = "CheckNodeDiskPressure"
ERR_REASON = "node(s) had disk pressure"


class CheckNodeDiskPressure(NodeConditionPredicate):
    """Keeps all pods off nodes reporting disk pressure (v1.16 semantics)."""

    name = NAME
    condition = "DiskPressure"
    reason = ERR_REASON
