"""Preemption units with GenericWorkload (kube-scheduler v1.37 ``pkg/scheduler/framework/preemption/types.go`` Victim /
DomainVictim and ``pkg/scheduler/framework/preemption/util.go`` MoreImportantVictim, GetPodPriority,
FilterVictimsWithPDBViolation).

A victim is what preemption evicts as one: a single pod, or every scheduled pod of a PodGroup whose ``disruptionMode``
is ``all`` (the members across the whole cluster, so one eviction never leaves the rest of such a group running). A pod
of a PodGroup counts with the group's priority, not its own.

Differences from upstream, on purpose:

* Victims are ordered with a stable sort key where upstream uses ``sort.Slice`` (unstable): victims equal in every
criterion keep their discovery order (nodes in snapshot order, pods in node order). * A pod without status.startTime
counts as started "now", one "now" per evaluation (upstream reads the clock at each comparison).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from scheduler.framework.podgroup import PodGroupManager
from scheduler.framework.preemption import PodDisruptionBudget, pdb_violation_check, pod_start_time
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod
from scheduler.model.workload import DISRUPTION_ALL, PodGroup

# fwk.EntityKeyType values: what a victim (or a preemptor) is.
POD_KEY_TYPE = "pod"
POD_GROUP_KEY_TYPE = "podgroup"
COMPOSITE_POD_GROUP_KEY_TYPE = "compositepodgroup"

_RANK = {COMPOSITE_POD_GROUP_KEY_TYPE: 3, POD_GROUP_KEY_TYPE: 2}


# (namespace, name) -> the PodGroup, or None when it is unknown.
PodGroupGetter = Callable[[str, str], PodGroup | None]
# (namespace, name) -> the group's scheduled (assumed or bound) pods.
ScheduledPodsGetter = Callable[[str, str], Sequence[Pod]]


class PodGroupLookups:
    """The PodGroup objects and the groups' scheduled pods, read from the cycle's snapshot through the Handle's
    PodGroupManager; a group it does not know is None / no pods."""

    def __init__(self, manager: Callable[[], PodGroupManager]) -> None:
        self._manager = manager

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        try:
            return self._manager().pod_groups().get(namespace, name)
        except LookupError:
            return None

    def scheduled_pods(self, namespace: str, name: str) -> list[Pod]:
        try:
            return self._manager().pod_group_states().get(namespace, name).scheduled_pods()
        except LookupError:
            return []


def get_pod_priority(pod: Pod, pod_groups: PodGroupGetter | None) -> int:
    """GetPodPriority: the priority of the pod's PodGroup when it has one that is known, else its own."""
    name = pod.pod_group_name
    if not name or pod_groups is None:
        return pod.priority
    pg = pod_groups(pod.namespace, name)
    return pod.priority if pg is None else pg.effective_priority


@dataclass(slots=True)
class Victim:
    """One preemption unit: its pods are evicted together."""

    pods: list[Pod]
    priority: int
    earliest_start: float
    key_type: str
    # Every node holding one of the pods (DomainVictim.AffectedNodes), by name.
    affected_nodes: dict[str, NodeInfo] = field(default_factory=dict)

    @property
    def is_group(self) -> bool:
        """A PodGroup's unit: the whole group (disruptionMode all) or one member (single)."""
        return self.key_type in (POD_GROUP_KEY_TYPE, COMPOSITE_POD_GROUP_KEY_TYPE)


def new_victim(
    pods: Sequence[Pod], priority: int, key_type: str, nodes: Callable[[str], NodeInfo | None], now: float
) -> Victim:
    """NewVictim + newDomainVictim: the unit, its earliest start and the nodes it occupies."""
    if not pods:
        raise ValueError("no pods provided")
    affected: dict[str, NodeInfo] = {}
    for p in pods:
        if p.node_name not in affected:
            info = nodes(p.node_name)
            if info is None:
                raise LookupError(f'failed to get node info for node "{p.node_name}" from snapshot')
            affected[p.node_name] = info
    return Victim(list(pods), priority, min(pod_start_time(p, now) for p in pods), key_type, affected)


def victim_importance(v: Victim) -> tuple[int, int, int, float]:
    """MoreImportantVictim as a sort key, most important first: higher priority, then CompositePodGroup over
    PodGroup over a pod, then more pods, then the earlier start."""
    return -v.priority, -_RANK.get(v.key_type, 1), -len(v.pods), v.earliest_start


def cross_nodes_victims(
    nodes: Iterable[NodeInfo],
    pod_groups: PodGroupGetter | None,
    scheduled_pods: ScheduledPodsGetter,
    node_by_name: Callable[[str], NodeInfo | None],
    now: float,
) -> list[Victim]:
    """getCrossNodesVictims: every pod on ``nodes`` as a victim of its own, except that the pods of a PodGroup
    with disruptionMode all become one victim holding all of the group's scheduled pods, wherever they run."""
    seen: set[tuple[str, str, str]] = set()
    victims: list[Victim] = []
    for info in nodes:
        for p in info.pods.values():
            name = p.pod_group_name if pod_groups is not None else ""
            pg = pod_groups(p.namespace, name) if pod_groups is not None and name else None
            if pg is None or pg.disruption_mode != DISRUPTION_ALL:
                key = (POD_KEY_TYPE, p.namespace, p.name)
                if key not in seen:
                    seen.add(key)
                    kt = POD_GROUP_KEY_TYPE if name else POD_KEY_TYPE
                    victims.append(new_victim([p], get_pod_priority(p, pod_groups), kt, node_by_name, now))
                continue
            key = (POD_GROUP_KEY_TYPE, p.namespace, name)
            if key in seen:
                continue
            seen.add(key)
            # No scheduled pods known for the group (its state lags the node): this pod alone.
            members = list(scheduled_pods(p.namespace, name)) or [p]
            victims.append(new_victim(members, pg.effective_priority, POD_GROUP_KEY_TYPE, node_by_name, now))
    return victims


def filter_victims_with_pdb_violation(
    victims: Sequence[Victim], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[tuple[Victim, int]], list[Victim]]:
    """FilterVictimsWithPDBViolation: split ``victims`` (order kept) into those with a pod whose eviction
    would exceed a PDB's remaining budget (with the number of such pods) and the rest. A victim is atomic: one
    violating pod makes the whole unit violating. Budgets are spent pod by pod in order (pdb_violation_check)."""
    violates = pdb_violation_check(pdbs)
    violating: list[tuple[Victim, int]] = []
    non_violating: list[Victim] = []
    for v in victims:
        count = sum(1 for p in v.pods if violates(p))
        if count:
            violating.append((v, count))
        else:
            non_violating.append(v)
    return violating, non_violating
