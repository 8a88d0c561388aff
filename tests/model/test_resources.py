"""Pod requests as component-helpers' PodRequests and the scheduler's PodInfo.CalculateResource compute them."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.errors import InvalidObjectError
from scheduler.model.pod import pod_from_api
from scheduler.model.resources import Resource, calculate_pod_resources, pod_resources, scoring_request_list
from scheduler.plugins.node_resources_fit import fit_request

MI = 1024 * 1024
GI = 1024 * MI


def _container(name: str, requests: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "x"}
    if requests is not None:
        c["resources"] = {"requests": requests}
    c.update(extra)
    return c


def _pod(spec: dict[str, Any], status: dict[str, Any] | None = None) -> Any:
    meta = {"name": "p", "namespace": "ns", "uid": "u"}
    return pod_from_api({"metadata": meta, "spec": spec, "status": status or {}})


def test_requests_are_summed_as_quantities_before_rounding_up() -> None:
    pod = _pod({"containers": [_container("a", {"cpu": "0.5m", "memory": "0.5"}),
                               _container("b", {"cpu": "0.5m", "memory": "0.5"})]})
    assert pod.requests.milli_cpu == 1
    assert pod.requests.memory == 1


def test_pod_level_requests_set_the_non_zero_values() -> None:
    pod = _pod({
        "resources": {"requests": {"cpu": "2", "memory": "1Gi"}},
        "containers": [_container("a"), _container("b")],
    })
    assert (pod.requests.milli_cpu, pod.requests.memory) == (2000, GI)
    assert (pod.non_zero_milli_cpu, pod.non_zero_memory) == (2000, GI)


def test_pod_level_requests_default_only_what_the_pod_misses() -> None:
    """With pod-level requests, NodeInfo's non-zero defaults fill a resource missing from the whole pod,
    not each container lacking it."""
    pod = _pod({
        "resources": {"requests": {"memory": "1Gi"}},
        "containers": [_container("a", {"cpu": "500m"}), _container("b")],
    })
    assert pod.non_zero_milli_cpu == 500
    assert pod.non_zero_memory == GI
    only_cpu = _pod({"resources": {"requests": {"cpu": "1"}}, "containers": [_container("a"), _container("b")]})
    assert only_cpu.non_zero_milli_cpu == 1000
    assert only_cpu.non_zero_memory == 2 * 200 * MI


def test_fit_scoring_reads_containers_only_balanced_allocation_reads_pod_level_requests() -> None:
    """NodeResourcesFit's scorer (use_requested=False) defaults every container and ignores pod-level
    requests, as upstream's fit.go builds it; BalancedAllocation's honours them."""
    spec = {"resources": {"requests": {"memory": "1Gi"}}, "containers": [_container("a", {"cpu": "500m"}),
                                                                          _container("b")]}
    rl = scoring_request_list(spec, {}, "pod ns/p", use_requested=False)
    assert rl["cpu"] * 1000 == 600
    assert rl["memory"] == 2 * 200 * MI
    balanced = scoring_request_list(spec, {}, "pod ns/p", use_requested=True)
    assert (balanced["cpu"] * 1000, balanced["memory"]) == (500, GI)


def test_pod_level_hugepages_replace_the_container_sum() -> None:
    pod = _pod({
        "resources": {"requests": {"hugepages-2Mi": "4Mi", "cpu": "1"}},
        "containers": [_container("a", {"hugepages-2Mi": "2Mi"})],
    })
    assert pod.requests.scalar["hugepages-2Mi"] == 4 * MI


def test_resized_running_pod_counts_its_status_resources() -> None:
    spec = {"nodeName": "n", "containers": [_container("a", {"cpu": "100m", "memory": "64Mi"})]}
    status = {"containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "300m"}},
                                     "allocatedResources": {"memory": "128Mi"}}]}
    pod = _pod(spec, status)
    assert pod.requests.milli_cpu == 300
    assert pod.requests.memory == 128 * MI
    # An infeasible resize: the spec's (desired) requests are not what runs.
    infeasible = dict(status, conditions=[{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}])
    spec2 = {"nodeName": "n", "containers": [_container("a", {"cpu": "2", "memory": "64Mi"})]}
    pod2 = _pod(spec2, infeasible)
    assert pod2.requests.milli_cpu == 300
    # Filter's request of a pending pod ignores status resources.
    assert fit_request(_pod({"containers": spec2["containers"]}, infeasible)).milli_cpu == 2000


def test_status_resources_of_regular_init_containers_count_since_v1_37() -> None:
    """v1.37 aggregates the actuated requests of every container, regular init containers included (v1.34
    read status only for app and sidecar containers): the init container's 4 cpu outweighs its spec."""
    spec = {"nodeName": "n", "initContainers": [_container("i", {"cpu": "100m"})], "containers": [_container("a")]}
    status = {"initContainerStatuses": [{"name": "i", "resources": {"requests": {"cpu": "4"}}}]}
    assert _pod(spec, status).requests.milli_cpu == 4000


def test_aggregates_are_compared_not_containers() -> None:
    """The max is taken between the spec, allocated and actuated aggregates: two containers resized in
    opposite directions count as the larger total, not the sum of each one's larger request."""
    spec = {"nodeName": "n", "containers": [_container("a", {"cpu": "1"}), _container("b", {"cpu": "1"})]}
    status = {"containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "3"}}},
                                    {"name": "b", "resources": {"requests": {"cpu": "200m"}}}]}
    # spec 2, actuated 3.2 -> 3.2 (v1.34: max per container, 3 + 1 = 4)
    assert _pod(spec, status).requests.milli_cpu == 3200


def test_pod_level_status_maps_replace_the_container_status_aggregates() -> None:
    """With status.allocatedResources and status.resources.requests set (InPlacePodLevelResourcesVerticalScaling)
    they are the allocated and actuated aggregates, and resize the pod-level requests too."""
    spec = {"nodeName": "n", "resources": {"requests": {"cpu": "1"}}, "containers": [_container("a", {"cpu": "1"})]}
    status = {"allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "1500m"}},
              "containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "5"}}}]}
    assert _pod(spec, status).requests.milli_cpu == 2000


def test_only_scalar_resource_names_are_tracked() -> None:
    r = Resource.from_list({"cpu": "1", "example.com/gpu": "2", "foo": "3", "hugepages-1Gi": "1Gi",
                            "kubernetes.io/batch-cpu": "4", "attachable-volumes-csi-x": "5"}, "node n", "status")
    assert r.scalar == {"example.com/gpu": 2, "hugepages-1Gi": GI, "kubernetes.io/batch-cpu": 4,
                        "attachable-volumes-csi-x": 5}


def test_remembered_resources_follow_every_field_they_come_from() -> None:
    """pod_resources shares results between pods alike; any field calculate_pod_resources reads
    changes the answer, and an invalid pod's error still names that pod."""
    spec = {"containers": [_container("a", {"cpu": "100m", "memory": "64Mi"})]}
    status = {"containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "300m"}}}]}
    infeasible = dict(status, conditions=[{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}])
    variants = [
        (spec, {}),
        (spec, status),
        ({"containers": [_container("a", {"cpu": "200m"})]}, {}),
        (dict(spec, overhead={"cpu": "50m"}), {}),
        (dict(spec, initContainers=[_container("i", {"cpu": "1"})]), {}),
        (dict(spec, resources={"requests": {"cpu": "2"}}), {}),
        ({"containers": [_container("a", {"cpu": "2", "memory": "64Mi"})]}, infeasible),
    ]
    for sp, st in variants:
        for _ in range(2):  # the second time from the memo
            assert pod_resources(sp, st, "pod ns/p") == calculate_pod_resources(sp, st, "pod ns/p"), (sp, st)
    bad = {"containers": [_container("a", {"cpu": "lots"})]}
    for name in ("x", "y"):
        with pytest.raises(InvalidObjectError, match=f"pod ns/{name}"):
            pod_resources(bad, {}, f"pod ns/{name}")
