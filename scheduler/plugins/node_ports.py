"""NodePorts (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/nodeports/node_ports.go``).

PreFilter collects the host ports the pod wants (Skip when none); Filter rejects a node where one of
them is already in use — ``0.0.0.0`` conflicts with the same port/protocol on any IP, a specific IP
with the same IP or ``0.0.0.0`` (HostPortInfo.CheckConflict) — as Unschedulable
``node(s) didn't have free ports for the requested pod ports`` (preemption can free ports).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from scheduler.framework.batch import SignsByTemplate
from scheduler.framework.interface import CycleState, Handle, PreFilterResult
from scheduler.framework.status import Status, error, skip, unschedulable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.pod import HostPort, Pod

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def fits_ports(want: Sequence[HostPort], node_info: NodeInfo) -> bool:
    """No wanted host port conflicts with the node's used ports (HostPortInfo.CheckConflict)."""
    if not node_info.used_ports:
        return True  # no port in use on the node: nothing can conflict
    conflict = node_info.port_conflict
    return all(not conflict(p) for p in want)


class NodePorts(SignsByTemplate):
    """Rejects nodes where a host port the pod wants is already taken."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable: verdicts and scores depend on the pod template and the one node only."""
        return ()

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, skip()
        state.write(PRE_FILTER_STATE_KEY, pod.host_ports)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        want = state.get(PRE_FILTER_STATE_KEY)
        if want is None:
            return error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return None if fits_ports(want, node_info) else unschedulable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A deleted pod may free a port; a new node has all ports free (no hint: always queue)."""
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """Queue only if the deleted pod was bound (or nominated) and held a port this pod wants."""
        if old is None:
            return QueueingHint.QUEUE
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        if not old.host_ports:
            return QueueingHint.QUEUE_SKIP
        in_use = NodeInfo()
        for p in old.host_ports:
            in_use.used_ports.setdefault(p.ip, set()).add((p.protocol, p.port))
        return QueueingHint.QUEUE_SKIP if fits_ports(pod.host_ports, in_use) else QueueingHint.QUEUE
