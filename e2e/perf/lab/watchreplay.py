"""``python -m e2e.perf.lab.watchreplay``: the pod watch path in process, without an API server.

Replays the watch lines a SchedulingBasic run makes (per pod: ADDED pending, MODIFIED bound by the
scheduler, MODIFIED running; then DELETED) through ``PodStream._handle_line`` into a Scheduler built
from the default configuration, and reports CPU microseconds per event. ``--foreign F`` makes that fraction
of the pods belong to another scheduler (they still occupy nodes once bound). ``--shape live`` (the default)
gives the lines what a live run's pods carry (managedFields of three managers, kwok's running status);
``--shape replay`` the short lines of earlier entries. Unless ``--no-assume``, each of our pods is popped
and assumed on its node between its ADDED and bound events, as a scheduling cycle does live (untimed), so
the bound event confirms an assumed pod. ``--callgrind`` (under ``valgrind --tool=callgrind
--instr-atstart=no``) counts each phase's events alone, one dump per phase (callgrind.out.<pid>.1-4: ADDED,
bound, running, DELETED). ``--metrics`` records the live scheduler's Prometheus metrics (the handlers' samples,
the queue's incoming counters), as a live run does. Profile it with
``py-spy record -- python -m e2e.perf.lab.watchreplay``.
"""

from __future__ import annotations

import argparse
import ctypes
import random
import tempfile
import time
from typing import Any

import orjson

from e2e.perf.lab.shims import build_shim
from scheduler.app import gcpolicy
from scheduler.config.load import build_registry, load
from scheduler.eventhandlers import ADDED
from scheduler.kube.podstream import PodStream
from scheduler.metrics import Metrics
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import RecordingBinder, RecordingEventSink

SCHED = "bench-scheduler"
PHASES = ("ADDED", "BOUND", "RUNNING", "DELETED")
SHAPES = ("live", "replay")


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


def _fields_v1(value: Any) -> dict[str, Any]:
    """The FieldsV1 set of ``value`` as the API server writes it: ``f:`` per key, ``k:`` per keyed list item."""
    if isinstance(value, dict):
        return {f"f:{k}": _fields_v1(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out: dict[str, Any] = {}
        for item in value:
            key = {k: item[k] for k in ("name", "type", "containerPort", "protocol", "key", "ip") if k in item}
            out["k:" + orjson.dumps(key, option=orjson.OPT_SORT_KEYS).decode()] = {".": {}, **_fields_v1(item)}
        return out
    return {}


def _entry(manager: str, fields: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    entry = {"manager": manager, "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:01Z",
             "fieldsType": "FieldsV1", "fieldsV1": _fields_v1(fields)}
    return {**entry, "subresource": subresource} if subresource else entry


def realistic(line: bytes) -> bytes:
    """A watchreplay line with what a live run's pod carries: a running pod's status as kwok writes it, and
    managedFields for the creating client, the scheduler's PodScheduled condition and the node's status."""
    ev = orjson.loads(line)
    obj = ev["object"]
    meta, spec, status = obj["metadata"], obj["spec"], obj["status"]
    managed = [_entry("python", {"metadata": {"labels": meta.get("labels", {})}, "spec": spec})]
    if spec.get("nodeName"):
        managed.append(_entry("py-scheduler", {"status": {"conditions": status.get("conditions", [])}}, "status"))
    if status.get("phase") == "Running":
        status.update({
            "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                            "lastTransitionTime": "2026-01-01T00:00:02Z"}
                           for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "podIP": "10.0.1.2", "podIPs": [{"ip": "10.0.1.2"}],
            "startTime": "2026-01-01T00:00:02Z",
            "containerStatuses": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1",
                                   "imageID": "registry.k8s.io/pause@sha256:" + "0" * 64, "ready": True,
                                   "started": True, "restartCount": 0,
                                   "state": {"running": {"startedAt": "2026-01-01T00:00:02Z"}}}]})
        managed.append(_entry("kwok", {"status": {k: v for k, v in status.items() if k != "qosClass"}}, "status"))
    meta["managedFields"] = managed
    return orjson.dumps(ev)


def watch_lines(pods: int, nodes: int, foreign: float, shape: str = "replay") -> list[bytes]:
    """Every pod's events in the order a run produces them, as newline-free JSON lines; ``shape`` live
    makes them as a live run's (``realistic``)."""
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
            line = orjson.dumps({"type": type_, "object": obj})
            lines.append(realistic(line) if shape == "live" else line)
    return lines


def build_scheduler(nodes: int, metrics: bool = False) -> Scheduler:
    """A scheduler from the default configuration for SCHED, with ``nodes`` nodes; ``metrics``: recording the
    live scheduler's Prometheus metrics."""
    cfg = load(None, [SCHED])
    sched = Scheduler(cfg, build_registry(cfg), RecordingBinder(), RecordingEventSink(),
                      Metrics(rng=random.Random(0)) if metrics else None, synchronous_binding=True)
    for n in range(nodes):
        sched.on_node_event(ADDED, {"kind": "Node", "metadata": {"name": f"node-{n}", "resourceVersion": "1",
                                                                  "labels": {"kubernetes.io/hostname": f"node-{n}"}},
                                    "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}}})
    return sched


def assume_popped(sched: Scheduler, nodes: int) -> None:
    """What the scheduling cycles do between a pod's ADDED and bound events: pop it, assume it on the node
    its bound event names and finish its binding (no algorithm, nothing timed)."""
    while (qpi := sched.queue.pop(timeout=0)) is not None:
        assumed = qpi.pod.with_node(f"node-{int(qpi.pod.name.rsplit('-', 1)[1]) % nodes}")
        sched.cache.assume_pod(assumed)
        sched.queue.done(assumed.uid)
        sched.cache.finish_binding(assumed)


def replay(pods: int, nodes: int, foreign: float, upto: str = "DELETED", shape: str = "replay",
           assume: bool = False, marks: Any = None, metrics: bool = False) -> tuple[int, float, Scheduler]:
    """(events, CPU seconds, the scheduler) for one replay into a fresh scheduler with ``nodes`` nodes;
    ``upto`` stops after that phase (ADDED, BOUND, RUNNING or DELETED). ``assume``: our pods are assumed
    after the ADDED phase (``assume_popped``). ``marks``: the cgmark shim, one callgrind dump per phase.
    ``metrics``: as ``build_scheduler``'s."""
    sched = build_scheduler(nodes, metrics)
    stream = PodStream(api=None, on_event=sched.on_pod_event)  # type: ignore[arg-type]
    lines = watch_lines(pods, nodes, foreign, shape)
    rv = ""
    cpu = 0.0
    policy = gcpolicy.install()  # the collector as the live scheduler runs it once synced
    try:
        for phase in PHASES[: PHASES.index(upto) + 1]:
            first = PHASES.index(phase) * pods
            if phase == "BOUND" and assume:
                assume_popped(sched, nodes)
            if marks is not None:
                marks.cgmark_start()
            t0 = time.process_time()  # CPU, not wall: the machine is shared
            for line in lines[first:first + pods]:
                rv = stream._handle_line(line, rv)
            cpu += time.process_time() - t0
            if marks is not None:
                marks.cgmark_stop()
    finally:
        gcpolicy.uninstall(policy)
    return pods * (PHASES.index(upto) + 1), cpu, sched


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--foreign", type=float, default=0.0, help="fraction of pods of another scheduler")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--shape", choices=SHAPES, default="live", help="live-shaped lines, or the short ones")
    p.add_argument("--no-assume", action="store_true", help="bound events find pending pods, not assumed ones")
    p.add_argument("--metrics", action="store_true", help="record the Prometheus metrics, as the live scheduler")
    p.add_argument("--callgrind", action="store_true",
                   help="under `valgrind --tool=callgrind --instr-atstart=no`: one dump per phase (cgmark.c)")
    args = p.parse_args()
    marks = None
    if args.callgrind:
        with tempfile.TemporaryDirectory() as tmp:
            marks = ctypes.CDLL(build_shim(tmp, "cgmark"))
    best = min(replay(args.pods, args.nodes, args.foreign, shape=args.shape, assume=not args.no_assume,
                      marks=marks, metrics=args.metrics)[1] for _ in range(args.repeat))
    events = args.pods * 4
    print(f"{events} events, best of {args.repeat}: {best:.3f} CPU s, {best / events * 1e6:.1f} CPU us/event")


if __name__ == "__main__":
    main()
