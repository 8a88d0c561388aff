"""The structured allocator against hand-made slices, classes and claims: which devices, in which
order, and upstream's errors (cases after k8s.io/dynamic-resource-allocation's allocator_testing.go)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest

from scheduler.model.dra import (
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    device_taint_rule_from_api,
    resource_claim_from_api,
)
from scheduler.model.node import Node
from scheduler.plugins.helper.dynamicresources.allocator import (
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    Allocator,
    FailedOnNodeError,
)
from scheduler.plugins.helper.dynamicresources.cel import CelCache
from scheduler.plugins.helper.dynamicresources.pools import SliceIndex, apply_device_taint_rules
from scheduler.testing import make_node
from tests.plugins.dynamicresources.dra_objects import DRIVER, claim, device, device_class, exactly, slice_

GPU = device_class()


@dataclass
class Case:
    slices: list[ResourceSlice]
    claims: list[ResourceClaim] = field(default_factory=lambda: [claim()])
    classes: list[DeviceClass] = field(default_factory=lambda: [GPU])
    state: AllocatedState = field(default_factory=AllocatedState)
    node: Node = field(default_factory=make_node().name("node-1").obj)
    # per claim: [(request, "pool/device")], or None when the claims do not fit
    want: list[list[tuple[str, str]]] | None = None
    error: str | None = None


def _run(c: Case) -> Any:
    allocator = Allocator(c.state, {k.name: k for k in c.classes}, c.slices, CelCache(),
                          new_share_id=iter(f"share-{i}" for i in range(100)).__next__)
    return allocator.allocate(c.node, c.claims)


def _devices(n: int, **fields: Any) -> list[dict[str, Any]]:
    return [device(f"dev-{i}", **fields) for i in range(n)]


def _req(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": exactly(**fields)}


def _partitioned() -> list[ResourceSlice]:
    """A pool with 8Gi of memory counters and three partitions of 4Gi each."""
    counters = [{"name": "mem", "counters": {"memory": {"value": "8Gi"}}}]
    uses = [{"counterSet": "mem", "counters": {"memory": {"value": "4Gi"}}}]
    return [slice_("counters", [], count=2, sharedCounters=counters),
            slice_("parts", [device(f"p{i}", consumesCounters=uses) for i in range(3)], count=2)]


CASES: dict[str, Case] = {
    "first device of the slice": Case([slice_("s", _devices(2))], want=[[("req", "pool-1/dev-0")]]),
    "allocated device skipped": Case([slice_("s", _devices(2))], state=AllocatedState({(DRIVER, "pool-1", "dev-0")}),
                                     want=[[("req", "pool-1/dev-1")]]),
    "not enough devices": Case([slice_("s", _devices(1))], claims=[claim(requests=[_req("req", count=2)])]),
    "slice of another node": Case([slice_("s", _devices(1), node_name="node-2")]),
    "slice without node selection ignored": Case([slice_("s", _devices(1), node_name=None)]),
    "all nodes": Case([slice_("s", _devices(1), node_name=None, allNodes=True)], want=[[("req", "pool-1/dev-0")]]),
    "node selector matches label": Case(
        [slice_("s", _devices(1), node_name=None, nodeSelector={"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "rack", "operator": "In", "values": ["r1"]}]}]})],
        node=make_node().name("node-1").label("rack", "r1").obj(), want=[[("req", "pool-1/dev-0")]]),
    "node selector does not match": Case(
        [slice_("s", _devices(1), node_name=None, nodeSelector={"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "rack", "operator": "In", "values": ["r1"]}]}]})],
        node=make_node().name("node-1").label("rack", "r2").obj()),
    "slices of a pool in name order": Case(
        [slice_("s-b", [device("b0")], count=2), slice_("s-a", [device("a0")], count=2)],
        claims=[claim(requests=[_req("req", count=2)])], want=[[("req", "pool-1/a0"), ("req", "pool-1/b0")]]),
    "pools in driver then pool order": Case(
        [slice_("s1", [device("x")], driver="b.example.com", pool="p"),
         slice_("s2", [device("y")], driver="a.example.com", pool="q"),
         slice_("s3", [device("z")], driver="a.example.com", pool="p")],
        want=[[("req", "p/z")]]),
    "older generation ignored": Case(
        [slice_("old", [device("old")], generation=1), slice_("new", [device("new")], generation=2)],
        want=[[("req", "pool-1/new")]]),
    "incomplete pool skipped": Case([slice_("s", _devices(1), count=2)]),
    "incomplete pool refuses All": Case(
        [slice_("s", _devices(1), count=2)], claims=[claim(requests=[_req("req", allocationMode="All")])],
        error="claim default/claim, request req: asks for all devices, but resource pool gpu.example.com/pool-1 is "
              "currently being updated"),
    "All takes every matching device": Case(
        [slice_("s", [device("a", attrs={"ok": True}), device("b", attrs={"ok": False}),
                      device("c", attrs={"ok": True})])],
        claims=[claim(requests=[_req("req", allocationMode="All",
                                     selectors=['device.attributes["gpu.example.com"].ok'])])],
        want=[[("req", "pool-1/a"), ("req", "pool-1/c")]]),
    "All with one in use fails": Case(
        [slice_("s", _devices(2))], claims=[claim(requests=[_req("req", allocationMode="All")])],
        state=AllocatedState({(DRIVER, "pool-1", "dev-1")})),
    "class selector": Case(
        [slice_("s", [device("a", attrs={"model": "t4"}), device("b", attrs={"model": "a100"})])],
        classes=[device_class(selectors=['device.attributes["gpu.example.com"].model == "a100"'])],
        want=[[("req", "pool-1/b")]]),
    "request selector on capacity": Case(
        [slice_("s", [device("a", capacity={"memory": {"value": "16Gi"}}),
                      device("b", capacity={"memory": {"value": "80Gi"}})])],
        claims=[claim(requests=[_req("req", selectors=[
            'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'])])],
        want=[[("req", "pool-1/b")]]),
    "selector runtime error": Case(
        [slice_("s", _devices(1))],
        claims=[claim(requests=[_req("req", selectors=['device.attributes["x.com"].foo'])])],
        error="claim default/claim: selector #0 on device gpu.example.com/pool-1/dev-0: CEL runtime error: no such key:"
              " foo. consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() "
              "for optional fields"),
    "class compile error": Case(
        [slice_("s", _devices(1))], classes=[device_class(selectors=['"a" + 1 == "a1"'])],
        error="class gpu: selector #0: CEL compile error: compilation failed: ERROR: <input>:1:5: found no matching "
              "overload for '_+_' applied to '(string, int)'\n | \"a\" + 1 == \"a1\"\n | ....^"),
    "missing class": Case(
        [slice_("s", _devices(1))], classes=[],
        error='claim default/claim, request req: could not retrieve device class gpu: deviceclass.resource.k8s.io '
              '"gpu" not found'),
    "too many devices": Case(
        [slice_("s", _devices(1))], claims=[claim(requests=[_req("req", count=33)])],
        error="claim default/claim, request req: adding 33 devices exceeds the claim limit of 32, with 0 already "
              "accounted for"),
    "firstAvailable takes the first subrequest that fits": Case(
        [slice_("s", _devices(2))],
        claims=[claim(requests=[{"name": "req", "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu", "count": 3},
            {"name": "small", "deviceClassName": "gpu", "count": 2}]}])],
        want=[[("req/small", "pool-1/dev-0"), ("req/small", "pool-1/dev-1")]]),
    "matchAttribute backtracks to a matching pair": Case(
        [slice_("s", [device("a", attrs={"numa": 0}), device("b", attrs={"numa": 1}), device("c", attrs={"numa": 1})])],
        claims=[claim(requests=[_req("r1"), _req("r2", selectors=['device.attributes["gpu.example.com"].numa == 1'])],
                      constraints=[{"matchAttribute": "gpu.example.com/numa"}])],
        want=[[("r1", "pool-1/b"), ("r2", "pool-1/c")]]),
    "distinctAttribute": Case(
        [slice_("s", [device("a", attrs={"numa": 0}), device("b", attrs={"numa": 0}), device("c", attrs={"numa": 1})])],
        claims=[claim(requests=[_req("req", count=2)], constraints=[{"distinctAttribute": "gpu.example.com/numa"}])],
        want=[[("req", "pool-1/a"), ("req", "pool-1/c")]]),
    "matchAttribute missing attribute": Case(
        [slice_("s", _devices(2))],
        claims=[claim(requests=[_req("req", count=2)], constraints=[{"matchAttribute": "gpu.example.com/numa"}])]),
    "admin access may take an allocated device": Case(
        [slice_("s", _devices(1))], claims=[claim(requests=[_req("req", adminAccess=True)])],
        state=AllocatedState({(DRIVER, "pool-1", "dev-0")}), want=[[("req", "pool-1/dev-0")]]),
    "two claims do not share a device": Case(
        [slice_("s", _devices(2))], claims=[claim("a"), claim("b")],
        want=[[("req", "pool-1/dev-0")], [("req", "pool-1/dev-1")]]),
    "NoSchedule taint avoided": Case(
        [slice_("s", [device("a", taints=[{"key": "bad", "effect": "NoSchedule"}]), device("b")])],
        want=[[("req", "pool-1/b")]]),
    "taint tolerated": Case(
        [slice_("s", [device("a", taints=[{"key": "bad", "effect": "NoExecute"}]), device("b")])],
        claims=[claim(requests=[_req("req", tolerations=[{"key": "bad", "operator": "Exists"}])])],
        want=[[("req", "pool-1/a")]]),
    "None effect ignored": Case(
        [slice_("s", [device("a", taints=[{"key": "info", "effect": "None"}])])], want=[[("req", "pool-1/a")]]),
    "duplicate device names: invalid pool": Case(
        [slice_("s1", [device("a")], count=2), slice_("s2", [device("a")], count=2)],
        error="invalid resource pools were encountered"),
    "shared counters limit partitions": Case(
        _partitioned(),
        claims=[claim(requests=[_req("req", count=3)])]),
    "shared counters allow two partitions": Case(
        _partitioned(),
        claims=[claim(requests=[_req("req", count=2)])], want=[[("req", "pool-1/p0"), ("req", "pool-1/p1")]]),
    "allocated partition consumes counters": Case(
        _partitioned(),
        state=AllocatedState({(DRIVER, "pool-1", "p0")}), claims=[claim(requests=[_req("req", count=2)])]),
    "shared allocation of a partition consumes counters too": Case(
        _partitioned(), state=AllocatedState(shared_device_ids={((DRIVER, "pool-1", "p0"), "share-x")}),
        claims=[claim(requests=[_req("req", count=2)])]),
    "pools with binding conditions last": Case(
        [slice_("s1", [device("bound", bindingConditions=["ready"])], pool="a"),
         slice_("s2", [device("plain")], pool="b")],
        want=[[("req", "b/plain")]]),
    "shared device by capacity": Case(
        [slice_("s", [device("shared", allowMultipleAllocations=True, capacity={"memory": {"value": "10Gi"}})])],
        claims=[claim(name, requests=[_req("req", capacity={"requests": {"memory": "4Gi"}})]) for name in ("a", "b")],
        want=[[("req", "pool-1/shared")], [("req", "pool-1/shared")]]),
    "shared device full": Case(
        [slice_("s", [device("shared", allowMultipleAllocations=True, capacity={"memory": {"value": "10Gi"}})])],
        claims=[claim(name, requests=[_req("req", capacity={"requests": {"memory": "4Gi"}})]) for name in "abc"]),
    "capacity request for a capacity the device lacks": Case(
        [slice_("s", [device("shared", allowMultipleAllocations=True, capacity={"memory": {"value": "10Gi"}})])],
        claims=[claim(requests=[_req("req", capacity={"requests": {"cores": "1"}})])]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_allocate(name: str) -> None:
    case = CASES[name]
    if case.error is not None:
        with pytest.raises(AllocationError) as info:
            _run(case)
        assert str(info.value) == case.error
        return
    result = _run(case)
    if case.want is None:
        assert result is None
        return
    assert result is not None
    got = [[(r.request, f"{r.pool}/{r.device}") for r in res.results] for res in result]
    assert got == case.want


def test_invalid_pool_is_a_per_node_failure() -> None:
    case = CASES["duplicate device names: invalid pool"]
    with pytest.raises(FailedOnNodeError):
        _run(case)


def test_node_local_device_pins_the_claim_to_the_node() -> None:
    [res] = _run(Case([slice_("s", _devices(1))]))
    assert res.node_selector == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}


def test_node_selector_of_the_slice_is_the_claims() -> None:
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    slices = [slice_("s", _devices(1), node_name=None, nodeSelector=selector)]
    [res] = _run(Case(slices, node=make_node().name("node-1").label("rack", "r1").obj()))
    assert res.node_selector == selector


def test_device_available_everywhere_has_no_node_selector() -> None:
    [res] = _run(Case([slice_("s", _devices(1), node_name=None, allNodes=True)]))
    assert res.node_selector is None


def test_configuration_from_class_and_claim() -> None:
    cls = device_class(config=[{"class": 1}])
    c = claim(requests=[_req("r1"), _req("r2")],
              config=[{"requests": ["r1"], "opaque": {"driver": DRIVER, "parameters": {"claim": 1}}},
                      {"opaque": {"driver": DRIVER, "parameters": {"all": 1}}}])
    [res] = _run(Case([slice_("s", _devices(2))], claims=[c], classes=[cls]))
    got = [(x.source, x.requests, x.config.parameters) for x in res.config]
    # the class config names both requests, so it applies to all: its request list is emptied
    assert got == [("FromClass", (), {"class": 1}), ("FromClaim", ("r1",), {"claim": 1}), ("FromClaim", (), {"all": 1})]


def test_tolerations_admin_access_and_binding_conditions_in_result() -> None:
    toleration = {"key": "bad", "operator": "Exists", "effect": "NoSchedule"}
    c = claim(requests=[_req("req", adminAccess=True, tolerations=[toleration])])
    [res] = _run(Case([slice_("s", [device("a", bindingConditions=["ready"], bindingFailureConditions=["failed"],
                                           taints=[{"key": "bad", "effect": "NoSchedule"}])])], claims=[c]))
    [r] = res.results
    assert (r.admin_access, [t.key for t in r.tolerations], r.binding_conditions, r.binding_failure_conditions) == (
        True, ["bad"], ("ready",), ("failed",))


def test_shared_device_results_carry_share_id_and_consumed_capacity() -> None:
    case = CASES["shared device by capacity"]
    results = _run(case)
    assert [(r.share_id, r.consumed_capacity) for res in results for r in res.results] == [
        ("share-0", {"memory": Decimal(4 * 2**30)}), ("share-1", {"memory": Decimal(4 * 2**30)})]


def test_state_from_allocated_claims_excludes_their_devices() -> None:
    allocated = claim("done").raw | {"status": {"allocation": {"devices": {"results": [
        {"request": "req", "driver": DRIVER, "pool": "pool-1", "device": "dev-0"}]}}}}
    state = AllocatedState.from_claims([resource_claim_from_api(allocated)])
    [res] = _run(Case([slice_("s", _devices(2))], state=state))
    assert [r.device for r in res.results] == ["dev-1"]


def test_device_taint_rule_taints_selected_devices() -> None:
    rule = device_taint_rule_from_api({"metadata": {"name": "r"}, "spec": {
        "deviceSelector": {"driver": DRIVER, "device": "dev-0"}, "taint": {"key": "maint", "effect": "NoSchedule"}}})
    slices = apply_device_taint_rules([slice_("s", _devices(2))], [rule])
    [res] = _run(Case(slices))
    assert [r.device for r in res.results] == ["dev-1"]


def test_device_taint_rule_without_selector_taints_nothing() -> None:
    rule = device_taint_rule_from_api({"metadata": {"name": "r"},
                                       "spec": {"taint": {"key": "k", "effect": "NoSchedule"}}})
    [s] = apply_device_taint_rules([slice_("s", _devices(1))], [rule])
    assert s.devices[0].taints == ()


def test_passed_deadline_aborts_the_search() -> None:
    allocator = Allocator(AllocatedState(), {"gpu": GPU}, [slice_("s", _devices(1))], CelCache())
    with pytest.raises(AllocationTimeout) as info:
        allocator.allocate(make_node().name("node-1").obj(), [claim()], deadline=0.0)
    assert str(info.value) == "filter operation aborted: context deadline exceeded"


def _devices_of(result: Any) -> list[list[str]]:
    return [[f"{r.pool}/{r.device}" for r in a.results] for a in result]


def test_remembered_outcome_follows_taken_devices_and_claim_specs() -> None:
    """Allocators of successive cycles share one slice index: the same claims on the same node with the same
    devices taken get the remembered outcome (no search: a passed deadline is not even looked at); a device
    taken since, another spec, another class or another Node object is searched again."""
    index = SliceIndex([slice_("s", _devices(3))])
    n = make_node().name("node-1").obj()

    def allocate(state: AllocatedState, claims: list[ResourceClaim], deadline: float | None = None,
                 classes: tuple[DeviceClass, ...] = (GPU,), on: Node = n) -> Any:
        return Allocator(state, {k.name: k for k in classes}, index, CelCache()).allocate(on, claims, deadline)

    assert _devices_of(allocate(AllocatedState(), [claim("a")])) == [["pool-1/dev-0"]]
    assert _devices_of(allocate(AllocatedState(), [claim("b")], deadline=0.0)) == [["pool-1/dev-0"]]
    taken = AllocatedState({(DRIVER, "pool-1", "dev-0")})
    with pytest.raises(AllocationTimeout):
        allocate(taken, [claim("c")], deadline=0.0)
    assert _devices_of(allocate(taken, [claim("c")])) == [["pool-1/dev-1"]]
    two = claim("d", [_req("req", count=2)])
    assert _devices_of(allocate(AllocatedState(), [two])) == [["pool-1/dev-0", "pool-1/dev-1"]]
    assert allocate(AllocatedState(), [claim("e", [_req("req", count=4)])]) is None
    assert allocate(AllocatedState(), [claim("e", [_req("req", count=4)])], deadline=0.0) is None
    with pytest.raises(AllocationTimeout):  # the class as a new object: it may have changed
        allocate(AllocatedState(), [claim("f")], deadline=0.0, classes=(device_class(),))
    with pytest.raises(AllocationTimeout):
        allocate(AllocatedState(), [claim("g")], deadline=0.0, on=make_node().name("node-1").obj())


def test_remembered_outcome_with_shared_counters_follows_taken_partitions() -> None:
    """With the whole pool on the node, what is left of its counters follows from the partitions taken: the
    outcome is remembered, and a partition taken since (4Gi of the 8Gi gone) is searched again."""
    index = SliceIndex(_partitioned())
    n = make_node().name("node-1").obj()
    two = [claim("a", [_req("req", count=2)])]

    def allocate(state: AllocatedState, deadline: float | None = None) -> Any:
        return Allocator(state, {"gpu": GPU}, index, CelCache()).allocate(n, two, deadline)

    assert _devices_of(allocate(AllocatedState())) == [["pool-1/p0", "pool-1/p1"]]
    assert _devices_of(allocate(AllocatedState(), deadline=0.0)) == [["pool-1/p0", "pool-1/p1"]]
    taken = AllocatedState({(DRIVER, "pool-1", "p0")})
    with pytest.raises(AllocationTimeout):
        allocate(taken, deadline=0.0)
    assert allocate(taken) is None
    assert allocate(taken, deadline=0.0) is None
