from typing import Any

from scheduler.cache.objects import ObjectStore


def obj(name: str, ns: str | None = "default", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns is not None:
        meta["namespace"] = ns
    return {"metadata": meta, **extra}


def test_upsert_get_and_replace() -> None:
    store = ObjectStore()
    assert store.upsert("Service", obj("s1", spec={"v": 1})) is None
    old = store.upsert("Service", obj("s1", spec={"v": 2}))
    assert old is not None and old["spec"] == {"v": 1}
    got = store.get("Service", "default", "s1")
    assert got is not None and got["spec"] == {"v": 2}
    assert store.count("Service") == 1


def test_list_by_namespace_and_all_namespaces() -> None:
    store = ObjectStore()
    store.upsert("Service", obj("a", "ns1"))
    store.upsert("Service", obj("b", "ns1"))
    store.upsert("Service", obj("c", "ns2"))
    store.upsert("ReplicaSet", obj("r", "ns1"))
    assert sorted(o["metadata"]["name"] for o in store.list("Service", "ns1")) == ["a", "b"]
    assert sorted(o["metadata"]["name"] for o in store.list("Service")) == ["a", "b", "c"]
    assert list(store.list("Service", "ns3")) == []
    assert list(store.list("StatefulSet")) == []


def test_cluster_scoped_objects_use_empty_namespace() -> None:
    store = ObjectStore()
    store.upsert("PersistentVolume", obj("pv1", None))
    assert store.get("PersistentVolume", "", "pv1") is not None
    assert [o["metadata"]["name"] for o in store.list("PersistentVolume", "")] == ["pv1"]


def test_delete_returns_stored_object() -> None:
    store = ObjectStore()
    store.upsert("PodDisruptionBudget", obj("p"))
    removed = store.delete("PodDisruptionBudget", obj("p"))
    assert removed is not None
    assert store.get("PodDisruptionBudget", "default", "p") is None
    assert store.delete("PodDisruptionBudget", obj("p")) is None
    assert store.count("PodDisruptionBudget") == 0


def test_reconcile_removes_only_vanished_objects_of_that_kind() -> None:
    store = ObjectStore()
    store.upsert("Service", obj("keep", "ns1"))
    store.upsert("Service", obj("gone", "ns2"))
    store.upsert("ReplicaSet", obj("gone", "ns2"))
    removed = store.reconcile("Service", {("ns1", "keep")})
    assert [o["metadata"]["name"] for o in removed] == ["gone"]
    assert store.get("Service", "ns2", "gone") is None
    assert store.get("Service", "ns1", "keep") is not None
    assert store.get("ReplicaSet", "ns2", "gone") is not None


def test_list_result_is_a_copy() -> None:
    store = ObjectStore()
    store.upsert("Service", obj("a"))
    listed = store.list("Service", "default")
    store.upsert("Service", obj("b"))
    assert len(list(listed)) == 1


def test_generation_moves_with_every_change() -> None:
    """Readers remember what they derived from the objects by this counter (PodTopologySpread's default
    selectors): every upsert, delete and relist reconciliation must move it."""
    store = ObjectStore()
    seen = [store.generation]
    store.upsert("Service", obj("s1"))
    seen.append(store.generation)
    store.upsert("Service", obj("s1", spec={"v": 2}))
    seen.append(store.generation)
    store.delete("Service", obj("s1"))
    seen.append(store.generation)
    store.upsert("Service", obj("s2"))
    store.reconcile("Service", set())
    seen.append(store.generation)
    assert store.get("Service", "default", "s2") is None
    assert seen == sorted(set(seen)), seen
