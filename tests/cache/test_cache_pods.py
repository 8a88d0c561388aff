from collections.abc import Callable

import pytest

from scheduler.cache import Cache, CacheError
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod
from scheduler.model.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from scheduler.testing import ContainerWrapper, PodWrapper, make_container, make_node, make_pod
from tests.cache.cache_helpers import ANTI_AFFINITY

MI = 1024 * 1024


def node_info(cache: Cache, name: str) -> NodeInfo:
    info = cache.get_node_info(name)
    assert info is not None
    return info


def cache_with_nodes(*names: str, ttl: float = 0.0) -> Cache:
    cache = Cache(ttl=ttl)
    for n in names:
        cache.add_node(make_node().name(n).allocatable(cpu="4", memory="8Gi", pods="110").obj())
    return cache


# --- bound pods -------------------------------------------------------------------------------


def test_add_pod_sums_requested_and_non_zero_requested() -> None:
    cache = cache_with_nodes("n1")
    cache.add_pod(make_pod().name("a").node("n1").req(cpu="250m", memory="64Mi").obj())
    cache.add_pod(make_pod().name("b").node("n1").req(cpu="1", memory="1Gi").obj())
    info = node_info(cache, "n1")
    assert info.requested.milli_cpu == 1250
    assert info.requested.memory == 1088 * MI
    assert info.non_zero_requested.milli_cpu == 1250
    assert info.non_zero_requested.memory == 1088 * MI
    assert set(info.pods) == {"uid-a", "uid-b"}


def test_pod_without_requests_counts_defaults_only_in_non_zero() -> None:
    cache = cache_with_nodes("n1")
    cache.add_pod(make_pod().name("be").node("n1").containers(make_container().name("c0"), make_container().name("c1"))
                  .obj())
    info = node_info(cache, "n1")
    assert info.requested.milli_cpu == 0 and info.requested.memory == 0
    assert info.non_zero_requested.milli_cpu == 2 * DEFAULT_MILLI_CPU_REQUEST == 200
    assert info.non_zero_requested.memory == 2 * DEFAULT_MEMORY_REQUEST == 400 * MI


def test_update_pod_replaces_accounting() -> None:
    cache = cache_with_nodes("n1")
    old = make_pod().name("a").node("n1").req(cpu="1").obj()
    cache.add_pod(old)
    cache.update_pod(old, make_pod().name("a").node("n1").req(cpu="300m").obj())
    info = node_info(cache, "n1")
    assert info.requested.milli_cpu == 300
    assert len(info.pods) == 1
    assert cache.pod_count() == 1


def test_remove_pod_restores_zero() -> None:
    cache = cache_with_nodes("n1")
    pod = (make_pod().name("a").node("n1").container(make_container().req(cpu="1", memory="1Gi").host_port(80))
           .pvc("data").affinity(ANTI_AFFINITY).obj())
    cache.add_pod(pod)
    cache.remove_pod(pod)
    info = node_info(cache, "n1")
    assert info.pods == {}
    assert info.requested.is_zero() and info.non_zero_requested.is_zero()
    assert info.used_ports == {} and info.pvc_ref_counts == {}
    assert info.pods_with_affinity == {} and info.pods_with_required_anti_affinity == {}
    assert cache.pod_count() == 0


def test_pod_on_unknown_node_creates_node_less_info() -> None:
    cache = Cache()
    pod = make_pod().name("a").node("later").req(cpu="1").obj()
    cache.add_pod(pod)
    info = node_info(cache, "later")
    assert info.node is None and "uid-a" in info.pods
    cache.add_node(make_node().name("later").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    assert node_info(cache, "later").requested.milli_cpu == 1000
    cache.remove_node("later")
    cache.remove_pod(pod)
    assert cache.node_count() == 0


def test_ports_and_pvc_ref_counts() -> None:
    cache = cache_with_nodes("n1")
    a = make_pod().name("a").node("n1").container(make_container().host_port(80).host_port(443)).pvc("data").obj()
    b = make_pod().name("b").node("n1").pvc("data").pvc("logs").obj()
    cache.add_pod(a)
    cache.add_pod(b)
    info = node_info(cache, "n1")
    assert info.used_ports == {"0.0.0.0": {("TCP", 80), ("TCP", 443)}}
    assert info.pvc_ref_counts == {"default/data": 2, "default/logs": 1}
    cache.remove_pod(a)
    info = node_info(cache, "n1")
    assert info.used_ports == {}
    assert info.pvc_ref_counts == {"default/data": 1, "default/logs": 1}


def test_add_of_known_pod_is_an_update_not_a_double_count() -> None:
    cache = cache_with_nodes("n1")
    cache.add_pod(make_pod().name("a").node("n1").req(cpu="1").obj())
    cache.add_pod(make_pod().name("a").node("n1").req(cpu="1").obj())
    info = node_info(cache, "n1")
    assert info.requested.milli_cpu == 1000
    assert cache.pod_count() == 1


def test_update_moving_pod_to_other_node_is_followed() -> None:
    cache = cache_with_nodes("n1", "n2")
    old = make_pod().name("a").node("n1").req(cpu="1").obj()
    cache.add_pod(old)
    cache.update_pod(old, make_pod().name("a").node("n2").req(cpu="1").obj())
    assert node_info(cache, "n1").requested.milli_cpu == 0
    assert node_info(cache, "n2").requested.milli_cpu == 1000


def test_update_of_unknown_pod_adds_it() -> None:
    cache = cache_with_nodes("n1")
    cache.update_pod(None, make_pod().name("a").node("n1").req(cpu="1").obj())
    assert node_info(cache, "n1").requested.milli_cpu == 1000


def test_remove_uses_cached_copy_even_if_event_differs() -> None:
    cache = cache_with_nodes("n1")
    cache.add_pod(make_pod().name("a").node("n1").req(cpu="1").obj())
    cache.remove_pod(make_pod().name("a").node("").req(cpu="5").obj())  # last known state without node
    assert node_info(cache, "n1").requested.milli_cpu == 0
    assert cache.pod_count() == 0


def test_remove_of_unknown_pod_is_tolerated() -> None:
    cache = cache_with_nodes("n1")
    cache.remove_pod(make_pod().name("ghost").node("n1").obj())
    assert cache.pod_count() == 0


def test_add_without_node_is_ignored() -> None:
    cache = cache_with_nodes("n1")
    cache.add_pod(make_pod().name("a").obj())
    assert cache.pod_count() == 0
    assert cache.node_count() == 1


def test_reconcile_pods_removes_vanished_non_assumed() -> None:
    cache = cache_with_nodes("n1")
    cache.add_pod(make_pod().name("keep").node("n1").req(cpu="1").obj())
    cache.add_pod(make_pod().name("gone").node("n1").req(cpu="2").obj())
    cache.assume_pod(make_pod().name("assumed").node("n1").req(cpu="4").obj())
    removed = cache.reconcile_pods({"uid-keep"})
    assert [p.name for p in removed] == ["gone"]
    assert node_info(cache, "n1").requested.milli_cpu == 5000
    assert cache.is_assumed("uid-assumed")
    assert cache.pod_count() == 2


def test_reconcile_pods_drops_ghost_node_info() -> None:
    cache = cache_with_nodes("n1")
    cache.add_pod(make_pod().name("a").node("n1").obj())
    cache.remove_node("n1")
    cache.reconcile_pods(set())
    assert cache.node_count() == 0


def test_dump_and_counts() -> None:
    cache = cache_with_nodes("n1", "n2")
    cache.add_pod(make_pod().name("b").node("n1").obj())
    cache.add_pod(make_pod().name("a").namespace("kube-system").node("n1").obj())
    cache.assume_pod(make_pod().name("c").node("n2").obj())
    assert cache.dump() == {"n1": ["default/b", "kube-system/a"], "n2": ["default/c"]}
    assert (cache.pod_count(), cache.node_count(), cache.assumed_count()) == (3, 2, 1)
    got = cache.get_pod("uid-c")
    assert got is not None and got.node_name == "n2"
    assert cache.get_pod("uid-x") is None


# --- assume / confirm / forget / expire ---------------------------------------------------------


def test_assume_accounts_pod_and_marks_it() -> None:
    cache = cache_with_nodes("n1")
    cache.assume_pod(make_pod().name("a").req(cpu="1").obj().with_node("n1"))
    assert cache.is_assumed("uid-a")
    assert node_info(cache, "n1").requested.milli_cpu == 1000
    assert cache.assumed_count() == 1


def test_double_assume_is_an_error() -> None:
    cache = cache_with_nodes("n1", "n2")
    cache.assume_pod(make_pod().name("a").node("n1").obj())
    with pytest.raises(CacheError, match="is in the cache, so can't be assumed"):
        cache.assume_pod(make_pod().name("a").node("n2").obj())
    assert node_info(cache, "n2").pods == {}


def test_assume_of_bound_pod_is_an_error() -> None:
    cache = cache_with_nodes("n1")
    cache.add_pod(make_pod().name("a").node("n1").obj())
    with pytest.raises(CacheError):
        cache.assume_pod(make_pod().name("a").node("n1").obj())


def test_assume_without_node_is_an_error() -> None:
    cache = cache_with_nodes("n1")
    with pytest.raises(CacheError, match="has no node"):
        cache.assume_pod(make_pod().name("a").obj())
    assert cache.pod_count() == 0


def test_confirm_on_same_node_replaces_assumed_copy() -> None:
    cache = cache_with_nodes("n1")
    cache.assume_pod(make_pod().name("a").node("n1").req(cpu="1").obj())
    real = make_pod().name("a").node("n1").req(cpu="1").obj()
    cache.add_pod(real)
    assert not cache.is_assumed("uid-a")
    info = node_info(cache, "n1")
    assert info.pods["uid-a"] is real
    assert info.requested.milli_cpu == 1000
    assert cache.pod_count() == 1 and cache.assumed_count() == 0


def test_confirm_on_different_node_moves_pod() -> None:
    cache = cache_with_nodes("n1", "n2")
    cache.assume_pod(make_pod().name("a").node("n1").req(cpu="1").obj())
    cache.add_pod(make_pod().name("a").node("n2").req(cpu="1").obj())
    assert not cache.is_assumed("uid-a")
    assert node_info(cache, "n1").requested.milli_cpu == 0
    assert node_info(cache, "n2").requested.milli_cpu == 1000


def test_update_event_confirms_assumed_pod() -> None:
    cache = cache_with_nodes("n1")
    cache.assume_pod(make_pod().name("a").node("n1").req(cpu="1").obj())
    cache.update_pod(make_pod().name("a").obj(), make_pod().name("a").node("n1").req(cpu="1").obj())
    assert not cache.is_assumed("uid-a")
    assert node_info(cache, "n1").requested.milli_cpu == 1000


def test_add_bound_pod_adds_confirms_or_replaces_and_returns_the_bound_copy_it_replaced() -> None:
    """The watch handler's one call for a pod with a node: add_pod's effect, and the cached copy only where that
    was a bound one (the handler then reports an update, not an add)."""
    cache = cache_with_nodes("n1", "n2")
    cache.assume_pod(make_pod().name("a").node("n1").req(cpu="1").obj())
    confirmed = make_pod().name("a").node("n1").req(cpu="1").obj()
    assert cache.add_bound_pod(confirmed) is None
    assert not cache.is_assumed("uid-a") and node_info(cache, "n1").pods["uid-a"] is confirmed
    added = make_pod().name("b").node("n2").req(cpu="500m").obj()
    assert cache.add_bound_pod(added) is None
    assert node_info(cache, "n2").requested.milli_cpu == 500
    updated = make_pod().name("b").node("n2").req(cpu="250m").obj()
    assert cache.add_bound_pod(updated) is added
    assert node_info(cache, "n2").pods["uid-b"] is updated and node_info(cache, "n2").requested.milli_cpu == 250
    assert cache.pod_count() == 2 and cache.assumed_count() == 0


def test_events_without_node_leave_assumed_pod_alone() -> None:
    cache = cache_with_nodes("n1")
    cache.assume_pod(make_pod().name("a").node("n1").req(cpu="1").obj())
    cache.update_pod(make_pod().name("a").obj(), make_pod().name("a").obj())
    cache.add_pod(make_pod().name("a").obj())
    assert cache.is_assumed("uid-a")
    assert node_info(cache, "n1").requested.milli_cpu == 1000


def test_forget_removes_assumed_pod() -> None:
    cache = cache_with_nodes("n1")
    pod = make_pod().name("a").node("n1").req(cpu="1").obj()
    cache.assume_pod(pod)
    cache.forget_pod(pod)
    assert not cache.is_assumed("uid-a")
    assert node_info(cache, "n1").requested.milli_cpu == 0
    assert cache.pod_count() == 0


def test_forget_of_non_assumed_pod_is_an_error() -> None:
    cache = cache_with_nodes("n1")
    pod = make_pod().name("a").node("n1").req(cpu="1").obj()
    cache.add_pod(pod)
    with pytest.raises(CacheError, match="is not assumed"):
        cache.forget_pod(pod)
    assert node_info(cache, "n1").requested.milli_cpu == 1000


def test_forget_with_other_node_is_an_error() -> None:
    cache = cache_with_nodes("n1", "n2")
    cache.assume_pod(make_pod().name("a").node("n1").obj())
    with pytest.raises(CacheError, match="was assumed on n2 but assigned to n1"):
        cache.forget_pod(make_pod().name("a").node("n2").obj())
    assert cache.is_assumed("uid-a")


def test_forget_of_unknown_pod_is_ignored() -> None:
    cache = cache_with_nodes("n1")
    cache.forget_pod(make_pod().name("a").node("n1").obj())
    assert cache.pod_count() == 0


def test_assumed_pod_expires_after_ttl_once_binding_finished() -> None:
    cache = cache_with_nodes("n1", ttl=30)
    pod = make_pod().name("a").node("n1").req(cpu="1").obj()
    cache.assume_pod(pod)
    assert cache.cleanup_expired_assumed(now=10_000) == []  # binding not finished: never expires
    cache.finish_binding(pod, now=100)
    assert cache.cleanup_expired_assumed(now=130) == []  # deadline 130, not after it
    assert cache.is_assumed("uid-a")
    expired = cache.cleanup_expired_assumed(now=130.5)
    assert [p.uid for p in expired] == ["uid-a"]
    assert cache.pod_count() == 0
    assert node_info(cache, "n1").requested.milli_cpu == 0


def test_ttl_zero_never_expires() -> None:
    cache = cache_with_nodes("n1", ttl=0)
    pod = make_pod().name("a").node("n1").obj()
    cache.assume_pod(pod)
    cache.finish_binding(pod, now=0)
    assert cache.cleanup_expired_assumed(now=1e12) == []
    assert cache.is_assumed("uid-a")


def test_finish_binding_uses_clock_when_now_not_given() -> None:
    t = [1000.0]
    cache = Cache(ttl=30, clock=lambda: t[0])
    cache.add_node(make_node().name("n1").allocatable(cpu="4", memory="8Gi", pods="110").obj())
    pod = make_pod().name("a").node("n1").obj()
    cache.assume_pod(pod)
    cache.finish_binding(pod)
    t[0] = 1029.0
    assert cache.cleanup_expired_assumed() == []
    t[0] = 1031.0
    assert len(cache.cleanup_expired_assumed()) == 1


def test_confirmed_pod_does_not_expire() -> None:
    cache = cache_with_nodes("n1", ttl=30)
    pod = make_pod().name("a").node("n1").req(cpu="1").obj()
    cache.assume_pod(pod)
    cache.finish_binding(pod, now=0)
    cache.add_pod(make_pod().name("a").node("n1").req(cpu="1").obj())
    assert cache.cleanup_expired_assumed(now=1000) == []
    assert node_info(cache, "n1").requested.milli_cpu == 1000


def test_expired_pod_added_later_is_accounted_again() -> None:
    cache = cache_with_nodes("n1", ttl=1)
    pod = make_pod().name("a").node("n1").req(cpu="1").obj()
    cache.assume_pod(pod)
    cache.finish_binding(pod, now=0)
    cache.cleanup_expired_assumed(now=5)
    cache.add_pod(make_pod().name("a").node("n1").req(cpu="1").obj())
    assert node_info(cache, "n1").requested.milli_cpu == 1000
    assert not cache.is_assumed("uid-a")


# --- a status update or a confirmation on the same node (NodeInfo.replace_pod) ------------------


def _node_state(info: NodeInfo) -> tuple[object, ...]:
    """Everything remove-then-add can change on a node, orders included (not the generation's value)."""
    r, nz = info.requested, info.non_zero_requested
    return (list(info.pods), list(info.pods_with_affinity), list(info.pods_with_required_anti_affinity),
            {ip: sorted(p) for ip, p in info.used_ports.items()},
            list(info.used_ports), (r.milli_cpu, r.memory, r.ephemeral_storage, dict(r.scalar)),
            (nz.milli_cpu, nz.memory), list(info.pvc_ref_counts.items()))


# What each parametrized pod carries besides its requests.
EXTRAS: dict[str, Callable[[PodWrapper, ContainerWrapper], object]] = {
    "": lambda w, c: None, "host_ports": lambda w, c: c.host_port(8080), "pvcs": lambda w, c: w.pvc("c"),
    "affinity": lambda w, c: w.affinity(ANTI_AFFINITY)}


@pytest.mark.parametrize("how", ["status update", "confirmation"])
@pytest.mark.parametrize("extra", ["", "host_ports", "pvcs", "affinity"])
def test_a_same_node_update_leaves_the_node_as_remove_then_add_would(
        how: str, extra: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The view the watch builds from the previous one shares its requests: the cache then swaps the pod in
    place of the long way, and the node ends exactly as the long way leaves it, with a newer generation."""
    from scheduler.model.pod import pod_from_api

    def extra_pod(name: str, cpu: str, memory: str) -> Pod:
        """A pod on n1 with the parameter's host port, claim or affinity."""
        w, c = make_pod().name(name).node("n1"), make_container().req(cpu=cpu, memory=memory)
        EXTRAS[extra](w, c)
        return w.container(c).obj()

    def run(long_way: bool) -> tuple[tuple[object, ...], list[str], bool]:
        cache = cache_with_nodes("n1")
        first = extra_pod("a", "250m", "64Mi")
        cache.add_pod(extra_pod("b", "1", "1Gi"))
        if how == "confirmation":
            cache.assume_pod(first)
        else:
            cache.add_pod(first)
        cache.add_pod(make_pod().name("c").uid("uid-c").node("n1").req(cpu="1", memory="1Gi").obj())
        generation = node_info(cache, "n1").generation
        status = {**first.raw.get("status", {}), "phase": "Running"}
        new = pod_from_api({**first.raw, "status": status}, first)
        assert new.requests is first.requests
        swapped: list[bool] = []
        replace = NodeInfo.replace_pod
        with monkeypatch.context() as patch:
            patch.setattr(NodeInfo, "replace_pod",
                          lambda self, pod: False if long_way else swapped.append(replace(self, pod)) or swapped[-1])
            if how == "confirmation":
                cache.add_pod(new)
                assert not cache.is_assumed(new.uid)
            else:
                cache.update_pod(first, new)
        info = node_info(cache, "n1")
        assert cache.get_pod(new.uid) is new and info.pods[new.uid] is new
        with_affinity = info.pods_with_affinity
        assert all(p.uid not in with_affinity or with_affinity[p.uid] is p for p in info.pods.values())
        assert long_way or swapped == [extra in ("", "affinity")]  # ports, PVCs: the long way
        return _node_state(info), list(cache._pods), info.generation > generation

    assert run(long_way=False) == run(long_way=True)
    assert run(long_way=False)[2]


def test_add_pod_without_a_node_is_ignored_unless_a_bound_copy_lost_its_node() -> None:
    """add_pod of a node-less pod: nothing for an unknown or assumed pod; a bound copy is removed (it lost its node)."""
    cache = cache_with_nodes("n1")
    cache.add_pod(make_pod().name("stray").obj())
    assert cache.get_pod("uid-stray") is None
    cache.assume_pod(make_pod().name("a").node("n1").req(cpu="1").obj())
    cache.add_pod(make_pod().name("a").obj())
    assert cache.is_assumed("uid-a") and node_info(cache, "n1").requested.milli_cpu == 1000
    cache.add_pod(make_pod().name("b").node("n1").req(cpu="500m").obj())
    cache.add_pod(make_pod().name("b").obj())
    assert cache.get_pod("uid-b") is None and node_info(cache, "n1").requested.milli_cpu == 1000
