from scheduler.cache import Cache, Snapshot
from scheduler.testing import make_node, make_pod


def names(snap: Snapshot) -> list[str]:
    return [ni.name for ni in snap.list()]


def test_add_node_sets_allocatable_and_counts() -> None:
    cache = Cache()
    cache.add_node(make_node().name("n1").allocatable(cpu="2", memory="1Gi", pods="110").obj())
    info = cache.get_node_info("n1")
    assert info is not None and info.node is not None
    assert info.allocatable.milli_cpu == 2000
    assert info.allocatable.memory == 1024**3
    assert info.allocatable.allowed_pod_number == 110
    assert cache.node_count() == 1


def test_update_node_changes_allocatable_and_keeps_pods() -> None:
    cache = Cache()
    old = make_node().name("n1").allocatable(cpu="2", memory="8Gi", pods="110").obj()
    cache.add_node(old)
    cache.add_pod(make_pod().name("p").node("n1").req(cpu="500m").obj())
    cache.update_node(old, make_node().name("n1").allocatable(cpu="8", memory="8Gi", pods="110").obj())
    info = cache.get_node_info("n1")
    assert info is not None
    assert info.allocatable.milli_cpu == 8000
    assert info.requested.milli_cpu == 500


def test_update_of_unknown_node_adds_it() -> None:
    cache = Cache()
    cache.update_node(None, make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert names(snap) == ["n1"]


def test_remove_node_without_pods_drops_node_info() -> None:
    cache = Cache()
    cache.add_node(make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    cache.remove_node("n1")
    assert cache.node_count() == 0
    assert cache.get_node_info("n1") is None


def test_remove_node_with_pods_leaves_ghost_until_last_pod_goes() -> None:
    cache = Cache()
    cache.add_node(make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    cache.add_node(make_node().name("n2").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    pod = make_pod().name("p").node("n1").req(cpu="1").obj()
    cache.add_pod(pod)
    cache.remove_node("n1")
    ghost = cache.get_node_info("n1")
    assert ghost is not None and ghost.node is None and "uid-p" in ghost.pods
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert names(snap) == ["n2"]
    assert snap.get("n1") is None
    assert cache.pod_count() == 1
    cache.remove_pod(pod)
    assert cache.get_node_info("n1") is None
    assert cache.node_count() == 1


def test_remove_unknown_node_is_tolerated() -> None:
    cache = Cache()
    cache.remove_node("nope")
    assert cache.node_count() == 0


def test_readding_removed_ghost_node_restores_it_with_its_pods() -> None:
    cache = Cache()
    cache.add_node(make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    cache.add_pod(make_pod().name("p").node("n1").req(cpu="1").obj())
    cache.remove_node("n1")
    cache.add_node(make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    snap = Snapshot()
    cache.update_snapshot(snap)
    info = snap.get("n1")
    assert info is not None and info.requested.milli_cpu == 1000


def test_image_num_nodes_counts_nodes_per_name() -> None:
    cache = Cache()
    cache.add_node(make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110")
                   .image(["nginx:1", "nginx@sha256:a"], 100).obj())
    cache.add_node(make_node().name("n2").allocatable(cpu="4", memory="8Gi", pods="110").image(["nginx:1"], 100)
                   .image(["redis:7"], 50).obj())
    s = cache.image_state("nginx:1")
    assert s is not None and s.num_nodes == 2 and s.size == 100
    digest = cache.image_state("nginx@sha256:a")
    assert digest is not None and digest.num_nodes == 1
    n1 = cache.get_node_info("n1")
    assert n1 is not None and set(n1.image_states) == {"nginx:1", "nginx@sha256:a"}
    # the cache's NodeInfos share one summary per image name
    assert n1.image_states["nginx:1"] is s


def test_image_name_listed_twice_on_one_node_counts_once() -> None:
    cache = Cache()
    cache.add_node(make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").image(["a:1"], 10)
                   .image(["a:1", "a:latest"], 10).obj())
    s = cache.image_state("a:1")
    assert s is not None and s.num_nodes == 1


def test_image_states_follow_node_update_and_remove() -> None:
    cache = Cache()
    old = make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").image(["a:1"], 10).obj()
    cache.add_node(old)
    cache.add_node(make_node().name("n2").allocatable(cpu="4", memory="8Gi", pods="110").image(["a:1"], 10).obj())
    cache.update_node(old, make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").image(["b:1"], 20)
                      .obj())
    a = cache.image_state("a:1")
    assert a is not None and a.num_nodes == 1
    b = cache.image_state("b:1")
    assert b is not None and b.num_nodes == 1
    cache.remove_node("n2")
    assert cache.image_state("a:1") is None
    cache.remove_node("n1")
    assert cache.image_state("b:1") is None


def test_relisted_node_add_is_idempotent() -> None:
    cache = Cache()
    cache.add_node(make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").image(["a:1"], 10).obj())
    cache.add_node(make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").image(["a:1"], 10).obj())
    s = cache.image_state("a:1")
    assert s is not None and s.num_nodes == 1
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert names(snap) == ["n1"]


def test_reconcile_nodes_removes_vanished_nodes() -> None:
    cache = Cache()
    for n in ("n1", "n2", "n3"):
        cache.add_node(make_node().name(n).allocatable(cpu="4", memory="8Gi", pods="110").obj())
    cache.add_pod(make_pod().name("p").node("n3").obj())
    gone = cache.reconcile_nodes({"n1"})
    assert sorted(gone) == ["n2", "n3"]
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert names(snap) == ["n1"]
    assert cache.node_count() == 2  # n3 lingers as a ghost holding its pod
    assert cache.reconcile_nodes({"n1"}) == []


def test_get_node_returns_cached_object_until_removed() -> None:
    cache = Cache()
    node = make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").obj()
    cache.add_node(node)
    cache.add_pod(make_pod().name("p").node("n1").obj())
    assert cache.get_node("n1") is node
    cache.remove_node("n1")
    assert cache.get_node("n1") is None
    assert cache.get_node("zz") is None
