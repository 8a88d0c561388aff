"""``python -m e2e.perf.watchreplay``: the pod watch path in process, without an API server.

Replays the watch lines a SchedulingBasic run makes (per pod: ADDED pending, MODIFIED bound by the
scheduler, MODIFIED running; then DELETED) through ``PodStream._handle_line`` into a Scheduler built
from the default configuration, and reports CPU microseconds per event. ``--foreign F`` makes that fraction
of the pods belong to another scheduler (they still occupy nodes once bound). Profile it with
``py-spy record -- python -m e2e.perf.watchreplay``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import orjson

from scheduler.app.offline import RecordingBinder, RecordingEventSink
from scheduler.config.load import build_registry, load
from scheduler.eventhandlers import ADDED
from scheduler.kube.podstream import PodStream
from scheduler.scheduler import Scheduler

SCHED = "bench-scheduler"
PHASES = ("ADDED", "BOUND", "RUNNING", "DELETED")


def _pod(i: int, scheduler: str, rv: int, node: str = "", phase: str = "Pending") -> dict[str, Any]:
    """A pod as kube-apiserver sends it for upstream's pod-default.yaml."""
    status: dict[str, Any] = {"phase": phase, "qosClass": "Guaranteed"}
    if node:
        status["conditions"] = [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                 "lastTransitionTime": "2026-01-01T00:00:01Z"}]
    spec: dict[str, Any] = {
        "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1", "ports": [
            {"containerPort": 80, "protocol": "TCP"}], "resources": {
            "limits": {"cpu": "100m", "memory": "500Mi"}, "requests": {"cpu": "100m", "memory": "500Mi"}},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent"}],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "securityContext": {}, "schedulerName": scheduler, "enableServiceLinks": True, "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}],
    }
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "apiVersion": "v1", "metadata": {
        "name": f"pod-{i}", "namespace": "sched-1", "uid": f"00000000-0000-0000-0000-{i:012d}",
        "resourceVersion": str(rv), "creationTimestamp": "2026-01-01T00:00:00Z",
        "managedFields": [{"manager": "python", "operation": "Update", "apiVersion": "v1",
                           "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
        "spec": spec, "status": status}


def watch_lines(pods: int, nodes: int, foreign: float) -> list[bytes]:
    """Every pod's events in the order a run produces them, as newline-free JSON lines."""
    lines: list[bytes] = []
    rv = 1000
    n_foreign = int(pods * foreign)
    for phase in PHASES:
        for i in range(pods):
            rv += 1
            sched = "other-scheduler" if i < n_foreign else SCHED
            node = f"node-{i % nodes}" if phase != "ADDED" else ""
            obj = _pod(i, sched, rv, node, "Running" if phase in ("RUNNING", "DELETED") else "Pending")
            type_ = {"BOUND": "MODIFIED", "RUNNING": "MODIFIED"}.get(phase, phase)
            lines.append(orjson.dumps({"type": type_, "object": obj}))
    return lines


def build_scheduler(nodes: int) -> Scheduler:
    """A scheduler from the default configuration for SCHED, with ``nodes`` nodes."""
    cfg = load(None, [SCHED])
    sched = Scheduler(cfg, build_registry(cfg), RecordingBinder(), RecordingEventSink(), None,
                      synchronous_binding=True)
    for n in range(nodes):
        sched.on_node_event(ADDED, {"kind": "Node", "metadata": {"name": f"node-{n}", "resourceVersion": "1",
                                                                  "labels": {"kubernetes.io/hostname": f"node-{n}"}},
                                    "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}}})
    return sched


def replay(pods: int, nodes: int, foreign: float, upto: str = "DELETED") -> tuple[int, float, Scheduler]:
    """(events, CPU seconds, the scheduler) for one replay into a fresh scheduler with ``nodes`` nodes;
    ``upto`` stops after that phase (ADDED, BOUND, RUNNING or DELETED)."""
    sched = build_scheduler(nodes)
    stream = PodStream(api=None, on_event=sched.on_pod_event)  # type: ignore[arg-type]
    lines = watch_lines(pods, nodes, foreign)[: pods * (PHASES.index(upto) + 1)]
    rv = ""
    t0 = time.process_time()  # CPU, not wall: the machine is shared
    for line in lines:
        rv = stream._handle_line(line, rv)
    return len(lines), time.process_time() - t0, sched


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--foreign", type=float, default=0.0, help="fraction of pods of another scheduler")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    best = min(replay(args.pods, args.nodes, args.foreign)[1] for _ in range(args.repeat))
    events = args.pods * 4
    print(f"{events} events, best of {args.repeat}: {best:.3f} CPU s, {best / events * 1e6:.1f} CPU us/event")


if __name__ == "__main__":
    main()
