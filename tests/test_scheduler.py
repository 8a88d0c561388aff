"""The scheduler core without an API server: event routing, assume/forget around binding, requeue."""

from __future__ import annotations

import random
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from structlog.testing import capture_logs

from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED, DELETED, MODIFIED
from scheduler.kube.client import api_error
from scheduler.model.pod import Pod
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import RecordingEventSink
from tests.builders import api_node, api_pod


class Binder:
    """Binds, or raises the queued errors first."""

    def __init__(self, errors: list[BaseException] | None = None) -> None:
        self.errors = list(errors or [])
        self.bound: list[tuple[str, str]] = []

    def bind(self, p: Pod, node_name: str) -> None:
        if self.errors:
            raise self.errors.pop(0)
        self.bound.append((p.key, node_name))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(binder: Binder, sink: RecordingEventSink | None = None, clock: Clock | None = None) -> Scheduler:
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{"schedulerName": "py-scheduler"}]})
    return Scheduler(cfg, build_registry(cfg), binder, sink or RecordingEventSink(), None,
                     synchronous_binding=True, rng=random.Random(1), tie_break="name", clock=clock or Clock())


def test_pod_is_assumed_bound_and_confirmed() -> None:
    b = Binder()
    s = make(b)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, api_pod("p"))
    assert s.schedule_one(timeout=0)
    assert b.bound == [("default/p", "n1")]
    assert s.cache.is_assumed("uid-p")
    s.on_pod_event(MODIFIED, api_pod("p", node_name="n1", rv="2"))
    assert not s.cache.is_assumed("uid-p")
    assert s.cache.pod_count() == 1
    assert s.queue.lengths()["active"] == 0


def test_bind_failure_forgets_and_requeues_with_event() -> None:
    b = Binder([ApiException(status=500, reason="boom")])
    sink = RecordingEventSink()
    clock = Clock()
    s = make(b, sink, clock)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, api_pod("p"))
    s.schedule_one(timeout=0)
    assert b.bound == []
    assert not s.cache.is_assumed("uid-p")
    assert s.cache.pod_count() == 0, "the assumed pod must be forgotten"
    assert [e[2] for e in sink.events] == ["FailedScheduling"]
    assert sink.conditions["default/p"][0] == "SchedulerError"
    assert s.queue.queue_of(s._pending["uid-p"]) == "backoff"
    # After its (1 s) error backoff it comes back and binds.
    clock.now += 2.0
    s.queue.flush_backoff_completed()
    assert s.schedule_one(timeout=0)
    assert b.bound == [("default/p", "n1")]


def test_pod_deleted_before_bind_is_not_requeued() -> None:
    b = Binder([api_error(404, "NotFound")])
    s = make(b)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, api_pod("p"))
    s.on_pod_event(DELETED, api_pod("p"))  # the delete arrives while the pod is in flight
    s.schedule_one(timeout=0.1)
    assert s.cache.pod_count() == 0
    assert all(n == 0 for n in s.queue.lengths().values())


class DeletedWhileBinding(Binder):
    """The pod's deletion (or the start of it) reaches the scheduler while its Binding is in flight; the
    cache is read at that moment, then the bind fails as the API server answers for a deleted pod."""

    def __init__(self, deliver: Any) -> None:
        super().__init__()
        self.deliver = deliver
        self.seen: dict[str, Any] = {}

    def bind(self, p: Pod, node_name: str) -> None:
        s = self.deliver()
        info = s.cache.get_node_info(node_name)
        self.seen = {"pods": s.cache.pod_count(), "assumed": s.cache.assumed_count(),
                     "cpu": info.requested.milli_cpu if info is not None else None}
        raise api_error(404, "NotFound")


@pytest.mark.parametrize("how", ["delete", "terminating"])
def test_an_assumed_pod_deleted_while_binding_frees_its_capacity_at_once(how: str) -> None:
    """v1.37's handleAssumedPodDeletion: the cache forgets the assumed pod on its delete (or on the update
    that starts its deletion), before the bind fails; the failed bind then finds nothing to forget."""
    holder: list[Scheduler] = []

    def deliver() -> Scheduler:
        s = holder[0]
        if how == "delete":
            s.on_pod_event(DELETED, api_pod("p"))
        else:
            terminating = api_pod("p", rv="2")
            terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
            s.on_pod_event(MODIFIED, terminating)
        return s

    b = DeletedWhileBinding(deliver)
    s = make(b)
    holder.append(s)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, api_pod("p"))
    s.schedule_one(timeout=0)
    assert b.seen == {"pods": 0, "assumed": 0, "cpu": 0}
    assert s.cache.pod_count() == 0 and s.cache.assumed_count() == 0


def test_unschedulable_pod_gets_message_and_moves_on_node_add() -> None:
    sink = RecordingEventSink()
    s = make(Binder(), sink)
    s.on_node_event(ADDED, api_node("n1", cpu="1"))
    s.on_pod_event(ADDED, api_pod("big", cpu="2"))
    s.schedule_one(timeout=0)
    reason, message = sink.conditions["default/big"]
    assert reason == "Unschedulable"
    # The default profile's PostFilter plugins add their verdicts (upstream's wording): the 1-cpu node
    # can never hold a 2-cpu pod (UnschedulableAndUnresolvable), so preemption cannot help there.
    assert message == ("0/1 nodes are available: 1 Insufficient cpu. "
                       "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
    assert s.queue.lengths()["unschedulable"] == 1
    s.on_node_event(ADDED, api_node("n2", cpu="4"))
    assert s.queue.lengths()["unschedulable"] == 0, "NodeAdd must move the pod out of the unschedulable pool"


def test_pods_of_other_schedulers_only_count_in_usage() -> None:
    b = Binder()
    s = make(b)
    s.on_node_event(ADDED, api_node("n1", cpu="2"))
    s.on_pod_event(ADDED, api_pod("theirs", scheduler="default-scheduler"))
    s.on_pod_event(ADDED, api_pod("bound-theirs", cpu="2", node_name="n1", scheduler="default-scheduler"))
    assert not s.schedule_one(timeout=0), "nothing of ours to schedule"
    assert s.cache.pod_count() == 1
    s.on_pod_event(ADDED, api_pod("ours", cpu="1"))
    s.schedule_one(timeout=0)
    assert b.bound == [], "n1 is full with the other scheduler's pod"


def test_higher_priority_pod_is_scheduled_first() -> None:
    b = Binder()
    s = make(b)
    s.on_node_event(ADDED, api_node("n1", cpu="1"))
    s.on_pod_event(ADDED, api_pod("low", priority=1))
    s.on_pod_event(ADDED, api_pod("high", priority=100))
    s.schedule_one(timeout=0)
    s.schedule_one(timeout=0)
    assert b.bound == [("default/high", "n1")]


def unschedulable_message_beside_a_good_pod(bad: dict[str, Any]) -> str:
    """Schedule ``bad`` and then a good pod on one node: the good one binds, and ``bad``'s PodScheduled=False
    message (reason Unschedulable) is returned."""
    sink = RecordingEventSink()
    b = Binder()
    s = make(b, sink)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, bad)
    s.on_pod_event(ADDED, api_pod("good"))
    s.schedule_one(timeout=0)
    s.schedule_one(timeout=0)
    assert b.bound == [("default/good", "n1")]
    reason, message = sink.conditions["default/bad"]
    assert reason == "Unschedulable"
    return message


def test_malformed_pod_is_reported_not_crashing() -> None:
    message = unschedulable_message_beside_a_good_pod(api_pod("bad", cpu="lots"))
    assert "spec.containers[0].resources.requests.cpu" in message
    assert "'lots'" in message


@pytest.mark.parametrize("field, item", [("containers", "c"), ("volumes", "v"), ("schedulingGates", "g"),
                                         ("initContainers", 7)])
def test_a_pod_with_a_list_item_of_the_wrong_shape_is_reported_not_raised(field: str, item: object) -> None:
    """What-if and hand-written pods can carry a list item that is not an object; the pod gets a
    FailedScheduling condition naming it, and the pod after it is still scheduled."""
    bad = api_pod("bad")
    bad["spec"][field] = [*bad["spec"].get(field, []), item]
    assert "pod default/bad: spec: an item of the wrong shape" in unschedulable_message_beside_a_good_pod(bad)


@pytest.mark.parametrize("ttl", [0.0, 30.0])
def test_assumed_pod_expiry_follows_ttl(ttl: float) -> None:
    clock = Clock()
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "pyScheduler": {"assumedPodTTLSeconds": ttl}})
    s = Scheduler(cfg, build_registry(cfg), Binder(), RecordingEventSink(), None, synchronous_binding=True,
                  clock=clock)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, api_pod("p"))
    s.schedule_one(timeout=0)
    clock.now += 31.0
    s.housekeeping()
    assert s.cache.is_assumed("uid-p") is (ttl == 0.0)


def test_a_relisted_node_of_the_same_version_is_kept_once() -> None:
    """A relist replays every node at the version the cache has: the resync's record keeps the cache's
    object, not a second copy of each node."""
    s = make(Binder())
    first, again = api_node("n1"), api_node("n1")
    s.on_node_event(ADDED, first)
    s.on_node_event(MODIFIED, again)
    (_, kept), = s.known_nodes_not_in(set(), float("inf"))
    assert kept is first and s.cache.get_node("n1").raw is first  # type: ignore[union-attr]
    newer = {**api_node("n1"), "metadata": {**api_node("n1")["metadata"], "resourceVersion": "2"}}
    s.on_node_event(MODIFIED, newer)
    (_, kept), = s.known_nodes_not_in(set(), float("inf"))
    assert kept is newer


def test_a_relisted_object_of_the_same_version_is_no_event() -> None:
    """A relist replays every object at the version the store has: no event (no plugin, store or queue
    work, so the pods waiting on the kind are not requeued once per replayed object); a new version is."""
    s = make(Binder())
    first = {"metadata": {"name": "s1", "resourceVersion": "1"}, "spec": {"driver": "d", "nodeName": "n1"}}
    again = {"metadata": {"name": "s1", "resourceVersion": "1"}, "spec": {"driver": "d", "nodeName": "n1"}}
    newer = {"metadata": {"name": "s1", "resourceVersion": "2"}, "spec": {"driver": "d", "nodeName": "n1"}}
    (added,) = s.on_object_event("ResourceSlice", ADDED, first)
    assert added.endswith("ResourceSliceAdd")
    assert s.on_object_event("ResourceSlice", MODIFIED, again) == ()
    assert s.objects.get("ResourceSlice", "", "s1") is first
    (updated,) = s.on_object_event("ResourceSlice", MODIFIED, newer)
    assert updated.endswith("ResourceSliceUpdate")
    assert s.objects.get("ResourceSlice", "", "s1") is newer


def test_a_profile_build_names_the_plugins_that_turn_batching_off() -> None:
    """Coscheduling signs no pods (its verdicts depend on the group): its profile cannot batch, and the
    log says so at build time, naming it; the default profile batches and says nothing."""
    profiles = [{"schedulerName": "gang", "plugins": {"preFilter": {"enabled": [{"name": "Coscheduling"}]}}},
                {"schedulerName": "py-scheduler"}]
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": profiles})
    with capture_logs() as logs:
        Scheduler(cfg, build_registry(cfg), Binder(), RecordingEventSink(), None, synchronous_binding=True)
    off = [e for e in logs if e["event"].startswith("opportunistic batching off")]
    assert [(e["profile"], e["plugins"]) for e in off] == [("gang", ["Coscheduling"])]
