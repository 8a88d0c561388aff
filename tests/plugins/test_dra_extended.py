"""Extended resources backed by a DeviceClass: which class backs a name (upstream's event-ordered cache),
the special claim's requests and container mappings as upstream builds them, and NodeResourcesFit leaving
such a resource to DynamicResources on nodes that do not offer it."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.model.pod import Pod
from scheduler.plugins.helper.dynamicresources.extended import (
    CLAIM_ANNOTATION,
    DeviceRequestSpec,
    ExtendedResourceCache,
    RequestMapping,
    create_requests_and_mappings,
    find_extended_resource_claim,
    is_dra_extended_resource_name,
)
from scheduler.plugins.helper.dynamicresources.manager import MANAGER_KEY, DraManager
from scheduler.plugins.node_resources_fit import NodeResourcesFit
from scheduler.testing import make_container, make_device_class, make_pod
from tests.builders import make_node
from tests.plugins.util import FakeHandle, node_info

GPU = "example.com/gpu"


def test_dra_extended_resource_names() -> None:
    assert is_dra_extended_resource_name(GPU)
    assert is_dra_extended_resource_name("deviceclass.resource.kubernetes.io/gpu")
    assert not is_dra_extended_resource_name("cpu")
    assert not is_dra_extended_resource_name("hugepages-2Mi")


def test_cache_maps_explicit_and_implicit_names_newest_class_wins() -> None:
    c = ExtendedResourceCache()
    old, new = (make_device_class().name(n).extended_resource_name(GPU).creation_timestamp(at).obj()
                for n, at in (("b", "2026-01-01T00:00:00Z"), ("a", "2026-02-01T00:00:00Z")))
    c.add_or_update(old, None)
    assert c.get(GPU) is old and c.get("deviceclass.resource.kubernetes.io/b") is old
    c.add_or_update(new, None)
    assert c.get(GPU) is new and c.get("deviceclass.resource.kubernetes.io/a") is new
    # An older class arriving after a newer one changes nothing, not even its implicit name (upstream).
    older = make_device_class().name("c").extended_resource_name(GPU).creation_timestamp("2025-01-01T00:00:00Z").obj()
    c.add_or_update(older, None)
    assert c.get(GPU) is new and c.get("deviceclass.resource.kubernetes.io/c") is None
    # Same creation time: the smaller name wins.
    tie = make_device_class().name("0").extended_resource_name(GPU).creation_timestamp("2026-02-01T00:00:00Z").obj()
    c.add_or_update(tie, None)
    assert c.get(GPU) is tie
    c.delete(tie)
    assert c.get(GPU) is None and c.get("deviceclass.resource.kubernetes.io/0") is None


def test_cache_update_drops_the_old_names() -> None:
    c = ExtendedResourceCache()
    gpu, tpu = (make_device_class().name("g").extended_resource_name(ext).obj() for ext in (GPU, "example.com/tpu"))
    c.add_or_update(gpu, None)
    renamed = tpu
    c.add_or_update(renamed, gpu)
    assert c.get(GPU) is None and c.get("example.com/tpu") is renamed


def test_manager_follows_device_class_events() -> None:
    m = DraManager()
    obj = {"metadata": {"name": "g", "resourceVersion": "1"}, "spec": {"extendedResourceName": GPU}}
    m.on_object_event("DeviceClass", False, obj)
    assert m.class_for_resource(GPU) is not None
    m.on_object_event("DeviceClass", True, obj)
    assert m.class_for_resource(GPU) is None


def _cache(*names: str) -> ExtendedResourceCache:
    c = ExtendedResourceCache()
    for n in names:
        c.add_or_update(make_device_class().name(n.split("/")[-1] + "-class").extended_resource_name(n)
                        .creation_timestamp("2026-01-01T00:00:00Z").obj(), None)
    return c


def test_requests_one_per_container_indexed_by_sorted_resource_name() -> None:
    p = make_pod().containers(make_container().name("a").res({"cpu": "1", GPU: "2"}),
                              make_container().name("b").res({GPU: "1"})).obj()
    reqs, maps = create_requests_and_mappings(p, [GPU], _cache(GPU))
    assert reqs == [DeviceRequestSpec("container-0-request-1", "gpu-class", 2),
                    DeviceRequestSpec("container-1-request-0", "gpu-class", 1)]
    assert maps == [RequestMapping("a", GPU, "container-0-request-1"),
                    RequestMapping("b", GPU, "container-1-request-0")]
    assert reqs[0].to_api() == {"name": "container-0-request-1", "exactly": {
        "deviceClassName": "gpu-class", "allocationMode": "ExactCount", "count": 2}}


def test_init_containers_reuse_later_long_lived_requests_and_share_the_largest() -> None:
    # init0 (plain) wants 3: the sidecar (index 1) gives 1 and the container (index 3) 1, so it needs 1 more;
    # init2 (plain) wants 4: only the container's 1 is after it, so 3 more; the largest (init2's) is kept.
    p = (make_pod().container(make_container().name("main").res({GPU: "1"}))
         .init_containers(make_container().name("i0").res({GPU: "3"}),
                          make_container().name("side").res({GPU: "1"}).restart_policy("Always"),
                          make_container().name("i2").res({GPU: "4"})).obj())
    reqs, maps = create_requests_and_mappings(p, [GPU], _cache(GPU))
    assert reqs == [DeviceRequestSpec("container-1-request-0", "gpu-class", 1),
                    DeviceRequestSpec("container-2-request-0", "gpu-class", 3),
                    DeviceRequestSpec("container-3-request-0", "gpu-class", 1)]
    assert maps == [RequestMapping("side", GPU, "container-1-request-0"),
                    RequestMapping("main", GPU, "container-3-request-0"),
                    RequestMapping("i0", GPU, "container-1-request-0"),
                    RequestMapping("i0", GPU, "container-3-request-0"),
                    RequestMapping("i0", GPU, "container-2-request-0"),  # renamed from container-0-request-0
                    RequestMapping("i2", GPU, "container-3-request-0"),
                    RequestMapping("i2", GPU, "container-2-request-0")]


def test_init_container_covered_by_later_requests_makes_none() -> None:
    p = (make_pod().container(make_container().name("main").res({GPU: "2"}))
         .init_container(make_container().name("i0").res({GPU: "1"})).obj())
    reqs, maps = create_requests_and_mappings(p, [GPU], _cache(GPU))
    assert reqs == [DeviceRequestSpec("container-1-request-0", "gpu-class", 2)]
    assert maps == [RequestMapping("main", GPU, "container-1-request-0"),
                    RequestMapping("i0", GPU, "container-1-request-0")]


def test_resources_without_a_class_are_skipped() -> None:
    p = make_pod().container(make_container().name("a").res({GPU: "1", "example.com/nic": "1"})).obj()
    reqs, _ = create_requests_and_mappings(p, ["example.com/nic", GPU], _cache(GPU))
    assert [r.name for r in reqs] == ["container-0-request-0"]


class _Claim:
    def __init__(self, meta: dict[str, Any]) -> None:
        self.raw = {"metadata": meta}


def test_find_extended_resource_claim_needs_annotation_and_controller_owner() -> None:
    p = make_pod().container(make_container().name("a").res({GPU: "1"})).obj()
    owner = [{"name": "p", "uid": "uid-p", "controller": True}]
    good = _Claim({"annotations": {CLAIM_ANNOTATION: "true"}, "ownerReferences": owner})
    not_annotated = _Claim({"ownerReferences": owner})
    not_controller = _Claim({"annotations": {CLAIM_ANNOTATION: "true"},
                             "ownerReferences": [{"name": "p", "uid": "uid-p"}]})
    assert find_extended_resource_claim(p, [not_annotated, not_controller, good]) is good
    assert find_extended_resource_claim(p, [not_annotated, not_controller]) is None


@pytest.mark.parametrize(("allocatable", "message"), [
    (None, None),  # not offered by the node: DynamicResources decides
    ("1", "Insufficient example.com/gpu"),  # a device plugin offers it: counted here as before
])
def test_fit_leaves_a_class_backed_resource_the_node_lacks_to_dra(allocatable: str | None,
                                                                  message: str | None) -> None:
    handle = FakeHandle()
    fit = NodeResourcesFit({}, handle)  # type: ignore[arg-type]
    p = make_pod().container(make_container().name("a").res({GPU: "2"})).obj()
    node = make_node("n1", extra={GPU: allocatable} if allocatable else None)
    ni = node_info(node)
    state = CycleState()
    assert fit.sign_pod(p) == ()
    handle.shared_plugin_state(MANAGER_KEY, DraManager).on_object_event(
        "DeviceClass", False, {"metadata": {"name": "g"}, "spec": {"extendedResourceName": GPU}})
    assert fit.sign_pod(p) is None
    fit.pre_filter(state, p, [ni])
    st = fit.filter(state, p, ni)
    assert (None if st is None else st.message) == message


# --- DynamicResources with the special claim ---------------------------------------------------------------

def _dra(claims: list[dict[str, Any]] | None = None) -> tuple[Any, Any]:
    from tests.plugins.test_dynamic_resources import class_obj, plugin, slice_obj
    gpu_class = class_obj()
    gpu_class["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    gpu_class["spec"]["extendedResourceName"] = GPU
    objs = [("ResourceSlice", slice_obj("s1", "n1", ["gpu-0", "gpu-1"])),
            ("ResourceSlice", slice_obj("s2", "n2", ["gpu-0"])), ("DeviceClass", gpu_class)]
    objs += [("ResourceClaim", c) for c in claims or ()]
    return plugin(*objs)


def _filter_all(pl: Any, p: Pod, nodes: list[Any]) -> tuple[CycleState, dict[str, Any]]:
    state = CycleState()
    _, status = pl.pre_filter(state, p, nodes)
    assert status is None, status
    out = {}
    for ni in nodes:
        st = pl.filter(state, p, ni)
        out[ni.name] = None if st is None else (st.code.name, st.message)
    return state, out


NODES = [node_info(make_node("n1")), node_info(make_node("n2"))]


def test_pod_without_class_backed_requests_is_skipped() -> None:
    pl, _ = _dra()
    p = make_pod().container(make_container().name("a").res({"example.com/nic": "1"})).obj()
    _, status = pl.pre_filter(CycleState(), p, NODES)
    assert status is not None and status.code.name == "SKIP"


def test_special_claim_allocated_at_filter_created_and_recorded_at_prebind() -> None:
    pl, h = _dra()
    p = make_pod().container(make_container().name("a").res({GPU: "2"})).obj()
    state, verdicts = _filter_all(pl, p, NODES)
    assert verdicts == {"n1": None, "n2": ("UNSCHEDULABLE_AND_UNRESOLVABLE", "cannot allocate all claims")}
    assert pl.reserve(state, p, "n1") is None
    assert pl.pre_bind(state, p, "n1") is None
    created = h.objects["p-extended-resources-x7k2p"]
    meta = created["metadata"]
    assert meta["annotations"] == {CLAIM_ANNOTATION: "true"}
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p",
                                        "controller": True}]
    assert created["spec"]["devices"]["requests"] == [{"name": "container-0-request-0", "exactly": {
        "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2}}]
    results = created["status"]["allocation"]["devices"]["results"]
    assert sorted(r["device"] for r in results) == ["gpu-0", "gpu-1"]
    assert {r["request"] for r in results} == {"container-0-request-0"}
    assert created["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "uid-p"}]
    assert h.pod_patches == [{"status": {"extendedResourceClaimStatus": {
        "requestMappings": [{"containerName": "a", "resourceName": GPU, "requestName": "container-0-request-0"}],
        "resourceClaimName": "p-extended-resources-x7k2p"}}}]
    assert pl.manager.in_flight_count() == 0
    # Unreserve after PreBind (a later plugin failed): the created claim goes away.
    pl.unreserve(state, p, "n1")
    assert h.writes[-1] == ("delete", "p-extended-resources-x7k2p")


def test_reserved_special_claim_devices_are_taken_until_unreserve() -> None:
    pl, _ = _dra()
    p = make_pod().container(make_container().name("a").res({GPU: "2"})).obj()
    state, _ = _filter_all(pl, p, NODES)
    pl.reserve(state, p, "n1")
    _, verdicts = _filter_all(pl, make_pod().container(make_container().name("a").res({GPU: "1"})).obj(), NODES)
    assert verdicts["n1"] is not None and verdicts["n2"] is None
    pl.unreserve(state, p, "n1")
    assert pl.manager.in_flight_count() == 0


def test_node_offering_the_resource_itself_needs_no_claim() -> None:
    pl, h = _dra()
    p = make_pod().container(make_container().name("a").res({GPU: "1"})).obj()
    offered = node_info(make_node("n3", extra={GPU: "4"}))
    state, verdicts = _filter_all(pl, p, [offered])
    assert verdicts == {"n3": None}
    assert pl.reserve(state, p, "n3") is None
    assert pl.pre_bind(state, p, "n3") is None
    assert h.writes == [] and h.pod_patches == []


def test_other_extended_request_the_node_lacks_cannot_fit() -> None:
    pl, _ = _dra()
    p = make_pod().container(make_container().name("a").res({GPU: "1", "example.com/nic": "1"})).obj()
    _, verdicts = _filter_all(pl, p, NODES[:1])
    assert verdicts == {"n1": ("UNSCHEDULABLE_AND_UNRESOLVABLE", "cannot fit resource")}


def test_claim_left_by_an_earlier_cycle_is_refused_then_deleted_by_postfilter() -> None:
    from tests.plugins.test_dynamic_resources import claim_obj
    stale = claim_obj("p-extended-resources-old", owner="p")
    stale["metadata"]["annotations"] = {CLAIM_ANNOTATION: "true"}
    pl, h = _dra([stale])
    p = make_pod().container(make_container().name("a").res({GPU: "1"})).obj()
    state, verdicts = _filter_all(pl, p, NODES)
    assert set(verdicts.values()) == {("UNSCHEDULABLE_AND_UNRESOLVABLE", "cannot schedule extended resource claim")}
    _, status = pl.post_filter(state, p, {})
    assert status is not None and status.message == "deletion of ResourceClaim completed"
    assert h.writes == [("update", "p-extended-resources-old"), ("delete", "p-extended-resources-old")]


def test_default_profile_offline_places_the_pod_creates_its_claim_and_records_the_mappings() -> None:
    """Through simulate's OfflineWriter: NodeResourcesFit delegates, DynamicResources allocates on n1 (two
    devices; n2 has one), the created claim and the pod's status are in the object store."""
    from scheduler.eventhandlers import ADDED, MODIFIED
    from tests.plugins.test_dynamic_resources import scheduler
    s, _, bound = scheduler()
    s.on_object_event("DeviceClass", MODIFIED, {"metadata": {"name": "gpu", "resourceVersion": "2"}, "spec": {
        "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}], "extendedResourceName": GPU}})
    pod = make_pod().scheduler_name("py-scheduler").container(make_container().name("a").res({GPU: "2"}))
    s.on_pod_event(ADDED, pod.api())
    assert s.schedule_one(timeout=0)
    assert bound == ["p->n1"]
    claim = next(c for c in s.objects.list("ResourceClaim") if c["metadata"]["name"].startswith("p-extended-"))
    assert sorted(r["device"] for r in claim["status"]["allocation"]["devices"]["results"]) == ["gpu-0", "gpu-1"]
    pod_obj = s.last_seen_pod("default", "p")
    assert pod_obj is not None
    assert pod_obj["status"]["extendedResourceClaimStatus"]["resourceClaimName"] == claim["metadata"]["name"]
