"""Keyed cluster events: the queue asks a claim event's hints only for the pods filed under the claim
(DynamicResources' claim index), and must move exactly the pods a walk over every unschedulable pod
(upstream's) moves. The real DynamicResources plugin gives the PreEnqueue gate, the hints and the keys."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from scheduler.framework.types import (
    NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from scheduler.model.node import node_from_api
from scheduler.model.pod import Pod
from scheduler.plugins.dynamic_resources import DynamicResources
from scheduler.queue import PriorityQueue, QueuedPodInfo, QueueProfile
from scheduler.testing import PodWrapper, make_pod
from tests.queue.qhelpers import (
    GATES_EVENT,
    FakeClock,
    GatePlugin,
    fail,
    gates_hint,
    pop_now,
    priority_less,
    priority_rank,
)

DRA = "DynamicResources"
FIT = "NodeResourcesFit"
CLAIM_ADD = ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD, "ResourceClaimAdd")
CLAIM_UPDATE = ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.UPDATE_OTHER, "ResourceClaimUpdate")
CLAIM_DELETE = ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.DELETE, "ResourceClaimDelete")
NODE = node_from_api({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}})


class Handle:
    """All the plugin's constructor and hints need: a manager of its own."""

    def shared_plugin_state(self, key: str, factory: Callable[[], Any]) -> Any:
        return factory()


class WalkAll(PriorityQueue):
    """The reference: every unschedulable pod is a candidate for every event, as upstream walks them."""

    def _candidates(self, event: ClusterEvent, old: Any, new: Any) -> list[QueuedPodInfo]:
        return list(self._unschedulable)


def claim(name: str, uid: str, namespace: str = "default", allocated: bool = False, rv: int = 1,
          owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid, "resourceVersion": str(rv)}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": f"uid-{owner}",
                                    "controller": True}]
    status: dict[str, Any] = {}
    if allocated:
        status["allocation"] = {"devices": {"results": [
            {"request": "req", "driver": "d", "pool": "n1", "device": f"dev-{name}"}]}}
    return {"metadata": meta, "spec": {"devices": {"requests": [
        {"name": "req", "exactly": {"deviceClassName": "gpu"}}]}}, "status": status}


def claiming_pod(w: PodWrapper, claims: Sequence[str], template: bool, generated: str | None, gated: bool) -> Pod:
    """The random walk's pod: naming ``claims`` directly, or (``template``) one claim from a template, named
    in its status once ``generated`` is given; ``gated``: with a scheduling gate."""
    for i, c in enumerate(claims):
        w.resource_claim(f"r{i}", c)
    if template:
        w.resource_claim("t", template="tmpl")
        if generated is not None:
            w.resource_claim_status("t", generated)
    if gated:
        w.scheduling_gates("wait")
    return w.obj()


class World:
    """The plugin, its claims and queues fed the same events (as the event handlers feed them)."""

    def __init__(self, *queue_types: type[PriorityQueue], fit_claim_hint: bool = False) -> None:
        self.plugin = DynamicResources({}, Handle())  # type: ignore[arg-type]  # a manager is all it uses
        self.clock = FakeClock()
        self.hint_calls: list[str] = []
        hints: dict[str, list[ClusterEventWithHint]] = {
            DRA: self.plugin.events_to_register(), FIT: [ClusterEventWithHint(NODE_ADD)],
            "SchedulingGates": [ClusterEventWithHint(GATES_EVENT, gates_hint)]}
        if fit_claim_hint:  # a plugin with an unkeyed claim hint: its rejected pods are always asked
            hints[FIT].append(ClusterEventWithHint(CLAIM_UPDATE))
        profile = QueueProfile(pre_enqueue_plugins=[GatePlugin(), self.plugin], hints=hints)
        self.queues = [t(priority_less, {"default-scheduler": profile}, clock=self.clock, rank=priority_rank,
                         hint_metrics=self._hint_ran) for t in queue_types]
        self.claims: dict[tuple[str, str], dict[str, Any]] = {}

    def _hint_ran(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        self.hint_calls.append(plugin)

    def put_claim(self, obj: dict[str, Any]) -> None:
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        old = self.claims.get(key)
        self.claims[key] = obj
        self.plugin.on_object_event("ResourceClaim", False, obj)
        for q in self.queues:
            q.move_all_to_active_or_backoff(CLAIM_ADD if old is None else CLAIM_UPDATE, old, obj)

    def delete_claim(self, namespace: str, name: str) -> None:
        old = self.claims.pop((namespace, name))
        self.plugin.on_object_event("ResourceClaim", True, old)
        for q in self.queues:
            q.move_all_to_active_or_backoff(CLAIM_DELETE, old, None)

    def where(self, p: Pod) -> list[str | None]:
        return [q.queue_of(p) for q in self.queues]


def rejected(w: World, p: Pod, *plugins: str) -> None:
    """``p`` added, popped and rejected by ``plugins`` in every queue (its claims must exist)."""
    for q in w.queues:
        q.add(p)
        assert fail(q, pop_now(q), *plugins) is None
        assert q.queue_of(p) == "unschedulable"


def test_a_claim_event_asks_only_the_pods_naming_the_claim() -> None:
    w = World(PriorityQueue)
    (q,) = w.queues
    for i in range(50):  # gated: their claims do not exist yet
        q.add(make_pod().name(f"g{i}").resource_claim("r0", f"c{i}").obj())
    w.put_claim(claim("other", "u-o"))
    for i in range(50):
        w.put_claim(claim(f"c{i + 100}", f"u{i + 100}"))  # 50 claims nobody names
    assert w.hint_calls == []
    w.put_claim(claim("c7", "u7"))
    assert w.hint_calls == [DRA]  # one pod asked, not 50
    assert q.queue_of(make_pod().name("g7").obj()) == "active" and q.lengths()["gated"] == 49


def test_a_template_pod_is_filed_under_its_claim_once_its_status_names_it() -> None:
    w = World(PriorityQueue, WalkAll)
    before = make_pod().name("p").resource_claim("t", template="tmpl").obj()
    for q in w.queues:
        q.add(before)
    w.put_claim(claim("p-t", "u1", owner="p"))  # the controller creates the claim first ...
    assert w.where(before) == ["gated", "gated"]
    after = make_pod().name("p").resource_claim("t", template="tmpl").resource_claim_status("t", "p-t").obj()
    for q in w.queues:
        q.update(before, after)  # ... then names it in the pod's status: the pod's own event moves it
    assert w.where(after) == ["active", "active"]


def test_a_template_pod_rejected_at_filter_is_requeued_by_its_claims_status_change() -> None:
    w = World(PriorityQueue, WalkAll)
    w.put_claim(claim("p-t", "u1", owner="p"))
    p = make_pod().name("p").resource_claim("t", template="tmpl").resource_claim_status("t", "p-t").obj()
    rejected(w, p, DRA)
    w.clock.advance(20)  # past its backoff
    w.put_claim(claim("x", "ux", allocated=True))
    assert w.where(p) == ["unschedulable", "unschedulable"]  # someone else's claim
    w.put_claim(claim("p-t", "u1", owner="p", allocated=True, rv=2))
    assert w.where(p) == ["active", "active"]


def test_a_deleted_pod_leaves_the_index() -> None:
    w = World(PriorityQueue)
    (q,) = w.queues
    q.add(make_pod().name("a").resource_claim("r0", "c1").obj())
    q.delete(make_pod().name("a").resource_claim("r0", "c1").obj())
    w.put_claim(claim("c1", "u1"))
    assert w.hint_calls == [] and q.lengths() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_a_recreated_claim_requeues_the_pod_naming_it() -> None:
    w = World(PriorityQueue, WalkAll)
    w.put_claim(claim("c1", "u1"))
    p = make_pod().name("a").resource_claim("r0", "c1").obj()
    rejected(w, p, DRA)
    w.clock.advance(20)
    w.delete_claim("default", "c1")  # unallocated: helps nobody
    assert w.where(p) == ["unschedulable", "unschedulable"]
    w.put_claim(claim("c1", "u2"))  # the same name, a new object
    assert w.where(p) == ["active", "active"]


def test_a_deallocation_asks_every_pod() -> None:
    w = World(PriorityQueue, WalkAll)
    w.put_claim(claim("c1", "u1"))
    w.put_claim(claim("busy", "ub", allocated=True))
    p = make_pod().name("a").resource_claim("r0", "c1").obj()
    rejected(w, p, DRA)
    w.clock.advance(20)
    w.put_claim(claim("busy", "ub", rv=2))  # its device freed
    assert w.where(p) == ["active", "active"]


def test_an_unkeyed_claim_hint_of_another_rejector_still_asks_the_pod() -> None:
    w = World(PriorityQueue, WalkAll, fit_claim_hint=True)
    w.put_claim(claim("c1", "u1"))
    w.put_claim(claim("other", "uo"))
    p = make_pod().name("a").resource_claim("r0", "c1").obj()
    rejected(w, p, DRA, FIT)
    w.clock.advance(20)
    w.put_claim(claim("other", "uo", rv=2))  # not p's claim, but Fit's hint (none: Queue) is reached
    assert w.where(p) == ["active", "active"]


def test_reloaded_profiles_refile_the_pods() -> None:
    w = World(PriorityQueue)
    (q,) = w.queues
    q.add(make_pod().name("a").resource_claim("r0", "c1").obj())
    fresh = DynamicResources({}, Handle())  # type: ignore[arg-type]
    fresh.manager = w.plugin.manager
    q.set_profiles({"default-scheduler": QueueProfile(pre_enqueue_plugins=[fresh],
                                                      hints={DRA: fresh.events_to_register()})}, 1, 10)
    w.put_claim(claim("c1", "u1"))
    assert q.queue_of(make_pod().name("a").obj()) == "active"


@pytest.mark.parametrize("seed", range(12))
def test_random_events_move_the_same_pods_as_a_walk_over_all(seed: int) -> None:
    """Random pods (direct and template claims, two namespaces, scheduling gates), claim adds, updates,
    (de)allocations, deletions and re-creations, pod updates (a claim named in the status, the gate
    lifted), pops with random rejectors, node events, flushes, activations and deletions: after every
    step each pod is in the same queue as in the reference."""
    rng = random.Random(seed)
    w = World(PriorityQueue, WalkAll, fit_claim_hint=seed % 3 == 0)
    names = [f"c{i}" for i in range(6)]
    namespaces = ["default", "other"]
    pods: dict[str, Pod] = {}
    uid = 0
    for _step in range(300):
        op = rng.random()
        if op < 0.15 and len(pods) < 25:
            n = f"p{len(pods)}-{rng.randrange(1000)}"
            ns = rng.choice(namespaces)
            p = claiming_pod(make_pod().name(n).namespace(ns), rng.sample(names, rng.randrange(0, 3)),
                             rng.random() < 0.4, None, rng.random() < 0.3)
            pods[p.key] = p
            for q in w.queues:
                q.add(p)
        elif op < 0.40:
            ns, name = rng.choice(namespaces), rng.choice(names + [f"{p.name}-t" for p in pods.values()])
            old = w.claims.get((ns, name))
            uid += 1
            obj_uid = old["metadata"]["uid"] if old is not None and rng.random() < 0.8 else f"u{uid}"
            owner = name[:-2] if name.endswith("-t") else None
            w.put_claim(claim(name, obj_uid, ns, allocated=rng.random() < 0.4, rv=uid, owner=owner))
        elif op < 0.48 and w.claims:
            w.delete_claim(*rng.choice(sorted(w.claims)))
        elif op < 0.60 and pods:
            old_pod = rng.choice(sorted(pods.values(), key=lambda p: p.key))
            refs = old_pod.raw["spec"].get("resourceClaims", [])
            template = any("resourceClaimTemplateName" in r for r in refs)
            named = "status" in old_pod.raw
            gated = bool(old_pod.scheduling_gates)
            if (template and not named) or gated:  # the controller names its claim, or the gate is lifted
                lift = gated and (not template or named or rng.random() < 0.5)
                new_pod = claiming_pod(make_pod().name(old_pod.name).namespace(old_pod.namespace),
                                       [r["resourceClaimName"] for r in refs if "resourceClaimName" in r], template,
                                       f"{old_pod.name}-t" if named or not lift else None, gated and not lift)
                pods[new_pod.key] = new_pod
                for q in w.queues:
                    q.update(old_pod, new_pod)
        elif op < 0.75:
            popped = [q.pop(timeout=0) for q in w.queues]
            keys = {None if x is None else x.pod.key for x in popped}
            assert len(keys) == 1, (seed, _step, keys)
            rejectors = rng.choice([(DRA,), (FIT,), (DRA, FIT), ()])
            for q, qpi in zip(w.queues, popped, strict=True):
                if qpi is not None:
                    fail(q, qpi, *rejectors)
        elif op < 0.82:
            for q in w.queues:
                q.node_added(NODE)
        elif op < 0.88:
            w.clock.advance(rng.choice([0.5, 3, 40, 400]))
            for q in w.queues:
                q.flush_backoff_completed()
                q.flush_unschedulable_pods_leftover()
        elif op < 0.94 and pods:
            p = rng.choice(sorted(pods.values(), key=lambda p: p.key))
            for q in w.queues:
                q.activate([p])
        elif pods:
            p = pods.pop(rng.choice(sorted(pods)))
            for q in w.queues:
                q.delete(p)
        for p in pods.values():
            a, b = w.where(p)
            assert a == b, (seed, _step, p.key, a, b)
        assert w.queues[0].lengths() == w.queues[1].lengths()
        assert_filed_as_classified(w.queues[0])


def assert_filed_as_classified(q: PriorityQueue) -> None:
    """Every unschedulable pod is filed where its present state puts it (no stale group or key)."""
    for qpi in q._unschedulable:
        filed = q._unschedulable.classification(qpi.pod.key)
        group, entries = q._classify(qpi)
        assert filed is not None and (filed[0], set(filed[1])) == (group, set(entries)), qpi.pod.key
