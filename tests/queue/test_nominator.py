from __future__ import annotations

import threading

from scheduler.queue import Nominator
from scheduler.testing import make_pod


def names(pods: list) -> list[str]:
    return [p.name for p in pods]


def test_add_and_list_in_nomination_order() -> None:
    n = Nominator()
    n.add_nominated_pod(make_pod().name("a").obj(), "node1")
    n.add_nominated_pod(make_pod().name("b").obj(), "node1")
    n.add_nominated_pod(make_pod().name("c").obj(), "node2")
    assert names(n.nominated_pods_for_node("node1")) == ["a", "b"]
    assert names(n.nominated_pods_for_node("node2")) == ["c"]
    assert n.nominated_pods_for_node("node3") == []


def test_add_replaces_earlier_nomination() -> None:
    n = Nominator()
    pod = make_pod().name("a").obj()
    n.add_nominated_pod(pod, "node1")
    n.add_nominated_pod(pod, "node2")
    assert n.nominated_pods_for_node("node1") == []
    assert names(n.nominated_pods_for_node("node2")) == ["a"]
    assert n.nominated_node_name(pod) == "node2"


def test_none_node_uses_pod_status_and_empty_clears() -> None:
    n = Nominator()
    pod = make_pod().name("a").nominated_node_name("node1").obj()
    n.add_nominated_pod(pod)
    assert names(n.nominated_pods_for_node("node1")) == ["a"]
    n.add_nominated_pod(pod, "")
    assert n.nominated_pods_for_node("node1") == []
    assert n.nominated_node_name(pod) is None


def test_delete_if_exists() -> None:
    n = Nominator()
    a, b = make_pod().name("a").obj(), make_pod().name("b").obj()
    n.add_nominated_pod(a, "node1")
    n.add_nominated_pod(b, "node1")
    n.delete_nominated_pod_if_exists(a)
    n.delete_nominated_pod_if_exists(make_pod().name("never-added").obj())
    assert names(n.nominated_pods_for_node("node1")) == ["b"]


def test_an_add_without_a_nomination_clears_an_earlier_one_and_records_nothing_else() -> None:
    """The lock-free return of an add with nothing to record is taken only where there is nothing to clear."""
    n = Nominator()
    pod = make_pod().name("a").obj()
    n.add_nominated_pod(pod)
    assert n.nominated_node_name(pod) is None and n.nodes_with_nominated_pods() == set()
    n.add_nominated_pod(pod, "node1")
    n.add_nominated_pod(pod)  # the pod's own status names no node: the in-memory nomination is cleared
    assert n.nominated_node_name(pod) is None and n.nominated_pods_for_node("node1") == []


def test_update_keeps_in_memory_nomination_when_objects_have_none() -> None:
    n = Nominator()
    old = make_pod().name("a").resource_version("1").obj()
    n.add_nominated_pod(old, "node1")  # PostFilter, before the API object caught up
    new = make_pod().name("a").resource_version("2").labels({"x": "y"}).obj()
    n.update_nominated_pod(old, new)
    pods = n.nominated_pods_for_node("node1")
    assert pods == [new]


def test_update_follows_new_nominated_node_name() -> None:
    n = Nominator()
    old = make_pod().name("a").nominated_node_name("node1").obj()
    n.add_nominated_pod(old)
    n.update_nominated_pod(old, make_pod().name("a").nominated_node_name("node2").obj())
    assert n.nominated_pods_for_node("node1") == []
    assert names(n.nominated_pods_for_node("node2")) == ["a"]


def test_update_removing_nominated_node_name_clears() -> None:
    n = Nominator()
    old = make_pod().name("a").nominated_node_name("node1").obj()
    n.add_nominated_pod(old)
    n.update_nominated_pod(old, make_pod().name("a").obj())
    assert n.nominated_pods_for_node("node1") == []


def test_bound_pod_is_not_nominated() -> None:
    n = Nominator(is_bound=lambda pod: pod.name == "bound")
    n.add_nominated_pod(make_pod().name("bound").obj(), "node1")
    n.add_nominated_pod(make_pod().name("free").obj(), "node1")
    assert names(n.nominated_pods_for_node("node1")) == ["free"]


def test_concurrent_adds_are_all_recorded() -> None:
    n = Nominator()

    def worker(i: int) -> None:
        for j in range(50):
            n.add_nominated_pod(make_pod().name(f"p{i}-{j}").obj(), "node1")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(n.nominated_pods_for_node("node1")) == 200
