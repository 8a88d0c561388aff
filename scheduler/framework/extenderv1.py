"""The extender wire types (upstream ``k8s.io/kube-scheduler/extender/v1/types.go``).

A leaf: it imports nothing from the framework, so the Extender protocol (``framework/extender.py``),
preemption and the HTTP client (``scheduler/extender.py``) all use these types without importing each
other (upstream keeps them in their own module for the same reason).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.model.pod import Pod

# Extender scores are in [MIN_EXTENDER_PRIORITY, MAX_EXTENDER_PRIORITY] (extender/v1) and are scaled
# to the plugins' range by MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY.
MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10


@dataclass(slots=True)
class HostPriority:
    """One entry of a prioritize answer (extender/v1 HostPriority)."""

    host: str
    score: int


@dataclass(slots=True)
class Victims:
    """The pods to evict on one node (most important first) and how many PDBs that violates
    (extender/v1 Victims)."""

    pods: list[Pod]
    num_pdb_violations: int = 0
