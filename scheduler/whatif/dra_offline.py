"""DRA for the what-if commands: what kube-controller-manager's resourceclaim controller would do for a
pod made from a file, and the devices a placed pod got.

A pod entry ``spec.resourceClaims[].resourceClaimTemplateName`` gets its own ResourceClaim, made from the
template as the controller makes it (pkg/controller/resourceclaim/controller.go at v1.37.2: the spec and
the template's labels and annotations, the ``resource.kubernetes.io/pod-claim-name`` annotation, the pod
as controlling owner, the name ``<pod>-<claim>-<5 characters>`` with both parts shortened in proportion
when long), and the pod's ``status.resourceClaimStatuses`` names it. The API server picks the five
characters at random; here they are derived from the pod's uid and the claim's name, so a simulation is
repeatable. A template that does not exist leaves the pod without its claim, as the controller does
(the pod then waits in PreEnqueue).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from scheduler.model.pod import pod_from_api
from scheduler.plugins.helper.dynamicresources.claims import allocated_devices as claims_devices

TEMPLATE_KIND = "ResourceClaimTemplate"
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
MAX_BASE_LEN = 57  # the controller leaves room for "-" and 5 random characters in 63
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the API server's generateName characters (util/rand)

Obj = Mapping[str, Any]


def generate_name(pod_name: str, claim: str) -> str:
    """The controller's generateName: ``<pod>-<claim>-``, both parts cut in proportion past 57 characters
    (the cut form carries no trailing hyphen, as upstream's)."""
    base = f"{pod_name}-{claim}-"
    if len(base) <= MAX_BASE_LEN:
        return base
    return pod_name[: len(pod_name) * MAX_BASE_LEN // len(base)] + "-" + claim[: len(claim) * MAX_BASE_LEN // len(base)]


def _suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])


def templates_by_key(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(_meta(o).get("namespace") or "default", _meta(o).get("name") or ""): o
            for o in objects if o.get("kind") == TEMPLATE_KIND}


def make_template_claims(
    pod: dict[str, Any], templates: Mapping[tuple[str, str], Obj]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The pod with ``status.resourceClaimStatuses`` for its template claims, and the claims made."""
    entries = [e for e in (pod.get("spec") or {}).get("resourceClaims") or [] if isinstance(e, Mapping)]
    meta = _meta(pod)
    namespace, pod_name, uid = meta.get("namespace") or "default", str(meta.get("name") or ""), meta.get("uid")
    statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or [])
    known = {s.get("name") for s in statuses if isinstance(s, Mapping)}
    claims: list[dict[str, Any]] = []
    for entry in entries:
        template_name = entry.get("resourceClaimTemplateName")
        if not template_name or entry.get("name") in known:
            continue
        template = templates.get((namespace, str(template_name)))
        if template is None:
            continue
        claim = _claim_from_template(template, pod_name, namespace, str(uid or ""), str(entry.get("name") or ""))
        claims.append(claim)
        statuses.append({"name": entry.get("name"), "resourceClaimName": claim["metadata"]["name"]})
    if not claims:
        return pod, []
    return {**pod, "status": {**(pod.get("status") or {}), "resourceClaimStatuses": statuses}}, claims


def _claim_from_template(template: Obj, pod_name: str, namespace: str, uid: str, pod_claim: str) -> dict[str, Any]:
    tspec = template.get("spec") or {}
    tmeta = tspec.get("metadata") or {}
    name = generate_name(pod_name, pod_claim) + _suffix(f"{namespace}/{pod_name}/{uid}/{pod_claim}")
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"sim-claim-{namespace}-{name}",
            "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": dict(tmeta.get("labels") or {}),
            "annotations": {**(tmeta.get("annotations") or {}), POD_CLAIM_ANNOTATION: pod_claim},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": uid, "controller": True}],
        },
        "spec": copy.deepcopy(dict(tspec.get("spec") or {})),
    }


def allocated_devices(objects: Any, pod_obj: Obj) -> list[dict[str, str]]:
    """The devices of a pod's claims as the offline store holds them (claims.allocated_devices)."""
    return claims_devices(pod_from_api(dict(pod_obj)), lambda ns, name: objects.get("ResourceClaim", ns, name))


def device_line(d: Mapping[str, str]) -> str:
    """``claim/request: driver/pool/device`` (the table's form)."""
    return f"{d['claim']}/{d['request']}: {d['driver']}/{d['pool']}/{d['device']}"


def _meta(o: Obj) -> Mapping[str, Any]:
    return o.get("metadata") or {}
