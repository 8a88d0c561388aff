"""``python -m e2e.perf.lab.inproc``: the scheduling loop alone, in process, without an API server.

A Scheduler with the offline writer (scheduler/whatif/offline.py) gets ``--nodes`` nodes shaped like
scheduler_perf's node-default.yaml (3 zones) and the workload's pods (init pods, then the measured
ones); every binding is confirmed by the MODIFIED event the watch would deliver. A workload with
PriorityClasses (PreemptionBasic) gets its pods' ``spec.priority`` set as the Priority admission plugin
would, and preempts synchronously (the victims' deletions delivered at once, as ``simulate`` does), so the
loop measures the preemptors' dry runs and evictions without a worker thread. A DRA workload also gets
its DeviceClass, one ResourceSlice per node and the claims allocated at set-up (e2e/perf/dra.py's shapes);
a pod made from the claim template arrives as live: the pod, its claim (what the resourceclaim controller
makes, scheduler/whatif/dra_offline.py), then the pod naming it in ``status.resourceClaimStatuses``. The
claim status writes of PreBind come back at once as the watch's MODIFIED events. ``--dra-shape`` gives the
template workload the objects of upstream's FirstAvailable, Partitionable or PartitionableBacktracking. It
reports the CPU seconds per 1000 measured pods, the number the scheduling-loop optimisations are judged by; the
machine is shared, so compare variants alternately over several runs (``--repeat``) and take medians.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import heapq
import itertools
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from e2e.cluster.cluster import node_manifest
from e2e.perf import workloads as wl
from e2e.perf.dra import plan_allocations
from e2e.perf.lab.shims import build_shim
from e2e.perf.schedulers import py_scheduler_config
from e2e.perf.workloads import INIT_NAMESPACE, MEASURE_NAMESPACE, WORKLOADS
from scheduler.app import gcpolicy
from scheduler.app.logging import configure
from scheduler.config.load import build_registry, load, load_dict
from scheduler.eventhandlers import ADDED, MODIFIED
from scheduler.framework.features import Features
from scheduler.metrics import Metrics
from scheduler.scheduler import Scheduler
from scheduler.whatif.dra_offline import make_template_claims
from scheduler.whatif.offline import OfflineWriter, RecordingBinder, RecordingEventSink

SCHEDULER_NAME = "py-scheduler"
NO_DEVICES_CLASS = "no-devices-class"
# --dra-shape: upstream's DRA cases beside SchedulingWithResourceClaimTemplate (dra/prioritizedlist and
# dra/partitionabledevices), with the template workload's pods
DRA_SHAPES = ("basic", "first-available", "partitionable", "partitionable-backtracking")
# --callgrind: cycles between two housekeepings (live, once a second: 150-350 pods/s on 2 cores).
CALLGRIND_HOUSEKEEPING = 250


def _pod(template: dict[str, Any], namespace: str, i: int, priorities: dict[str, int] | None = None) -> dict[str, Any]:
    meta = {**template.get("metadata", {}), "name": f"pod-{i}", "namespace": namespace,
            "uid": f"uid-{namespace}-{i}", "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z"}
    spec = {**template["spec"], "schedulerName": SCHEDULER_NAME}
    if priorities and spec.get("priorityClassName") in priorities:  # what the Priority admission plugin sets
        spec["priority"] = priorities[spec["priorityClassName"]]
    return {**template, "metadata": meta, "spec": spec}


def build(nodes: int, config_path: str | None, seed: int, workload: str = "SchedulingBasic",
          metrics: bool = False, dra_shape: str = "basic") -> Scheduler:
    """A Scheduler that binds synchronously into its own cache, with ``nodes`` default-shaped nodes and the
    workload's Services; without ``config_path``, the profile the live benchmark gives py-scheduler.
    ``metrics``: with the live scheduler's Prometheus metrics (recorded, folded once a second)."""
    w = WORKLOADS[workload]
    if config_path is None and w.py_score_plugins:
        cfg = load_dict(py_scheduler_config(SCHEDULER_NAME, w.py_score_plugins), [SCHEDULER_NAME])
    else:
        cfg = load(config_path, [SCHEDULER_NAME])
    writer = OfflineWriter()
    sched = Scheduler(cfg, build_registry(cfg), RecordingBinder(), RecordingEventSink(),
                      Metrics(rng=random.Random(seed)) if metrics else None, writer=writer,
                      synchronous_binding=True, rng=random.Random(seed),
                      features=Features(enable_async_preemption=not w.priority_classes))
    writer.connect(sched)
    for i in range(nodes):
        sched.on_node_event(ADDED, node_manifest(f"node-{i}", i, zones=3, now="2026-01-01T00:00:00Z"))
    for make in w.services:
        svc = make()
        svc["metadata"] = {**svc["metadata"], "namespace": MEASURE_NAMESPACE, "uid": "svc-uid", "resourceVersion": "1"}
        sched.on_object_event("Service", ADDED, svc)
    if w.dra is not None:
        _dra_setup(sched, w.dra, nodes, dra_shape)
    return sched


def _stamped(obj: dict[str, Any], uid: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "uid": uid, "resourceVersion": "1",
                                "creationTimestamp": "2026-01-01T00:00:00Z"}}


def _counters(names: list[str], value: str = "1") -> dict[str, dict[str, str]]:
    return {name: {"value": value} for name in names}


def _partitionable_slices(index: int, node: str, backtracking: bool) -> list[dict[str, Any]]:
    """templates/resourceslice-partitionable{,-backtracking}-{countersets,devices}.yaml: one pool of two
    slices, the counter sets and the devices consuming them (2 devices of 2 counters each; or 8 devices of
    one cpu counter and 10Gi of 70Gi memory, the first 20Gi)."""
    pool = {"name": f"resourceslice-{index}", "generation": 1, "resourceSliceCount": 2}
    if backtracking:
        sets = [{"name": "counter-set-for-cpu", "counters": _counters([f"cpu{k}" for k in range(1, 9)])},
                {"name": "counter-set-for-mem", "counters": _counters(["mem"], "70Gi")}]
        devices = [{"name": f"device-{k}", "consumesCounters": [
            {"counterSet": "counter-set-for-cpu", "counters": _counters([f"cpu{k}"])},
            {"counterSet": "counter-set-for-mem", "counters": _counters(["mem"], "20Gi" if k == 1 else "10Gi")}]}
            for k in range(1, 9)]
    else:
        sets = [{"name": "counter-set", "counters": _counters([f"counter{k}" for k in range(1, 5)])}]
        devices = [{"name": f"device-{d}", "consumesCounters": [
            {"counterSet": "counter-set", "counters": _counters([f"counter{2 * d - 1}", f"counter{2 * d}"])}]}
            for d in (1, 2)]
    spec = {"pool": pool, "driver": wl.DRA_DRIVER, "nodeName": node}
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-{index}"},
             "spec": {**spec, **extra}}
            for name, extra in (("resourceslice-countersets", {"sharedCounters": sets}),
                                ("resourceslice-devices", {"devices": devices}))]


def _template_requests(shape: str) -> list[dict[str, Any]]:
    """The claim template's requests: resourceclaimtemplate-first-available.yaml (a class without devices
    first), -for-two-devices.yaml (Partitionable), -backtracking.yaml (7 of the 8 partitions)."""
    if shape == "first-available":
        return [{"name": wl.CLAIM_REQUEST, "firstAvailable": [{"name": "sub-0", "deviceClassName": NO_DEVICES_CLASS},
                                                              {"name": "sub-1", "deviceClassName": wl.DEVICE_CLASS}]}]
    count = {"partitionable": 2, "partitionable-backtracking": 7}[shape]
    return [{"name": wl.CLAIM_REQUEST, "exactly": {"deviceClassName": wl.DEVICE_CLASS, "count": count}}]


def _dra_setup(sched: Scheduler, dra: wl.Dra, nodes: int, shape: str = "basic") -> None:
    """The class, one slice per node, the claim template and the claims allocated without pods (dra.setup).
    Another ``shape`` than ``basic``: that upstream case's classes, slices and template instead
    (partitionable ones without claims allocated at set-up, as their empty sizes)."""
    sched.on_object_event("DeviceClass", ADDED, _stamped(wl.device_class(), "class-uid"))
    template = wl.resource_claim_template(MEASURE_NAMESPACE)
    if shape != "basic":
        template["spec"]["spec"]["devices"]["requests"] = _template_requests(shape)
    if shape == "first-available":  # templates/deviceclass-no-devices.yaml
        no_devices = {**wl.device_class(), "metadata": {"name": NO_DEVICES_CLASS}, "spec": {"selectors": [
            {"cel": {"expression": 'device.driver == "no-such-driver.cdi.k8s.io"'}}]}}
        sched.on_object_event("DeviceClass", ADDED, _stamped(no_devices, "no-devices-class-uid"))
    for i in range(nodes):
        if shape.startswith("partitionable"):
            for k, obj in enumerate(_partitionable_slices(i, f"node-{i}", shape == "partitionable-backtracking")):
                sched.on_object_event("ResourceSlice", ADDED, _stamped(obj, f"slice-uid-{i}-{k}"))
        else:
            sched.on_object_event("ResourceSlice", ADDED, _stamped(wl.resource_slice(i, f"node-{i}", dra.devices),
                                                                   f"slice-uid-{i}"))
    sched.on_object_event("ResourceClaimTemplate", ADDED, _stamped(template, "template-uid"))
    if shape.startswith("partitionable"):
        return
    names = [f"node-{i}" for i in range(nodes)]
    for k, (node, device) in enumerate(plan_allocations(names, dra.devices, dra.allocated_claims(nodes))):
        claim = _stamped(wl.resource_claim(k, INIT_NAMESPACE), f"init-claim-uid-{k}")
        claim["status"] = {"allocation": wl.claim_allocation(names[node], f"resourceslice-{node}",
                                                          f"basic-device-{device}")}
        sched.on_object_event("ResourceClaim", ADDED, claim)


def _running(obj: dict[str, Any], node: str) -> dict[str, Any]:
    """The pod as kwok reports it running on ``node`` (the MODIFIED event after the binding's)."""
    status = {"phase": "Running", "podIP": "10.0.0.1", "startTime": "2026-01-01T00:00:02Z",
              "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                              "lastTransitionTime": "2026-01-01T00:00:02Z"}
                             for t in ("PodScheduled", "Initialized", "Ready", "ContainersReady")]}
    return {**obj, "spec": {**obj["spec"], "nodeName": node}, "status": status}


@dataclass
class LoopCost:
    """CPU seconds of the scheduling cycles (the live scheduling thread's share: pops, cycles, housekeeping)
    and of the watch events fed back (the live pod stream's share, as handled; no decoding)."""

    cycles: float = 0.0
    events: float = 0.0


def schedule(sched: Scheduler, pods: list[dict[str, Any]], lag: int = 0, running: bool = False,
             cost: LoopCost | None = None, housekeeping_every: int = 0) -> list[str]:
    """Queue ``pods``, run cycles until the queue is empty; confirm each binding as the watch would.

    ``lag``: the confirming MODIFIED event arrives that many cycles after the binding (0: before the next
    cycle), as live, where dozens of bindings are in flight; ``running``: each pod's MODIFIED event to
    Running follows its confirmation by ``lag`` cycles more, as kwok writes it (each replaces the pod on its
    node, so the next snapshot clones that NodeInfo and the batch re-evaluates it). ``housekeeping_every``: the
    housekeeping runs every that many cycles instead of once a second (a count that is the same however
    slowly the loop runs, as under callgrind)."""
    templates = {(t["metadata"]["namespace"], t["metadata"]["name"]): t
                 for t in sched.objects.list("ResourceClaimTemplate")}
    for i, obj in enumerate(pods):
        with_claims, claims = make_template_claims(obj, templates) if templates else (obj, [])
        sched.on_pod_event(ADDED, obj)
        if claims:  # the resourceclaim controller's claim, then the pod's status naming it
            for claim in claims:
                sched.on_object_event("ResourceClaim", ADDED, claim)
            pods[i] = {**with_claims, "metadata": {**obj["metadata"], "resourceVersion": "2"}}
            sched.on_pod_event(MODIFIED, pods[i])
    by_key = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in pods}
    binder = sched.binder
    assert isinstance(binder, RecordingBinder)
    placed: list[str] = []
    due: list[tuple[int, int, dict[str, Any]]] = []  # a heap of (cycle, sequence, event object)
    seq = itertools.count()
    cost = cost if cost is not None else LoopCost()
    next_housekeeping = time.monotonic() + 1.0
    cycle = 0
    while True:
        t0 = time.thread_time()
        popped = sched.schedule_one(timeout=0)
        if popped and (cycle % housekeeping_every == housekeeping_every - 1 if housekeeping_every
                       else time.monotonic() >= next_housekeeping):  # as live: gauges refreshed, samples folded
            sched.housekeeping()
            next_housekeeping += 1.0
        t1 = time.thread_time()
        cost.cycles += t1 - t0
        if not popped and not due:
            return placed
        cycle += 1
        while binder.bindings:
            key, node = binder.bindings.pop(0)
            obj = by_key[key]
            heapq.heappush(due, (cycle + lag, next(seq), {**obj, "spec": {**obj["spec"], "nodeName": node}}))
            if running:
                heapq.heappush(due, (cycle + 2 * lag, next(seq), _running(obj, node)))
            placed.append(node)
        while due and (due[0][0] <= cycle or not popped):
            sched.on_pod_event(MODIFIED, heapq.heappop(due)[2])
        cost.events += time.thread_time() - t1


def run(workload: str, nodes: int, pods: int, config_path: str | None, seed: int,
        metrics: bool = False, lag: int = 0, running: bool = False,
        marks: Any = None, dra_shape: str = "basic") -> tuple[float, list[str], LoopCost]:
    """CPU seconds per 1000 measured pods, where they went, and the split between cycles and events.
    ``marks``: the loaded cgmark shim (``--callgrind``): its counters cover the measured pods alone, and the
    housekeeping runs every CALLGRIND_HOUSEKEEPING cycles."""
    every = CALLGRIND_HOUSEKEEPING if marks is not None else 0
    w = WORKLOADS[workload]
    n_init, n_pods = w.sizes(nodes, pods)
    sched = build(nodes, config_path, seed, workload, metrics, dra_shape)
    policy = gcpolicy.install()  # as the live scheduler once synced: without it full collections weigh in
    try:
        priorities = dict(w.priority_classes)
        schedule(sched, [_pod(w.init_template(), INIT_NAMESPACE, i, priorities) for i in range(n_init)], lag,
                 running, housekeeping_every=every)
        measured = [_pod(w.measure_template(), MEASURE_NAMESPACE, i, priorities) for i in range(n_pods)]
        cost = LoopCost()
        if marks is not None:
            marks.cgmark_start()
        began = time.process_time()
        placed = schedule(sched, measured, lag, running, cost, every)
        cpu = time.process_time() - began
        if marks is not None:
            marks.cgmark_stop()
    finally:
        gcpolicy.uninstall(policy)
    if len(placed) != n_pods:
        raise SystemExit(f"only {len(placed)}/{n_pods} pods were placed")
    return cpu * 1000 / n_pods, placed, LoopCost(cost.cycles * 1000 / n_pods, cost.events * 1000 / n_pods)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="SchedulingBasic", choices=sorted(WORKLOADS))
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=3000)
    ap.add_argument("--config", default=None,
                    help="a KubeSchedulerConfiguration file (default: the profile the live benchmark runs)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log-level", default="WARNING", help="the scheduler's log level (INFO logs every binding)")
    ap.add_argument("--metrics", action="store_true", help="record the Prometheus metrics, as the live scheduler")
    ap.add_argument("--lag", type=int, default=0,
                    help="cycles between a binding and its confirming watch event (live: dozens in flight)")
    ap.add_argument("--running", action="store_true",
                    help="also deliver each pod's MODIFIED to Running, --lag cycles after its confirmation")
    ap.add_argument("--callgrind", action="store_true",
                    help="under `valgrind --tool=callgrind --instr-atstart=no`: count the measured pods alone "
                    f"(cgmark.c; housekeeping every {CALLGRIND_HOUSEKEEPING} cycles), printing the placements' hash")
    ap.add_argument("--dra-shape", default="basic", choices=DRA_SHAPES,
                    help="with SchedulingWithResourceClaimTemplate: the slices, classes and claim template of "
                    "FirstAvailable, Partitionable or PartitionableBacktracking instead of its own")
    args = ap.parse_args()
    configure(args.log_level, json_lines=True)
    marks = None
    if args.callgrind:
        with tempfile.TemporaryDirectory() as tmp:
            marks = ctypes.CDLL(build_shim(tmp, "cgmark"))
    results = []
    for _ in range(args.repeat):
        per_1000, placed, split = run(args.workload, args.nodes, args.pods, args.config, args.seed, args.metrics,
                                      args.lag, args.running, marks, args.dra_shape)
        results.append(per_1000)
        if marks is not None:  # decisions must not move: compare this between variants
            print(f"placements {hashlib.sha1(','.join(placed).encode()).hexdigest()[:12]}", flush=True)
        print(f"{args.workload} {args.nodes}/{args.pods}: {per_1000:.3f} CPU s per 1000 pods (cycles "
              f"{split.cycles:.3f}, watch events {split.events:.3f})", flush=True)
    print(f"median {statistics.median(results):.3f} CPU s per 1000 pods over {len(results)} runs")


if __name__ == "__main__":
    main()
