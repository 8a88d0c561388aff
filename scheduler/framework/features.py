"""Feature gates the plugins read (upstream ``plugins/feature.Features``), at kube-scheduler v1.34's defaults.

Only gates whose both settings py-scheduler implements are listed; ``--feature-gates`` takes them in
kube-scheduler's syntax (``SchedulerAsyncPreemption=false``) and rejects any other name.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Features:
    """enable_async_preemption: victims are evicted off the scheduling thread (SchedulerAsyncPreemption,
    beta and on by default since 1.33). enable_storage_capacity_scoring: VolumeBinding scores nodes by
    the free storage of the pod's classes (StorageCapacityScoring, beta and on since 1.37; off, it neither
    scores nor accepts a shape, as v1.34)."""

    enable_async_preemption: bool = True
    enable_storage_capacity_scoring: bool = True


# gate name -> Features field
GATES = {"SchedulerAsyncPreemption": "enable_async_preemption",
         "StorageCapacityScoring": "enable_storage_capacity_scoring"}


def parse_feature_gates(spec: str, base: Features | None = None) -> Features:
    """``"Gate=true,Other=false"`` applied over ``base``; raises ValueError naming a bad entry."""
    changes: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false"):
            raise ValueError(f"invalid feature gate {item!r}: want Name=true|false")
        if name not in GATES:
            raise ValueError(f"unrecognized feature gate: {name} (known: {', '.join(sorted(GATES))})")
        changes[GATES[name]] = value == "true"
    return dataclasses.replace(base or Features(), **changes)
