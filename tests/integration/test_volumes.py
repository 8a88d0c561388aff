"""Volume plugins on the real control plane (kube-controller-manager's PV controller binds claims):
a local PV's node affinity decides the node, both for a bound claim (VolumeBinding Filter) and for a
WaitForFirstConsumer claim that py-scheduler binds itself (Reserve + PreBind, then the PV controller);
a zone-labelled PV decides the zone (VolumeZone); a ReadWriteOncePod claim in use keeps a second pod
pending with upstream's message (VolumeRestrictions); a VolumeAttachment takes a CSI attach slot, and its
deletion lets the pod waiting for that slot in (NodeVolumeLimits)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster.cluster import LocalCluster
from e2e.kube import delete_if_present, node_of, pod_manifest, scheduled_condition, wait_for
from tests.integration.conftest import SchedulerProc, temporary_nodes

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
RWOP_REASON = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)


def local_pv(name: str, *, node: str | None = None, cls: str = "", modes: tuple[str, ...] = ("ReadWriteOnce",),
             labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": list(modes),
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": cls,
    }
    if node is not None:
        spec["local"] = {"path": "/mnt/disks/it"}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}]}}
    else:
        spec["hostPath"] = {"path": "/mnt/disks/it"}
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec}


def claim(name: str, *, cls: str = "", volume: str = "", modes: tuple[str, ...] = ("ReadWriteOnce",)) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": list(modes), "storageClassName": cls,
                            "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def with_claim(name: str, claim_name: str) -> dict[str, Any]:
    volume = {"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}
    return pod_manifest(name, extra_spec={"volumes": [volume]})


@pytest.fixture
def pvs(core: client.CoreV1Api) -> Iterator[Callable[[dict[str, Any]], str]]:
    """Create cluster-scoped PVs for one test; all are deleted afterwards."""
    created: list[str] = []

    def create(body: dict[str, Any]) -> str:
        core.create_persistent_volume(body)
        created.append(body["metadata"]["name"])
        return str(body["metadata"]["name"])

    yield create
    for name in created:
        try:
            core.delete_persistent_volume(name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise


@contextmanager
def wait_for_first_consumer(api: client.ApiClient, name: str, provisioner: str) -> Iterator[None]:
    """A WaitForFirstConsumer StorageClass for the block."""
    storage = client.StorageV1Api(api)
    storage.create_storage_class({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                  "metadata": {"name": name}, "provisioner": provisioner,
                                  "volumeBindingMode": "WaitForFirstConsumer"})
    try:
        yield
    finally:
        storage.delete_storage_class(name)


def claim_phase(core: client.CoreV1Api, ns: str, name: str) -> str | None:
    return core.read_namespaced_persistent_volume_claim(name, ns).status.phase


def test_bound_local_pv_pins_the_pod_to_its_node(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str,
    pvs: Callable[[dict[str, Any]], str],
) -> None:
    with temporary_nodes(str(cluster.kubeconfig), 2, f"{ns}-local") as nodes:
        target = nodes[1]
        pv = pvs(local_pv(f"{ns}-local", node=target))
        core.create_namespaced_persistent_volume_claim(ns, claim("data", volume=pv))
        wait_for(lambda: claim_phase(core, ns, "data") == "Bound", 60, what="claim bound by the PV controller")
        core.create_namespaced_pod(ns, with_claim("user", "data"))
        assert wait_for(lambda: node_of(core, ns, "user"), 60, what="pod bound") == target


def test_wait_for_first_consumer_claim_is_bound_by_the_scheduler(
    cluster: LocalCluster, api: client.ApiClient, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str,
    pvs: Callable[[dict[str, Any]], str],
) -> None:
    """The claim stays Pending until py-scheduler picks the node: Filter finds the local PV only on its
    node, Reserve assumes it, PreBind writes its claimRef and waits for the PV controller to bind."""
    sc = f"{ns}-wffc"
    with wait_for_first_consumer(api, sc, "kubernetes.io/no-provisioner"), \
            temporary_nodes(str(cluster.kubeconfig), 2, f"{ns}-wffc") as nodes:
        target = nodes[0]
        pv = pvs(local_pv(f"{ns}-wffc", node=target, cls=sc))
        core.create_namespaced_persistent_volume_claim(ns, claim("late", cls=sc))
        assert claim_phase(core, ns, "late") == "Pending"
        core.create_namespaced_pod(ns, with_claim("consumer", "late"))
        assert wait_for(lambda: node_of(core, ns, "consumer"), 90, what="pod bound") == target
        bound = core.read_namespaced_persistent_volume_claim("late", ns)
        assert bound.spec.volume_name == pv
        assert bound.status.phase == "Bound"
        assert core.read_persistent_volume(pv).spec.claim_ref.name == "late"


def test_zone_labelled_pv_pins_the_pod_to_its_zone(
    core: client.CoreV1Api, scheduler: SchedulerProc, ns: str, pvs: Callable[[dict[str, Any]], str],
) -> None:
    pv = pvs(local_pv(f"{ns}-zoned", labels={ZONE: "zone-1"}))
    core.create_namespaced_persistent_volume_claim(ns, claim("zoned", volume=pv))
    wait_for(lambda: claim_phase(core, ns, "zoned") == "Bound", 60, what="claim bound by the PV controller")
    for i in range(5):  # all five in zone-1 by chance: (1/3)^5
        core.create_namespaced_pod(ns, with_claim(f"z{i}", "zoned"))
    for i in range(5):
        node = wait_for(lambda i=i: node_of(core, ns, f"z{i}"), 60, what=f"pod z{i} bound")
        assert core.read_node(node).metadata.labels[ZONE] == "zone-1"


def test_second_user_of_a_readwriteoncepod_claim_stays_pending(
    core: client.CoreV1Api, scheduler: SchedulerProc, ns: str, pvs: Callable[[dict[str, Any]], str],
) -> None:
    rwop = ("ReadWriteOncePod",)
    pv = pvs(local_pv(f"{ns}-rwop", modes=rwop))
    core.create_namespaced_persistent_volume_claim(ns, claim("single", volume=pv, modes=rwop))
    wait_for(lambda: claim_phase(core, ns, "single") == "Bound", 60, what="claim bound by the PV controller")
    core.create_namespaced_pod(ns, with_claim("first", "single"))
    wait_for(lambda: node_of(core, ns, "first"), 60, what="first user bound")
    core.create_namespaced_pod(ns, with_claim("second", "single"))
    cond = wait_for(lambda: scheduled_condition(core, ns, "second"), 60, what="second user attempted")
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    assert RWOP_REASON in cond.message, cond.message
    n = len(core.list_node().items)
    assert cond.message.startswith(f"0/{n} nodes are available: {n} {RWOP_REASON}."), cond.message
    assert node_of(core, ns, "second") is None


def test_a_pod_deleted_while_its_prebind_waits_frees_its_node(
    cluster: LocalCluster, api: client.ApiClient, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str,
) -> None:
    """v1.37's handleAssumedPodDeletion on a real API server: a pod holding 3 of its node's 4 CPUs waits in
    VolumeBinding's PreBind (a WaitForFirstConsumer claim whose provisioner never answers) when it is
    deleted; the next 3-CPU pod pinned to that node binds, no assumed pod is left and the cache holds the
    bound pods only (nothing of the deleted pod's capacity is lost)."""
    sc = f"{ns}-never"
    with wait_for_first_consumer(api, sc, "example.com/never-provisions"), \
            temporary_nodes(str(cluster.kubeconfig), 1, f"{ns}-held", cpu="4") as (node,):
        pin = {HOSTNAME: node}
        core.create_namespaced_persistent_volume_claim(ns, claim("never", cls=sc))
        volume = {"name": "data", "persistentVolumeClaim": {"claimName": "never"}}
        held = pod_manifest("held", cpu="3", node_selector=pin, extra_spec={"volumes": [volume]})
        core.create_namespaced_pod(ns, held)

        def in_prebind() -> bool:
            annotations = core.read_namespaced_persistent_volume_claim("never", ns).metadata.annotations or {}
            return annotations.get("volume.kubernetes.io/selected-node") == node

        wait_for(in_prebind, 60, what="held's PreBind wrote the selected node on its claim")
        core.delete_namespaced_pod("held", ns, grace_period_seconds=0)
        core.create_namespaced_pod(ns, pod_manifest("next", cpu="3", node_selector=pin))
        assert wait_for(lambda: node_of(core, ns, "next"), 60, what="next bound on the freed node") == node

        def consistent() -> bool:
            bound = [p for p in core.list_pod_for_all_namespaces().items
                     if p.spec.node_name and p.status.phase not in ("Succeeded", "Failed")]
            return (scheduler.metric("scheduler_cache_size", 'type="assumed_pods"') == 0
                    and scheduler.metric("scheduler_cache_size", 'type="pods"') == len(bound))

        wait_for(consistent, 60, 0.5, "no assumed pod left and the cache == the bound pods")


CSI_DRIVER = "it.csi.example.com"
LIMIT_REASON = "node(s) exceed max volume count"
VA_ADD = "storage.k8s.io/VolumeAttachmentAdd"


def csi_pv(name: str, handle: str, nodes: list[str]) -> dict[str, Any]:
    """A bound-able CSI PV usable only on ``nodes`` (so the other nodes, without CSINode limits, are out)."""
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                     "csi": {"driver": CSI_DRIVER, "volumeHandle": handle},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [
                         {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": nodes}]}]}}}}


def test_volume_attachments_take_csi_attach_slots(
    cluster: LocalCluster, api: client.ApiClient, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str,
    pvs: Callable[[dict[str, Any]], str],
) -> None:
    """Both nodes allow one volume of the driver (CSINode); a VolumeAttachment of a volume no pod uses
    fills node 0, so the pod goes to node 1; a second pod then fits nowhere, and the deletion of the
    attachment (VolumeAttachment/Delete, isSchedulableAfterVolumeAttachmentDeleted) lets it onto node 0."""
    storage = client.StorageV1Api(api)
    with temporary_nodes(str(cluster.kubeconfig), 2, f"{ns}-att") as nodes:
        attachments: list[str] = []
        try:
            for n in nodes:
                storage.create_csi_node({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": n},
                                         "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": n,
                                                               "allocatable": {"count": 1}}]}})
            for i in (0, 2, 3):
                pvs(csi_pv(f"{ns}-att-{i}", f"vol-{i}", nodes))

            def handled(event: str) -> float | None:
                """How many such events the scheduler has handled; None until its metrics port answers."""
                try:
                    count = scheduler.metric("scheduler_event_handling_duration_seconds_count", f'event="{event}"')
                except OSError:
                    return None
                return count or 0.0

            def attach(i: int, node: str) -> None:
                """Create the attachment and wait until the scheduler has handled it (its watch and the
                pod's are not ordered with each other)."""
                wait_for(lambda: handled(VA_ADD) is not None, 60, what="scheduler metrics")
                name, seen = f"{ns}-att-{i}", handled(VA_ADD) or 0.0
                storage.create_volume_attachment({
                    "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": name},
                    "spec": {"attacher": CSI_DRIVER, "nodeName": node, "source": {"persistentVolumeName": name}}})
                attachments.append(name)
                wait_for(lambda: (handled(VA_ADD) or 0) > seen, 60, what="VolumeAttachment handled by the scheduler")

            def bound_claim(name: str, pv: str) -> None:
                core.create_namespaced_persistent_volume_claim(ns, claim(name, volume=pv))
                wait_for(lambda: claim_phase(core, ns, name) == "Bound", 60, what="claim bound by the PV controller")

            attach(0, nodes[0])
            bound_claim("first", f"{ns}-att-2")
            core.create_namespaced_pod(ns, with_claim("user", "first"))
            assert wait_for(lambda: node_of(core, ns, "user"), 60, what="pod bound") == nodes[1]

            # node 1 is now full with the user's volume, node 0 with the attachment alone.
            bound_claim("second", f"{ns}-att-3")
            core.create_namespaced_pod(ns, with_claim("waiter", "second"))

            def refused() -> bool:  # an attempt before the scheduler saw the claim says it is not found
                cond = scheduled_condition(core, ns, "waiter")
                return cond is not None and cond.status == "False" and f"2 {LIMIT_REASON}" in cond.message

            wait_for(refused, 60, what="waiter refused by NodeVolumeLimits on both nodes")
            storage.delete_volume_attachment(f"{ns}-att-0")
            assert wait_for(lambda: node_of(core, ns, "waiter"), 60, what="waiter bound after the detach") == nodes[0]
        finally:
            for name in attachments:
                delete_if_present(lambda name=name: storage.delete_volume_attachment(name))
            for n in nodes:
                delete_if_present(lambda n=n: storage.delete_csi_node(n))
