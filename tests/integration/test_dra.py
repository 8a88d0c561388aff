"""DynamicResources on the real control plane: hand-made ResourceSlices (no driver: the scheduler
allocates, kwok runs the pods), a DeviceClass, ResourceClaims and ResourceClaimTemplates (whose claims
kube-controller-manager's resourceclaim controller makes, and deletes with their pod).

Checked: pods go where their devices are; claims are allocated and reserved in the API; two pods cannot
get the same device; a deleted pod's claim is released by the controller and its device goes to the next
pod; a pod whose claim cannot be met gets upstream's FailedScheduling message and is placed once a slice
adds devices; kube-scheduler v1.37.2 gives the same pod the same node and device."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster.cluster import LocalCluster, build_binaries
from e2e.kube import gone, node_of, pod_manifest, scheduled_condition, wait_for
from e2e.process import start_kube_scheduler, stop_scheduler
from tests.integration.conftest import SchedulerProc, temporary_nodes

GROUP, VERSION = "resource.k8s.io", "v1"
KUBE = "kube-dra"


class Dra:
    """Creates the DRA objects of one test (cluster-scoped ones named after its namespace) and deletes
    the cluster-scoped ones afterwards."""

    def __init__(self, api: client.ApiClient, ns: str) -> None:
        self.objs = client.CustomObjectsApi(api)
        self.ns = ns
        self.driver = f"{ns}.example.com"
        self.cluster_scoped: list[tuple[str, str]] = []

    def slice(self, node: str, devices: list[dict[str, Any]], generation: int = 1) -> dict[str, Any]:
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-slice"},
                "spec": {"driver": self.driver, "nodeName": node,
                         "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                         "devices": devices}}
        out: dict[str, Any] = self.objs.create_cluster_custom_object(GROUP, VERSION, "resourceslices", body)
        self.cluster_scoped.append(("resourceslices", body["metadata"]["name"]))
        return out

    def replace_slice(self, old: dict[str, Any], devices: list[dict[str, Any]]) -> None:
        body = copy.deepcopy(old)
        body["spec"]["devices"] = devices
        body["spec"]["pool"]["generation"] += 1
        self.objs.replace_cluster_custom_object(GROUP, VERSION, "resourceslices", old["metadata"]["name"], body)

    def device_class(self, selector: str = "", extended_resource_name: str = "") -> str:
        name = f"{self.ns}-gpu"
        expression = f'device.driver == "{self.driver}"' + (f" && {selector}" if selector else "")
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "DeviceClass", "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": expression}}],
                         **({"extendedResourceName": extended_resource_name} if extended_resource_name else {})}}
        self.objs.create_cluster_custom_object(GROUP, VERSION, "deviceclasses", body)
        self.cluster_scoped.append(("deviceclasses", name))
        return name

    def claim(self, name: str, device_class: str, count: int = 1) -> None:
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceClaim", "metadata": {"name": name},
                "spec": _claim_spec(device_class, count)}
        self.objs.create_namespaced_custom_object(GROUP, VERSION, self.ns, "resourceclaims", body)

    def template(self, name: str, device_class: str, count: int = 1, spec: dict[str, Any] | None = None) -> None:
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceClaimTemplate", "metadata": {"name": name},
                "spec": {"spec": spec or _claim_spec(device_class, count)}}
        self.objs.create_namespaced_custom_object(GROUP, VERSION, self.ns, "resourceclaimtemplates", body)

    def get_claim(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = self.objs.get_namespaced_custom_object(GROUP, VERSION, self.ns, "resourceclaims", name)
        return out

    def claim_exists(self, name: str) -> bool:
        try:
            self.get_claim(name)
        except client.ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def cleanup(self) -> None:
        for plural, name in reversed(self.cluster_scoped):
            try:
                self.objs.delete_cluster_custom_object(GROUP, VERSION, plural, name)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise


def _claim_spec(device_class: str, count: int) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count}}]}}


@pytest.fixture
def dra(api: client.ApiClient, ns: str) -> Iterator[Dra]:
    d = Dra(api, ns)
    yield d
    d.cleanup()


def gpus(*names: str, **attrs: str) -> list[dict[str, Any]]:
    """Devices; ``attrs`` maps a device name to its ``model`` attribute."""
    return [{"name": n, **({"attributes": {"model": {"string": attrs[n]}}} if n in attrs else {})} for n in names]


def claim_pod(name: str, *, claim: str = "", template: str = "",
              scheduler_name: str = "py-scheduler") -> dict[str, Any]:
    ref = ({"name": "gpu", "resourceClaimName": claim} if claim
           else {"name": "gpu", "resourceClaimTemplateName": template})
    return pod_manifest(name, scheduler_name=scheduler_name, extra_spec={"resourceClaims": [ref]})


def extended_pod(name: str, resource: str, count: int = 1, scheduler_name: str = "py-scheduler") -> dict[str, Any]:
    """A pod whose one container requests ``count`` of an extended resource (requests = limits)."""
    body = pod_manifest(name, scheduler_name=scheduler_name)
    res = body["spec"]["containers"][0]["resources"]
    res["requests"][resource] = str(count)
    res["limits"] = {resource: str(count)}
    return body


def extended_claim_of(core: client.CoreV1Api, dra: Dra, ns: str, pod: str) -> tuple[dict[str, Any], Any]:
    """The special claim the scheduler created for the pod and the pod's ``extendedResourceClaimStatus``."""
    status = wait_for(lambda: core.read_namespaced_pod(pod, ns).status.extended_resource_claim_status, 60,
                      what=f"{pod} extendedResourceClaimStatus")
    return dra.get_claim(status.resource_claim_name), status


def generated_claim(core: client.CoreV1Api, ns: str, pod: str) -> str:
    """The claim the resourceclaim controller made for the pod's template (once it has)."""
    statuses = core.read_namespaced_pod(pod, ns).status.resource_claim_statuses or []
    return str(statuses[0].resource_claim_name) if statuses and statuses[0].resource_claim_name else ""


def devices_of(claim: dict[str, Any], with_request: bool = False) -> list[tuple[str, ...]]:
    results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
    return [(r["pool"], r["device"], *((r["request"],) if with_request else ())) for r in results]


def pending_message(core: client.CoreV1Api, ns: str, pod: str) -> str:
    cond = wait_for(lambda: scheduled_condition(core, ns, pod), 60, what=f"{pod} attempted")
    assert (cond.status, cond.reason) == ("False", "Unschedulable"), cond
    return str(cond.message)


def test_template_pod_goes_where_its_device_is_and_the_claim_is_allocated_and_reserved(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str, dra: Dra,
) -> None:
    with temporary_nodes(str(cluster.kubeconfig), 2, f"{ns}-d") as nodes:
        dra.slice(nodes[1], gpus("gpu-0", "gpu-1"))
        dra.template("one-gpu", dra.device_class())
        core.create_namespaced_pod(ns, claim_pod("user", template="one-gpu"))
        assert wait_for(lambda: node_of(core, ns, "user"), 90, what="pod bound") == nodes[1]
        claim = dra.get_claim(generated_claim(core, ns, "user"))
        assert devices_of(claim) == [(nodes[1], "gpu-0")]
        uid = core.read_namespaced_pod("user", ns).metadata.uid
        assert [r["uid"] for r in claim["status"]["reservedFor"]] == [uid]
        assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]


def test_one_device_two_pods_the_second_waits_and_gets_it_once_the_first_is_deleted(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str, dra: Dra,
) -> None:
    with temporary_nodes(str(cluster.kubeconfig), 1, f"{ns}-o") as nodes:
        dra.slice(nodes[0], gpus("gpu-0"))
        dra.template("one-gpu", dra.device_class())
        core.create_namespaced_pod(ns, claim_pod("first", template="one-gpu"))
        assert wait_for(lambda: node_of(core, ns, "first"), 90, what="first bound") == nodes[0]
        first_claim = generated_claim(core, ns, "first")
        core.create_namespaced_pod(ns, claim_pod("second", template="one-gpu"))
        assert "cannot allocate all claims" in pending_message(core, ns, "second")
        assert node_of(core, ns, "second") is None
        core.delete_namespaced_pod("first", ns, grace_period_seconds=0)
        wait_for(lambda: gone(core, ns, "first"), 60, what="first deleted")
        wait_for(lambda: not dra.claim_exists(first_claim), 90, what="first's claim released and deleted")
        assert wait_for(lambda: node_of(core, ns, "second"), 90, what="second bound") == nodes[0]
        assert devices_of(dra.get_claim(generated_claim(core, ns, "second"))) == [(nodes[0], "gpu-0")]


def test_unmet_claim_gets_upstreams_message_and_is_placed_when_a_slice_adds_devices(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str, dra: Dra,
) -> None:
    with temporary_nodes(str(cluster.kubeconfig), 1, f"{ns}-u") as nodes:
        slice_obj = dra.slice(nodes[0], gpus("gpu-0"))
        dra.claim("pair", dra.device_class(), count=2)
        core.create_namespaced_pod(ns, claim_pod("wants-two", claim="pair"))
        message = pending_message(core, ns, "wants-two")
        assert message.startswith("0/"), message
        assert "cannot allocate all claims" in message and message.endswith("Preemption is not helpful for scheduling.")
        dra.replace_slice(slice_obj, gpus("gpu-0", "gpu-1"))
        assert wait_for(lambda: node_of(core, ns, "wants-two"), 90, what="pod bound") == nodes[0]
        assert devices_of(dra.get_claim("pair")) == [(nodes[0], "gpu-0"), (nodes[0], "gpu-1")]


def test_pods_sharing_a_claim_go_where_its_devices_are_and_both_reserve_it(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str, dra: Dra,
) -> None:
    with temporary_nodes(str(cluster.kubeconfig), 3, f"{ns}-s") as nodes:
        for node in nodes:
            dra.slice(node, gpus("gpu-0"))
        dra.claim("shared", dra.device_class())
        core.create_namespaced_pod(ns, claim_pod("one", claim="shared"))
        first = wait_for(lambda: node_of(core, ns, "one"), 90, what="first bound")
        core.create_namespaced_pod(ns, claim_pod("two", claim="shared"))
        assert wait_for(lambda: node_of(core, ns, "two"), 90, what="second bound") == first
        claim = dra.get_claim("shared")
        assert devices_of(claim) == [(first, "gpu-0")]
        assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == ["one", "two"]


def test_missing_device_class_keeps_the_pod_pending_with_upstreams_message(
    core: client.CoreV1Api, scheduler: SchedulerProc, ns: str, dra: Dra,
) -> None:
    dra.claim("orphan", f"{ns}-nosuchclass")
    core.create_namespaced_pod(ns, claim_pod("classless", claim="orphan"))
    message = pending_message(core, ns, "classless")
    assert f"request gpu: device class {ns}-nosuchclass does not exist" in message, message


@pytest.fixture(scope="module")
def kube_scheduler(cluster: LocalCluster, workdir: Path) -> Iterator[None]:
    proc = start_kube_scheduler(build_binaries(build=False), cluster.kubeconfig, workdir, KUBE)
    try:
        yield
    finally:
        stop_scheduler(proc)


def both_choose(core: client.CoreV1Api, ns: str, dra: Dra, template: str) -> dict[str, tuple[str, list[Any]]]:
    """Each scheduler in turn places a pod of ``template`` (the first pod is deleted and its claim released
    before the second is created): its node and (pool, device, request) per allocated device."""
    chosen: dict[str, tuple[str, list[Any]]] = {}
    for sched, pod in ((KUBE, "kube-twin"), ("py-scheduler", "py-twin")):
        core.create_namespaced_pod(ns, claim_pod(pod, template=template, scheduler_name=sched))
        node = wait_for(lambda pod=pod: node_of(core, ns, pod), 90, what=f"{pod} bound")
        claim = generated_claim(core, ns, pod)
        chosen[sched] = (node, devices_of(dra.get_claim(claim), with_request=True))
        core.delete_namespaced_pod(pod, ns, grace_period_seconds=0)
        wait_for(lambda claim=claim: not dra.claim_exists(claim), 90, what=f"{pod}'s claim released")
    return chosen


def test_kube_scheduler_chooses_the_same_node_and_device(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, kube_scheduler: None,
    ns: str, dra: Dra,
) -> None:
    """One feasible node whose devices a CEL selector narrows to two of four: both schedulers pick the
    same node and device."""
    with temporary_nodes(str(cluster.kubeconfig), 2, f"{ns}-k") as nodes:
        dra.slice(nodes[0], gpus("gpu-0", "gpu-1", "gpu-2", "gpu-3", **{"gpu-0": "a", "gpu-1": "b", "gpu-2": "a",
                                                                        "gpu-3": "b"}))
        dra.template("model-b", dra.device_class(f'device.attributes["{dra.driver}"].model == "b"'))
        chosen = both_choose(core, ns, dra, "model-b")
        assert chosen[KUBE] == chosen["py-scheduler"] == (nodes[0], [(nodes[0], "gpu-1", "gpu")])


def test_kube_scheduler_scores_the_prioritized_list_the_same(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, kube_scheduler: None,
    ns: str, dra: Dra,
) -> None:
    """``firstAvailable``: two devices preferred, one accepted. Both nodes fit, only the second has two
    devices: DynamicResources' Score (weight 2) is the only difference, so both schedulers pick it."""
    with temporary_nodes(str(cluster.kubeconfig), 2, f"{ns}-f") as nodes:
        dra.slice(nodes[0], gpus("gpu-0"))
        dra.slice(nodes[1], gpus("gpu-0", "gpu-1"))
        cls = dra.device_class()
        dra.template("two-or-one", cls, spec={"devices": {"requests": [{"name": "gpu", "firstAvailable": [
            {"name": "two", "deviceClassName": cls, "count": 2},
            {"name": "one", "deviceClassName": cls, "count": 1}]}]}})
        chosen = both_choose(core, ns, dra, "two-or-one")
        want = (nodes[1], [(nodes[1], "gpu-0", "gpu/two"), (nodes[1], "gpu-1", "gpu/two")])
        assert chosen[KUBE] == chosen["py-scheduler"] == want



def test_extended_resource_backed_by_a_device_class_gets_a_claim_on_the_slices_node(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str, dra: Dra,
) -> None:
    """DRAExtendedResource: a container asks for ``<ns>.example.com/gpu: 1`` (no node offers it); the class
    naming it backs it, so the pod goes to the slice's node and gets a claim made by the scheduler."""
    resource = f"{ns}.example.com/gpu"
    with temporary_nodes(str(cluster.kubeconfig), 2, f"{ns}-x") as nodes:
        dra.slice(nodes[1], gpus("gpu-0"))
        cls = dra.device_class(extended_resource_name=resource)
        core.create_namespaced_pod(ns, extended_pod("ext", resource))
        assert wait_for(lambda: node_of(core, ns, "ext"), 90, what="pod bound") == nodes[1]
        claim, status = extended_claim_of(core, dra, ns, "ext")
        pod = core.read_namespaced_pod("ext", ns)
        meta = claim["metadata"]
        assert meta["name"].startswith("ext-extended-resources-")
        assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
        assert [(o["kind"], o["name"], o["uid"], o.get("controller")) for o in meta["ownerReferences"]] == [
            ("Pod", "ext", pod.metadata.uid, True)]
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == cls
        request = f"container-0-request-{sorted(['cpu', 'memory', resource]).index(resource)}"
        assert devices_of(claim, with_request=True) == [(nodes[1], "gpu-0", request)]
        assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod.metadata.uid]
        assert [(m.container_name, m.resource_name, m.request_name) for m in status.request_mappings] == [
            ("c", resource, request)]
        # A second pod finds the only device taken.
        core.create_namespaced_pod(ns, extended_pod("ext2", resource))
        assert "cannot allocate all claims" in pending_message(core, ns, "ext2")


def test_kube_scheduler_handles_a_class_backed_extended_resource_the_same(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, kube_scheduler: None,
    ns: str, dra: Dra,
) -> None:
    """The same pod through each scheduler in turn: same node, devices, request names and mappings."""
    resource = f"{ns}.example.com/gpu"
    with temporary_nodes(str(cluster.kubeconfig), 2, f"{ns}-y") as nodes:
        dra.slice(nodes[0], gpus("gpu-0", "gpu-1", "gpu-2"))
        dra.device_class(extended_resource_name=resource)
        chosen = {}
        for sched, name in ((KUBE, "kube-ext"), ("py-scheduler", "py-ext")):
            core.create_namespaced_pod(ns, extended_pod(name, resource, 2, scheduler_name=sched))
            node = wait_for(lambda name=name: node_of(core, ns, name), 90, what=f"{name} bound")
            claim, status = extended_claim_of(core, dra, ns, name)
            chosen[sched] = (node, devices_of(claim, with_request=True), claim["spec"],
                             [(m.container_name, m.resource_name, m.request_name) for m in status.request_mappings])
            core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
            claim_name = claim["metadata"]["name"]
            wait_for(lambda c=claim_name: not dra.claim_exists(c), 90, what=f"{name}'s claim released")
        assert chosen[KUBE] == chosen["py-scheduler"]
        assert chosen[KUBE][0] == nodes[0]
