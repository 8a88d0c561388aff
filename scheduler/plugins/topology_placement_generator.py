"""TopologyPlacementGenerator (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/topologyaware``): the
PlacementGenerate plugin of a pod group's cycle (GenericWorkload and TopologyAwareWorkloadScheduling on). A
group whose PodGroup names a topology key (``spec.schedulingConstraints.topology[0].key``: the API allows one)
gets one candidate placement per value of that label among the parent placement's nodes; once a member is
scheduled (assigned or assumed), only its domain is offered, so later members join it.

Upstream gathers the domains in a Go map and so lists them in random order; here they come in the order their
first node appears in the parent placement (the snapshot's node order), so a cycle is repeatable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import CycleState, Handle
from scheduler.framework.podgroup import Placement, PodGroupInfo
from scheduler.framework.status import Status, error
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod
from scheduler.plugins.helper.podgroup_states import snapshot_pod_group_states

NAME = "TopologyPlacementGenerator"


class DomainError(Exception):
    """The group's scheduled members do not name one domain of the key (upstream's errors, same words)."""


def _kobj(pod: Pod) -> str:
    """klog.KObj's text: namespace/name, or the name alone without a namespace."""
    return f"{pod.namespace}/{pod.name}" if pod.namespace else pod.name


class TopologyPlacementGenerator:
    """Offers a placement per topology domain; the parent placement itself when the group has no constraint."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args  # no configuration
        self.handle = handle

    def generate_placements(self, state: CycleState, pod_group: PodGroupInfo,
                            parent_placement: Placement | None) -> tuple[list[Placement], Status | None]:
        """GeneratePlacements. The domains hold only nodes carrying the key; an error status when the group's
        state is missing or its scheduled members are not all on nodes of one domain."""
        if parent_placement is None:  # the whole cluster, as the framework's runner builds it
            parent_placement = Placement("", self.handle.snapshot().list())
        key = _topology_key(pod_group)
        if key is None:
            return [parent_placement], None
        try:
            scheduled = snapshot_pod_group_states(self.handle).get(
                pod_group.namespace, pod_group.name).scheduled_pods()
        except LookupError as exc:
            return [], error(exc)
        required: str | None = None
        if scheduled:
            try:
                required = self._scheduled_domain(key, scheduled)
            except DomainError as exc:
                return [], error(f"cannot determine domain for already scheduled pods: {exc}")
        by_domain: dict[str, list[NodeInfo]] = {}
        for info in parent_placement.nodes:
            node = info.node
            if node is None:
                continue
            domain = node.labels.get(key)
            if domain is None or (required is not None and domain != required):
                continue
            members = by_domain.get(domain)
            if members is None:
                by_domain[domain] = [info]
            else:
                members.append(info)
        return [Placement(domain, nodes) for domain, nodes in by_domain.items()], None

    def _scheduled_domain(self, key: str, scheduled: list[Pod]) -> str:
        """getScheduledPodsTopologyDomain: the one domain the scheduled members' nodes share."""
        snapshot = self.handle.snapshot()
        found = ""
        for pod in scheduled:
            info = snapshot.get(pod.node_name)
            if info is None or info.node is None:
                raise DomainError(f'getting node for pod {_kobj(pod)}: nodeinfo not found for node name '
                                  f'"{pod.node_name}"')
            domain = info.node.labels.get(key)
            if domain is None:
                raise DomainError(f"no topology domain found for pod {_kobj(pod)}")
            if found and found != domain:
                raise DomainError(f"more than 1 domain found for pod group: {found}, {domain}")
            found = domain
        return found


def _topology_key(pod_group: PodGroupInfo) -> str | None:
    """The PodGroup's first topology constraint's key (the API allows one), None without one."""
    pg = pod_group.pod_group
    if pg is None or not pg.topology_keys:
        return None
    return pg.topology_keys[0]
