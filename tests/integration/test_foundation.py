"""Issue 2: py-scheduler binds pods end to end on the real local control plane."""

from __future__ import annotations

import re
import subprocess
import time
from collections import Counter

from kubernetes import client

from e2e.cluster.cluster import LocalCluster, build_binaries
from e2e.kube import events_for, node_of, pod_manifest, scheduled_condition, wait_for
from tests.integration.conftest import BASE_NODES, SchedulerProc


def test_control_plane_reports_pinned_version(cluster: LocalCluster) -> None:
    kubectl = build_binaries(build=False) / "kubectl"
    out = subprocess.run(
        [str(kubectl), "--kubeconfig", str(cluster.kubeconfig), "version", "-o", "json"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert '"gitVersion": "v1.37.2"' in out


def test_binds_100_pods_across_zones(core: client.CoreV1Api, scheduler: SchedulerProc, ns: str) -> None:
    names = [f"p{i}" for i in range(100)]
    for n in names:
        core.create_namespaced_pod(ns, pod_manifest(n))
    wait_for(lambda: all(p.spec.node_name for p in core.list_namespaced_pod(ns).items), 120, 0.5, "100 pods bound")
    pods = core.list_namespaced_pod(ns).items
    per_node = Counter(p.spec.node_name for p in pods)
    assert sum(per_node.values()) == 100
    nodes = {n.metadata.name: n for n in core.list_node().items}
    zones = {nodes[n].metadata.labels["topology.kubernetes.io/zone"] for n in per_node}
    assert len(zones) == 3
    assert len(per_node) == BASE_NODES, "least-allocated scoring spreads 100 small pods over all 10 nodes"
    # kwok plays the kubelet: bound pods become Running.
    wait_for(lambda: all(p.status.phase == "Running" for p in core.list_namespaced_pod(ns).items), 60, 0.5,
             "pods Running")
    assert scheduler.proc.poll() is None


def test_default_scheduler_pod_is_untouched(core: client.CoreV1Api, scheduler: SchedulerProc, ns: str) -> None:
    core.create_namespaced_pod(ns, pod_manifest("theirs", scheduler_name="default-scheduler"))
    core.create_namespaced_pod(ns, pod_manifest("ours"))
    wait_for(lambda: node_of(core, ns, "ours"), 60, what="our pod bound")
    assert node_of(core, ns, "theirs") is None
    assert scheduled_condition(core, ns, "theirs") is None, "no condition may be written on others' pods"


def test_pod_that_fits_nowhere_gets_failed_scheduling(
    api: client.ApiClient, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str
) -> None:
    core.create_namespaced_pod(ns, pod_manifest("huge", cpu="100"))
    cond = wait_for(lambda: scheduled_condition(core, ns, "huge"), 60, what="PodScheduled condition")
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    # The default profile's PostFilter plugins append their verdicts: no node can ever hold 100 cpus.
    m = re.fullmatch(r"0/(\d+) nodes are available: (\d+) Insufficient cpu\. "
                     r"preemption: 0/(\d+) nodes are available: (\d+) Preemption is not helpful for scheduling\.",
                     cond.message)
    assert m, cond.message
    assert len(set(m.groups())) == 1
    ev = wait_for(lambda: events_for(api, ns, "huge", "FailedScheduling"), 60, what="FailedScheduling event")
    assert ev[0].type == "Warning"
    assert ev[0].note == cond.message
    assert ev[0].reporting_controller == "py-scheduler"


def test_pod_deleted_while_pending_leaves_no_error_loop(
    core: client.CoreV1Api, scheduler: SchedulerProc, ns: str
) -> None:
    core.create_namespaced_pod(ns, pod_manifest("doomed", cpu="100"))
    wait_for(lambda: scheduled_condition(core, ns, "doomed"), 60, what="doomed pod attempted")
    core.delete_namespaced_pod("doomed", ns, grace_period_seconds=0)
    wait_for(lambda: not [p for p in core.list_namespaced_pod(ns).items if p.metadata.name == "doomed"], 30,
             what="pod gone")
    core.create_namespaced_pod(ns, pod_manifest("after"))
    wait_for(lambda: node_of(core, ns, "after"), 60, what="a later pod bound")
    # The watch delivered the deletion before the later pod's creation; from here on, one full max
    # backoff (10 s) must pass without any attempt for the deleted pod.
    before = scheduler.log_text().count(f"{ns}/doomed")
    time.sleep(11)
    after_text = scheduler.log_text()
    assert after_text.count(f"{ns}/doomed") == before, "the deleted pod must not be retried"
    assert '"level": "error"' not in after_text
    assert scheduler.proc.poll() is None
