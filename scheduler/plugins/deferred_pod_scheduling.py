"""DeferredPodScheduling (kube-scheduler v1.37 ``deferredpodscheduling``) with its gate,
InPlacePodVerticalScalingSchedulerPreemption (alpha), at its default, off: a profile may name it, as
kube-scheduler's registry always holds it. With the gate off its PreFilter skips it and its Filter and
Permit pass every pod."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework.interface import CycleState, Handle, PreFilterResult
from scheduler.framework.status import Status, skip
from scheduler.framework.types import ClusterEventWithHint, NodeInfo
from scheduler.model.pod import Pod


class DeferredPodScheduling:
    """Skipped at PreFilter, passing at Filter and Permit: the gate-off behaviour of upstream's plugin."""

    name = "DeferredPodScheduling"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args, handle  # no configuration

    def pre_filter(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None,
                                                                                            Status | None]:
        return None, skip()

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        return None, 0.0

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """It never rejects a pod with its gate off."""
        return []
