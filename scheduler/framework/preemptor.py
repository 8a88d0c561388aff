"""A pod group as a preemptor (upstream ``pkg/scheduler/framework/preemption/executor.go``'s
podGroupExecutorPreemptor), in a leaf module: the Handle's ``preempt`` names it, and the evaluator that builds it
imports the Handle."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.model.pod import Pod
from scheduler.model.workload import PodGroup


@dataclass(frozen=True, slots=True)
class GroupPreemptor:
    """A pod group preempting as one. Its uid marks the preemption under way (the members wait for it in
    PreEnqueue), its members are activated if the evictions fail, and the victims' condition and event name it
    (``type``, upstream's fwk.PodGroupKeyType)."""

    pod_group: PodGroup
    pods: Sequence[Pod]
    priority: int
    type: str = "podgroup"

    @property
    def uid(self) -> str:
        return self.pod_group.uid
