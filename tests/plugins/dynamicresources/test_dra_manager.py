"""DraManager: the devices in use follow every claim change, assumed claims give way only to newer
watched versions, in-flight allocations count until written, DeviceTaintRules taint the slices."""

from __future__ import annotations

from typing import Any

from scheduler.model.dra import AllocationResult, DeviceRequestAllocationResult, resource_claim_from_api
from scheduler.plugins.helper.dynamicresources.manager import DraManager

DRIVER = "gpu.example.com"


def claim(name: str, rv: str = "1", devices: tuple[str, ...] = (), admin: bool = False,
          shared: dict[str, str] | None = None) -> dict[str, Any]:
    results = [{"request": "req", "driver": DRIVER, "pool": "p", "device": d,
                **({"adminAccess": True} if admin else {}),
                **({"shareID": shared[d], "consumedCapacity": {"memory": "1"}} if shared and d in shared else {})}
               for d in devices]
    status = {"allocation": {"devices": {"results": results}}} if devices else {}
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": rv},
            "spec": {"devices": {"requests": [{"name": "req", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": status}


def in_use(m: DraManager) -> set[str]:
    return {d for _, _, d in m.allocated_state().allocated_devices}


def test_devices_in_use_follow_updates_and_deletes_and_admin_access_takes_none() -> None:
    m = DraManager()
    m.on_object_event("ResourceClaim", False, claim("a", devices=("d0",)))
    m.on_object_event("ResourceClaim", False, claim("b", devices=("d1",), admin=True))
    assert in_use(m) == {"d0"}
    m.on_object_event("ResourceClaim", False, claim("a", rv="2", devices=("d2",)))
    assert in_use(m) == {"d2"}
    m.on_object_event("ResourceClaim", True, claim("a", rv="2", devices=("d2",)))
    assert in_use(m) == set()


def test_shared_devices_count_their_share_and_capacity_until_released() -> None:
    m = DraManager()
    m.on_object_event("ResourceClaim", False, claim("a", devices=("d0",), shared={"d0": "s1"}))
    m.on_object_event("ResourceClaim", False, claim("b", devices=("d0",), shared={"d0": "s2"}))
    state = m.allocated_state()
    assert {s for _, s in state.shared_device_ids} == {"s1", "s2"}
    assert str(state.aggregated_capacity[(DRIVER, "p", "d0")]["memory"]) == "2"
    m.on_object_event("ResourceClaim", True, claim("b", devices=("d0",), shared={"d0": "s2"}))
    assert str(m.allocated_state().aggregated_capacity[(DRIVER, "p", "d0")]["memory"]) == "1"


def test_assumed_claim_wins_until_the_watch_delivers_its_version() -> None:
    m = DraManager()
    m.on_object_event("ResourceClaim", False, claim("a", rv="5"))
    m.assume_claim(claim("a", rv="6", devices=("d0",)))
    assert in_use(m) == {"d0"}
    m.on_object_event("ResourceClaim", False, claim("a", rv="5"))  # a late event of the old version
    assert in_use(m) == {"d0"}
    m.on_object_event("ResourceClaim", False, claim("a", rv="6", devices=("d0",)))
    m.restore_claim("ns", "a")  # nothing assumed any more: the watched version stays
    assert in_use(m) == {"d0"}


def test_restore_drops_the_assumed_version() -> None:
    m = DraManager()
    m.on_object_event("ResourceClaim", False, claim("a", rv="5"))
    m.assume_claim(claim("a", rv="6", devices=("d0",)))
    m.restore_claim("ns", "a")
    assert in_use(m) == set()


def test_in_flight_allocations_count_until_removed() -> None:
    m = DraManager()
    m.on_object_event("ResourceClaim", False, claim("a"))
    c = resource_claim_from_api(claim("a"))
    alloc = AllocationResult((DeviceRequestAllocationResult("req", DRIVER, "p", "d3"),))
    m.signal_pending_allocation(c, alloc)
    assert m.pending_allocation(c.uid) == alloc and in_use(m) == {"d3"}
    assert m.remove_pending_allocation(c.uid) and not m.remove_pending_allocation(c.uid)
    assert in_use(m) == set()


def test_device_taint_rules_taint_the_selected_devices() -> None:
    m = DraManager()
    m.on_object_event("ResourceSlice", False, {
        "metadata": {"name": "s"},
        "spec": {"driver": DRIVER, "nodeName": "n", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "d0"}, {"name": "d1"}]}})
    rule = {"metadata": {"name": "r"},
            "spec": {"deviceSelector": {"driver": DRIVER, "device": "d1"},
                     "taint": {"key": "broken", "effect": "NoSchedule"}}}
    m.on_object_event("DeviceTaintRule", False, rule)
    (s,) = m.slices_with_taint_rules()
    assert [len(d.taints) for d in s.devices] == [0, 1]
    m.on_object_event("DeviceTaintRule", True, rule)
    (s,) = m.slices_with_taint_rules()
    assert [len(d.taints) for d in s.devices] == [0, 0]


def test_an_object_that_does_not_parse_is_left_out() -> None:
    m = DraManager()
    m.on_object_event("DeviceClass", False, {"metadata": {"name": "bad"}, "spec": {"selectors": "nope"}})
    assert m.device_class("bad") is None


def test_a_relisted_unchanged_slice_is_not_parsed_again() -> None:
    m = DraManager()
    obj = {"metadata": {"name": "s", "resourceVersion": "7"},
           "spec": {"driver": DRIVER, "nodeName": "n", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "d0"}]}}
    m.on_object_event("ResourceSlice", False, obj)
    (before,) = m.slices_with_taint_rules()
    m.on_object_event("ResourceSlice", False, dict(obj))
    (after,) = m.slices_with_taint_rules()
    assert after is before
    m.on_object_event("ResourceSlice", True, obj)
    assert m.slices_with_taint_rules() == []
