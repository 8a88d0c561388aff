"""DefaultPreemption and the preemption evaluator, on hand-made clusters run through the real scheduler
(in-memory: victims are removed from the cache as their deletion event would remove them)."""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED, MODIFIED
from scheduler.framework.features import Features, parse_feature_gates
from scheduler.framework.interface import CycleState, NodeToStatus
from scheduler.framework.preemption import (
    Victims,
    aggregate_errors,
    filter_pods_with_pdb_violation,
    nodes_for_status_code,
    pdb_from_api,
    pick_one_node_for_preemption,
)
from scheduler.framework.runtime import WaitingPod
from scheduler.framework.status import Code, Status, unresolvable, unschedulable
from scheduler.framework.types import ActionType, EventResource, QueueingHint
from scheduler.kube.client import api_error
from scheduler.model.pod import Pod, pod_from_api
from scheduler.plugins.default_preemption import DefaultPreemption
from scheduler.scheduler import Scheduler, disruption_target_condition
from scheduler.testing import make_label_selector
from scheduler.whatif.offline import OfflineWriter, RecordingBinder, RecordingEventSink
from scheduler.whatif.simulate import OutcomeRecorder
from tests.builders import api_pod, sched_node, sched_pod

SCHED = "py-scheduler"
# The plugins these tests need (upstream order); the default profile is tested separately.
PLUGINS = ["PrioritySort", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit",
           "InterPodAffinity", "DefaultPreemption", "DefaultBinder"]


def pdb(name: str, selector: Mapping[str, Any] | None, allowed: int, disrupted: Sequence[str] = (),
        namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": selector} if selector is not None else {},
            "status": {"disruptionsAllowed": allowed, "disruptedPods": {p: "2026-01-01T00:00:00Z" for p in disrupted}}}


class Writer:
    """An APIWriter recording pod writes; ``fail`` maps a method name to the exception it raises."""

    def __init__(self, fail: Mapping[str, BaseException] | None = None) -> None:
        self.calls: list[tuple[str, str, str, Any]] = []
        self.fail = dict(fail or {})

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.calls.append(("patch", namespace, name, patch))
        if "patch" in self.fail:
            raise self.fail["patch"]

    def delete_pod(self, namespace: str, name: str) -> None:
        self.calls.append(("delete", namespace, name, None))
        if "delete" in self.fail:
            raise self.fail["delete"]


class Cluster:
    """A scheduler with one profile over an in-memory cluster."""

    def __init__(self, plugins: Sequence[str] | None = PLUGINS, seed: int = 1, writer: Any = None,
                 args: Mapping[str, Any] | None = None, async_preemption: bool = False) -> None:
        profile: dict[str, Any] = {"schedulerName": SCHED}
        if plugins is not None:
            profile["plugins"] = {"multiPoint": {"enabled": [{"name": n} for n in plugins],
                                                 "disabled": [{"name": "*"}]}}
        if args is not None:
            profile["pluginConfig"] = [{"name": "DefaultPreemption", "args": dict(args)}]
        cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": [profile]})
        self.sink = RecordingEventSink()
        self.binder = RecordingBinder()
        self.observer = OutcomeRecorder()
        offline = OfflineWriter() if writer is None else None  # victims go away as their deletion would
        self.s = Scheduler(cfg, build_registry(cfg), self.binder, self.sink, None, synchronous_binding=True,
                           rng=random.Random(seed), tie_break="name", writer=writer or offline,
                           observer=self.observer, features=Features(enable_async_preemption=async_preemption))
        if offline is not None:
            offline.connect(self.s)
        elif isinstance(writer, OfflineWriter):
            writer.connect(self.s)

    def add(self, *objs: dict[str, Any]) -> Cluster:
        for o in objs:
            if o["kind"] == "Node":
                self.s.on_node_event(ADDED, o)
            elif o["kind"] == "Pod":
                self.s.on_pod_event(ADDED, o)
            else:
                self.s.on_object_event(o["kind"], ADDED, o)
        return self

    def attempt(self, obj: dict[str, Any]) -> tuple[str, str]:
        """Add a pending pod, run one cycle for it; returns (reason, message) of its PodScheduled condition."""
        self.s.on_pod_event(ADDED, obj)
        assert self.s.schedule_one(timeout=0)
        return self.sink.conditions[f"default/{obj['metadata']['name']}"]

    def retry(self, name: str) -> None:
        """Bring a pending pod back from the unschedulable/backoff queue and run a cycle."""
        self.s.queue.activate([self.s._pending[f"uid-{name}"]])
        assert self.s.schedule_one(timeout=0)

    def on_node(self, name: str) -> set[str]:
        """Names of the pods the cache has on a node."""
        self.s.cache.update_snapshot(self.s.snapshot)
        ni = self.s.snapshot.get(name)
        assert ni is not None
        return {p.name for p in ni.pods.values()}

    def preempted(self) -> list[tuple[str, str]]:
        """(victim key, note) of the Preempted events, in order."""
        return [(k, note) for k, _, reason, note in self.sink.events if reason == "Preempted"]


# --- end to end through the scheduler ----------------------------------------------------------


def test_high_priority_pod_preempts_the_least_important_victim_and_binds_on_its_nominated_node() -> None:
    c = Cluster().add(
        sched_node("n1", "2").api(), sched_node("n2", "2").api(),
        api_pod("low-a", cpu="1500m", node_name="n1", priority=10),
        api_pod("low-b", cpu="1500m", node_name="n2", priority=5),
    )
    reason, message = c.attempt(api_pod("high", priority=100))
    # Preemption succeeded: v1.37's success message ends the FitError's.
    assert (reason, message) == ("Unschedulable", "0/2 nodes are available: 2 Insufficient cpu. preemption: "
                                 "found a potential placement for pod on node n2, preempting 1 victims")
    assert c.sink.nominated["default/high"] == "n2"
    assert c.s.queue.nominator.nominated_node_name(sched_pod("high", cpu="1", priority=0).obj()) == "n2"
    assert c.on_node("n2") == set() and c.on_node("n1") == {"low-a"}
    assert c.preempted() == [("default/low-b", "Preempted by pod uid-high on node n2")]
    assert c.observer.preemptions == [("default/low-b", "default/high", "n2")]
    # The status update carrying nominatedNodeName comes back; the next attempt uses that node.
    c.s.on_pod_event(MODIFIED, sched_pod("high", cpu="1", rv="2", priority=100).nominated_node_name("n2").api())
    c.retry("high")
    assert c.binder.bindings == [("default/high", "n2")]


def test_default_profile_message_when_preemption_cannot_help() -> None:
    """All default PostFilter plugins run: DynamicResources' verdict comes first, then preemption's."""
    c = Cluster(plugins=None).add(sched_node("n1", "2").api(), sched_node("n2", "2").api(),
                                  api_pod("big-a", cpu="2", node_name="n1", priority=50),
                                  api_pod("big-b", cpu="2", node_name="n2", priority=50))
    _, message = c.attempt(api_pod("p", priority=10))
    assert message == ("0/2 nodes are available: 2 Insufficient cpu. preemption: "
                       "0/2 nodes are available: 2 No preemption victims found for incoming pod.")
    assert c.sink.nominated["default/p"] == "", "no candidate: the nomination is cleared"


def test_unresolvable_nodes_are_not_preemption_candidates() -> None:
    c = Cluster().add(
        sched_node("n1", "4").api(), sched_node("n2", "4").api(),
        sched_node("n3", "4").taints([{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]).api(),
        api_pod("hi-1", cpu="4", node_name="n1", priority=100), api_pod("hi-2", cpu="4", node_name="n2", priority=100),
        api_pod("low-3", cpu="4", node_name="n3", priority=1),
    )
    _, message = c.attempt(api_pod("p", priority=50))
    assert message == ("0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. preemption: "
                       "0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
                       "2 No preemption victims found for incoming pod.")
    assert c.on_node("n3") == {"low-3"}, "a victim on an unresolvable node is never touched"


def test_node_that_does_not_fit_even_without_victims_reports_the_filter_reason() -> None:
    c = Cluster().add(sched_node("n1", "2").api(), api_pod("hi", cpu="1500m", node_name="n1", priority=100),
                      api_pod("low", cpu="200m", node_name="n1", priority=1))
    _, message = c.attempt(api_pod("p", priority=50))
    assert message == ("0/1 nodes are available: 1 Insufficient cpu. preemption: "
                       "0/1 nodes are available: 1 Insufficient cpu.")
    assert c.on_node("n1") == {"hi", "low"}


def test_preemption_policy_never_is_not_eligible() -> None:
    c = Cluster().add(sched_node("n1", "2").api(), api_pod("low", cpu="2", node_name="n1", priority=1))
    _, message = c.attempt(sched_pod("p", cpu="1", priority=50).preemption_policy("Never").api())
    assert message == ("0/1 nodes are available: 1 Insufficient cpu. "
                       "preemption: not eligible due to preemptionPolicy=Never.")
    assert "default/p" not in c.sink.nominated, "not eligible: the nomination is left alone"
    assert c.on_node("n1") == {"low"}


DISRUPTED = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
              "message": "py-scheduler: preempting to accommodate a higher priority pod"}]


def test_terminating_victim_on_the_nominated_node_makes_the_pod_wait() -> None:
    c = Cluster().add(sched_node("n1", "2").api(), sched_node("n2", "2").api(),
                      sched_pod("going", cpu="2", node_name="n1", priority=1).status_field("conditions",
                                                                                           DISRUPTED).terminating().api(),
                      api_pod("low", cpu="2", node_name="n2", priority=1))
    _, message = c.attempt(sched_pod("p", cpu="1", priority=50).nominated_node_name("n1").api())
    assert message.endswith(" preemption: not eligible due to a terminating pod on the nominated node.")
    assert c.on_node("n2") == {"low"}


def test_terminating_pod_without_the_preemption_condition_does_not_block() -> None:
    """The victim is chosen, but v1.37 sends no second deletion for a pod already being deleted (v1.34
    evicted it again, with a Preempted event)."""
    c = Cluster().add(sched_node("n1", "2").api(),
                      sched_pod("going", cpu="2", node_name="n1", priority=1).terminating().api())
    c.attempt(sched_pod("p", cpu="1", priority=50).nominated_node_name("n1").api())
    assert c.sink.nominated["default/p"] == "n1"
    assert c.preempted() == []


def test_unresolvable_nominated_node_allows_preempting_elsewhere() -> None:
    c = Cluster().add(
        sched_node("n1", "2").taints([{"key": "gone", "effect": "NoSchedule"}]).api(), sched_node("n2", "2").api(),
        sched_pod("going", cpu="2", node_name="n1", priority=1).status_field("conditions",
                                                                             DISRUPTED).terminating().api(),
        api_pod("low", cpu="2", node_name="n2", priority=1),
    )
    c.attempt(sched_pod("p", cpu="1", priority=50).nominated_node_name("n1").api())
    assert c.sink.nominated["default/p"] == "n2"
    assert c.preempted() == [("default/low", "Preempted by pod uid-p on node n2")]


def test_reprieve_keeps_the_most_important_pods_and_evicts_the_newest_of_the_lowest_priority() -> None:
    c = Cluster().add(
        sched_node("n1", "4").api(),
        sched_pod("a", cpu="1", node_name="n1", priority=1).start_time("2026-01-01T00:10:00Z").api(),
        sched_pod("b", cpu="1", node_name="n1", priority=2).start_time("2026-01-01T00:00:00Z").api(),
        sched_pod("c", cpu="1", node_name="n1", priority=1).start_time("2026-01-01T00:05:00Z").api(),
        sched_pod("d", cpu="1", node_name="n1", priority=3).start_time("2026-01-01T00:00:00Z").api(),
    )
    c.attempt(api_pod("p", priority=10))
    assert c.on_node("n1") == {"b", "c", "d"}
    assert [k for k, _ in c.preempted()] == ["default/a"]


def test_victims_are_as_few_as_needed_and_listed_most_important_first() -> None:
    c = Cluster().add(
        sched_node("n1", "4").api(),
        sched_pod("a", cpu="1", node_name="n1", priority=1).start_time("2026-01-01T00:10:00Z").api(),
        sched_pod("b", cpu="1", node_name="n1", priority=2).start_time("2026-01-01T00:00:00Z").api(),
        sched_pod("c", cpu="1", node_name="n1", priority=1).start_time("2026-01-01T00:05:00Z").api(),
        sched_pod("d", cpu="1", node_name="n1", priority=3).start_time("2026-01-01T00:00:00Z").api(),
    )
    c.attempt(api_pod("p", cpu="2", priority=10))
    assert c.on_node("n1") == {"b", "d"}
    assert [k for k, _ in c.preempted()] == ["default/c", "default/a"]


def test_pdb_protected_pods_are_reprieved_before_others() -> None:
    c = Cluster().add(
        sched_node("n1", "2").api(),
        sched_pod("x", cpu="1", node_name="n1", priority=1).labels({"app": "x"}).api(),
        api_pod("y", node_name="n1", priority=2),
        pdb("x-pdb", {"matchLabels": {"app": "x"}}, allowed=0),
    )
    c.attempt(api_pod("p", priority=10))
    # Without the PDB, y (more important) would stay and x go.
    assert c.on_node("n1") == {"x"}
    assert [k for k, _ in c.preempted()] == ["default/y"]


def test_node_without_pdb_violations_is_preferred() -> None:
    c = Cluster().add(
        sched_node("n1", "2").api(), sched_node("n2", "2").api(),
        sched_pod("x", cpu="2", node_name="n1", priority=1).labels({"app": "x"}).api(),
        api_pod("y", cpu="2", node_name="n2", priority=5),
        pdb("x-pdb", {"matchLabels": {"app": "x"}}, allowed=0),
    )
    c.attempt(api_pod("p", priority=10))
    assert c.sink.nominated["default/p"] == "n2"
    assert [k for k, _ in c.preempted()] == ["default/y"]


def test_pdb_with_budget_left_is_not_violated() -> None:
    c = Cluster().add(
        sched_node("n1", "2").api(), sched_node("n2", "2").api(),
        sched_pod("x", cpu="2", node_name="n1", priority=1).labels({"app": "x"}).api(),
        api_pod("y", cpu="2", node_name="n2", priority=5),
        pdb("x-pdb", {"matchLabels": {"app": "x"}}, allowed=1),
    )
    c.attempt(api_pod("p", priority=10))
    assert c.sink.nominated["default/p"] == "n1"


def test_anti_affinity_to_a_victim_is_resolved_by_preemption() -> None:
    anti = make_label_selector().label("app", "web").obj()
    c = Cluster().add(sched_node("n1", "8").api(),
                      sched_pod("web", cpu="100m", node_name="n1", priority=1).labels({"app": "web"}).api(),
                      api_pod("other", cpu="100m", node_name="n1", priority=1))
    _, message = c.attempt(sched_pod("p", cpu="100m", priority=10).pod_anti_affinity("kubernetes.io/hostname", anti)
                           .api())
    assert message == ("0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. preemption: "
                       "found a potential placement for pod on node n1, preempting 1 victims")
    assert c.on_node("n1") == {"other"}, "only the pod the anti-affinity is about is evicted"


def test_lower_priority_pods_nominated_to_the_node_lose_their_nomination() -> None:
    objs = [sched_pod("mid", cpu="1", priority=5).nominated_node_name("n1").api(),
            sched_pod("top", cpu="1", priority=500).nominated_node_name("n1").api()]
    c = Cluster().add(sched_node("n1", "2").api(), api_pod("low", cpu="2", node_name="n1", priority=1), *objs)
    mid, top = (pod_from_api(o) for o in objs)
    for p in (mid, top):  # known to the cluster, nominated, but out of the way of the next pop
        c.s.queue.delete(p)
        c.s.queue.nominator.add_nominated_pod(p)
    c.attempt(api_pod("p", priority=50))
    assert c.s.queue.nominator.nominated_node_name(mid) is None
    assert c.s.queue.nominator.nominated_node_name(top) == "n1"


def test_few_candidates_stop_the_dry_run_at_the_random_offset() -> None:
    """minCandidateNodesAbsolute 1: the first node (from the seeded offset) with victims wins, even
    though another node has a less important victim."""
    seed = 7
    c = Cluster(seed=seed, args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1})
    c.add(sched_node("n1", "2").api(), sched_node("n2", "2").api(), sched_node("n3", "2").api())
    c.s.cache.update_snapshot(c.s.snapshot)
    order = [n.name for n in c.s.snapshot.list()]
    first = order[random.Random(seed).randrange(3)]
    for i, name in enumerate(order):
        c.add(api_pod(f"v{i}", cpu="2", node_name=name, priority=9 if name == first else 1))
    c.attempt(api_pod("p", priority=10))
    assert c.sink.nominated["default/p"] == first
    # With the default args every node is dry-run and the least important victim's node wins.
    d = Cluster(seed=seed)
    d.add(sched_node("n1", "2").api(), sched_node("n2", "2").api(), sched_node("n3", "2").api())
    for i, name in enumerate(order):
        d.add(api_pod(f"v{i}", cpu="2", node_name=name, priority=9 if name == first else 1))
    d.attempt(api_pod("p", priority=10))
    assert d.sink.nominated["default/p"] != first


# --- eviction: waiting pods, the API path ------------------------------------------------------


def test_waiting_victim_is_rejected_not_deleted() -> None:
    c = Cluster().add(sched_node("n1", "2").api(), api_pod("w", node_name="n1", priority=1))
    victim = sched_pod("w", cpu="1", node_name="n1", priority=1).obj()
    fwk = c.s.frameworks[SCHED]
    wp = WaitingPod(victim, {"SomePermit": 60.0}, lambda: 0.0)
    fwk.waiting_pods.add(wp)
    assert c.s.preempt(victim, sched_pod("p", cpu="1", priority=9).obj(), "n1", "DefaultPreemption") is None
    decision = wp.wait(0)
    assert decision is not None and decision.code == Code.UNSCHEDULABLE
    assert (decision.message, decision.plugin) == ("preempted", "DefaultPreemption")
    assert c.on_node("n1") == {"w"}
    assert c.preempted() == [("default/w", "Preempted by pod uid-p on node n1")]


def test_api_eviction_sets_disruption_target_then_deletes() -> None:
    w = Writer()
    c = Cluster(writer=w).add(sched_node("n1", "2").api(), api_pod("v", node_name="n1", priority=1))
    victim_obj = api_pod("v", node_name="n1", priority=1)
    victim_obj["metadata"]["generation"] = 3
    victim = pod_from_api(victim_obj)
    assert c.s.preempt(victim, sched_pod("p", cpu="1", priority=9).obj(), "n1", "DefaultPreemption") is None
    (patch_call, delete_call) = w.calls
    assert patch_call[:3] == ("patch", "default", "v")
    (cond,) = patch_call[3]["status"]["conditions"]
    assert {k: cond[k] for k in ("type", "status", "reason", "message", "observedGeneration")} == {
        "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
        "message": "py-scheduler: preempting to accommodate a higher priority pod", "observedGeneration": 3}
    assert delete_call[:3] == ("delete", "default", "v")
    assert c.on_node("n1") == {"v"}, "live: the cache waits for the deletion event"
    assert c.preempted() == [("default/v", "Preempted by pod uid-p on node n1")]


def test_api_eviction_of_a_victim_already_gone_succeeds_without_event() -> None:
    w = Writer({"delete": api_error(404, "NotFound")})
    c = Cluster(writer=w).add(sched_node("n1", "2").api())
    victim = sched_pod("v", cpu="1", node_name="n1", priority=1).obj()
    assert c.s.preempt(victim, sched_pod("p", cpu="1", priority=9).obj(), "n1", "DefaultPreemption") is None
    assert c.preempted() == []


def test_api_eviction_failure_stops_preemption_with_an_error() -> None:
    w = Writer({"patch": ApiException(status=403, reason="Forbidden")})
    c = Cluster(writer=w).add(sched_node("n1", "2").api(), api_pod("v", cpu="2", node_name="n1", priority=1))
    _, message = c.attempt(api_pod("p", priority=9))
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu. preemption: (403)")
    assert [call[0] for call in w.calls] == ["patch"], "no delete after a failed condition patch"
    assert "default/p" not in c.sink.nominated


def test_disruption_condition_is_not_patched_twice() -> None:
    preemptor = sched_pod("p", cpu="1", priority=0).obj()
    victim = sched_pod("v", cpu="1", priority=0).status_field("conditions", DISRUPTED).obj()
    assert disruption_target_condition(victim, preemptor) is None
    other = [{**DISRUPTED[0], "message": "other-scheduler: preempting to accommodate a higher priority pod",
              "lastTransitionTime": "2025-01-01T00:00:00Z"}]
    victim = sched_pod("v", cpu="1", priority=0).status_field("conditions", other).obj()
    cond = disruption_target_condition(victim, preemptor)
    assert cond is not None and cond["lastTransitionTime"] == "2025-01-01T00:00:00Z"
    assert "observedGeneration" not in cond


def test_clearing_a_nomination_patches_only_pods_that_have_one() -> None:
    w = Writer()
    c = Cluster(writer=w)
    assert c.s.clear_nominated_node(sched_pod("a", cpu="1", priority=0).obj()) is None
    assert c.s.clear_nominated_node(sched_pod("b", cpu="1", priority=0).nominated_node_name("n1").obj()) is None
    assert w.calls == [("patch", "default", "b", {"status": {"nominatedNodeName": None}})]


def test_deleted_preemptor_is_an_error() -> None:
    c = Cluster().add(sched_node("n1", "2").api(), api_pod("v", cpu="2", node_name="n1", priority=1))
    plugin = c.s.frameworks[SCHED].plugins["DefaultPreemption"]
    ghost = sched_pod("ghost", cpu="1", priority=9).obj()
    result, status = plugin.post_filter(CycleState(), ghost, NodeToStatus({"n1": unschedulable("x")}))
    assert result is None and status is not None and status.code == Code.ERROR
    assert status.message == 'preemption: pods "ghost" not found'
    assert c.on_node("n1") == {"v"}


# --- pieces -----------------------------------------------------------------------------------


def test_pdb_violation_spends_each_budget_in_order() -> None:
    pdbs = [pdb_from_api(pdb("one", {"matchLabels": {"app": "x"}}, allowed=1))]
    a, b, c = (
        sched_pod("a", cpu="1", priority=0).labels({"app": "x"}).obj(),
        sched_pod("b", cpu="1", priority=0).labels({"app": "x"}).obj(),
        sched_pod("c", cpu="1", priority=0).labels({"app": "y"}).obj(),
    )
    assert filter_pods_with_pdb_violation([a, b, c], pdbs) == ([b], [a, c])


def test_pdb_matching_rules() -> None:
    x = {"app": "x"}
    pdbs = [
        pdb_from_api(pdb("other-ns", {"matchLabels": x}, allowed=0, namespace="other")),
        pdb_from_api(pdb("empty", {}, allowed=0)),  # an empty selector matches nothing for PDBs
        pdb_from_api(pdb("nil", None, allowed=0)),
        pdb_from_api(pdb("bad", {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}, allowed=0)),
        pdb_from_api(pdb("disrupted", {"matchLabels": x}, allowed=0, disrupted=["already"])),
    ]
    already, fresh, unlabeled = (
        sched_pod("already", cpu="1", priority=0).labels(x).obj(),
        sched_pod("fresh", cpu="1", priority=0).labels(x).obj(),
        sched_pod("unlabeled", cpu="1", priority=0).obj(),
    )
    assert filter_pods_with_pdb_violation([already, fresh, unlabeled], pdbs) == ([fresh], [already, unlabeled])


def _v(*priorities: int, violations: int = 0, start: str | None = None) -> Victims:
    return Victims([sched_pod(f"v{i}", cpu="1", priority=p).start_time(start).obj() for i, p in enumerate(priorities)],
                   violations)


@pytest.mark.parametrize(
    ("victims", "winner"),
    [
        ({"a": _v(1, violations=1), "b": _v(5)}, "b"),                        # fewest PDB violations
        ({"a": _v(5, 1), "b": _v(4, 4, 4)}, "b"),                             # lowest highest priority
        ({"a": _v(5, 3), "b": _v(5, 1, 1)}, "a"),                             # lowest priority sum (offset by 2^31)
        ({"a": _v(-5, -5), "b": _v(-5)}, "b"),                                # fewest victims (negative priorities)
        ({"a": _v(5, start="2026-01-01T00:00:00Z"), "b": _v(5, start="2026-01-02T00:00:00Z")}, "b"),  # latest start
        ({"a": _v(5, start="2026-01-01T00:00:00Z"), "b": _v(5, start="2026-01-01T00:00:00Z")}, "a"),  # first
    ],
)
def test_node_choice_order(victims: dict[str, Victims], winner: str) -> None:
    assert pick_one_node_for_preemption(victims, None, now=2e9) == winner


def test_pod_without_start_time_counts_as_started_now() -> None:
    started = _v(5, start="2026-01-01T00:00:00Z")
    not_started = _v(5)
    assert pick_one_node_for_preemption({"a": started, "b": not_started}, None, now=2e9) == "b"


def test_nodes_for_status_code() -> None:
    from scheduler.framework.types import NodeInfo

    infos = []
    for name in ("a", "b", "c"):
        ni = NodeInfo()
        ni.set_node(pod_node(name))
        infos.append(ni)
    explicit = NodeToStatus({"a": unschedulable("x"), "c": unresolvable("y")}, unresolvable())
    assert [n.name for n in nodes_for_status_code(explicit, infos, Code.UNSCHEDULABLE)] == ["a"]
    prefilter = NodeToStatus({}, unschedulable("prefilter said so"))
    assert [n.name for n in nodes_for_status_code(prefilter, infos, Code.UNSCHEDULABLE)] == ["a", "b", "c"]
    mixed = NodeToStatus({"b": unresolvable("z")}, unschedulable("u"))
    assert [n.name for n in nodes_for_status_code(mixed, infos, Code.UNSCHEDULABLE)] == ["a", "c"]


def pod_node(name: str) -> Any:
    from scheduler.model.node import node_from_api

    return node_from_api(sched_node(name, "2").api())


def test_aggregate_errors_like_utilerrors() -> None:
    assert aggregate_errors(["a"]) == "a"
    assert aggregate_errors(["a", "a"]) == "a"
    assert aggregate_errors(["a", "b", "a"]) == "[a, b]"


@pytest.mark.parametrize(
    ("pct", "absolute", "nodes", "want"),
    [(10, 100, 1000, 100), (10, 100, 50, 50), (40, 1, 10, 4), (0, 1, 10, 1), (100, 0, 7, 7)],
)
def test_num_candidates(pct: int, absolute: int, nodes: int, want: int) -> None:
    pl = DefaultPreemption({"minCandidateNodesPercentage": pct, "minCandidateNodesAbsolute": absolute}, _NoHandle())
    assert pl.calculate_num_candidates(nodes) == want


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"minCandidateNodesPercentage": 101}, "minCandidateNodesPercentage: invalid value 101"),
        ({"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute: invalid value -1"),
        ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, "cannot be zero at the same time"),
        ({"minCandidateNodesPercentage": "10"}, "must be an integer"),
    ],
)
def test_invalid_args_name_the_field(args: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        DefaultPreemption(args, _NoHandle())


class _NoHandle:
    def snapshot(self) -> Any:
        raise AssertionError("not used")

    def objects(self) -> Any:
        raise AssertionError("not used")

    def nominated_pods_for(self, node_name: str) -> list[Pod]:
        return []

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return None

    def parallelism(self) -> int:
        return 1

    def features(self) -> Features:
        return Features()


def test_simulate_evicts_victims_and_places_the_preemptor(tmp_path: Any) -> None:
    from scheduler.whatif.simulate import run_simulation

    cluster = tmp_path / "cluster.yaml"
    pods = tmp_path / "pods.yaml"
    cluster.write_text("""
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: low, namespace: default}
  spec: {nodeName: n1, priority: 1, containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]}
""")
    pods.write_text("""
apiVersion: v1
kind: Pod
metadata: {name: high, namespace: default}
spec: {schedulerName: py-scheduler, priority: 10, containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: later, namespace: default}
spec: {schedulerName: py-scheduler, priority: 1, containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
""")
    high, later = run_simulation(str(cluster), str(pods), seed=3).results
    assert (high["node"], high["victims"], high["message"]) == ("n1", ["default/low"], "")
    assert (later["node"], later["victims"]) == ("n1", []), "the victim's room is free for the next pod"


# --- asynchronous preemption (SchedulerAsyncPreemption) -----------------------------------------


class HeldWriter(OfflineWriter):
    """An OfflineWriter whose deletions wait for ``release``: the preemption stays in flight meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.deleting = threading.Event()

    def delete_pod(self, namespace: str, name: str) -> None:
        self.deleting.set()
        assert self.release.wait(10), "test never released the deletion"
        super().delete_pod(namespace, name)


def _preemption_done(c: Cluster) -> None:
    pl = c.s.frameworks[SCHED].plugins["DefaultPreemption"]
    pl.evaluator.executor().shutdown(wait=True)


def test_async_preemption_nominates_at_once_gates_the_pod_until_done_then_binds_on_the_node() -> None:
    w = HeldWriter()
    c = Cluster(writer=w, async_preemption=True).add(
        sched_node("n1", "2").api(), sched_node("n2", "2").api(),
        api_pod("low-a", cpu="1500m", node_name="n1", priority=10),
        api_pod("low-b", cpu="1500m", node_name="n2", priority=5),
    )
    reason, message = c.attempt(api_pod("high", priority=100))
    # The same outcome as the synchronous path, reported before any victim is gone.
    assert (reason, message) == ("Unschedulable", "0/2 nodes are available: 2 Insufficient cpu. preemption: "
                                 "found a potential placement for pod on node n2, preempting 1 victims")
    assert c.sink.nominated["default/high"] == "n2"
    assert w.deleting.wait(10)
    # One victim: v1.37 holds the pod back until its last victim's deletion is done (v1.34 let it go as
    # soon as the last deletion started).
    c.s.queue.activate([c.s._pending["uid-high"]])
    assert c.s.queue.gating_message("default/high") == "waiting for the preemption for this pod to be finished"
    w.release.set()
    _preemption_done(c)
    c.s.queue.activate([c.s._pending["uid-high"]])
    assert c.s.queue.gating_message("default/high") == ""
    assert c.on_node("n2") == set() and c.on_node("n1") == {"low-a"}
    assert c.preempted() == [("default/low-b", "Preempted by pod uid-high on node n2")]
    c.s.on_pod_event(MODIFIED, sched_pod("high", cpu="1", rv="2", priority=100).nominated_node_name("n2").api())
    assert c.s.schedule_one(timeout=0)
    assert c.binder.bindings == [("default/high", "n2")]


def test_async_preemption_holds_the_preemptor_while_victims_before_the_last_are_evicted() -> None:
    w = HeldWriter()
    c = Cluster(writer=w, async_preemption=True).add(
        sched_node("n1", "2").api(),
        api_pod("v1", node_name="n1", priority=1), api_pod("v2", node_name="n1", priority=2),
    )
    c.attempt(api_pod("high", cpu="2", priority=100))
    assert w.deleting.wait(10)
    # The first victim's deletion is in flight: PreEnqueue keeps the preemptor out of activeQ.
    c.s.queue.activate([c.s._pending["uid-high"]])
    assert c.s.queue.gating_message("default/high") == "waiting for the preemption for this pod to be finished"
    assert not c.s.schedule_one(timeout=0)
    w.release.set()
    _preemption_done(c)
    assert {v for v, _ in c.preempted()} == {"default/v1", "default/v2"}
    # The last victim's deletion event ungated it: NodeResourcesFit's hint queued it again.
    assert c.s.queue.gating_message("default/high") == ""
    c.s.queue.flush_backoff_completed()
    c.s.on_pod_event(MODIFIED, sched_pod("high", cpu="2", rv="2", priority=100).nominated_node_name("n1").api())
    c.retry("high")
    assert c.binder.bindings == [("default/high", "n1")]


class HeldFailingWriter(Writer):
    """A Writer whose failing condition patch waits for ``release``, so the preemptor's scheduling cycle has
    requeued it before the failure activates it. (Had the failure come while the pod was still in flight, the
    ForceActivate event would send it to backoffQ, as upstream's queue does for a pod still backing off.)"""

    def __init__(self) -> None:
        super().__init__({"patch": ApiException(status=403, reason="Forbidden")})
        self.release = threading.Event()

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        assert self.release.wait(10), "test never released the patch"
        super().patch_pod_status(namespace, name, patch)


def test_async_preemption_failure_activates_the_preemptor() -> None:
    w = HeldFailingWriter()
    c = Cluster(writer=w, async_preemption=True).add(sched_node("n1", "2").api(),
                                                     api_pod("v", cpu="2", node_name="n1", priority=1))
    _, message = c.attempt(api_pod("p", priority=9))
    assert message == ("0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential placement "
                       "for pod on node n1, preempting 1 victims"), "the API error is not the cycle's"
    assert c.sink.nominated["default/p"] == "n1"
    w.release.set()
    _preemption_done(c)
    assert [call[0] for call in w.calls] == ["patch"], "no delete after a failed condition patch"
    assert c.s.queue.queue_of(c.s._pending["uid-p"]) == "active", "no deletion event would requeue it"


def test_pre_enqueue_and_events_follow_the_gate() -> None:
    class Handle(_NoHandle):
        def __init__(self, on: bool) -> None:
            self.on = on

        def features(self) -> Features:
            return Features(enable_async_preemption=self.on)

    off = DefaultPreemption({}, Handle(False))
    on = DefaultPreemption({}, Handle(True))
    assert off.events_to_register() == []
    [registered] = on.events_to_register()
    assert (registered.event.resource, registered.event.action) == (EventResource.POD, ActionType.DELETE)
    assert registered.hint(sched_pod("p", cpu="1", priority=0).obj(), None, None) == QueueingHint.QUEUE_SKIP
    on.evaluator._preempting.add("uid-p")
    off.evaluator._preempting.add("uid-p")
    status = on.pre_enqueue(sched_pod("p", cpu="1", priority=0).obj())
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert off.pre_enqueue(sched_pod("p", cpu="1", priority=0).obj()) is None
    assert on.pre_enqueue(sched_pod("other", cpu="1", priority=0).obj()) is None


@pytest.mark.parametrize(
    ("spec", "want"),
    [("", True), ("SchedulerAsyncPreemption=false", False), (" SchedulerAsyncPreemption=True ,", True)],
)
def test_parse_feature_gates(spec: str, want: bool) -> None:
    assert parse_feature_gates(spec).enable_async_preemption is want


@pytest.mark.parametrize(("spec", "fragment"), [("Foo=true", "unrecognized feature gate: Foo"),
                                                ("SchedulerAsyncPreemption", "missing bool value for"),
                                                ("SchedulerAsyncPreemption=yes", "invalid value of")])
def test_parse_feature_gates_rejects(spec: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        parse_feature_gates(spec)
