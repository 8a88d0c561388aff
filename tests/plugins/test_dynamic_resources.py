"""DynamicResources: upstream's verdicts and messages at each extension point, from hand-made objects fed
through the plugin's watch hook, and one pod scheduled end to end through the default profile."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED, MODIFIED
from scheduler.framework.features import Features
from scheduler.framework.interface import CycleState, NodeToStatus
from scheduler.framework.podgroup import PodGroupAssignments, PodGroupInfo
from scheduler.framework.status import Code
from scheduler.framework.types import QueueingHint
from scheduler.model.apierrors import ConflictError
from scheduler.model.pod import Pod, pod_from_api
from scheduler.plugins.dynamic_resources import FINALIZER, DynamicResources
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import OfflineWriter, RecordingEventSink
from tests.builders import make_node, make_pod
from tests.plugins.util import node_info

DRIVER = "gpu.example.com"
NS = "default"


def slice_obj(name: str, node: str, devices: list[str], pool: str | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": pool or node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": d} for d in devices]}}


def class_obj(name: str = "gpu") -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def claim_obj(name: str, count: int = 1, device_class: str = "gpu", owner: str | None = None,
              **status: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": "10"}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": f"uid-{owner}",
                                    "controller": True}]
    return {"metadata": meta,
            "spec": {"devices": {"requests": [{"name": "req", "exactly": {
                "deviceClassName": device_class, "count": count}}]}},
            "status": status}


def allocated(node: str, devices: list[str], reserved: list[str] | None = None) -> dict[str, Any]:
    """A claim status allocated on ``node`` (its pool is named after it), reserved for pods by name."""
    status: dict[str, Any] = {"allocation": {
        "devices": {"results": [{"request": "req", "driver": DRIVER, "pool": node, "device": d} for d in devices]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": p, "uid": f"uid-{p}"} for p in reserved]
    return status


def pod_with(name: str = "p", claim: str = "c1", template: bool = False,
             statuses: list[dict[str, Any]] | None = None) -> Pod:
    ref = {"name": "gpu", "resourceClaimTemplateName": "t"} if template else {"name": "gpu", "resourceClaimName": claim}
    raw: dict[str, Any] = {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
                           "spec": {"containers": [{"name": "c", "image": "x"}], "resourceClaims": [ref]}}
    if statuses is not None:
        raw["status"] = {"resourceClaimStatuses": statuses}
    return pod_from_api(raw)


class Handle:
    """The writes the plugin makes, applied to its own watch hook as the API server and watch would."""

    def __init__(self) -> None:
        self.plugin: DynamicResources | None = None
        self.objects: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, str]] = []
        self.conflicts = 0
        self.pod_patches: list[Mapping[str, Any]] = []

    def update_object(self, kind: str, obj: Mapping[str, Any], subresource: str = "") -> Mapping[str, Any]:
        name = obj["metadata"]["name"]
        self.writes.append((subresource or "update", name))
        if self.conflicts:
            self.conflicts -= 1
            raise ConflictError("the object has been modified")
        out = copy.deepcopy(dict(obj))
        out["metadata"]["resourceVersion"] = str(int(out["metadata"].get("resourceVersion") or 0) + 1)
        self.objects[name] = out
        return out

    def get_object(self, kind: str, namespace: str, name: str) -> Mapping[str, Any]:
        return self.objects[name]

    def patch_object_status(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.writes.append(("patch", name))

    def create_object(self, kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        out = copy.deepcopy(dict(obj))
        out["metadata"].update(name=out["metadata"]["generateName"] + "x7k2p", uid="uid-created", resourceVersion="1")
        self.writes.append(("create", out["metadata"]["name"]))
        self.objects[out["metadata"]["name"]] = out
        return out

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        self.writes.append(("delete", name))
        self.objects.pop(name, None)

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.writes.append(("pod-status", name))
        self.pod_patches.append(patch)

    def shared_plugin_state(self, key: str, factory: Callable[[], Any]) -> Any:
        return factory()

    def rng(self) -> random.Random:
        return random.Random(1)

    def features(self) -> Features:
        return Features(enable_generic_workload=True)


def plugin(*objs: tuple[str, dict[str, Any]], args: dict[str, Any] | None = None) -> tuple[DynamicResources, Handle]:
    h = Handle()
    pl = DynamicResources(args or {}, h)  # type: ignore[arg-type]  # the writes are all it uses
    h.plugin = pl
    for kind, obj in objs:
        pl.on_object_event(kind, False, obj)
        h.objects[obj["metadata"]["name"]] = obj
    return pl, h


def cluster(claim: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Two nodes with a slice each (n1: gpu-0, gpu-1; n2: gpu-0), the class, one claim c1."""
    return [("ResourceSlice", slice_obj("s1", "n1", ["gpu-0", "gpu-1"])),
            ("ResourceSlice", slice_obj("s2", "n2", ["gpu-0"])),
            ("DeviceClass", class_obj()),
            ("ResourceClaim", claim or claim_obj("c1"))]


NODES = [node_info(make_node("n1")), node_info(make_node("n2"))]


def run_filters(pl: DynamicResources, pod: Pod) -> tuple[CycleState, dict[str, Any]]:
    state = CycleState()
    _, status = pl.pre_filter(state, pod, NODES)
    assert status is None, status
    verdicts = {}
    for ni in NODES:
        st = pl.filter(state, pod, ni)
        verdicts[ni.name] = None if st is None else (st.code, st.message)
    return state, verdicts


# --- PreEnqueue and PreFilter ----------------------------------------------------------------------------


@pytest.mark.parametrize(("objs", "pod", "message"), [
    ([], pod_with(), 'could not find ResourceClaim "default/c1"'),
    ([], pod_with(template=True), 'pod "default/p": ResourceClaim not created yet'),
    ([("ResourceClaim", claim_obj("p-gpu"))], pod_with(template=True, statuses=[
        {"name": "gpu", "resourceClaimName": "p-gpu"}]),
     "ResourceClaim default/p-gpu was not created for Pod default/p (Pod is not owner)"),
    ([("ResourceClaim", {**claim_obj("c1"), "metadata": {**claim_obj("c1")["metadata"],
                                                         "deletionTimestamp": "2026-01-01T00:00:00Z"}})],
     pod_with(), 'resourceclaim "c1" is being deleted'),
])
def test_pre_enqueue_waits_for_the_claims_with_upstreams_reason(
        objs: list[tuple[str, dict[str, Any]]], pod: Pod, message: str) -> None:
    pl, _ = plugin(*objs)
    status = pl.pre_enqueue(pod)
    assert status is not None and status.message == message
    _, pf = pl.pre_filter(CycleState(), pod, NODES)
    assert pf is not None and (pf.code, pf.message) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)


def test_template_claim_named_in_the_pod_status_and_owned_by_it_is_accepted() -> None:
    pl, _ = plugin(("ResourceClaim", claim_obj("p-gpu", owner="p")))
    pod = pod_with(template=True, statuses=[{"name": "gpu", "resourceClaimName": "p-gpu"}])
    assert pl.pre_enqueue(pod) is None


def test_pod_without_claims_is_skipped_and_postfilter_rejects_without_a_reason() -> None:
    pl, _ = plugin()
    state, pod = CycleState(), make_pod()
    _, status = pl.pre_filter(state, pod, [])
    assert status is not None and status.code == Code.SKIP
    assert pl.pre_enqueue(pod) is None and pl.sign_pod(pod) == ()
    r, s = pl.post_filter(state, pod, NodeToStatus())
    assert r is None and s is not None and (s.code, s.reasons) == (Code.UNSCHEDULABLE, [])
    assert pl.score_nodes(state, pod, NODES) == ([0, 0], None)


def test_postfilter_without_prefilter_state_is_an_error_like_upstream() -> None:
    pl, _ = plugin()
    r, s = pl.post_filter(CycleState(), make_pod(), NodeToStatus())
    assert r is None and s is not None and (s.code, s.message) == (Code.ERROR, "not found")
    f = pl.filter(CycleState(), make_pod(), node_info(make_node()))
    assert f is not None and f.code == Code.ERROR


@pytest.mark.parametrize(("claim", "message", "code"), [
    (claim_obj("c1", device_class="tpu"), "request req: device class tpu does not exist",
     Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    (claim_obj("c1", device_class=""), "request req: unsupported request type", Code.ERROR),
])
def test_prefilter_checks_the_device_classes(claim: dict[str, Any], message: str, code: Code) -> None:
    pl, _ = plugin(*cluster(claim))
    _, status = pl.pre_filter(CycleState(), pod_with(), NODES)
    assert status is not None and (status.code, status.message) == (code, message)


def test_claim_being_allocated_for_another_pod_waits() -> None:
    pl, _ = plugin(*cluster())
    state, _ = run_filters(pl, pod_with("p"))
    assert pl.reserve(state, pod_with("p"), "n1") is None
    _, status = pl.pre_filter(CycleState(), pod_with("q"), NODES)
    assert status is not None and status.message == "resource claim default/c1 is in the process of being allocated"


# --- Filter, Score -----------------------------------------------------------------------------------------


def test_filter_allocates_per_node_and_says_why_a_node_cannot() -> None:
    pl, _ = plugin(*cluster(claim_obj("c1", count=2)))
    _, verdicts = run_filters(pl, pod_with())
    assert verdicts == {"n1": None, "n2": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")}


def test_allocated_claim_is_available_only_where_its_devices_are() -> None:
    pl, _ = plugin(*cluster(claim_obj("c1", **allocated("n2", ["gpu-0"]))))
    _, verdicts = run_filters(pl, pod_with())
    assert verdicts == {"n1": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "resourceclaim not available on the node"),
                        "n2": None}


def test_devices_of_allocated_claims_are_taken() -> None:
    other = claim_obj("other", **allocated("n2", ["gpu-0"], reserved=["x"]))
    pl, _ = plugin(*cluster(), ("ResourceClaim", other))
    _, verdicts = run_filters(pl, pod_with())
    assert verdicts["n1"] is None
    assert verdicts["n2"] == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")


def test_device_taint_rule_keeps_the_tainted_devices_from_pods_without_a_toleration() -> None:
    rule = {"metadata": {"name": "drain-n1"},
            "spec": {"deviceSelector": {"driver": DRIVER, "pool": "n1"},
                     "taint": {"key": "maintenance", "effect": "NoSchedule"}}}
    pl, _ = plugin(*cluster(), ("DeviceTaintRule", rule))
    _, verdicts = run_filters(pl, pod_with())
    assert verdicts == {"n1": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims"), "n2": None}


def test_a_selector_error_is_an_error_status_with_the_allocators_message() -> None:
    broken = {"metadata": {"name": "gpu"},
              "spec": {"selectors": [{"cel": {"expression": 'device.attributes["x"].model == "a"'}}]}}
    objs = [o for o in cluster() if o[0] != "DeviceClass"]
    pl, _ = plugin(*objs, ("DeviceClass", broken))
    _, verdicts = run_filters(pl, pod_with())
    code, message = verdicts["n1"]
    assert code == Code.ERROR
    assert message.startswith("class gpu: selector #0 on device gpu.example.com/n1/gpu-0: CEL runtime error: "
                              "no such key: model"), message


def test_filter_timeout_is_an_error_naming_the_node() -> None:
    pl, _ = plugin(*cluster(), args={"filterTimeout": "1ns"})
    _, verdicts = run_filters(pl, pod_with())
    assert verdicts["n1"] == (Code.ERROR, "node n1: timed out trying to allocate devices")


def prioritized_claim() -> dict[str, Any]:
    """c1 asking for two devices of the class, or else one (a prioritized list)."""
    claim = claim_obj("c1")
    claim["spec"]["devices"]["requests"] = [{"name": "req", "firstAvailable": [
        {"name": "two", "deviceClassName": "gpu", "count": 2}, {"name": "one", "deviceClassName": "gpu"}]}]
    return claim


def test_prioritized_list_scores_earlier_subrequests_higher() -> None:
    pl, _ = plugin(*cluster(prioritized_claim()))
    state, verdicts = run_filters(pl, pod_with())
    assert verdicts == {"n1": None, "n2": None}
    scores, status = pl.score_nodes(state, pod_with(), NODES)
    assert status is None and scores == [8, 7]


def test_normalize_scales_a_claimed_pods_row_and_leaves_a_claimless_pods_zeros() -> None:
    pl, _ = plugin(*cluster(prioritized_claim()))
    state, _ = run_filters(pl, pod_with())
    row = np.array(pl.score_nodes(state, pod_with(), NODES)[0], dtype=np.int64)
    assert pl.normalize_values(state, pod_with(), row) is None
    assert row.tolist() == [100, 87]  # DefaultNormalizeScore: 7 * 100 // 8
    plain = pod_from_api({"metadata": {"name": "q", "namespace": NS, "uid": "uid-q"},
                          "spec": {"containers": [{"name": "c", "image": "x"}]}})
    state = CycleState()
    pl.pre_filter(state, plain, NODES)
    scores, status = pl.score_nodes(state, plain, NODES)
    assert status is None and scores == [0, 0]
    row = np.array(scores, dtype=np.int64)
    assert pl.normalize_values(state, plain, row) is None
    assert row.tolist() == [0, 0]


# --- Reserve, PreBind, Unreserve, PostFilter -----------------------------------------------------------------


def test_reserved_devices_are_not_given_to_the_next_pod_until_unreserve() -> None:
    first = claim_obj("c1")
    pl, _ = plugin(*cluster(first), ("ResourceClaim", claim_obj("c2", count=2)))
    state, _ = run_filters(pl, pod_with("p", "c1"))
    assert pl.reserve(state, pod_with("p", "c1"), "n1") is None
    _, verdicts = run_filters(pl, pod_with("q", "c2"))
    assert verdicts["n1"] == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")
    pl.unreserve(state, pod_with("p", "c1"), "n1")
    _, verdicts = run_filters(pl, pod_with("q", "c2"))
    assert verdicts["n1"] is None


def test_prebind_writes_finalizer_allocation_and_reservation_and_keeps_the_devices_taken() -> None:
    pl, h = plugin(*cluster(), ("ResourceClaim", claim_obj("c2")))
    pod = pod_with("p", "c1")
    state, _ = run_filters(pl, pod)
    assert pl.reserve(state, pod, "n2") is None
    assert pl.pre_bind(state, pod, "n2") is None
    assert h.writes == [("update", "c1"), ("status", "c1")]
    written = h.objects["c1"]
    assert FINALIZER in written["metadata"]["finalizers"]
    assert written["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "uid-p"}]
    results = written["status"]["allocation"]["devices"]["results"]
    assert [(r["pool"], r["device"]) for r in results] == [("n2", "gpu-0")]
    assert "allocationTimestamp" in written["status"]["allocation"]
    # Nothing in flight any more; the assumed claim keeps gpu-0 of n2 taken for the next pod.
    assert pl.manager.in_flight_count() == 0
    _, verdicts = run_filters(pl, pod_with("q", "c2"))
    assert verdicts["n2"] == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")
    # The watch delivering an older version (the finalizer update, 11) does not replace the assumed one (12).
    older = claim_obj("c1")
    older["metadata"]["resourceVersion"] = "11"
    pl.on_object_event("ResourceClaim", False, older)
    claim = pl.manager.claim(NS, "c1")
    assert claim is not None and claim.allocation is not None


def test_prebind_retries_a_conflict_with_the_latest_claim() -> None:
    pl, h = plugin(*cluster())
    pod = pod_with("p", "c1")
    state, _ = run_filters(pl, pod)
    pl.reserve(state, pod, "n1")
    h.conflicts = 1
    assert pl.pre_bind(state, pod, "n1") is None
    assert h.writes == [("update", "c1"), ("update", "c1"), ("status", "c1")]


def test_unreserve_removes_the_pod_from_reserved_for() -> None:
    pl, h = plugin(*cluster())
    pod = pod_with("p", "c1")
    state, _ = run_filters(pl, pod)
    pl.reserve(state, pod, "n1")
    pl.pre_bind(state, pod, "n1")
    pl.unreserve(state, pod, "n1")
    assert h.writes[-1] == ("patch", "c1")


def test_postfilter_deallocates_an_unavailable_claim_no_other_pod_uses() -> None:
    pl, h = plugin(("DeviceClass", class_obj()), ("ResourceClaim", claim_obj("c1", **allocated("gone", ["gpu-0"]))))
    pod = pod_with()
    state, _ = run_filters(pl, pod)
    _, status = pl.post_filter(state, pod, NodeToStatus())
    assert status is not None and (status.code, status.message) == (
        Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
    assert h.writes == [("status", "c1")] and "allocation" not in h.objects["c1"]["status"]


def test_pod_group_postfilter_deallocates_each_members_unavailable_claim() -> None:
    pl, h = plugin(("DeviceClass", class_obj()), ("ResourceClaim", claim_obj("c1", **allocated("gone", ["gpu-0"]))),
                   ("ResourceClaim", claim_obj("c2", **allocated("gone", ["gpu-0"]))))
    group_state = CycleState()
    members = [pod_with("p1", "c1"), pod_with("p2", "c2"), make_pod("no-claims")]
    for pod in members:
        state = CycleState()
        state.set_pod_group_scheduling_cycle(group_state)
        pl.pre_filter(state, pod, NODES)
        for ni in NODES:
            pl.filter(state, pod, ni)
    info = PodGroupInfo(NS, "g", None, members)
    result, status = pl.pod_group_post_filter(group_state, info, lambda: (PodGroupAssignments(None, []), None))
    assert result is None
    assert status is not None and (status.code, status.message) == (
        Code.UNSCHEDULABLE, "deallocation and deletion of ResourceClaims completed")
    assert h.writes == [("status", "c1"), ("status", "c2")]


def test_pod_group_postfilter_without_member_states_is_an_error_as_upstream() -> None:
    # No member reached PreFilter (upstream: reading the group's state fails with fwk.ErrNotFound).
    pl, h = plugin(("DeviceClass", class_obj()))
    result, status = pl.pod_group_post_filter(CycleState(), PodGroupInfo(NS, "g", None, [pod_with()]),
                                              lambda: (PodGroupAssignments(None, []), None))
    assert result is None and status is not None and (status.code, status.message) == (Code.ERROR, "not found")
    assert not h.writes


def test_postfilter_keeps_a_claim_another_pod_uses() -> None:
    claim = claim_obj("c1", **allocated("gone", ["gpu-0"], reserved=["other"]))
    pl, h = plugin(("DeviceClass", class_obj()), ("ResourceClaim", claim))
    state, _ = run_filters(pl, pod_with())
    _, status = pl.post_filter(state, pod_with(), NodeToStatus())
    assert status is not None and (status.code, status.reasons) == (Code.UNSCHEDULABLE, []) and not h.writes


# --- queueing hints ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new", "hint"), [
    (None, claim_obj("c1"), QueueingHint.QUEUE),  # the pod's claim created
    (None, claim_obj("other"), QueueingHint.QUEUE_SKIP),  # someone else's
    (claim_obj("other", **allocated("n1", ["gpu-0"])), claim_obj("other"), QueueingHint.QUEUE),  # deallocated
    (claim_obj("c1"), {**claim_obj("c1"), "metadata": {**claim_obj("c1")["metadata"], "finalizers": ["x"]}},
     QueueingHint.QUEUE_SKIP),  # status unchanged
    (claim_obj("other", **allocated("n1", ["gpu-0"])), None, QueueingHint.QUEUE),  # allocated one deleted
    (claim_obj("other"), None, QueueingHint.QUEUE_SKIP),
])
def test_claim_events_requeue_only_pods_they_can_help(
        old: dict[str, Any] | None, new: dict[str, Any] | None, hint: QueueingHint) -> None:
    """(The pod's own claim must exist: a pod whose claims are missing is skipped, as upstream.)"""
    pl, _ = plugin(("DeviceClass", class_obj()))
    if (new or old or {})["metadata"]["name"] != "c1":
        pl.on_object_event("ResourceClaim", False, claim_obj("c1"))
    for obj in (old, new):
        if obj is not None:
            pl.on_object_event("ResourceClaim", False, obj)
    if new is None and old is not None:
        pl.on_object_event("ResourceClaim", True, old)
    assert pl.is_schedulable_after_claim_change(pod_with(), old, new) is hint


def _with_meta(obj: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], **meta}}


_C1_ALLOCATED = claim_obj("c1", **allocated("n1", ["gpu-0"]))
_OTHER_ALLOCATED = claim_obj("other", **allocated("n1", ["gpu-1"]))
_CLAIM_EVENTS = [
    (None, claim_obj("c1")), (None, claim_obj("other")), (claim_obj("c1"), _C1_ALLOCATED),
    (_C1_ALLOCATED, claim_obj("c1")), (_OTHER_ALLOCATED, claim_obj("other")), (claim_obj("c1"), None),
    (_C1_ALLOCATED, None), (claim_obj("other"), None),
    (claim_obj("c1"), _with_meta(claim_obj("c1"), finalizers=["x"])),
    (None, _with_meta(claim_obj("c1"), uid="")),
    (None, _with_meta(claim_obj("c1"), namespace="elsewhere", uid="uid-elsewhere")),
    (None, _with_meta(claim_obj("c1"), uid="uid-new")), (None, claim_obj("p-gpu", owner="p")),
    (claim_obj("p-gpu", owner="p"), claim_obj("p-gpu", owner="p", **allocated("n2", ["gpu-0"]))),
    ("not a claim", claim_obj("c1")), (claim_obj("c1"), "not a claim"),
]
_PODS = [pod_with(), pod_with(claim="other"), pod_with(template=True),
         pod_with(template=True, statuses=[{"name": "gpu", "resourceClaimName": "p-gpu"}]),
         pod_with(template=True, statuses=[{"name": "gpu", "resourceClaimName": None}])]


@pytest.mark.parametrize(("old", "new"), _CLAIM_EVENTS)
def test_a_claim_event_can_requeue_only_the_pods_filed_under_its_keys(old: Any, new: Any) -> None:
    """The promise the queue relies on to ask a claim event's hint only for pods filed under its keys:
    a pod none of whose claim keys is among the event's gets QueueSkip (whatever claims exist)."""
    queued = 0
    for known in ([], ["c1"], ["c1", "other", "p-gpu"]):
        pl, _ = plugin(*[("ResourceClaim", claim_obj(n, owner="p" if n == "p-gpu" else None)) for n in known])
        keys = pl.claim_event_keys(old, new)
        for p in _PODS:
            hint = pl.is_schedulable_after_claim_change(p, old, new)
            queued += hint is QueueingHint.QUEUE
            if keys is not None and not set(keys) & set(pl.claim_keys(p)):
                assert hint is QueueingHint.QUEUE_SKIP, (p.name, pl.claim_keys(p), keys)
    if new == claim_obj("c1") or new == claim_obj("p-gpu", owner="p"):  # the claims' own pods do get Queue
        assert queued


def test_pod_update_naming_its_claim_requeues_it() -> None:
    pl, _ = plugin(("ResourceClaim", claim_obj("p-gpu", owner="p")))
    before, after = pod_with(template=True), pod_with(template=True, statuses=[
        {"name": "gpu", "resourceClaimName": "p-gpu"}])
    assert pl.is_schedulable_after_pod_update(before, before, before) is QueueingHint.QUEUE_SKIP
    assert pl.is_schedulable_after_pod_update(before, before, after) is QueueingHint.QUEUE


# --- args ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    ({"filterTimeout": "-1s"}, 'filterTimeout: invalid value "-1s": must be zero or positive'),
    ({"bindingTimeout": "500ms"}, 'bindingTimeout: invalid value "500ms": must be at least 1 second'),
    ({"filterTimeout": "ten"}, "invalid duration"),
])
def test_args_are_validated_as_upstream(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DynamicResources(args, Handle())  # type: ignore[arg-type]


# --- through the default profile ---------------------------------------------------------------------------


def scheduler() -> tuple[Scheduler, RecordingEventSink, list[str]]:
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{"schedulerName": "py-scheduler"}]})
    sink, bound = RecordingEventSink(), []

    class Binder:
        def bind(self, p: Pod, node_name: str) -> None:
            bound.append(f"{p.name}->{node_name}")

    writer = OfflineWriter()
    s = Scheduler(cfg, build_registry(cfg), Binder(), sink, None, writer=writer, synchronous_binding=True,
                  rng=random.Random(1), tie_break="name")
    writer.connect(s)
    for n in ("n1", "n2"):
        s.on_node_event(ADDED, {"metadata": {"name": n, "uid": n, "labels": {}},
                                "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}}})
    for kind, obj in cluster():
        s.on_object_event(kind, ADDED, obj)
    return s, sink, bound


def add_pod(s: Scheduler, name: str, claim: str) -> None:
    s.on_pod_event(ADDED, {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
                           "spec": {"schedulerName": "py-scheduler", "containers": [{"name": "c", "image": "x"}],
                                    "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]}})


def test_default_profile_places_a_claim_pod_and_allocates_its_device() -> None:
    s, _, bound = scheduler()
    add_pod(s, "p", "c1")
    assert s.schedule_one(timeout=0)
    assert bound == ["p->n1"]  # both fit; n1 by name
    stored = s.objects.get("ResourceClaim", NS, "c1")
    assert stored is not None
    assert stored["status"]["reservedFor"][0]["name"] == "p"
    assert stored["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


def test_default_profile_failed_scheduling_message_and_requeue_when_a_slice_adds_devices() -> None:
    s, sink, bound = scheduler()
    s.on_object_event("ResourceClaim", ADDED, claim_obj("big", count=3))
    add_pod(s, "p", "big")
    assert s.schedule_one(timeout=0)
    assert sink.conditions["default/p"][1] == (
        "0/2 nodes are available: 2 cannot allocate all claims. preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling.")
    assert s.queue.pending_pods()[1] == "activeQ:0; backoffQ:0; unschedulablePods:1"
    s.on_object_event("ResourceClaim", ADDED, claim_obj("unrelated"))
    assert s.queue.pending_pods()[1] == "activeQ:0; backoffQ:0; unschedulablePods:1"
    s.on_object_event("ResourceSlice", MODIFIED, slice_obj("s1", "n1", ["gpu-0", "gpu-1", "gpu-2"]))
    assert s.queue.pending_pods()[1] == "activeQ:0; backoffQ:1; unschedulablePods:0"
    assert not bound


def test_template_pod_waits_gated_until_the_controller_names_its_claim() -> None:
    s, _, bound = scheduler()
    raw: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": NS, "uid": "uid-p", "resourceVersion": "1"},
        "spec": {"schedulerName": "py-scheduler", "containers": [{"name": "c", "image": "x"}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}}
    s.on_pod_event(ADDED, raw)
    assert s.queue.pending_pods()[1] == "activeQ:0; backoffQ:0; unschedulablePods:1"
    s.on_object_event("ResourceClaim", ADDED, claim_obj("p-gpu", owner="p"))
    assert s.queue.pending_pods()[1] == "activeQ:0; backoffQ:0; unschedulablePods:1"
    named = {**raw, "metadata": {**raw["metadata"], "resourceVersion": "2"},
             "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu"}]}}
    s.on_pod_event(MODIFIED, named)
    assert s.queue.pending_pods()[1] == "activeQ:1; backoffQ:0; unschedulablePods:0"
    assert s.schedule_one(timeout=0)
    assert bound == ["p->n1"]


def test_profiles_share_one_dra_manager_so_in_flight_devices_are_seen_by_both() -> None:
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}]})
    s = Scheduler(cfg, build_registry(cfg), None, RecordingEventSink(), None)  # type: ignore[arg-type]
    managers = {id(p.manager) for f in s.frameworks.values() for p in f.pre_enqueue_plugins()
                if isinstance(p, DynamicResources)}
    assert len(managers) == 1
