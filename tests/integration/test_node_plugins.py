"""Node-level plugins on the real control plane: a mixed workload (nodeSelector, required and preferred node
affinity, tolerations, host ports, an extended resource) on four nodes of this module's own, served by the
session's py-scheduler with its default profile.

Every pod that fits must land on a node its constraints allow; every pod that fits nowhere must carry
exactly the FailedScheduling message kube-scheduler v1.37.2 writes (``FitError.Error()`` in
``framework/types.go``): ``0/N nodes are available: <sorted filter histogram>.`` followed by the PostFilter
verdicts joined by ", " — DynamicResources' (none in v1.37 for a pod without claims) and DefaultPreemption's
``preemption: `` + its own FitError over the dry run (a node whose filter verdict was
UnschedulableAndUnresolvable, or that was not examined, counts as ``Preemption is not helpful for
scheduling``; an Unschedulable node without lower-priority pods as ``No preemption victims found for incoming
pod``). N counts every node of the cluster, including the base nodes the pods' selectors exclude.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster.cluster import LocalCluster
from e2e.kube import events_for, node_of, pod_manifest, scheduled_condition, wait_for
from tests.integration.conftest import SchedulerProc, temporary_nodes

MINE = {"it-np/member": "yes"}
GPU = "example.com/gpu"
DEDICATED = {"key": "it-np/dedicated", "value": "gpu", "effect": "NoSchedule"}
TOLERATE_DEDICATED = [{"key": "it-np/dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]

AFFINITY = "node(s) didn't match Pod's node affinity/selector"
TAINT = "node(s) had untolerated taint(s)"
PORTS = "node(s) didn't have free ports for the requested pod ports"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


def histogram(counts: Mapping[str, int]) -> str:
    """``"<count> <reason>"`` items sorted as strings (Go's sort.Strings), joined by ", "."""
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items() if n))


def fit_message(n: int, filters: Mapping[str, int], preemption: Mapping[str, int]) -> str:
    """The default profile's FailedScheduling message for a pod no node fits."""
    return (f"0/{n} nodes are available: {histogram(filters)}. "
            f"preemption: 0/{n} nodes are available: {histogram(preemption)}.")


def create(core: client.CoreV1Api, ns: str, manifest: Mapping[str, Any]) -> None:
    body: Any = dict(manifest)  # the client takes plain dicts; its stubs only know V1Pod
    core.create_namespaced_pod(ns, body)


def with_requests(manifest: dict[str, Any], **extra: str) -> dict[str, Any]:
    """Add extended-resource requests (and equal limits, as the API requires) to the pod's container."""
    resources = manifest["spec"]["containers"][0]["resources"]
    resources["requests"].update(extra)
    resources["limits"] = dict(extra)
    return manifest


def host_port(port: int) -> list[dict[str, Any]]:
    return [{"name": "c", "image": "registry.k8s.io/pause:3.10", "ports": [{"containerPort": port, "hostPort": port}],
             "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]


def node_affinity(required: list[dict[str, Any]] | None = None,
                  preferred: list[tuple[int, dict[str, Any]]] | None = None) -> dict[str, Any]:
    na: dict[str, Any] = {}
    if required:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [{"matchExpressions": required}]}
    if preferred:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": {"matchExpressions": [e]}} for w, e in preferred]
    return {"affinity": {"nodeAffinity": na}}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def gpus(core: client.CoreV1Api, node: str) -> str | None:
    status: Any = core.read_node(node).status
    return (status.allocatable or {}).get(GPU)


@pytest.fixture(scope="module")
def np_nodes(cluster: LocalCluster, core: client.CoreV1Api) -> Iterator[dict[str, str]]:
    """ssd-0, ssd-1: plain; hdd: a PreferNoSchedule taint; gpu: a NoSchedule taint and 2 example.com/gpu."""
    kubeconfig = str(cluster.kubeconfig)
    with (
        temporary_nodes(kubeconfig, 2, "np-ssd", labels={**MINE, "it-np/disk": "ssd"}) as ssd,
        temporary_nodes(kubeconfig, 1, "np-hdd", labels={**MINE, "it-np/disk": "hdd"},
                        taints=["it-np/soft=x:PreferNoSchedule"]) as [hdd],
        temporary_nodes(kubeconfig, 1, "np-gpu", labels={**MINE, "it-np/accel": "gpu"}, taints=[DEDICATED]) as [gpu],
    ):
        core.patch_node_status(gpu, {"status": {"capacity": {GPU: "2"}, "allocatable": {GPU: "2"}}})
        wait_for(lambda: gpus(core, gpu) == "2", 30, what="gpu node reports 2 example.com/gpu")
        yield {"ssd-0": ssd[0], "ssd-1": ssd[1], "hdd": hdd, "gpu": gpu}


def settled_message(core: client.CoreV1Api, ns: str, name: str, expected: str, timeout: float = 45.0) -> str:
    """The pod's PodScheduled=False message once it equals ``expected`` (a retry after a late node event may
    refresh it), or the last one seen when it never does."""
    deadline = time.monotonic() + timeout
    message = ""
    while time.monotonic() < deadline:
        cond = scheduled_condition(core, ns, name)
        if cond is not None:
            assert (cond.status, cond.reason) == ("False", "Unschedulable"), cond
            message = str(cond.message)
            if message == expected:
                break
        time.sleep(0.5)
    return message


def test_mixed_workload_lands_on_allowed_nodes_and_failures_say_why(
    core: client.CoreV1Api, api: client.ApiClient, ns: str, scheduler: SchedulerProc, np_nodes: dict[str, str],
) -> None:
    ssd = {np_nodes["ssd-0"], np_nodes["ssd-1"]}
    hdd, gpu = np_nodes["hdd"], np_nodes["gpu"]
    mine = {*ssd, hdd, gpu}
    untainted_mine = {*ssd, hdd}  # the hdd taint is only PreferNoSchedule

    # name -> (manifest, nodes it may land on)
    fitting: dict[str, tuple[dict[str, Any], set[str]]] = {
        "sel-ssd-0": (pod_manifest("sel-ssd-0", node_selector={"it-np/disk": "ssd"}), ssd),
        "sel-ssd-1": (pod_manifest("sel-ssd-1", node_selector={"it-np/disk": "ssd"}), ssd),
        "req-hdd": (pod_manifest("req-hdd", extra_spec=node_affinity([expr("it-np/disk", "In", "hdd")])), {hdd}),
        "req-not-hdd": (pod_manifest("req-not-hdd", node_selector=MINE, extra_spec=node_affinity(
            [expr("it-np/disk", "NotIn", "hdd")])), ssd),  # gpu has no disk label: NotIn matches, but it is tainted
        "pref-hdd": (pod_manifest("pref-hdd", node_selector=MINE, extra_spec=node_affinity(
            preferred=[(100, expr("it-np/disk", "In", "hdd"))])), untainted_mine),
        "tolerant": (pod_manifest("tolerant", node_selector=MINE,
                                  extra_spec={"tolerations": TOLERATE_DEDICATED}), mine),
        "gpu-0": (with_requests(pod_manifest("gpu-0", extra_spec={"tolerations": TOLERATE_DEDICATED}), **{GPU: "1"}),
                  {gpu}),
        "gpu-1": (with_requests(pod_manifest("gpu-1", extra_spec={"tolerations": TOLERATE_DEDICATED}), **{GPU: "1"}),
                  {gpu}),
        "port-0": (pod_manifest("port-0", node_selector={"it-np/disk": "ssd"},
                                extra_spec={"containers": host_port(18080)}), ssd),
        "port-1": (pod_manifest("port-1", node_selector={"it-np/disk": "ssd"},
                                extra_spec={"containers": host_port(18080)}), ssd),
    }
    try:
        for manifest, _ in fitting.values():
            create(core, ns, manifest)
        placed: dict[str, str] = {}
        for name, (_, allowed) in fitting.items():
            try:
                placed[name] = wait_for(partial(node_of, core, ns, name), 60, what=f"{name} bound")
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n--- scheduler (exit status {scheduler.proc.poll()}) log tail ---\n"
                                     f"{scheduler.log_text()[-6000:]}") from None
            assert placed[name] in allowed, (name, placed[name], allowed)
        # Two pods with the same host port cannot share a node; gpu-0 and gpu-1 take both gpus of the one node.
        assert {placed["port-0"], placed["port-1"]} == ssd

        # Now the pods that fit nowhere, against the settled cluster.
        failing: dict[str, dict[str, Any]] = {
            # The gpu node is full (2/2); no other node has the resource. The selector keeps it to my nodes.
            "gpu-2": with_requests(pod_manifest("gpu-2", node_selector=MINE,
                                                extra_spec={"tolerations": TOLERATE_DEDICATED}), **{GPU: "1"}),
            # Both resources short on every node of mine: two reasons per node.
            "too-big": with_requests(pod_manifest("too-big", cpu="5", node_selector=MINE,
                                                  extra_spec={"tolerations": TOLERATE_DEDICATED}), **{GPU: "1"}),
            # Port 18080 is taken on both ssd nodes.
            "port-2": pod_manifest("port-2", node_selector={"it-np/disk": "ssd"},
                                   extra_spec={"containers": host_port(18080)}),
            # Only the gpu node matches, and its NoSchedule taint is not tolerated.
            "untolerated": pod_manifest("untolerated", node_selector={"it-np/accel": "gpu"}),
            # No node has disk=nvme.
            "no-such-disk": pod_manifest("no-such-disk", extra_spec=node_affinity([expr("it-np/disk", "In", "nvme")])),
        }
        for manifest in failing.values():
            create(core, ns, manifest)
        n = len(core.list_node().items)
        others = n - len(mine)
        gpu_short = f"Insufficient {GPU}"
        expected = {
            # NodeResourcesFit's verdict is Unschedulable only where the request fits the node's allocatable
            # (evicting pods could make room): the full gpu node. A request above allocatable is
            # UnschedulableAndUnresolvable (fit.go: Unresolvable = request > allocatable), so preemption
            # skips the nodes without gpus; the gpu node has no lower-priority pods.
            "gpu-2": fit_message(n, {gpu_short: 4, AFFINITY: others}, {NO_VICTIMS: 1, NOT_HELPFUL: n - 1}),
            # 5 cpus exceed every node's allocatable 4: unresolvable everywhere.
            "too-big": fit_message(n, {"Insufficient cpu": 4, gpu_short: 4, AFFINITY: others}, {NOT_HELPFUL: n}),
            # Filters run in profile order: TaintToleration before NodeAffinity, so the gpu node (no disk label)
            # is rejected for its taint by every pod that does not tolerate it.
            "port-2": fit_message(n, {PORTS: 2, TAINT: 1, AFFINITY: n - 3}, {NO_VICTIMS: 2, NOT_HELPFUL: n - 2}),
            # Taint and affinity verdicts are UnschedulableAndUnresolvable: preemption considers no node.
            "untolerated": fit_message(n, {TAINT: 1, AFFINITY: n - 1}, {NOT_HELPFUL: n}),
            "no-such-disk": fit_message(n, {TAINT: 1, AFFINITY: n - 1}, {NOT_HELPFUL: n}),
        }
        for name, want in expected.items():
            assert settled_message(core, ns, name, want) == want, name
            assert node_of(core, ns, name) is None
            events = wait_for(partial(events_for, api, ns, name, "FailedScheduling"), 30,
                              what=f"{name} FailedScheduling event")
            notes = [e.note for e in events]
            assert want in notes, (name, notes)
        # Nothing was evicted for them: every fitting pod is still where it was placed.
        for name, node in placed.items():
            assert node_of(core, ns, name) == node
    finally:
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)


def test_freed_extended_resource_lets_a_pending_pod_in(
    core: client.CoreV1Api, ns: str, scheduler: SchedulerProc, np_nodes: dict[str, str],
) -> None:
    """The gpu node's two gpus are taken; a third gpu pod waits and is bound once one of them goes."""
    gpu = np_nodes["gpu"]

    def gpu_pod(name: str) -> dict[str, Any]:
        return with_requests(pod_manifest(name, node_selector=MINE, extra_spec={"tolerations": TOLERATE_DEDICATED}),
                             **{GPU: "1"})

    try:
        for name in ("holder-0", "holder-1"):
            create(core, ns, gpu_pod(name))
        for name in ("holder-0", "holder-1"):
            assert wait_for(partial(node_of, core, ns, name), 60, what=f"{name} bound") == gpu
        create(core, ns, gpu_pod("waiter"))
        cond = wait_for(lambda: scheduled_condition(core, ns, "waiter"), 60, what="waiter attempted")
        assert f"Insufficient {GPU}" in cond.message
        core.delete_namespaced_pod("holder-0", ns, grace_period_seconds=0)
        assert wait_for(lambda: node_of(core, ns, "waiter"), 60, what="waiter bound after a gpu was freed") == gpu
    finally:
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
