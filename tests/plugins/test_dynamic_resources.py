"""DynamicResources (minimal): upstream's verdicts for pods without claims, a clear refusal for pods with."""

from __future__ import annotations

import random
from typing import Any

from util import make_node, make_pod, node_info

from scheduler.app.offline import RecordingEventSink
from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED
from scheduler.framework.interface import CycleState, NodeToStatus
from scheduler.framework.status import Code
from scheduler.model.pod import Pod, pod_from_api
from scheduler.plugins.dynamic_resources import UNSUPPORTED_MSG, DynamicResources
from scheduler.scheduler import Scheduler


def plugin() -> DynamicResources:
    return DynamicResources({}, None)  # type: ignore[arg-type]  # the plugin does not use its handle


def with_claims(name: str = "p") -> Pod:
    return pod_from_api({
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "image": "x"}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimName": "my-gpu"}]},
    })


def test_pod_without_claims_is_skipped_and_postfilter_rejects_without_a_reason() -> None:
    """v1.37's fast path for pods without claims: Unschedulable, no message (v1.34 said "no new claims to
    deallocate")."""
    pl, state, pod = plugin(), CycleState(), make_pod()
    result, status = pl.pre_filter(state, pod, [])
    assert result is None and status is not None and status.code == Code.SKIP
    assert pl.pre_enqueue(pod) is None
    r, s = pl.post_filter(state, pod, NodeToStatus())
    assert r is None and s is not None
    assert (s.code, s.reasons) == (Code.UNSCHEDULABLE, [])


def test_pod_with_claims_is_rejected_as_unsupported() -> None:
    pl, state, pod = plugin(), CycleState(), with_claims()
    _, status = pl.pre_filter(state, pod, [])
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == UNSUPPORTED_MSG
    _, s = pl.post_filter(state, pod, NodeToStatus())
    assert s is not None and (s.code, s.reasons) == (Code.UNSCHEDULABLE, [])


def test_postfilter_without_prefilter_state_is_an_error_like_upstream() -> None:
    pl = plugin()
    r, s = pl.post_filter(CycleState(), make_pod(), NodeToStatus())
    assert r is None and s is not None and (s.code, s.message) == (Code.ERROR, "not found")
    f = pl.filter(CycleState(), make_pod(), node_info(make_node()))
    assert f is not None and f.code == Code.ERROR


def test_reserve_and_prebind_do_nothing() -> None:
    pl, state, pod = plugin(), CycleState(), make_pod()
    pl.pre_filter(state, pod, [])
    assert pl.reserve(state, pod, "n") is None
    assert pl.pre_bind(state, pod, "n") is None
    pl.unreserve(state, pod, "n")


# --- through the default profile ---------------------------------------------------------------


def scheduler() -> tuple[Scheduler, RecordingEventSink]:
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{"schedulerName": "py-scheduler"}]})
    sink = RecordingEventSink()

    class Binder:
        def bind(self, p: Pod, node_name: str) -> None:
            pass

    s = Scheduler(cfg, build_registry(cfg), Binder(), sink, None, synchronous_binding=True,
                  rng=random.Random(1), tie_break="name")
    s.on_node_event(ADDED, {"metadata": {"name": "n1", "uid": "u1", "labels": {}},
                            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}}})
    return s, sink


def attempt(s: Scheduler, sink: RecordingEventSink, spec: dict[str, Any]) -> str:
    s.on_pod_event(ADDED, {"metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
                           "spec": {"schedulerName": "py-scheduler", "containers": [{"name": "c", "image": "x"}],
                                    **spec}})
    assert s.schedule_one(timeout=0)
    return sink.conditions["default/p"][1]


def test_default_profile_rejects_pods_with_claims_with_the_reason() -> None:
    s, sink = scheduler()
    msg = attempt(s, sink, {"resourceClaims": [{"name": "gpu", "resourceClaimName": "my-gpu"}]})
    assert msg == (f"0/1 nodes are available: {UNSUPPORTED_MSG}. preemption: "
                   "0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def test_default_profile_unresolvable_prefilter_ends_in_not_found() -> None:
    """An earlier PreFilter stops the loop before DynamicResources' PreFilter runs; its PostFilter then
    errors reading the state and the PostFilter phase ends there (upstream v1.34.10 does the same)."""
    s, sink = scheduler()
    conflict = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["a"]},
            {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}}}}
    msg = attempt(s, sink, conflict)
    assert msg == "0/1 nodes are available: pod affinity terms conflict. not found"
