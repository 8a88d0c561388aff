"""The Pod view: host ports (util.GetHostPorts), the affinity flags NodeInfo keeps lists by, and the view of
a watch update built from the previous one."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.model.pod import HostPort, Pod, pod_from_api
from scheduler.model.resources import Resource
from scheduler.testing import make_container, make_pod


def test_sidecar_init_containers_hold_host_ports_regular_ones_do_not() -> None:
    init = make_container().name("init").port({"containerPort": 1, "hostPort": 7001})
    sidecar = make_container().name("sidecar").restart_policy("Always").port(
        {"containerPort": 2, "hostPort": 7002, "protocol": "UDP", "hostIP": "10.0.0.1"})
    app = make_container().name("app").port({"containerPort": 3, "hostPort": 7003}).port({"containerPort": 4})
    pod = make_pod().init_containers(init, sidecar).container(app).obj()
    assert pod.host_ports == (HostPort("10.0.0.1", "UDP", 7002), HostPort("0.0.0.0", "TCP", 7003))


def test_empty_pod_affinity_counts_as_having_affinity() -> None:
    """podWithAffinity tests the PodAffinity / PodAntiAffinity pointers: ``{}`` is set."""
    assert make_pod().affinity({"podAffinity": {}}).obj().has_affinity
    assert make_pod().affinity({"podAntiAffinity": {}}).obj().has_affinity
    assert not make_pod().affinity({"nodeAffinity": {}}).obj().has_affinity
    assert not make_pod().affinity({"podAntiAffinity": {}}).obj().has_required_anti_affinity


# --- pod_from_api with the previous view of the pod (the watch's updates) ---------------------------------

quantity = st.sampled_from(["100m", "1", "2Gi", "500Mi", "0", "bad"])
resource_list = st.dictionaries(st.sampled_from(["cpu", "memory", "example.com/gpu"]), quantity, max_size=2)
container = st.fixed_dictionaries({"name": st.sampled_from(["a", "b"]), "image": st.sampled_from(["i", "j"])},
                                  optional={
    "resources": st.fixed_dictionaries({}, optional={"requests": resource_list, "limits": resource_list}),
    "ports": st.lists(st.fixed_dictionaries({"containerPort": st.just(80)}, optional={
        "hostPort": st.sampled_from([0, 8080]), "protocol": st.sampled_from(["TCP", "UDP"])}), max_size=2),
    "restartPolicy": st.just("Always")})
spec = st.fixed_dictionaries({"containers": st.lists(container, min_size=1, max_size=2)}, optional={
    "initContainers": st.lists(container, max_size=1),
    "tolerations": st.lists(st.fixed_dictionaries({"key": st.sampled_from(["k", "t"])}, optional={
        "operator": st.sampled_from(["Exists", "Equal"]), "effect": st.sampled_from(["NoSchedule", ""])}), max_size=2),
    "overhead": resource_list, "resources": st.fixed_dictionaries({}, optional={"requests": resource_list}),
    "nodeName": st.sampled_from(["", "n1"]), "priority": st.sampled_from([0, 7]),
    "schedulingGates": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["g", "h"])}), max_size=1),
    "volumes": st.lists(st.fixed_dictionaries({"name": st.just("v"), "persistentVolumeClaim": st.fixed_dictionaries(
        {"claimName": st.sampled_from(["c", "d"])})}), max_size=1),
    "nodeSelector": st.dictionaries(st.just("zone"), st.sampled_from(["a", "b"]), max_size=1)})
container_status = st.fixed_dictionaries({"name": st.sampled_from(["a", "b"])}, optional={
    "resources": st.fixed_dictionaries({}, optional={"requests": resource_list}), "allocatedResources": resource_list,
    "ready": st.booleans()})
status = st.fixed_dictionaries({}, optional={
    "phase": st.sampled_from(["Pending", "Running"]), "nominatedNodeName": st.sampled_from(["", "n2"]),
    "containerStatuses": st.lists(container_status, max_size=2),
    "initContainerStatuses": st.lists(container_status, max_size=1),
    "conditions": st.lists(st.fixed_dictionaries({"type": st.sampled_from(["PodResizePending", "Ready"])}, optional={
        "reason": st.sampled_from(["Infeasible", "Deferred"])}), max_size=2),
    "allocatedResources": resource_list, "resources": st.fixed_dictionaries({}, optional={"requests": resource_list}),
    "hostIP": st.just("10.0.0.1")})
meta = st.fixed_dictionaries({"name": st.just("p"), "namespace": st.just("ns"), "uid": st.just("u")}, optional={
    "resourceVersion": st.sampled_from(["1", "2"]),
    "labels": st.dictionaries(st.just("app"), st.sampled_from(["x", "y"])),
    "deletionTimestamp": st.just("2026-01-01T00:00:09Z"), "creationTimestamp": st.just("2026-01-01T00:00:00Z")})


def _fields(pod: Pod) -> dict[str, Any]:
    """Every field of the view but the per-pod memo (empty in a fresh view) and the shared resource memo."""
    out = {f: getattr(pod, f) for f in Pod.__slots__ if f not in ("memo", "resource_memo", "parse_error", "requests")}
    out["parse_error"] = str(pod.parse_error)
    out["requests"] = vars_of(pod.requests)
    return out


def vars_of(r: Resource) -> tuple[Any, ...]:
    return r.milli_cpu, r.memory, r.ephemeral_storage, r.allowed_pod_number, r.scalar


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meta, spec, status, meta, status, st.sampled_from(["same spec", "new spec", "assumed", "bound"]), spec)
def test_a_view_built_from_the_previous_one_equals_a_fresh_one(
        meta0: dict[str, Any], spec0: dict[str, Any], status0: dict[str, Any], meta1: dict[str, Any],
        status1: dict[str, Any], how: str, other_spec: dict[str, Any]) -> None:
    """Whatever changed between two versions of a pod (spec, status resources, metadata), the view built
    with the previous one is the view built from scratch; ``assumed`` is the scheduler's copy placed by
    assume (its spec has the nodeName the bound version brings)."""
    old = {"metadata": meta0, "spec": spec0, "status": status0}
    previous = pod_from_api(old)
    new_spec = {"same spec": spec0, "new spec": other_spec}.get(how, {**spec0, "nodeName": "n9"})
    if how == "assumed":
        previous = previous.with_node("n9")
    new = {"metadata": meta1, "spec": copy.deepcopy(new_spec), "status": status1}
    assert _fields(pod_from_api(new, previous)) == _fields(pod_from_api(new))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meta, spec, st.lists(st.tuples(meta, status), min_size=2, max_size=4))
def test_a_chain_of_updates_gives_the_fresh_view_at_every_step(
        meta0: dict[str, Any], spec0: dict[str, Any], versions: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """Each view built from the one before (which remembers its status' resource key) equals a fresh view,
    through the assumed copy too."""
    view = pod_from_api({"metadata": meta0, "spec": spec0, "status": {}}).with_node("n9")
    for meta_n, status_n in versions:
        new = {"metadata": meta_n, "spec": {**copy.deepcopy(spec0), "nodeName": "n9"}, "status": status_n}
        view = pod_from_api(new, view)
        assert _fields(view) == _fields(pod_from_api(new))


def test_an_unchanged_spec_is_not_parsed_again() -> None:
    old = {"metadata": {"name": "p", "uid": "u"}, "spec": {"containers": [{"name": "a", "resources": {
        "requests": {"cpu": "1"}}}], "tolerations": [{"key": "k", "operator": "Exists"}]}, "status": {}}
    previous = pod_from_api(old)
    new = {**old, "status": {"phase": "Running", "containerStatuses": [{"name": "a", "ready": True}]}}
    view = pod_from_api(copy.deepcopy(new), previous)
    assert view.tolerations is previous.tolerations and view.requests is previous.requests
    assert view.phase == "Running" and view.raw["status"]["phase"] == "Running"


def test_the_views_fields_are_in_the_order_pod_from_api_passes_them() -> None:
    """pod_from_api builds Pod positionally (the watch's hot path): a field added or moved must be placed there."""
    import dataclasses

    assert [f.name for f in dataclasses.fields(Pod)] == [
        "raw", "uid", "namespace", "name", "labels", "scheduler_name", "node_name", "priority", "creation_timestamp",
        "deletion_timestamp", "nominated_node_name", "phase", "resource_version", "requests", "non_zero_milli_cpu",
        "non_zero_memory", "host_ports", "tolerations", "node_selector", "affinity", "scheduling_gates", "images",
        "num_containers", "pvc_names", "preemption_policy", "parse_error", "memo", "resource_memo"]
    view = pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "3",
                                      "labels": {"a": "b"}, "deletionTimestamp": "2026-01-01T00:00:09Z"},
                         "spec": {"schedulerName": "s", "nodeName": "n", "priority": 5, "preemptionPolicy": "Never",
                                  "nodeSelector": {"z": "1"}, "affinity": {"nodeAffinity": {}},
                                  "containers": [{"name": "c", "image": "i"}]},
                         "status": {"phase": "Running", "nominatedNodeName": "m"}})
    assert (view.uid, view.namespace, view.name, view.labels, view.scheduler_name, view.node_name, view.priority,
            view.deletion_timestamp, view.nominated_node_name, view.phase, view.resource_version,
            view.node_selector, view.affinity, view.images, view.num_containers, view.preemption_policy) == (
        "u", "ns", "p", {"a": "b"}, "s", "n", 5, "2026-01-01T00:00:09Z", "m", "Running", "3",
        {"z": "1"}, {"nodeAffinity": {}}, ("i",), 1, "Never")


def test_pods_of_one_template_share_their_parsing_but_not_their_errors() -> None:
    """A new pod's spec-derived fields are remembered by its spec and resource-bearing status; an invalid
    pod's error still names it."""
    spec = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}],
            "tolerations": [{"key": "k", "operator": "Exists"}]}
    a = pod_from_api({"metadata": {"name": "a", "uid": "ua"}, "spec": copy.deepcopy(spec), "status": {}})
    b = pod_from_api({"metadata": {"name": "b", "uid": "ub"}, "spec": copy.deepcopy(spec), "status": {}})
    assert b.tolerations is a.tolerations and b.requests.milli_cpu == 100 and (b.name, b.uid) == ("b", "ub")
    resized = pod_from_api({"metadata": {"name": "c", "uid": "uc"}, "spec": copy.deepcopy(spec), "status": {
        "containerStatuses": [{"name": "c", "allocatedResources": {"cpu": "200m"}}]}})
    assert _fields(resized) | {"name": "b", "uid": "ub", "raw": None} != _fields(b) | {"raw": None}
    bad = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}
    errors = [pod_from_api({"metadata": {"name": n, "uid": n}, "spec": copy.deepcopy(bad)}).parse_error for n in "xy"]
    assert "x" in str(errors[0]) and "y" in str(errors[1])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec, st.lists(status, min_size=2, max_size=4))
def test_pods_given_one_shared_spec_object_equal_fresh_views(spec0: dict[str, Any],
                                                              statuses: list[dict[str, Any]]) -> None:
    """The pod stream hands a template's pods one spec dict (kube.transform.PodLineDecoder): what is remembered
    by that dict's identity is taken only with an equal resource-bearing status."""
    for i, status_i in enumerate(statuses):
        meta_i = {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}"}
        shared = pod_from_api({"metadata": meta_i, "spec": spec0, "status": status_i})
        assert _fields(shared) == _fields(pod_from_api({"metadata": meta_i, "spec": copy.deepcopy(spec0),
                                                        "status": status_i}))
