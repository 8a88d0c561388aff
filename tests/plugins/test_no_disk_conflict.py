"""NoDiskConflict: the v1.16 predicate as a legacy Filter plugin (disk conflicts only, no PVC reads)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import QueueingHint
from scheduler.plugins.legacy.no_disk_conflict import ERR_REASON, NoDiskConflict
from scheduler.testing import make_pod
from tests.builders import make_node
from tests.plugins.util import FakeHandle, node_info
from tests.plugins.volume_objects import claim_vol, ebs_vol, gce_vol, iscsi_vol, rbd_vol

CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], bool]] = [
    ("gce same disk", [gce_vol("foo")], [gce_vol("foo")], False),
    ("gce both read-only", [gce_vol("foo", True)], [gce_vol("foo", True)], True),
    ("ebs same id", [ebs_vol("vol-1")], [ebs_vol("vol-1")], False),
    ("ebs other id", [ebs_vol("vol-1")], [ebs_vol("vol-2")], True),
    ("iscsi same iqn", [iscsi_vol("iqn.a")], [iscsi_vol("iqn.a")], False),
    ("rbd shared monitor", [rbd_vol(["m1", "m2"], "img")], [rbd_vol(["m2"], "img")], False),
    ("rbd read-only", [rbd_vol(["m1"], "img", read_only=True)], [rbd_vol(["m1"], "img", read_only=True)], True),
    ("no volumes", [], [gce_vol("foo")], True),
]


@pytest.mark.parametrize(("mine", "theirs", "fits"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_filter(mine: list[dict[str, Any]], theirs: list[dict[str, Any]], fits: bool) -> None:
    pl = NoDiskConflict({}, FakeHandle())
    s = pl.filter(CycleState(), make_pod().name("p").spec_field("volumes", list(mine)).obj(),
                  node_info(make_node("n"), [make_pod().name("o").spec_field("volumes", list(theirs)).node("n").obj()]))
    if fits:
        assert s is None
    else:
        assert s is not None and (s.code, s.reasons) == (Code.UNSCHEDULABLE, [ERR_REASON])
        assert ERR_REASON == "node(s) had no available disk"


def test_no_readwriteoncepod_semantics_and_no_pvc_lookups() -> None:
    """v1.16 had no ReadWriteOncePod: two pods sharing any claim never conflict, and a missing claim
    (the handle has no objects at all) is not an error."""
    pl = NoDiskConflict({}, FakeHandle())
    other = make_pod().name("o").volume(claim_vol("c")).node("n").obj()
    assert pl.filter(CycleState(), make_pod().name("p").volume(claim_vol("c")).obj(),
                     node_info(make_node("n"), [other])) is None


def test_hint_pod_deleted() -> None:
    pl = NoDiskConflict({}, FakeHandle())
    pod = make_pod().name("p").volume(gce_vol("foo")).obj()
    holder = make_pod().name("d").volume(gce_vol("foo")).node("n").obj()
    assert pl.is_schedulable_after_pod_deleted(pod, holder, None) is QueueingHint.QUEUE
    assert (
        pl.is_schedulable_after_pod_deleted(pod, make_pod().name("d").volume(gce_vol("bar")).node("n").obj(), None)
        is QueueingHint.QUEUE_SKIP
    )
