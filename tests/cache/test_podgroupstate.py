"""The cache's pod-group states and the snapshot's copy: members split into unscheduled, assumed and assigned; the
pod-group cycle's assume and forget on the snapshot leave the cache alone and undo exactly."""

from __future__ import annotations

import pytest

from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.model.workload import parse_pod_group
from scheduler.testing import make_node, make_pod


def _cache() -> Cache:
    c = Cache()
    c.generic_workload = True
    c.add_node(make_node().name("n1").allocatable(cpu="4", pods="10").obj())
    spec = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    c.set_pod_group(parse_pod_group({"metadata": {"name": "g"}, "spec": spec}))
    return c


def test_member_states_follow_events_and_assume() -> None:
    c = _cache()
    a = make_pod().name("a").uid("ua").pod_group("g").req(cpu="1").obj()
    b = make_pod().name("b").uid("ub").pod_group("g").req(cpu="1").obj()
    c.pod_group_member_seen(a)
    c.pod_group_member_seen(b)
    st = c.pod_group_states().get("default", "g")
    assert (st.all_pods_count(), sorted(st.unscheduled_pods()), st.scheduled_pods_count()) == (2, ["a", "b"], 0)
    c.assume_pod(a.with_node("n1"))
    assert (set(st.assumed_pods()), sorted(st.unscheduled_pods())) == ({"ua"}, ["b"])
    c.pod_group_member_seen(a.with_node("n1"))  # the binding's watch event
    assert (set(st.assigned_pods()), set(st.assumed_pods())) == ({"ua"}, set())
    c.remove_pod_group_member("default", "g", "ub")
    assert st.all_pods_count() == 1
    assert c.pod_groups().get("default", "g").policy.min_count == 2


def test_snapshot_assume_and_forget_leave_the_cache_alone() -> None:
    c = _cache()
    a = make_pod().name("a").uid("ua").pod_group("g").req(cpu="3").obj()
    c.pod_group_member_seen(a)
    snap = Snapshot()
    c.update_snapshot(snap)
    info = snap.get("n1")
    assert info is not None
    before = (info.requested.milli_cpu, info.generation)
    snap.assume_pod(a.with_node("n1"))
    assert info.requested.milli_cpu == before[0] + 3000 and info.generation != before[1]
    assert snap.pod_group_states().get("default", "g").scheduled_pods_count() == 1
    assert c.pod_group_states().get("default", "g").scheduled_pods_count() == 0
    assert c.get_node_info("n1").requested.milli_cpu == before[0]  # type: ignore[union-attr]
    snap.forget_pod(a.with_node("n1"))
    assert info.requested.milli_cpu == before[0]
    assert snap.pod_group_states().get("default", "g").scheduled_pods_count() == 0


def test_a_cycle_left_assumed_is_forgotten_at_the_next_update() -> None:
    c = _cache()
    a = make_pod().name("a").uid("ua").pod_group("g").req(cpu="1").obj()
    c.pod_group_member_seen(a)
    snap = Snapshot()
    c.update_snapshot(snap)
    snap.assume_pod(a.with_node("n1"))
    c.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 0  # type: ignore[union-attr]


def test_a_mutation_session_is_undone_whole() -> None:
    c = _cache()
    victim = make_pod().name("v").uid("uv").pod_group("g").req(cpu="2").node("n1").obj()
    c.add_bound_pod(victim)
    c.pod_group_member_seen(victim)
    snap = Snapshot()
    c.update_snapshot(snap)
    info = snap.get("n1")
    assert info is not None and info.requested.milli_cpu == 2000
    snap.start_mutations()
    with pytest.raises(RuntimeError, match="cannot stack mutations"):
        snap.start_mutations()
    snap.remove_pod(victim, "n1")
    snap.add_pod(make_pod().name("x").uid("ux").req(cpu="1").obj(), "n1")
    assert info.requested.milli_cpu == 1000 and "uv" not in info.pods
    assert snap.pod_group_states().get("default", "g").all_pods_count() == 0
    snap.end_mutations()
    assert info.requested.milli_cpu == 2000 and set(info.pods) == {"uv"}
    assert snap.pod_group_states().get("default", "g").all_pods_count() == 1
    with pytest.raises(RuntimeError, match="no mutation session started"):
        snap.end_mutations()
