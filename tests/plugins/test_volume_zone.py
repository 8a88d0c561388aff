"""VolumeZone: bound PVs' zone/region labels vs the node's (beta and GA keys, multi-zone values),
unbound claims and their StorageClass, upstream's messages, hints. Cases follow volume_zone_test.go."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import QueueingHint
from scheduler.plugins.volume_zone import ERR_REASON_CONFLICT, VolumeZone
from scheduler.testing import make_pod
from tests.builders import make_node
from tests.plugins.util import node_info
from tests.plugins.volume_objects import VolumeHandle, claim_vol, pv, pvc, storage_class

BZ, BR = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
Z, R = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"

OBJECTS = [
    pv("Vol_1", labels={BZ: "us-west1-a"}),
    pv("Vol_2", labels={BR: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", labels={BR: "us-west1-c"}),
    pv("Vol_Stable_1", labels={Z: "us-west1-a"}),
    pv("Vol_Stable_2", labels={R: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_Stable_3", labels={Z: "us-west1-a", R: "us-west1-b"}),
    pv("Vol_Multi", labels={Z: "us-west1-a__us-west1-b"}),
    pv("Vol_Bad", labels={Z: "us-west1-a__"}),
    pvc("PVC_1", volume="Vol_1"),
    pvc("PVC_2", volume="Vol_2"),
    pvc("PVC_3", volume="Vol_3"),
    pvc("PVC_4", volume="Vol_not_exist"),
    pvc("PVC_Stable_1", volume="Vol_Stable_1"),
    pvc("PVC_Stable_2", volume="Vol_Stable_2"),
    pvc("PVC_Stable_3", volume="Vol_Stable_3"),
    pvc("PVC_Multi", volume="Vol_Multi"),
    pvc("PVC_Bad", volume="Vol_Bad"),
    pvc("PVC_NoSC", cls="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", cls="Class_Wait"),
    pvc("PVC_ImmediateSC", cls="Class_Immediate"),
    pvc("PVC_Immediate2", cls="Class_Immediate2"),
    storage_class("Class_Immediate", mode=None),
    storage_class("Class_Immediate2", mode="Immediate"),
    storage_class("Class_Wait"),
]


def run(claim: str, node_labels: dict[str, str]) -> tuple[Status | None, Status | None]:
    pl = VolumeZone({}, VolumeHandle(OBJECTS))
    state = CycleState()
    pod = make_pod().name("pod_1").volume(claim_vol(claim)).obj()
    _, pre = pl.pre_filter(state, pod, [])
    if pre is not None and pre.code == Code.SKIP:
        return pre, None
    # upstream's tests run Filter even after a failed PreFilter: it recomputes and fails the same way
    return pre, pl.filter(state, pod, node_info(make_node("host1", labels=node_labels)))


CONFLICT = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_CONFLICT])
MATCH_CASES = [
    ("node without labels", "PVC_1", {}, None),
    ("beta zone matched", "PVC_1", {BZ: "us-west1-a", "uselessLabel": "none"}, None),
    ("beta region matched", "PVC_2", {BR: "us-west1-b", "uselessLabel": "none"}, None),
    ("beta region mismatch", "PVC_2", {BR: "no_us-west1-b", "uselessLabel": "none"}, CONFLICT),
    ("beta zone mismatch", "PVC_1", {BZ: "no_us-west1-a"}, CONFLICT),
    ("zone matched", "PVC_Stable_1", {Z: "us-west1-a"}, None),
    ("region matched", "PVC_Stable_2", {R: "us-west1-b"}, None),
    ("region mismatch", "PVC_Stable_2", {R: "no_us-west1-b"}, CONFLICT),
    ("zone mismatch", "PVC_Stable_1", {Z: "no_us-west1-a"}, CONFLICT),
    ("pv zone+region, node only zone", "PVC_Stable_3", {Z: "us-west1-a"}, CONFLICT),
    ("pv GA zone, node beta zone", "PVC_Stable_1", {BZ: "us-west1-a"}, CONFLICT),
    ("pv beta zone, node GA zone", "PVC_1", {Z: "us-west1-a"}, None),
    ("pv beta zone, node GA zone mismatch", "PVC_1", {Z: "us-west1-b"}, CONFLICT),
    ("multi-zone value, second zone", "PVC_Multi", {Z: "us-west1-b"}, None),
    ("multi-zone value, other zone", "PVC_Multi", {Z: "us-west1-c"}, CONFLICT),
    ("node with only unrelated labels", "PVC_Stable_1", {"uselessLabel": "none"}, None),
]


@pytest.mark.parametrize(("claim", "labels", "want"), [c[1:] for c in MATCH_CASES], ids=[c[0] for c in MATCH_CASES])
def test_filter(claim: str, labels: dict[str, str], want: tuple[Code, list[str]] | None) -> None:
    pre, got = run(claim, labels)
    assert pre is None
    assert (None if got is None else (got.code, got.reasons)) == want


def test_unparsable_label_is_ignored() -> None:
    pre, _ = run("PVC_Bad", {Z: "elsewhere"})
    assert pre is not None and pre.code == Code.SKIP


UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
PREFILTER_CASES = [
    ("missing claim", "PVC_none", 'persistentvolumeclaim "PVC_none" not found'),
    ("missing pv", "PVC_4", 'persistentvolume "Vol_not_exist" not found'),
    ("unbound, no class", "PVC_EmptySC", "PersistentVolumeClaim had no pv name and storageClass name"),
    ("unbound, class missing", "PVC_NoSC", 'storageclass.storage.k8s.io "Class_0" not found'),
    ("unbound, binding mode unset", "PVC_ImmediateSC", 'VolumeBindingMode not set for StorageClass "Class_Immediate"'),
    ("unbound, immediate", "PVC_Immediate2", "PersistentVolume had no name"),
    ("empty claim name", "", "PersistentVolumeClaim had no name"),
]


@pytest.mark.parametrize(("claim", "reason"), [c[1:] for c in PREFILTER_CASES], ids=[c[0] for c in PREFILTER_CASES])
def test_prefilter_failures(claim: str, reason: str) -> None:
    pre, filt = run(claim, {BZ: "us-west1-a"})
    assert pre is not None and (pre.code, pre.reasons) == (UNRESOLVABLE, [reason])
    assert filt is not None and (filt.code, filt.reasons) == (UNRESOLVABLE, [reason])


def test_wait_for_first_consumer_claim_is_skipped() -> None:
    pre, _ = run("PVC_WaitSC", {BZ: "us-west1-a"})
    assert pre is not None and pre.code == Code.SKIP


def test_pod_without_volumes_is_skipped() -> None:
    pl = VolumeZone({}, VolumeHandle(OBJECTS))
    _, s = pl.pre_filter(CycleState(), make_pod().name("p").obj(), [])
    assert s is not None and s.code == Code.SKIP


def test_hints() -> None:
    pl = VolumeZone({}, VolumeHandle())
    pod = make_pod().name("p").volume(claim_vol("c")).obj()
    Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
    assert pl.is_schedulable_after_pvc_change(pod, None, pvc("c")) is Q
    assert pl.is_schedulable_after_pvc_change(pod, None, pvc("other")) is SKIP
    assert pl.is_schedulable_after_pvc_change(pod, None, pvc("c", namespace="x")) is SKIP
    assert pl.is_schedulable_after_storage_class_added(pod, None, storage_class("w")) is Q
    assert pl.is_schedulable_after_storage_class_added(pod, None, storage_class("i", mode="Immediate")) is SKIP
    assert pl.is_schedulable_after_pv_change(pod, None, pv("v")) is Q
    old, same = pv("v", labels={Z: "a"}), pv("v", labels={Z: "a", "x": "y"})
    assert pl.is_schedulable_after_pv_change(pod, old, same) is SKIP
    assert pl.is_schedulable_after_pv_change(pod, old, pv("v", labels={Z: "b"})) is Q
