"""Which ResourceClaims a pod uses, and whether a claim belongs to and is reserved for the pod.

Follows ``k8s.io/dynamic-resource-allocation/resourceclaim/resourceclaim.go`` (``Name``,
``IsForPod``, ``IsReservedForPod``, ``BindTo`` for a pod; the PodGroup variants belong to
DRAWorkloadResourceClaims, beta and off in v1.37.2, and are not built) with its error texts, which
the plugin's PreEnqueue and PreFilter messages carry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.model.dra import ConsumerReference, ResourceClaim
from scheduler.model.pod import Pod

CLAIM_NOT_FOUND = "ResourceClaim not created yet"  # resourceclaim.ErrClaimNotFound
API_UNSUPPORTED = "none of the supported fields are set"  # resourceclaim.ErrAPIUnsupported


class ClaimNameError(ValueError):
    """``resourceclaim.Name`` failed; ``not_created`` tells ErrClaimNotFound (wait for the controller)."""

    def __init__(self, message: str, not_created: bool) -> None:
        super().__init__(message)
        self.not_created = not_created


@dataclass(frozen=True, slots=True)
class PodClaim:
    """One entry of ``spec.resourceClaims``: a claim by name or made from a template."""

    name: str
    resource_claim_name: str | None
    resource_claim_template_name: str | None


def pod_claims(pod: Pod) -> list[PodClaim]:
    """The pod's ``spec.resourceClaims`` in order (entries that are not objects are skipped)."""
    spec = pod.raw.get("spec") or {}
    out = []
    for entry in spec.get("resourceClaims") or []:
        if isinstance(entry, Mapping):
            out.append(PodClaim(str(entry.get("name") or ""), _opt(entry.get("resourceClaimName")),
                                _opt(entry.get("resourceClaimTemplateName"))))
    return out


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def claim_name(pod: Pod, claim: PodClaim) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: (the claim's name, whether the pod must own it).

    A template's claim is named in ``status.resourceClaimStatuses`` once the resourceclaim controller
    made it; the name may be None there (no claim needed). Raises ClaimNameError otherwise.
    """
    if claim.resource_claim_name is not None:
        return claim.resource_claim_name, False
    if claim.resource_claim_template_name is not None:
        for status in (pod.raw.get("status") or {}).get("resourceClaimStatuses") or []:
            if isinstance(status, Mapping) and status.get("name") == claim.name:
                return _opt(status.get("resourceClaimName")), True
        raise ClaimNameError(f'pod "{pod.namespace}/{pod.name}": {CLAIM_NOT_FOUND}', True)
    raise ClaimNameError(f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{claim.name}": {API_UNSUPPORTED}',
                         False)


def is_for_pod(pod: Pod, claim: ResourceClaim) -> str | None:
    """``resourceclaim.IsForPod``: None when the pod owns the claim, else upstream's message."""
    if claim.namespace != pod.namespace:
        return (f"ResourceClaim {claim.namespace}/{claim.name} is not in the same namespace as Pod "
                f"{pod.namespace}/{pod.name}")
    if claim.controller_uid != pod.uid:
        return (f"ResourceClaim {claim.namespace}/{claim.name} was not created for Pod {pod.namespace}/{pod.name} "
                "(Pod is not owner)")
    return None


def is_reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    """``resourceclaim.IsReservedForPod``: the pod's UID is among ``status.reservedFor``."""
    return any(r.uid == pod.uid for r in claim.reserved_for)


def can_be_reserved(claim: ResourceClaim) -> bool:
    """``resourceclaim.CanBeReserved``: always true in v0.37.2. The 256-entry limit on ``reservedFor``
    (``ResourceClaimReservedForMaxSize``) is no longer checked by the scheduler; PreFilter's
    ``resourceclaim in use`` therefore never fires for a claim that is not reserved for the pod."""
    del claim
    return True


def consumer_reference(pod: Pod) -> ConsumerReference:
    """``resourceclaim.BindTo`` for a pod: the entry PreBind adds to ``status.reservedFor``."""
    return ConsumerReference("", "pods", pod.name, pod.uid)


def allocated_devices(pod: Pod, get_claim: Callable[[str, str], Mapping[str, Any] | None]) -> list[dict[str, str]]:
    """What the pod's claims were allocated, for people (simulate, explain, --record-results): per pod
    claim, one entry per result of its claim's ``status.allocation`` in order, with ``claim`` (the pod's
    name for it), ``resourceClaim``, ``request``, ``driver``, ``pool``, ``device``. ``get_claim(namespace,
    name)`` reads a ResourceClaim as JSON (None: gone); unallocated claims contribute nothing."""
    out: list[dict[str, str]] = []
    for pc in pod_claims(pod):
        try:
            name, _ = claim_name(pod, pc)
        except ClaimNameError:
            continue
        claim = get_claim(pod.namespace, name) if name else None
        allocation = ((claim or {}).get("status") or {}).get("allocation") or {}
        for r in (allocation.get("devices") or {}).get("results") or []:
            out.append({"claim": pc.name, "resourceClaim": str(name), "request": str(r.get("request") or ""),
                        "driver": str(r.get("driver") or ""), "pool": str(r.get("pool") or ""),
                        "device": str(r.get("device") or "")})
    return out
