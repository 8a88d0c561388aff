"""LegacyRequestedPriority: the shape shared by the seed-era cpu/memory priorities."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.status import Status, error
from scheduler.framework.types import NodeInfo
from scheduler.model.errors import InvalidObjectError
from scheduler.model.pod import Pod
from scheduler.plugins.helper.gomath import go_div
from scheduler.plugins.legacy.non_zero_requests import legacy_requested


class LegacyRequestedPriority:
    """The seed-era (v1.16) cpu/memory priorities: ``resource_score(requested, capacity)`` per resource
    on v1.16 non-zero requests, averaged 1:1 with integer division. Subclasses set ``name`` and
    ``resource_score``; errors in the pod's quantities are Score errors, as upstream's map failed."""

    name: str

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        self.handle = handle

    @staticmethod
    def resource_score(requested: int, capacity: int) -> int:
        raise NotImplementedError

    def score(self, state: Any, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            cpu, mem = legacy_requested(pod, node_info)
        except InvalidObjectError as exc:
            return 0, error(exc)
        alloc = node_info.allocatable
        return go_div(self.resource_score(cpu, alloc.milli_cpu) + self.resource_score(mem, alloc.memory), 2), None

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> list[Any]:
        """A score-only plugin never rejects a pod, so no event can make one schedulable."""
        return []
