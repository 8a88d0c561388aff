"""A claim's watch events after the first: the stored claim's parsed spec is reused when the spec is equal."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler.model.dra import resource_claim_from_api
from scheduler.model.errors import InvalidObjectError
from scheduler.plugins.helper.dynamicresources.manager import RESOURCE_CLAIM, DraManager


def _claim(count: int = 1, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c", "namespace": "ns", "uid": "u", "resourceVersion": "1"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", "count": count}}],
                                 "constraints": [{"matchAttribute": "model"}]}},
            "status": status}


def test_an_equal_spec_is_taken_from_the_previous_claim_and_the_status_is_read() -> None:
    first = resource_claim_from_api(_claim())
    allocated = _claim(allocation={"devices": {"results": [
        {"request": "r", "driver": "d", "pool": "p", "device": "dev-0"}]}})
    again = resource_claim_from_api(copy.deepcopy(allocated), first)
    assert again.requests is first.requests and again.constraints is first.constraints
    assert again == resource_claim_from_api(allocated)  # what a parse without it gives
    assert again.allocation is not None and again.allocation.results[0].device == "dev-0"


def test_another_spec_is_parsed_and_its_errors_raised() -> None:
    first = resource_claim_from_api(_claim())
    two = resource_claim_from_api(_claim(count=2), first)
    assert two.requests is not first.requests and two.requests[0].exactly is not None
    assert two.requests[0].exactly.count == 2
    bad = _claim()
    bad["spec"]["devices"]["requests"] = [{"name": "r"}]
    with pytest.raises(InvalidObjectError):
        resource_claim_from_api(bad, first)


def test_the_manager_parses_a_templates_spec_once() -> None:
    """Claims made from one template share a spec: the second claim's requests are the first's objects."""
    manager = DraManager()
    second = _claim()
    second["metadata"] = {**second["metadata"], "name": "d", "uid": "v"}
    manager.on_object_event(RESOURCE_CLAIM, False, _claim())
    manager.on_object_event(RESOURCE_CLAIM, False, second)
    c, d = manager.claim("ns", "c"), manager.claim("ns", "d")
    assert c is not None and d is not None and d.requests is c.requests and d.uid == "v"
