"""``python -m e2e.perf.lab.gangpreempt``: one gang-preemption cycle in process (GangPreemptionAffinity's shape).

A Scheduler with the offline writer gets ``--nodes`` nodes (4 CPU), one high-priority anchor per node, ``--victims``
low-priority pods spread over the nodes (all carrying the anchors' five labels, as upstream's templates) and one gang
of ``--members`` pods of 3970m with required pod affinity to those labels, so every victim must go. It runs the
gang's first pod-group cycle (the failed attempt, then PodGroupPostFilter's evaluation and the synchronous evictions)
and prints that cycle's CPU seconds and a digest of the victims and nominations: compare variants alternately
(the machine is shared) and check that the digest does not change. ``--profile`` prints cProfile's top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import random
import time
from typing import Any

from scheduler.app.logging import configure
from scheduler.config.defaults import set_workload_gates
from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED
from scheduler.framework.features import Features
from scheduler.metrics import Metrics
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import OfflineWriter, RecordingBinder, RecordingEventSink

LABELS = {"app": "blue", "label1": "value1", "label2": "value2", "label3": "value3", "label4": "value4"}
SCHEDULER_NAME = "py-scheduler"


def _node(i: int) -> dict[str, Any]:
    name = f"node-{i}"
    capacity = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "resourceVersion": "1", "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": capacity, "capacity": capacity}}


def _pod(namespace: str, name: str, cpu: str, memory: str, priority: int, *, node: str = "",
         labels: dict[str, str] | None = None, host_port: int = 0, group: str = "",
         affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "pause", "image": "pause",
                                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    if host_port:
        container["ports"] = [{"containerPort": 80, "hostPort": host_port}]
    spec: dict[str, Any] = {"schedulerName": SCHEDULER_NAME, "priority": priority, "containers": [container]}
    if node:
        spec["nodeName"] = node
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if affinity:
        spec["affinity"] = affinity
    status: dict[str, Any] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"} if node else {"phase": "Pending"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}", "resourceVersion": "1",
                         "creationTimestamp": "2026-01-01T00:00:00Z", "labels": dict(labels or {})},
            "spec": spec, "status": status}


def build(nodes: int, victims: int, members: int) -> tuple[Scheduler, RecordingEventSink]:
    """The cluster above, every pod but the gang's already bound."""
    set_workload_gates(True, False)
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{"schedulerName": SCHEDULER_NAME}]})
    sink, writer = RecordingEventSink(), OfflineWriter()
    s = Scheduler(cfg, build_registry(cfg), RecordingBinder(), sink, Metrics(), synchronous_binding=True,
                  rng=random.Random(1), writer=writer,
                  features=Features(enable_async_preemption=False, enable_generic_workload=True))
    writer.connect(s)
    for i in range(nodes):
        s.on_node_event(ADDED, _node(i))
    for i in range(nodes):
        s.on_pod_event(ADDED, _pod("gang-preempt-2", f"anchor-{i}", "10m", "100Mi", 9999999, node=f"node-{i}",
                                   labels=LABELS, host_port=7000))
    per_node = max(1, victims // max(1, nodes))
    for i in range(victims):
        s.on_pod_event(ADDED, _pod("gang-preempt-1", f"low-{i}", "40m", "100Mi", 0, node=f"node-{i % nodes}",
                                   labels=LABELS, host_port=8000 + (i // nodes) % per_node))
    s.on_pod_group_event(ADDED, {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "gang-0", "namespace": "gang-preempt-0", "uid": "uid-gang-0", "resourceVersion": "1"},
        "spec": {"priority": 8888888, "schedulingPolicy": {"gang": {"minCount": members}}}})
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": LABELS}, "topologyKey": "kubernetes.io/hostname", "namespaceSelector": {}}]}}
    for i in range(members):
        s.on_pod_event(ADDED, _pod("gang-preempt-0", f"pod-gang-{i}", "3970m", "500Mi", 8888888, group="gang-0",
                                   affinity=affinity))
    return s, sink


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--victims", type=int, default=1000)
    p.add_argument("--members", type=int, default=100)
    p.add_argument("--profile", action="store_true", help="print cProfile's top 40 by own time")
    args = p.parse_args()
    configure("WARNING")
    s, sink = build(args.nodes, args.victims, args.members)
    prof = cProfile.Profile() if args.profile else None
    began = time.process_time()
    if prof is not None:
        prof.enable()
    s.schedule_one(timeout=0)
    if prof is not None:
        prof.disable()
    cpu = time.process_time() - began
    preempted = sorted(key for key, _, reason, _ in sink.events if reason == "Preempted")
    nominated = sorted(sink.nominated.items())
    digest = hashlib.sha1(repr((preempted, nominated)).encode()).hexdigest()[:12]
    print(f"cycle CPU {cpu:.2f} s; preempted {len(preempted)}; nominated {len(nominated)}; digest {digest}")
    if prof is not None:
        pstats.Stats(prof).sort_stats("tottime").print_stats(40)


if __name__ == "__main__":
    main()
