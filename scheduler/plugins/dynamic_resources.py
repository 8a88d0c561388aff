"""DynamicResources (kube-scheduler v1.37 ``dynamicresources/dynamicresources.go``), minimal.

py-scheduler does not implement dynamic resource allocation (ResourceClaims, DeviceClasses,
ResourceSlices are not watched, nothing is allocated). The plugin is still part of the default
profile, in upstream's place, because it shapes what every pod sees:

* a pod without ``spec.resourceClaims`` is skipped at PreFilter (so Filter does not run for it), and
  its PostFilter answers Unschedulable without a reason (v1.34 said ``no new claims to deallocate``,
  which it put in every FailedScheduling message of the default profile before the preemption
  message; v1.37 puts nothing there);
* when PreFilter never ran (an earlier PreFilter plugin was UnschedulableAndUnresolvable), PostFilter
  fails reading its state, as upstream does: the message then ends in ``not found``;
* a pod *with* ``spec.resourceClaims`` is rejected at PreFilter as UnschedulableAndUnresolvable with a
  message saying so: a known limitation, better than binding a pod whose devices nobody allocated.

Extended resources backed by DRA (DRAExtendedResource) are not built (the DRA issue's work). Score
(v1.37, weight 2) gives the only pods that reach it, those without claims, 0 on every node.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.interface import CycleState, Handle, NodeToStatus, PostFilterResult, PreFilterResult
from scheduler.framework.status import Status, error, skip, unresolvable, unschedulable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
)
from scheduler.model.pod import Pod

NAME = "DynamicResources"
STATE_KEY = "PreFilter" + NAME  # upstream stores it under the plugin name

UNSUPPORTED_MSG = "py-scheduler does not support dynamic resource allocation (the pod has spec.resourceClaims)"
STATE_NOT_FOUND_MSG = "not found"  # fwk.ErrNotFound, what CycleState.Read returns upstream


@dataclass(frozen=True, slots=True)
class _State:
    """The pod's claim references (names as written in spec.resourceClaims)."""

    claims: tuple[str, ...]

    def clone(self) -> _State:
        return self


def resource_claim_names(pod: Pod) -> tuple[str, ...]:
    claims = (pod.raw.get("spec") or {}).get("resourceClaims") or []
    return tuple(str(c.get("name") or "") for c in claims if isinstance(c, Mapping))


class DynamicResources:
    """Keeps pods with resource claims away (unsupported) and gives the others upstream's verdicts."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable without resource claims (a claim's allocation is shared state)."""
        return None if resource_claim_names(pod) else ()

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        # DynamicResourcesArgs.filterTimeout bounds device allocation in Filter; there is none here.
        del args, handle

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Upstream waits here until the pod's claims exist; claims are not tracked, so never wait."""
        return None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        claims = resource_claim_names(pod)
        state.write(STATE_KEY, _State(claims))
        if not claims:
            return None, skip()
        return None, unresolvable(UNSUPPORTED_MSG)

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Never reached with claims (PreFilter rejected the pod) nor without (PreFilter skipped)."""
        if state.get(STATE_KEY) is None:
            return error(STATE_NOT_FOUND_MSG)
        return None

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return None, error(STATE_NOT_FOUND_MSG)
        # No claims: upstream's fast path; with claims nothing was deallocated (none is allocated here).
        # Both are Unschedulable without a reason in v1.37.
        return None, unschedulable()

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        """v1.37 scores the devices a pod's claims would get (weight 2); a pod that gets here has no
        claims, which upstream scores 0 on every node (there is no PreScore to skip it)."""
        if not isinstance(state.get(STATE_KEY), _State):
            return 0, error(STATE_NOT_FOUND_MSG)
        return 0, None

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """``score`` for every node in one call."""
        if not isinstance(state.get(STATE_KEY), _State):
            return [0] * len(nodes), error(STATE_NOT_FOUND_MSG)
        return [0] * len(nodes), None

    def score_extensions(self) -> None:
        """Upstream normalizes with DefaultNormalizeScore, which leaves all-zero scores as they are."""
        return None

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        return None

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Nothing to bind: only pods without claims get this far (upstream's Skip for them)."""
        return skip()

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Upstream's node and pod events (queueing hints on): the ResourceClaim, DeviceClass and
        ResourceSlice events it also registers have no counterpart here."""
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_actions)),
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)),
        ]
