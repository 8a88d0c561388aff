"""Feature gates the plugins read (upstream ``plugins/feature.Features``), at kube-scheduler v1.37's defaults.

``Features`` holds the gates py-scheduler builds both ways; ``--feature-gates`` takes kube-scheduler's syntax
(``SchedulerAsyncPreemption=false``) and judges every scheduler gate of v1.37 (feature_gates.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from scheduler.framework.feature_gates import ALL_ALPHA, ALL_BETA, KUBE_SCHEDULER_GATES, parse_bool


@dataclass(frozen=True, slots=True)
class Features:
    """enable_async_preemption: victims are evicted off the scheduling thread (SchedulerAsyncPreemption,
    beta and on by default since 1.33). enable_storage_capacity_scoring: VolumeBinding scores nodes by
    the free storage of the pod's classes (StorageCapacityScoring, beta and on since 1.37; off, it neither
    scores nor accepts a shape, as v1.34). enable_generic_workload: the Workload API's pod groups are queued and
    placed as groups (GenericWorkload, beta, off). enable_topology_aware_workload_scheduling: a group's cycle
    tries the PlacementGenerate plugins' placements (TopologyAwareWorkloadScheduling, alpha, off).
    enable_pod_group_preemption_policy: a pod group preempts as its PodGroup's spec.preemptionPolicy says and every
    member must carry the same policy (PodGroupPreemptionPolicy, alpha, off: the members' policies decide)."""

    enable_async_preemption: bool = True
    enable_storage_capacity_scoring: bool = True
    enable_generic_workload: bool = False
    enable_topology_aware_workload_scheduling: bool = False
    enable_pod_group_preemption_policy: bool = False


# gate name -> Features field
GATES = {"SchedulerAsyncPreemption": "enable_async_preemption",
         "StorageCapacityScoring": "enable_storage_capacity_scoring",
         "GenericWorkload": "enable_generic_workload",
         "TopologyAwareWorkloadScheduling": "enable_topology_aware_workload_scheduling",
         "PodGroupPreemptionPolicy": "enable_pod_group_preemption_policy"}


def parse_feature_gates(spec: str, base: Features | None = None) -> Features:
    """``"Gate=true,Other=false"`` applied over ``base``, judged as kube-scheduler v1.37 judges it (see
    feature_gates.py); raises ValueError naming the first bad entry."""
    changes: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, raw = item.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep:
            raise ValueError(f"missing bool value for {name}")
        value = parse_bool(name, raw)
        if name in (ALL_ALPHA, ALL_BETA):
            if value:
                raise ValueError(f"py-scheduler does not implement {name}=true: it would turn on the "
                                 f"{name.removeprefix('All').lower()} gates it does not build")
            continue
        gate = KUBE_SCHEDULER_GATES.get(name)
        if gate is None:
            raise ValueError(f"unrecognized feature gate: {name}")
        if gate.locked and value != gate.default:
            raise ValueError(f"cannot set feature gate {name} to {str(value).lower()}, feature is locked to "
                             f"{str(gate.default).lower()}")
        if name in GATES:
            changes[GATES[name]] = value
        elif value != gate.default:
            raise ValueError(f"py-scheduler does not implement {name}={str(value).lower()}: it runs with "
                             f"kube-scheduler v1.37's default, {str(gate.default).lower()} ({gate.stage}); "
                             f"gates it builds both ways: {', '.join(sorted(GATES))}")
    return dataclasses.replace(base or Features(), **changes)
