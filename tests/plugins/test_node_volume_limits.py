"""NodeVolumeLimits (CSI): per-driver unique volumes vs CSINode allocatable counts, pending claims via
the StorageClass, in-tree → CSI migration, generic ephemeral volumes, VolumeAttachments, hints.
Cases follow upstream's nodevolumelimits/csi_test.go."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import QueueingHint
from scheduler.plugins.helper.volume_util import translate_inline_volume, translate_pv_to_csi
from scheduler.plugins.node_volume_limits import ERR_REASON_MAX_VOLUME_COUNT, NodeVolumeLimits
from scheduler.testing import make_pod
from tests.builders import make_node
from tests.plugins.volume_objects import (
    VolumeHandle,
    claim_vol,
    csi_node,
    ebs_vol,
    ephemeral_vol,
    gce_vol,
    pv,
    pvc,
    storage_class,
)

EBS_CSI, GCE_CSI = "ebs.csi.aws.com", "pd.csi.storage.gke.io"
PORTWORX_ANN = {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/portworx-volume"}


def base_objects() -> list[dict[str, Any]]:
    return [
        pv("csi-ebs-0", csi=(EBS_CSI, "vol-0")),
        pv("csi-ebs-1", csi=(EBS_CSI, "vol-1")),
        pv("csi-ebs-2", csi=(EBS_CSI, "vol-2")),
        pv("csi-gce-0", csi=(GCE_CSI, "disk-0")),
        pv("intree-ebs-0", source={"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-90"}}),
        pv("intree-ebs-1", source={"awsElasticBlockStore": {"volumeID": "vol-91"}}),
        pv("intree-px-0", source={"portworxVolume": {"volumeID": "px-0"}}),
        pv("intree-px-1", source={"portworxVolume": {"volumeID": "px-1"}}),
        pv("nfs-0", source={"nfs": {"server": "s", "path": "/"}}),
        pvc("ebs-0", volume="csi-ebs-0"),
        pvc("ebs-1", volume="csi-ebs-1"),
        pvc("ebs-2", volume="csi-ebs-2"),
        pvc("gce-0", volume="csi-gce-0"),
        pvc("intree-0", volume="intree-ebs-0"),
        pvc("intree-1", volume="intree-ebs-1"),
        pvc("px-0", volume="intree-px-0"),
        pvc("px-1", volume="intree-px-1"),
        pvc("nfs", volume="nfs-0"),
        pvc("pending-ebs-0", cls="csi-ebs-sc"),
        pvc("pending-ebs-1", cls="csi-ebs-sc"),
        pvc("pending-intree", cls="intree-ebs-sc"),
        pvc("pending-nosc", cls="missing-sc"),
        pvc("pending-nothing"),
        pvc("dangling", cls="csi-ebs-sc", volume="no-such-pv", bound=False),
        storage_class("csi-ebs-sc", provisioner=EBS_CSI),
        storage_class("intree-ebs-sc", provisioner="kubernetes.io/aws-ebs"),
    ]


def filter_status(
    new_vols: Sequence[Mapping[str, Any]],
    existing_vols: Sequence[Sequence[Mapping[str, Any]]] = (),
    limits: Mapping[str, int | None] | None = None,
    csinode_ann: Mapping[str, str] | None = None,
    extra: Sequence[Mapping[str, Any]] = (),
    pod_name: str = "new",
) -> Status | None:
    node = make_node("node-1")
    objs = base_objects() + list(extra)
    if limits is not None:
        objs.append(csi_node("node-1", limits, csinode_ann))
    existing = [make_pod().name(f"e{i}").spec_field("volumes", list(v)).node("node-1").obj() for i,
                v in enumerate(existing_vols)]
    handle = VolumeHandle(objs, nodes=[node], pods=existing)
    pl = NodeVolumeLimits({}, handle)
    pod = make_pod().name(pod_name).spec_field("volumes", list(new_vols)).obj()
    state = CycleState()
    _, pre = pl.pre_filter(state, pod, [])
    assert pre is None
    return pl.filter(state, pod, handle.snapshot().get("node-1"))


EXCEEDED = (Code.UNSCHEDULABLE, [ERR_REASON_MAX_VOLUME_COUNT])


def code(s: Status | None) -> tuple[Code, list[str]] | None:
    return None if s is None else (s.code, s.reasons)


CASES: list[tuple[str, dict[str, Any], tuple[Code, list[str]] | None]] = [
    ("fits under the limit", {"new": [claim_vol("ebs-0")], "old": [[claim_vol("ebs-1")]], "limits": {EBS_CSI: 2}},
     None),
    ("exceeds the limit", {"new": [claim_vol("ebs-0")], "old": [[claim_vol("ebs-1"), claim_vol("ebs-2")]],
                           "limits": {EBS_CSI: 2}}, EXCEEDED),
    ("a volume already on the node is not counted twice",
     {"new": [claim_vol("ebs-1")], "old": [[claim_vol("ebs-1"), claim_vol("ebs-2")]], "limits": {EBS_CSI: 2}}, None),
    ("driver without a count is unlimited", {"new": [claim_vol("ebs-0")], "old": [[claim_vol("ebs-1")]],
                                             "limits": {EBS_CSI: None}}, None),
    ("other driver's volumes do not count", {"new": [claim_vol("gce-0")], "old": [[claim_vol("ebs-1")]],
                                             "limits": {EBS_CSI: 1, GCE_CSI: 1}}, None),
    ("no CSINode: no limits", {"new": [claim_vol("ebs-0")], "old": [[claim_vol("ebs-1")]], "limits": None}, None),
    ("pending claims count via the StorageClass provisioner",
     {"new": [claim_vol("pending-ebs-0")], "old": [[claim_vol("ebs-1")]], "limits": {EBS_CSI: 1}}, EXCEEDED),
    ("two pending claims are two volumes",
     {"new": [claim_vol("pending-ebs-0"), claim_vol("pending-ebs-1")], "old": [], "limits": {EBS_CSI: 2}}, None),
    ("the same pending claim on the node is one volume",
     {"new": [claim_vol("pending-ebs-0")], "old": [[claim_vol("pending-ebs-0")]], "limits": {EBS_CSI: 1}}, None),
    ("a claim whose PV is missing counts via its class",
     {"new": [claim_vol("dangling")], "old": [[claim_vol("ebs-1")]], "limits": {EBS_CSI: 1}}, EXCEEDED),
    ("a claim whose class is missing is not counted",
     {"new": [claim_vol("pending-nosc")], "old": [[claim_vol("ebs-1")]], "limits": {EBS_CSI: 1}}, None),
    ("a claim without class or volume is not counted",
     {"new": [claim_vol("pending-nothing")], "old": [[claim_vol("ebs-1")]], "limits": {EBS_CSI: 1}}, None),
    ("in-tree EBS PV counts as the EBS CSI driver (migration on with a CSINode)",
     {"new": [claim_vol("intree-0")], "old": [[claim_vol("ebs-1")]], "limits": {EBS_CSI: 1}}, EXCEEDED),
    ("in-tree and CSI volumes add up", {"new": [claim_vol("ebs-0")], "old": [[claim_vol("intree-1")]],
                                        "limits": {EBS_CSI: 1}}, EXCEEDED),
    ("pending in-tree class counts as the CSI driver",
     {"new": [claim_vol("pending-intree")], "old": [[claim_vol("ebs-1")]], "limits": {EBS_CSI: 1}}, EXCEEDED),
    ("inline in-tree EBS counts", {"new": [ebs_vol("vol-77")], "old": [[claim_vol("ebs-1")]],
                                   "limits": {EBS_CSI: 1}}, EXCEEDED),
    ("inline volume equal to a PV's handle is one volume",
     {"new": [ebs_vol("aws://us-east-1a/vol-91")], "old": [[claim_vol("intree-1")]], "limits": {EBS_CSI: 1}}, None),
    ("non-migratable in-tree PV is not counted", {"new": [claim_vol("nfs")], "old": [[claim_vol("ebs-1")]],
                                                  "limits": {EBS_CSI: 0}}, None),
    ("portworx needs the migrated-plugins annotation",
     {"new": [claim_vol("px-0")], "old": [[claim_vol("px-1")]], "limits": {"pxd.portworx.com": 1}}, None),
    ("portworx with the annotation counts",
     {"new": [claim_vol("px-0")], "old": [[claim_vol("px-1")]], "limits": {"pxd.portworx.com": 1},
      "ann": PORTWORX_ANN}, EXCEEDED),
    ("existing pod's missing claim is ignored", {"new": [claim_vol("ebs-0")], "old": [[claim_vol("gone")]],
                                                 "limits": {EBS_CSI: 1}}, None),
    ("missing claim of the new pod", {"new": [claim_vol("gone")], "old": [], "limits": {EBS_CSI: 1}},
     (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ['looking up PVC default/gone: persistentvolumeclaim "gone" not found'])),
]


@pytest.mark.parametrize(("kw", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_filter(kw: dict[str, Any], want: tuple[Code, list[str]] | None) -> None:
    got = filter_status(kw["new"], kw["old"], kw["limits"], kw.get("ann"))
    assert code(got) == want


def test_ephemeral_volumes() -> None:
    owned = pvc("new-xyz", cls="csi-ebs-sc", owner_uid="uid-new")
    foreign = pvc("new-xyz", cls="csi-ebs-sc", owner_uid="someone-else")
    # missing: the ephemeral volume controller has not created it yet
    got = filter_status([ephemeral_vol("xyz")], [], {EBS_CSI: 1})
    assert code(got) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                         ['looking up PVC default/new-xyz: persistentvolumeclaim "new-xyz" not found'])
    got = filter_status([ephemeral_vol("xyz")], [], {EBS_CSI: 1}, extra=[foreign])
    assert code(got) == (Code.ERROR, ["PVC default/new-xyz was not created for pod default/new (pod is not owner)"])
    assert filter_status([ephemeral_vol("xyz")], [], {EBS_CSI: 1}, extra=[owned]) is None
    got = filter_status([ephemeral_vol("xyz")], [[claim_vol("ebs-1")]], {EBS_CSI: 1}, extra=[owned])
    assert code(got) == EXCEEDED


def test_volume_attachments_count_unless_used_by_a_pod() -> None:
    def va(name: str, pv_name: str, node: str = "node-1") -> dict[str, Any]:
        return {"kind": "VolumeAttachment", "metadata": {"name": name},
                "spec": {"attacher": EBS_CSI, "nodeName": node, "source": {"persistentVolumeName": pv_name}}}

    assert code(filter_status([claim_vol("ebs-0")], [], {EBS_CSI: 1}, extra=[va("a", "csi-ebs-1")])) == EXCEEDED
    assert filter_status([claim_vol("ebs-0")], [], {EBS_CSI: 1}, extra=[va("a", "csi-ebs-1", node="x")]) is None
    # attached and used by a pod on the node: counted once
    assert code(filter_status([claim_vol("ebs-0")], [[claim_vol("ebs-1")]], {EBS_CSI: 2},
                              extra=[va("a", "csi-ebs-1")])) is None
    # attachments of non-CSI PVs are not counted
    assert filter_status([claim_vol("ebs-0")], [], {EBS_CSI: 1}, extra=[va("a", "nfs-0")]) is None


def test_prefilter() -> None:
    pl = NodeVolumeLimits({}, VolumeHandle())
    skip_pod = (make_pod().name("p").volume({"name": "s", "secret": {"secretName": "x"}})
                .volume({"name": "c", "configMap": {"name": "y"}}).obj())
    _, s = pl.pre_filter(CycleState(), skip_pod, [])
    assert s is not None and s.code == Code.SKIP
    for vols in ([claim_vol("a")], [ephemeral_vol("e")], [gce_vol("d")], [{"name": "f", "azureFile": {}}]):
        _, s = pl.pre_filter(CycleState(), make_pod().name("p").spec_field("volumes", list(vols)).obj(), [])
        assert s is None, vols


def test_translation() -> None:
    assert translate_inline_volume(ebs_vol("aws://us-east-1a/vol-123")) == (EBS_CSI, "vol-123")
    assert translate_inline_volume(gce_vol("d1")) == (GCE_CSI, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d1")
    gce_pv = pv("g", labels={"topology.kubernetes.io/zone": "us-central1-a"},
                source={"gcePersistentDisk": {"pdName": "d"}})
    translated, driver, handle = translate_pv_to_csi(gce_pv)
    assert (driver, handle) == (GCE_CSI, "projects/UNSPECIFIED/zones/us-central1-a/disks/d")
    terms = translated["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "topology.gke.io/zone", "operator": "In",
                                            "values": ["us-central1-a"]}]}]
    assert "gcePersistentDisk" not in translated["spec"] and "gcePersistentDisk" in gce_pv["spec"]
    regional = pv("r", labels={"topology.kubernetes.io/zone": "us-central1-a__us-central1-b"},
                  source={"gcePersistentDisk": {"pdName": "d"}})
    assert translate_pv_to_csi(regional)[2] == "projects/UNSPECIFIED/regions/us-central1/disks/d"


def test_hints() -> None:
    pl = NodeVolumeLimits({}, VolumeHandle())
    Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
    pod = make_pod().name("p").volume(claim_vol("c")).volume(ephemeral_vol("e")).obj()
    assert pl.is_schedulable_after_pod_deleted(pod, make_pod().name("d").volume(claim_vol("x")).node("n").obj(),
                                               None) is Q
    assert pl.is_schedulable_after_pod_deleted(pod, make_pod().name("d").volume(ebs_vol("vol-1")).node("n").obj(),
                                               None) is Q
    assert pl.is_schedulable_after_pod_deleted(pod, make_pod().name("d").node("n").obj(), None) is SKIP
    assert pl.is_schedulable_after_pod_deleted(pod, make_pod().name("d").volume(claim_vol("x")).obj(), None) is SKIP
    assert pl.is_schedulable_after_pvc_added(pod, None, pvc("c")) is Q
    assert pl.is_schedulable_after_pvc_added(pod, None, pvc("p-e")) is Q
    assert pl.is_schedulable_after_pvc_added(pod, None, pvc("other")) is SKIP
    assert pl.is_schedulable_after_pvc_added(pod, None, pvc("c", namespace="x")) is SKIP
    old = csi_node("n", {EBS_CSI: 2})
    assert pl.is_schedulable_after_csi_node_updated(pod, old, csi_node("n", {EBS_CSI: 3})) is Q
    assert pl.is_schedulable_after_csi_node_updated(pod, old, csi_node("n", {EBS_CSI: 1})) is SKIP
    assert pl.is_schedulable_after_csi_node_updated(pod, old, csi_node("n", {EBS_CSI: 2, GCE_CSI: 1})) is Q


def csi_driver(name: str, prevent: bool | None) -> dict[str, Any]:
    spec = {} if prevent is None else {"preventPodSchedulingIfMissing": prevent}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


def test_a_driver_that_asks_for_it_must_be_installed_on_the_node() -> None:
    """VolumeLimitScaling (beta, on in v1.37): a CSIDriver with preventPodSchedulingIfMissing keeps the pod off
    nodes whose CSINode does not list the driver, before any limit is counted; other drivers, and drivers
    without a CSIDriver object, are not checked."""
    missing = (Code.UNSCHEDULABLE, [f"{EBS_CSI} CSI driver is not installed on the node"])
    prevent = [csi_driver(EBS_CSI, True)]
    assert code(filter_status([claim_vol("ebs-0")], [], {GCE_CSI: 5}, extra=prevent)) == missing
    assert code(filter_status([claim_vol("ebs-0")], [], None, extra=prevent)) == missing  # no CSINode at all
    assert filter_status([claim_vol("ebs-0")], [], {EBS_CSI: None}, extra=prevent) is None  # listed, unlimited
    assert filter_status([claim_vol("ebs-0")], [], {GCE_CSI: 5}, extra=[csi_driver(EBS_CSI, False)]) is None
    assert filter_status([claim_vol("ebs-0")], [], {GCE_CSI: 5}, extra=[csi_driver(EBS_CSI, None)]) is None
    assert filter_status([claim_vol("ebs-0")], [], {GCE_CSI: 5}) is None


def test_volume_attachment_deleted_hint() -> None:
    """isSchedulableAfterVolumeAttachmentDeleted: any PVC volume queues; an inline migratable volume only
    when the detached volume's attacher is its CSI driver; other volumes (ephemeral included) skip."""
    pl = NodeVolumeLimits({}, VolumeHandle())
    Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

    def va(attacher: str) -> dict[str, Any]:
        return {"kind": "VolumeAttachment", "metadata": {"name": "a"},
                "spec": {"attacher": attacher, "nodeName": "n", "source": {"persistentVolumeName": "pv"}}}

    hint = pl.is_schedulable_after_volume_attachment_deleted
    assert hint(make_pod().name("p").volume(claim_vol("c")).obj(), va(GCE_CSI), None) is Q
    assert hint(make_pod().name("p").volume(ebs_vol("vol-1")).obj(), va(EBS_CSI), None) is Q
    assert hint(make_pod().name("p").volume(ebs_vol("vol-1")).obj(), va(GCE_CSI), None) is SKIP
    assert hint(make_pod().name("p").volume(gce_vol("d")).obj(), va(GCE_CSI), None) is Q
    assert hint(make_pod().name("p").volume(ephemeral_vol("e")).obj(), va(EBS_CSI), None) is SKIP
    assert hint(make_pod().name("p").obj(), va(EBS_CSI), None) is SKIP
