"""End to end: py-scheduler binds its pods, leaves other schedulers' pods alone, explains failures."""

from __future__ import annotations

import re

from kubernetes import client

from e2e.kube import events_for, node_of, pod_manifest, scheduled_condition, wait_for


def test_binds_every_pod(core: client.CoreV1Api, ns: str) -> None:
    names = [f"p{i}" for i in range(20)]
    for n in names:
        core.create_namespaced_pod(ns, pod_manifest(n))
    wait_for(lambda: all(node_of(core, ns, n) for n in names), 90, what="all 20 pods bound")
    nodes = {node_of(core, ns, n) for n in names}
    assert len(nodes) > 1, "20 small pods on a multi-node cluster should spread over several nodes"


def test_other_scheduler_names_are_left_alone(core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_pod(ns, pod_manifest("theirs", scheduler_name="someone-else"))
    core.create_namespaced_pod(ns, pod_manifest("ours"))
    wait_for(lambda: node_of(core, ns, "ours"), 60, what="our pod bound")
    assert node_of(core, ns, "theirs") is None


def test_unschedulable_pod_is_explained(api: client.ApiClient, core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_pod(ns, pod_manifest("huge", cpu="512"))
    cond = wait_for(lambda: scheduled_condition(core, ns, "huge"), 60, what="PodScheduled condition")
    assert cond.status == "False"
    assert cond.reason == "Unschedulable"
    assert re.fullmatch(r"0/\d+ nodes are available: .*\d+ Insufficient cpu.*\.", cond.message), cond.message
    events = wait_for(lambda: events_for(api, ns, "huge", "FailedScheduling"), 60, what="FailedScheduling event")
    assert events[0].type == "Warning"
    assert "Insufficient cpu" in events[0].note
    assert node_of(core, ns, "huge") is None
