"""VolumeRestrictions: disk conflicts per volume type, ReadWriteOncePod claims in use (with AddPod /
RemovePod), PreFilter Skip and NotFound, queueing hints. Cases follow upstream's volume_restrictions_test.go."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import ActionType, EventResource, QueueingHint
from scheduler.plugins.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from scheduler.testing import make_pod
from tests.builders import make_node
from tests.plugins.util import node_info
from tests.plugins.volume_objects import VolumeHandle, claim_vol, ebs_vol, gce_vol, iscsi_vol, pvc, rbd_vol

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def run(pod_vols: Sequence[Mapping[str, Any]], existing_vols: Sequence[Mapping[str, Any]]) -> Code | None:
    """PreFilter + Filter of a pod against a node whose one pod has `existing_vols`."""
    pl = VolumeRestrictions({}, VolumeHandle())
    state = CycleState()
    pod = make_pod().name("new").spec_field("volumes", list(pod_vols)).obj()
    _, s = pl.pre_filter(state, pod, [])
    if s is not None:
        assert s.code == Code.SKIP
        return None  # Filter is not run after Skip
    existing = make_pod().name("old").spec_field("volumes",
                                                 list(existing_vols)).node("n").obj() if existing_vols else None
    s = pl.filter(state, pod, node_info(make_node("n"), [existing] if existing else []))
    if s is None:
        return None
    assert s.reasons == [ERR_REASON_DISK_CONFLICT]
    return s.code


U = Code.UNSCHEDULABLE
DISK_CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], Code | None]] = [
    ("nothing", [], [], None),
    ("gce: one state", [gce_vol("foo")], [], None),
    ("gce: same disk", [gce_vol("foo")], [gce_vol("foo")], U),
    ("gce: different disk", [gce_vol("foo")], [gce_vol("bar")], None),
    ("gce: both read-only", [gce_vol("foo", True)], [gce_vol("foo", True)], None),
    ("gce: only one read-only", [gce_vol("foo", True)], [gce_vol("foo")], U),
    ("ebs: same id", [ebs_vol("foo")], [ebs_vol("foo")], U),
    ("ebs: different id", [ebs_vol("foo")], [ebs_vol("bar")], None),
    ("iscsi: same iqn", [iscsi_vol("iqn.2016-12.server:storage.target01")],
     [iscsi_vol("iqn.2016-12.server:storage.target01")], U),
    ("iscsi: different iqn", [iscsi_vol("iqn.a")], [iscsi_vol("iqn.b")], None),
    ("iscsi: both read-only", [iscsi_vol("iqn.a", True)], [iscsi_vol("iqn.a", True)], None),
    ("rbd: overlapping monitors, same pool and image", [rbd_vol(["a", "b"], "foo")], [rbd_vol(["b", "c"], "foo")], U),
    ("rbd: disjoint monitors", [rbd_vol(["a", "b"], "foo")], [rbd_vol(["c", "d"], "foo")], None),
    ("rbd: other image", [rbd_vol(["a"], "foo")], [rbd_vol(["a"], "bar")], None),
    ("rbd: other pool", [rbd_vol(["a"], "foo", pool="p1")], [rbd_vol(["a"], "foo", pool="p2")], None),
    ("rbd: defaulted pool equals rbd", [rbd_vol(["a"], "foo")], [rbd_vol(["a"], "foo", pool="rbd")], U),
    ("rbd: both read-only", [rbd_vol(["a"], "foo", read_only=True)], [rbd_vol(["a"], "foo", read_only=True)], None),
    ("different types never conflict", [gce_vol("foo")], [ebs_vol("foo")], None),
    ("a volume without restrictions", [{"name": "e", "emptyDir": {}}], [{"name": "e", "emptyDir": {}}], None),
]


@pytest.mark.parametrize(("mine", "theirs", "code"), [c[1:] for c in DISK_CASES], ids=[c[0] for c in DISK_CASES])
def test_disk_conflicts(mine: list[dict[str, Any]], theirs: list[dict[str, Any]], code: Code | None) -> None:
    assert run(mine, theirs) == code


def test_prefilter_skips_without_relevant_volumes() -> None:
    pl = VolumeRestrictions({}, VolumeHandle([pvc("rwx", modes=["ReadWriteMany"])]))
    _, s = pl.pre_filter(CycleState(),
                         make_pod().name("p").volume(claim_vol("rwx")).volume({"name": "e", "emptyDir": {}}).obj(), [])
    assert s is not None and s.code == Code.SKIP


def test_prefilter_missing_pvc_is_unresolvable() -> None:
    pl = VolumeRestrictions({}, VolumeHandle())
    _, s = pl.pre_filter(CycleState(), make_pod().name("p").volume(claim_vol("claim-with-rwop-1")).obj(), [])
    assert s is not None
    assert (s.code, s.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                   ['persistentvolumeclaim "claim-with-rwop-1" not found'])


RWOP1, RWOP2 = pvc("rwop-1", modes=["ReadWriteOncePod"]), pvc("rwop-2", modes=["ReadWriteOncePod"])
RWX = pvc("rwx", modes=["ReadWriteMany"])


def rwop_setup(existing: list[list[str]]) -> tuple[VolumeRestrictions, Any]:
    node = make_node("node-1")
    pods = [make_pod().name(f"e{i}").spec_field("volumes", [claim_vol(c) for c in claims]).node("node-1").obj() for i,
            claims in enumerate(existing)]
    handle = VolumeHandle([RWOP1, RWOP2, RWX], nodes=[node], pods=pods)
    return VolumeRestrictions({}, handle), handle


def test_rwop_not_in_use_is_skipped() -> None:
    pl, _ = rwop_setup([["rwx"]])
    _, s = pl.pre_filter(CycleState(), make_pod().name("p").volume(claim_vol("rwop-1")).obj(), [])
    assert s is not None and s.code == Code.SKIP


@pytest.mark.parametrize("existing", [[["rwop-1"], ["rwx"]], [["rwop-1", "rwop-2"], ["rwx"]]])
def test_rwop_in_use_rejects_every_node_as_unschedulable(existing: list[list[str]]) -> None:
    pl, handle = rwop_setup(existing)
    state = CycleState()
    pod = make_pod().name("p").volume(claim_vol("rwop-1")).volume(claim_vol("rwop-2")).obj()
    _, s = pl.pre_filter(state, pod, [])
    assert s is None
    s = pl.filter(state, pod, handle.snapshot().get("node-1"))
    assert s is not None
    assert (s.code, s.reasons) == (Code.UNSCHEDULABLE, [ERR_REASON_RWOP_CONFLICT])
    # an empty node elsewhere is rejected too: the claim is in use anywhere
    s = pl.filter(state, pod, node_info(make_node("other")))
    assert s is not None and s.code == Code.UNSCHEDULABLE


def test_rwop_other_namespace_is_not_a_conflict() -> None:
    node = make_node("n")
    other = make_pod().name("e").namespace("other").volume(claim_vol("rwop-1")).node("n").obj()
    handle = VolumeHandle([RWOP1, pvc("rwop-1", namespace="other", modes=["ReadWriteOncePod"])], nodes=[node],
                          pods=[other])
    _, s = VolumeRestrictions({}, handle).pre_filter(CycleState(),
                                                     make_pod().name("p").volume(claim_vol("rwop-1")).obj(), [])
    assert s is not None and s.code == Code.SKIP


def test_add_and_remove_pod_adjust_the_conflict_count() -> None:
    """Preemption removes the user of the claim (RemovePod) → fits; a nominated user (AddPod) → conflict."""
    pl, handle = rwop_setup([["rwop-1"]])
    pod = make_pod().name("p").volume(claim_vol("rwop-1")).volume(gce_vol("d")).obj()
    user = next(iter(handle.snapshot().get("node-1").pods.values()))
    state = CycleState()
    _, s = pl.pre_filter(state, pod, [])
    assert s is None
    clone = state.clone()
    assert pl.remove_pod(clone, pod, user, handle.snapshot().get("node-1")) is None
    assert pl.filter(clone, pod, node_info(make_node("x"))) is None
    assert pl.filter(state, pod, node_info(make_node("x"))) is not None  # the clone did not touch the original
    assert pl.add_pod(clone, pod, make_pod().name("nominated").volume(claim_vol("rwop-1")).obj(),
                      node_info(make_node("x"))) is None
    s = pl.filter(clone, pod, node_info(make_node("x")))
    assert s is not None and s.reasons == [ERR_REASON_RWOP_CONFLICT]


def test_filter_without_prefilter_state_is_an_error() -> None:
    pl = VolumeRestrictions({}, VolumeHandle())
    s = pl.filter(CycleState(), make_pod().name("p").volume(gce_vol("a")).obj(), node_info(make_node("n")))
    assert s is not None and s.code == Code.ERROR
    assert s.reasons == ['cannot read "PreFilterVolumeRestrictions" from cycleState']


def test_disk_conflict_is_checked_before_rwop_state() -> None:
    pl = VolumeRestrictions({}, VolumeHandle())
    other = make_pod().name("o").volume(gce_vol("a")).node("n").obj()
    s = pl.filter(CycleState(), make_pod().name("p").volume(gce_vol("a")).obj(), node_info(make_node("n"), [other]))
    assert s is not None and (s.code, s.reasons) == (Code.UNSCHEDULABLE, [ERR_REASON_DISK_CONFLICT])


def test_events() -> None:
    evs = VolumeRestrictions({}, VolumeHandle()).events_to_register()
    got = {(e.event.resource, e.event.action, e.hint is not None) for e in evs}
    assert got == {
        (EventResource.POD, ActionType.DELETE, True),
        (EventResource.NODE, ActionType.ADD, False),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, True),
    }


@pytest.mark.parametrize(
    ("deleted_vols", "deleted_ns", "want"),
    [
        ([gce_vol("foo")], "default", Q),  # it held the conflicting disk
        ([gce_vol("bar")], "default", SKIP),
        ([gce_vol("foo")], "other", SKIP),  # another namespace is never a reason
        ([claim_vol("c1")], "default", Q),  # same PVC: it may have been the ReadWriteOncePod user
        ([claim_vol("c2")], "default", SKIP),
        ([], "default", SKIP),
    ],
)
def test_hint_pod_deleted(deleted_vols: list[dict[str, Any]], deleted_ns: str, want: QueueingHint) -> None:
    pl = VolumeRestrictions({}, VolumeHandle())
    pod = make_pod().name("p").volume(gce_vol("foo")).volume(claim_vol("c1")).obj()
    deleted = make_pod().name("d").namespace(deleted_ns).spec_field("volumes", list(deleted_vols)).node("n").obj()
    assert pl.is_schedulable_after_pod_deleted(pod, deleted, None) == want


@pytest.mark.parametrize(("claim", "ns", "want"), [("c1", "default", Q), ("c2", "default", SKIP),
                                                     ("c1", "other", SKIP)])
def test_hint_pvc_added(claim: str, ns: str, want: QueueingHint) -> None:
    pl = VolumeRestrictions({}, VolumeHandle())
    pod = make_pod().name("p").volume(claim_vol("c1")).obj()
    assert pl.is_schedulable_after_pvc_added(pod, None, pvc(claim, namespace=ns)) == want
