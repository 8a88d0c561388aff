"""Pod conditions as upstream writes them (podutil.UpdatePodCondition): built by the scheduler
(DisruptionTarget on preemption victims) and by the event recorder (PodScheduled=False)."""

from __future__ import annotations

from typing import Any

from scheduler.model.pod import Pod
from scheduler.model.timefmt import rfc3339


def pod_condition(pod: Pod, type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    """A pod condition as upstream writes one (podutil.UpdatePodCondition): the transition time is kept
    while the status stays the same, and observedGeneration is the pod's generation
    (PodObservedGenerationTracking, GA and locked on in 1.37)."""
    transition = rfc3339()
    for c in (pod.raw.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            if c.get("status") == status and c.get("lastTransitionTime"):
                transition = c["lastTransitionTime"]
            break
    condition: dict[str, Any] = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": transition,
    }
    generation = (pod.raw.get("metadata") or {}).get("generation")
    if isinstance(generation, int) and generation > 0:
        condition["observedGeneration"] = generation
    return condition
