"""A pod's claims: names from spec and status, ownership and reservation, with upstream's messages."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.dra import ConsumerReference, resource_claim_from_api
from scheduler.model.pod import Pod, pod_from_api
from scheduler.plugins.helper.dynamicresources.claims import (
    ClaimNameError,
    PodClaim,
    can_be_reserved,
    claim_name,
    consumer_reference,
    is_for_pod,
    is_reserved_for_pod,
    pod_claims,
)


def _pod(claims: list[dict[str, Any]], statuses: list[dict[str, Any]] | None = None) -> Pod:
    return pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "pod-uid"},
                         "spec": {"schedulerName": "py-scheduler", "containers": [{"name": "c"}],
                                  "resourceClaims": claims},
                         "status": {"resourceClaimStatuses": statuses or []}})


def _claim(namespace: str = "ns", owner: str | None = "pod-uid", reserved: tuple[str, ...] = ()) -> Any:
    meta: dict[str, Any] = {"name": "c", "namespace": namespace}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner, "controller": True}]
    return resource_claim_from_api({"metadata": meta, "spec": {"devices": {"requests": []}},
                                    "status": {"reservedFor": [{"resource": "pods", "name": "x", "uid": u}
                                                               for u in reserved]}})


def test_claim_by_name_and_from_template() -> None:
    pod = _pod([{"name": "a", "resourceClaimName": "shared"}, {"name": "b", "resourceClaimTemplateName": "t"}],
               [{"name": "b", "resourceClaimName": "p-b-xyz"}])
    a, b = pod_claims(pod)
    assert a == PodClaim("a", "shared", None)
    assert claim_name(pod, a) == ("shared", False)
    assert claim_name(pod, b) == ("p-b-xyz", True)


@pytest.mark.parametrize(("entry", "message", "not_created"), [
    ({"name": "b", "resourceClaimTemplateName": "t"}, 'pod "ns/p": ResourceClaim not created yet', True),
    ({"name": "b"}, 'pod "ns/p", spec.resourceClaim "b": none of the supported fields are set', False),
])
def test_claim_name_errors(entry: dict[str, Any], message: str, not_created: bool) -> None:
    pod = _pod([entry])
    with pytest.raises(ClaimNameError) as info:
        claim_name(pod, pod_claims(pod)[0])
    assert (str(info.value), info.value.not_created) == (message, not_created)


@pytest.mark.parametrize(("claim", "message"), [
    (_claim(), None),
    (_claim(namespace="other"), "ResourceClaim other/c is not in the same namespace as Pod ns/p"),
    (_claim(owner="someone"), "ResourceClaim ns/c was not created for Pod ns/p (Pod is not owner)"),
    (_claim(owner=None), "ResourceClaim ns/c was not created for Pod ns/p (Pod is not owner)"),
])
def test_is_for_pod(claim: Any, message: str | None) -> None:
    assert is_for_pod(_pod([]), claim) == message


def test_reservation() -> None:
    pod = _pod([])
    assert is_reserved_for_pod(pod, _claim(reserved=("other", "pod-uid")))
    assert not is_reserved_for_pod(pod, _claim(reserved=("other",)))
    assert consumer_reference(pod) == ConsumerReference("", "pods", "p", "pod-uid")
    assert can_be_reserved(_claim(reserved=tuple(f"u{i}" for i in range(300))))
