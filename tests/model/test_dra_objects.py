"""Parsing of the resource.k8s.io/v1 kinds DRA reads: typed fields, defaults, and errors naming the field."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from scheduler.model.dra import (
    DeviceAttribute,
    allocation_result_to_api,
    device_class_from_api,
    device_taint_rule_from_api,
    resource_claim_from_api,
    resource_slice_from_api,
)
from scheduler.model.errors import InvalidObjectError

SLICE: dict[str, Any] = {
    "metadata": {"name": "node-1-gpus"},
    "spec": {
        "driver": "gpu.example.com",
        "pool": {"name": "node-1", "generation": 2, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "sharedCounters": [{"name": "mem", "counters": {"memory": {"value": "80Gi"}}}],
        "devices": [{
            "name": "gpu-0",
            "attributes": {"model": {"string": "A100"}, "index": {"int": 0}, "v": {"version": "1.0.0"},
                           "ok": {"bool": True}},
            "capacity": {"memory": {"value": "40Gi", "requestPolicy": {
                "default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}},
            "consumesCounters": [{"counterSet": "mem", "counters": {"memory": {"value": "40Gi"}}}],
            "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
            "bindingConditions": ["ready"],
            "allowMultipleAllocations": True,
        }],
    },
}


def test_resource_slice() -> None:
    s = resource_slice_from_api(SLICE)
    assert (s.name, s.driver, s.pool_name, s.pool_generation, s.pool_resource_slice_count, s.node_name) == (
        "node-1-gpus", "gpu.example.com", "node-1", 2, 1, "node-1")
    [d] = s.devices
    assert d.attributes["model"] == DeviceAttribute(string_value="A100")
    assert d.attributes["index"] == DeviceAttribute(int_value=0)
    assert d.capacity["memory"].value == Decimal(40 * 2**30)
    policy = d.capacity["memory"].request_policy
    assert policy is not None and policy.valid_range is not None and policy.valid_range.step == Decimal(2**30)
    assert d.consumes_counters[0].counters == {"memory": Decimal(40 * 2**30)}
    assert s.shared_counters[0].counters == {"memory": Decimal(80 * 2**30)}
    assert (d.taints[0].effect, d.binding_conditions, d.allow_multiple_allocations) == ("NoSchedule", ("ready",), True)


def test_resource_claim_with_subrequests_constraints_and_allocation() -> None:
    c = resource_claim_from_api({
        "metadata": {"name": "c", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
        "spec": {"devices": {
            "requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu", "allocationMode": "All", "adminAccess": True,
                                          "selectors": [{"cel": {"expression": "true"}}]}},
                {"name": "b", "firstAvailable": [{"name": "big", "deviceClassName": "gpu", "count": 2},
                                                 {"name": "small", "deviceClassName": "gpu"}]},
            ],
            "constraints": [{"requests": ["a", "b"], "matchAttribute": "gpu.example.com/numa"}],
            "config": [{"requests": ["a"], "opaque": {"driver": "gpu.example.com", "parameters": {"x": 1}}}],
        }},
        "status": {"allocation": {"devices": {"results": [
            {"request": "a", "driver": "gpu.example.com", "pool": "p", "device": "d", "shareID": "s1",
             "consumedCapacity": {"memory": "1Gi"}}]}},
            "reservedFor": [{"resource": "pods", "name": "pod", "uid": "pu"}]},
    })
    assert c.key == "ns/c"
    a, b = c.requests
    assert a.exactly is not None and (a.exactly.allocation_mode, a.exactly.admin_access) == ("All", True)
    assert a.exactly.selectors[0].cel == "true"
    assert [(s.name, s.count) for s in b.first_available] == [("big", 2), ("small", 1)]
    assert c.constraints[0].match_attribute == "gpu.example.com/numa"
    assert c.config[0].config.parameters == {"x": 1}
    assert c.allocation is not None and c.allocation.results[0].consumed_capacity == {"memory": Decimal(2**30)}
    assert c.reserved_for[0].uid == "pu"


def test_device_class_and_taint_rule() -> None:
    dc = device_class_from_api({"metadata": {"name": "gpu"}, "spec": {
        "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
        "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}],
        "extendedResourceName": "example.com/gpu"}})
    assert (dc.selectors[0].cel, dc.config[0].driver, dc.extended_resource_name) == (
        "device.driver == 'gpu.example.com'", "gpu.example.com", "example.com/gpu")
    rule = device_taint_rule_from_api({"metadata": {"name": "r"}, "spec": {
        "deviceSelector": {"pool": "p"}, "taint": {"key": "k", "effect": "NoExecute"}}})
    assert (rule.has_selector, rule.driver, rule.pool, rule.taint.effect) == (True, None, "p", "NoExecute")


@pytest.mark.parametrize(("parse", "obj", "message"), [
    (resource_slice_from_api, {"metadata": {"name": "s"}, "spec": {"pool": {"name": "p"}}},
     "ResourceSlice s: spec.driver: required"),
    (resource_slice_from_api, {"metadata": {"name": "s"}, "spec": {
        "driver": "d", "pool": {"name": "p"}, "devices": [{"name": "x", "attributes": {"a": {}}}]}},
     "ResourceSlice s: spec.devices[0].attributes[a]: exactly one value must be specified"),
    (resource_slice_from_api, {"metadata": {"name": "s"}, "spec": {"driver": "d", "pool": {"name": "p"},
                                                                   "devices": [{"name": "x", "capacity": {
                                                                       "m": {"value": "lots"}}}]}},
     "ResourceSlice s: spec.devices[0].capacity[m].value: invalid quantity 'lots'"),
    (resource_claim_from_api, {"metadata": {"name": "c", "namespace": "ns"},
                               "spec": {"devices": {"requests": [{"name": "r"}]}}},
     "ResourceClaim ns/c: spec.devices.requests[0]: exactly one of `exactly` or `firstAvailable` is required"),
    (resource_claim_from_api, {"metadata": {"name": "c", "namespace": "ns"},
                               "spec": {"devices": {"requests": [{"name": "r", "exactly": {"count": "2"}}]}}},
     "ResourceClaim ns/c: spec.devices.requests[0].exactly.count: must be an integer"),
    (device_class_from_api, {"metadata": {"name": "g"}, "spec": {"selectors": [{"cel": {}}]}},
     "DeviceClass g: spec.selectors[0].cel.expression: required"),
])
def test_errors_name_object_and_field(parse: Any, obj: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidObjectError) as info:
        parse(obj)
    assert str(info.value).startswith(message)


def test_allocation_result_round_trips_through_json() -> None:
    allocation = {
        "devices": {
            "results": [{"request": "r/s", "driver": "d", "pool": "p", "device": "x", "adminAccess": True,
                         "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                         "bindingConditions": ["ready"], "shareID": "s1",
                         "consumedCapacity": {"memory": "1073741824"}}],
            "config": [{"source": "FromClass", "requests": ["r/s"], "opaque": {"driver": "d", "parameters": {"a": 1}}},
                       {"source": "FromClaim", "opaque": {"driver": "d", "parameters": {"b": 2}}}],
        },
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
    }
    claim = resource_claim_from_api({"metadata": {"name": "c"}, "spec": {"devices": {"requests": []}},
                                     "status": {"allocation": allocation}})
    assert claim.allocation is not None
    assert allocation_result_to_api(claim.allocation) == allocation
