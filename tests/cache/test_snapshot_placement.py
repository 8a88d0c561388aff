"""The snapshot's placement API (upstream Snapshot.AssumePlacement, ForgetPlacement, GetPlacement and the
...InPlacement readers): a pod group's cycle limits the candidates to a placement's nodes, and nothing changes
while none is assumed."""

from __future__ import annotations

import pytest

from scheduler.cache import Snapshot, new_snapshot
from scheduler.framework.podgroup import Placement
from scheduler.framework.types import NodeInfo
from scheduler.testing import make_node


def snapshot() -> Snapshot:
    return new_snapshot([make_node().name(f"n{i}").allocatable(cpu="4", memory="8Gi", pods="110").obj()
                         for i in range(1, 5)], [])


def placement(snap: Snapshot, *names: str) -> Placement:
    infos: list[NodeInfo] = []
    for name in names:
        info = snap.get(name)
        assert info is not None
        infos.append(info)
    return Placement("p", infos)


def test_without_a_placement_every_node_is_a_candidate() -> None:
    snap = snapshot()
    assert snap.get_placement() is None
    assert snap.list_nodes_in_placement() is snap.list()
    assert snap.num_nodes_in_placement() == 4
    assert snap.get_node_in_placement("n3") is snap.get("n3")
    assert snap.get_node_in_placement("zz") is None


def test_an_assumed_placement_limits_the_candidates_to_its_nodes_in_its_order() -> None:
    snap = snapshot()
    p = placement(snap, "n3", "n1")
    snap.assume_placement(p)
    assert snap.get_placement() is p
    assert [n.name for n in snap.list_nodes_in_placement()] == ["n3", "n1"]
    assert snap.num_nodes_in_placement() == 2
    assert snap.get_node_in_placement("n1") is snap.get("n1")
    assert snap.get_node_in_placement("n2") is None
    assert snap.get("n2") is not None and len(snap.list()) == 4  # the snapshot itself is whole
    snap.forget_placement()
    assert snap.get_placement() is None and snap.num_nodes_in_placement() == 4
    assert snap.get_node_in_placement("n2") is snap.get("n2")


def test_a_later_placement_replaces_the_earlier_and_none_forgets() -> None:
    snap = snapshot()
    snap.assume_placement(placement(snap, "n1"))
    second = placement(snap, "n2", "n4")
    snap.assume_placement(second)
    assert snap.get_placement() is second and snap.get_node_in_placement("n1") is None
    snap.assume_placement(None)
    assert snap.get_placement() is None and snap.num_nodes_in_placement() == 4


def test_a_placement_of_every_node_is_no_placement() -> None:
    snap = snapshot()
    snap.assume_placement(placement(snap, "n4", "n3", "n2", "n1"))
    assert snap.get_placement() is None
    assert snap.list_nodes_in_placement() is snap.list()


def test_a_node_not_in_the_snapshot_is_refused_and_nothing_stays_assumed() -> None:
    snap = snapshot()
    snap.assume_placement(placement(snap, "n1"))
    stranger = NodeInfo(make_node().name("n9").obj())
    with pytest.raises(ValueError, match=r"^node n9 in placement is not present in snapshot$"):
        snap.assume_placement(Placement("p", [snap.list()[0], stranger]))
    assert snap.get_placement() is None and snap.num_nodes_in_placement() == 4


def test_a_copy_of_a_snapshot_node_is_refused() -> None:
    snap = snapshot()
    n2 = snap.get("n2")
    assert n2 is not None
    with pytest.raises(ValueError, match=r"^node n2 in placement is not the same instance as in the snapshot$"):
        snap.assume_placement(Placement("p", [n2.clone()]))
    assert snap.get_placement() is None
