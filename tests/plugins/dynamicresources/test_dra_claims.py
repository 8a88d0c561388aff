"""A pod's claims: names from spec and status, ownership and reservation, with upstream's messages."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.dra import ConsumerReference
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
from scheduler.testing import make_pod, make_resource_claim


def _claim(namespace: str = "ns", owner: str | None = "pod-uid", reserved: tuple[str, ...] = ()) -> Any:
    w = make_resource_claim().name("c").namespace(namespace)
    if owner is not None:
        w.owner_reference("p", "Pod", "v1", uid=owner)
    for u in reserved:
        w.reserved_for_pod("x", u)
    return w.obj()


def test_claim_by_name_and_from_template() -> None:
    pod = (make_pod().namespace("ns").uid("pod-uid").resource_claim("a", "shared").resource_claim("b", template="t")
           .resource_claim_status("b", "p-b-xyz").obj())
    a, b = pod_claims(pod)
    assert a == PodClaim("a", "shared", None)
    assert claim_name(pod, a) == ("shared", False)
    assert claim_name(pod, b) == ("p-b-xyz", True)


@pytest.mark.parametrize(("entry", "message", "not_created"), [
    ({"name": "b", "resourceClaimTemplateName": "t"}, 'pod "ns/p": ResourceClaim not created yet', True),
    ({"name": "b"}, 'pod "ns/p", spec.resourceClaim "b": none of the supported fields are set', False),
])
def test_claim_name_errors(entry: dict[str, Any], message: str, not_created: bool) -> None:
    pod = make_pod().namespace("ns").uid("pod-uid").spec_field("resourceClaims", [entry]).obj()
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
    assert is_for_pod(make_pod().namespace("ns").uid("pod-uid").obj(), claim) == message


def test_reservation() -> None:
    pod = make_pod().namespace("ns").uid("pod-uid").obj()
    assert is_reserved_for_pod(pod, _claim(reserved=("other", "pod-uid")))
    assert not is_reserved_for_pod(pod, _claim(reserved=("other",)))
    assert consumer_reference(pod) == ConsumerReference("", "pods", "p", "pod-uid")
    assert can_be_reserved(_claim(reserved=tuple(f"u{i}" for i in range(300))))
