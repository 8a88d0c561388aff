"""`run --api-writer-processes 1` against the real API server: Bindings and Scheduled events posted by a
writer child, and the child killed -9 in the middle of a burst: restarted, every pod bound, none left
assumed in the scheduler's cache (each binding's outcome came back)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable

from kubernetes import client

from e2e.kube import events_for, node_of, pod_manifest, wait_for
from tests.integration.conftest import SchedulerProc


def writer_pids(sched: SchedulerProc) -> list[int]:
    """The writer children the scheduler started, oldest first (its log names each)."""
    pids = []
    for line in sched.log_text().splitlines():
        if "API writer process started" in line:
            pids.append(int(json.loads(line)["pid"]))
    return pids


def test_bindings_and_events_go_through_the_writer_child(
    api: client.ApiClient, core: client.CoreV1Api, ns: str, start_py_scheduler: Callable[..., SchedulerProc]
) -> None:
    sched = start_py_scheduler("--scheduler-name", "writer-child", "--api-writer-processes", "1", name="writer")
    wait_for(lambda: writer_pids(sched), 60, what="writer child started")
    core.create_namespaced_pod(ns, pod_manifest("w0", scheduler_name="writer-child"))
    wait_for(lambda: node_of(core, ns, "w0"), 60, what="pod bound")
    event = wait_for(lambda: events_for(api, ns, "w0", "Scheduled"), 60, what="Scheduled event")[0]
    assert event.reporting_controller == "writer-child"
    assert node_of(core, ns, "w0") in event.note


def test_writer_killed_during_a_burst_loses_no_binding(
    core: client.CoreV1Api, ns: str, start_py_scheduler: Callable[..., SchedulerProc]
) -> None:
    # 10 writes a second: the burst's 40 bindings and 40 events take seconds, so the kill lands mid-burst.
    sched = start_py_scheduler("--scheduler-name", "writer-kill", "--api-writer-processes", "1",
                               "--qps", "10", "--burst", "1", name="writer-kill")
    first = wait_for(lambda: writer_pids(sched), 60, what="writer child started")[0]
    names = [f"k{i}" for i in range(40)]
    for n in names:
        core.create_namespaced_pod(ns, pod_manifest(n, scheduler_name="writer-kill"))
    wait_for(lambda: sum(1 for n in names if node_of(core, ns, n)) >= 3, 60, what="first bindings")
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: len(writer_pids(sched)) >= 2, 60, what="writer child restarted")
    assert sum(1 for n in names if node_of(core, ns, n)) < len(names), "the kill came after the burst"
    wait_for(lambda: all(node_of(core, ns, n) for n in names), 120, what="every pod bound")
    wait_for(lambda: sched.metric("scheduler_cache_size", 'type="assumed_pods"') == 0, 60,
             what="no pod left assumed")
    assert "binding cycle crashed" not in sched.log_text()
