import pytest

from scheduler.cache import Cache, NodeTree, Snapshot, SnapshotInconsistentError, new_snapshot
from scheduler.testing import make_container, make_node, make_pod
from tests.cache.cache_helpers import AFFINITY, ANTI_AFFINITY


def names(infos: object) -> list[str]:
    return [ni.name for ni in infos]  # type: ignore[attr-defined]


def zoned_cache() -> Cache:
    cache = Cache()
    for name, zone in [("n1", "a"), ("n2", "a"), ("n3", "a"), ("n4", "b"), ("n5", "c"), ("n6", "c")]:
        cache.add_node(make_node().name(name).zone(zone).allocatable(cpu="4", memory="8Gi", pods="110").obj())
    return cache


def test_snapshot_lists_nodes_zone_interleaved() -> None:
    snap = Snapshot()
    zoned_cache().update_snapshot(snap)
    assert names(snap.list()) == ["n1", "n4", "n5", "n2", "n6", "n3"]
    assert snap.num_nodes() == 6
    n4 = snap.get("n4")
    assert n4 is not None and n4.name == "n4"
    assert snap.get("zz") is None


def test_only_changed_node_infos_are_recloned() -> None:
    cache = zoned_cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    before = {ni.name: ni for ni in snap.list()}
    gen = snap.generation
    cache.add_pod(make_pod().name("p").node("n2").req(cpu="1").obj())
    cache.update_snapshot(snap)
    assert snap.generation > gen
    after = {ni.name: ni for ni in snap.list()}
    for name in ("n1", "n3", "n4", "n5", "n6"):
        assert after[name] is before[name]
    assert after["n2"] is not before["n2"]
    assert after["n2"].requested.milli_cpu == 1000
    assert snap.get("n2") is after["n2"]
    assert names(snap.list()) == ["n1", "n4", "n5", "n2", "n6", "n3"]


def test_no_change_means_no_clone() -> None:
    cache = zoned_cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    first = list(snap.list())
    cache.update_snapshot(snap)
    assert all(a is b for a, b in zip(first, snap.list(), strict=True))


def test_cache_mutation_after_snapshot_does_not_leak_into_it() -> None:
    cache = zoned_cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    n1 = snap.get("n1")
    assert n1 is not None
    cache.add_pod(make_pod().name("p").node("n1").container(make_container().req(cpu="1").host_port(80)).pvc("c").obj())
    cache.assume_pod(make_pod().name("q").node("n1").req(cpu="1").obj())
    assert n1.pods == {} and n1.requested.milli_cpu == 0
    assert n1.used_ports == {} and n1.pvc_ref_counts == {}
    assert snap.get("n1") is n1


def test_snapshot_clone_does_not_alias_cache_state() -> None:
    cache = zoned_cache()
    cache.add_pod(make_pod().name("p").node("n1").req(cpu="1").obj())
    snap = Snapshot()
    cache.update_snapshot(snap)
    n1 = snap.get("n1")
    assert n1 is not None
    n1.add_pod(make_pod().name("extra").node("n1").req(cpu="2").obj())  # e.g. a dry run mutating a snapshot entry
    info = cache.get_node_info("n1")
    assert info is not None and info.requested.milli_cpu == 1000 and len(info.pods) == 1


def test_added_node_rebuilds_list() -> None:
    cache = zoned_cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    cache.add_node(make_node().name("n7").zone("b").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    cache.update_snapshot(snap)
    assert names(snap.list()) == ["n1", "n4", "n5", "n2", "n7", "n6", "n3"]


def test_removed_node_leaves_snapshot() -> None:
    cache = zoned_cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    cache.remove_node("n4")
    cache.update_snapshot(snap)
    assert names(snap.list()) == ["n1", "n5", "n2", "n6", "n3"]
    assert snap.get("n4") is None


def test_node_removed_and_other_added_between_cycles() -> None:
    cache = zoned_cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    cache.remove_node("n6")
    cache.add_node(make_node().name("n9").zone("a").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    cache.update_snapshot(snap)
    assert names(snap.list()) == ["n1", "n4", "n5", "n2", "n3", "n9"]
    assert snap.get("n6") is None


def test_node_removed_with_pods_leaves_snapshot() -> None:
    cache = zoned_cache()
    cache.add_pod(make_pod().name("p").node("n1").pvc("c").affinity(ANTI_AFFINITY).obj())
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert names(snap.have_pods_with_required_anti_affinity_list()) == ["n1"]
    cache.remove_node("n1")
    cache.update_snapshot(snap)
    assert "n1" not in names(snap.list())
    assert snap.have_pods_with_required_anti_affinity_list() == []
    assert not snap.is_pvc_used_by_pods("default/c")


def test_zone_change_keeps_list_order_until_membership_changes() -> None:
    """As upstream: a zone move alone does not rebuild the snapshot list."""
    cache = zoned_cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    cache.update_node(None, make_node().name("n1").zone("c").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    cache.update_snapshot(snap)
    assert names(snap.list()) == ["n1", "n4", "n5", "n2", "n6", "n3"]
    n1 = snap.get("n1")
    assert n1 is not None and n1.node is not None and n1.node.zone_key == ":\x00:c"
    cache.add_node(make_node().name("n7").zone("b").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    cache.update_snapshot(snap)
    assert names(snap.list()) == ["n2", "n4", "n5", "n3", "n7", "n6", "n1"]


def test_affinity_lists_follow_membership_and_patches() -> None:
    cache = zoned_cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert snap.have_pods_with_affinity_list() == []
    cache.add_pod(make_pod().name("a").node("n3").affinity(AFFINITY).obj())
    cache.add_pod(make_pod().name("b").node("n4").affinity(ANTI_AFFINITY).obj())
    cache.update_snapshot(snap)
    assert names(snap.have_pods_with_affinity_list()) == ["n4", "n3"]  # node-list order
    assert names(snap.have_pods_with_required_anti_affinity_list()) == ["n4"]
    # a second affinity pod on n3 changes no membership: the entry is patched in place
    cache.add_pod(make_pod().name("c").node("n3").affinity(AFFINITY).obj())
    cache.update_snapshot(snap)
    aff = snap.have_pods_with_affinity_list()
    assert aff[1] is snap.get("n3") and len(aff[1].pods_with_affinity) == 2
    anti = snap.have_pods_with_required_anti_affinity_list()
    assert anti[0] is snap.get("n4")
    cache.remove_pod(make_pod().name("b").node("n4").obj())
    cache.update_snapshot(snap)
    assert names(snap.have_pods_with_affinity_list()) == ["n3"]
    assert snap.have_pods_with_required_anti_affinity_list() == []


def test_patch_without_flip_updates_all_lists() -> None:
    cache = zoned_cache()
    cache.add_pod(make_pod().name("b").node("n4").affinity(ANTI_AFFINITY).obj())
    snap = Snapshot()
    cache.update_snapshot(snap)
    cache.add_pod(make_pod().name("plain").node("n4").req(cpu="1").obj())
    cache.update_snapshot(snap)
    n4 = snap.get("n4")
    assert n4 is not None and n4.requested.milli_cpu == 1000
    assert snap.list()[1] is n4
    assert snap.have_pods_with_affinity_list()[0] is n4
    assert snap.have_pods_with_required_anti_affinity_list()[0] is n4


def test_used_pvc_set_tracks_nodes_in_snapshot() -> None:
    cache = zoned_cache()
    a = make_pod().name("a").node("n1").pvc("data").obj()
    b = make_pod().name("b").namespace("other").node("n2").pvc("data").obj()
    cache.add_pod(a)
    cache.add_pod(b)
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert set(snap.used_pvc_set) == {"default/data", "other/data"}
    cache.remove_pod(a)
    cache.update_snapshot(snap)
    assert not snap.is_pvc_used_by_pods("default/data")
    assert snap.is_pvc_used_by_pods("other/data")


def test_pvc_shared_by_two_nodes_stays_used_until_both_release_it() -> None:
    cache = zoned_cache()
    a = make_pod().name("a").node("n1").pvc("rwx").obj()
    b = make_pod().name("b").node("n2").pvc("rwx").obj()
    cache.add_pod(a)
    cache.add_pod(b)
    snap = Snapshot()
    cache.update_snapshot(snap)
    cache.remove_pod(a)
    cache.update_snapshot(snap)
    assert snap.is_pvc_used_by_pods("default/rwx")
    cache.remove_pod(b)
    cache.update_snapshot(snap)
    assert not snap.is_pvc_used_by_pods("default/rwx")


def test_assumed_pod_is_visible_in_next_snapshot() -> None:
    cache = zoned_cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    pod = make_pod().name("p").node("n5").req(cpu="2").obj()
    cache.assume_pod(pod)
    cache.update_snapshot(snap)
    n5 = snap.get("n5")
    assert n5 is not None and n5.requested.milli_cpu == 2000
    cache.forget_pod(pod)
    cache.update_snapshot(snap)
    n5 = snap.get("n5")
    assert n5 is not None and n5.requested.milli_cpu == 0


def test_image_num_nodes_frozen_at_clone_time_like_upstream() -> None:
    cache = Cache()
    cache.add_node(make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").image(["img"], 10).obj())
    snap = Snapshot()
    cache.update_snapshot(snap)
    cache.add_node(make_node().name("n2").allocatable(cpu="4", memory="8Gi", pods="110").image(["img"], 10).obj())
    cache.update_snapshot(snap)
    n1, n2 = snap.get("n1"), snap.get("n2")
    assert n1 is not None and n2 is not None
    assert n2.image_states["img"].num_nodes == 2
    assert n1.image_states["img"].num_nodes == 1  # n1 unchanged since its last clone
    live = cache.image_state("img")
    assert live is not None and live.num_nodes == 2


def test_two_snapshots_are_independent() -> None:
    cache = zoned_cache()
    s1, s2 = Snapshot(), Snapshot()
    cache.update_snapshot(s1)
    cache.add_pod(make_pod().name("p").node("n1").req(cpu="1").obj())
    cache.update_snapshot(s2)
    cache.update_snapshot(s1)
    a, b = s1.get("n1"), s2.get("n1")
    assert a is not None and b is not None and a is not b
    assert a.requested.milli_cpu == b.requested.milli_cpu == 1000


def test_inconsistent_snapshot_is_repaired_and_reported() -> None:
    cache = zoned_cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    snap._list.pop()  # corrupt it
    with pytest.raises(SnapshotInconsistentError, match="not consistent"):
        cache.update_snapshot(snap)
    assert names(snap.list()) == ["n1", "n4", "n5", "n2", "n6", "n3"]
    cache.update_snapshot(snap)  # repaired: no error now


def test_new_snapshot_builds_like_the_cache() -> None:
    nodes = [
        make_node().name("n1").zone("a").allocatable(cpu="4", memory="8Gi", pods="110").image(["img"], 5).obj(),
        make_node().name("n2").zone("a").allocatable(cpu="4", memory="8Gi", pods="110").obj(),
        make_node().name("n3").zone("b").allocatable(cpu="4", memory="8Gi", pods="110").image(["img"], 5).obj(),
    ]
    pods = [
        make_pod().name("p1").node("n1").req(cpu="1").affinity(AFFINITY).obj(),
        make_pod().name("p2").node("n3").pvc("c").obj(),
        make_pod().name("pending").req(cpu="9").obj(),
        make_pod().name("orphan").node("gone").req(cpu="9").obj(),
    ]
    snap = new_snapshot(nodes, pods)
    assert names(snap.list()) == ["n1", "n3", "n2"]
    n1 = snap.get("n1")
    assert n1 is not None and n1.requested.milli_cpu == 1000
    assert n1.image_states["img"].num_nodes == 2
    assert names(snap.have_pods_with_affinity_list()) == ["n1"]
    assert snap.is_pvc_used_by_pods("default/c")
    assert snap.get("gone") is None
    assert sum(len(ni.pods) for ni in snap.list()) == 2


def test_steady_state_cost_is_proportional_to_changed_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    import scheduler.cache.cache as cache_mod

    cache = Cache()
    for i in range(200):
        cache.add_node(make_node().name(f"n{i}").zone(f"z{i % 3}").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    snap = Snapshot()
    cache.update_snapshot(snap)
    node_list = snap.list()
    clones: list[str] = []
    real = cache_mod._snapshot_clone

    def counting(info):  # type: ignore[no-untyped-def]
        clones.append(info.name)
        return real(info)

    monkeypatch.setattr(cache_mod, "_snapshot_clone", counting)
    monkeypatch.setattr(NodeTree, "list", lambda self: pytest.fail("node list rebuilt"))
    cache.add_pod(make_pod().name("p").node("n17").req(cpu="1").obj())
    cache.add_pod(make_pod().name("q").node("n42").req(cpu="1").obj())
    cache.update_snapshot(snap)
    assert sorted(clones) == ["n17", "n42"]
    assert snap.list() is node_list  # patched in place, not rebuilt
    cache.update_snapshot(snap)
    assert len(clones) == 2


def test_concurrent_events_and_snapshots_stay_consistent() -> None:
    import threading

    cache = Cache()
    for i in range(20):
        cache.add_node(make_node().name(f"n{i}").zone(f"z{i % 2}").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    snap = Snapshot()
    pods = [make_pod().name(f"p{i}").node(f"n{i % 20}").req(cpu="100m").obj() for i in range(400)]

    def watch() -> None:
        for p in pods:
            cache.add_pod(p)
        for p in pods[::2]:
            cache.remove_pod(p)

    t = threading.Thread(target=watch)
    t.start()
    for _ in range(200):
        cache.update_snapshot(snap)
        assert snap.num_nodes() == 20
    t.join()
    cache.update_snapshot(snap)
    assert sum(len(ni.pods) for ni in snap.list()) == 200
    assert sum(ni.requested.milli_cpu for ni in snap.list()) == 200 * 100
