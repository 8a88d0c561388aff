"""A seed-era Policy read from a ConfigMap (`run --policy-configmap`) on the real control plane: the
translated profile binds pods and reports its predicates' reasons in FailedScheduling."""

from __future__ import annotations

import json
from collections.abc import Callable

from kubernetes import client

from e2e.kube import events_for, node_of, pod_manifest, wait_for
from tests.integration.conftest import SchedulerProc

SCHED = "policy-sched"
POLICY = {
    "kind": "Policy", "apiVersion": "v1",
    "predicates": [{"name": "PodFitsResources"}, {"name": "MatchNodeSelector"}, {"name": "PodFitsHostPorts"}],
    "priorities": [{"name": "LeastRequestedPriority", "weight": 1},
                   {"name": "BalancedResourceAllocation", "weight": 1}],
}


def test_policy_from_a_config_map_schedules(
    core: client.CoreV1Api, api: client.ApiClient, ns: str, start_py_scheduler: Callable[..., SchedulerProc],
) -> None:
    core.create_namespaced_config_map(ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "policy"},
                                           "data": {"policy.cfg": json.dumps(POLICY)}})
    proc = start_py_scheduler("--policy-configmap", "policy", "--policy-configmap-namespace", ns,
                              "--scheduler-name", SCHED, name="policy")
    wait_for(lambda: "py-scheduler started" in proc.log_text(), 60, what="policy scheduler initial sync")
    core.create_namespaced_pod(ns, pod_manifest("fits", scheduler_name=SCHED))
    core.create_namespaced_pod(ns, pod_manifest("nowhere", scheduler_name=SCHED, node_selector={"it/none": "x"}))
    wait_for(lambda: node_of(core, ns, "fits"), 60, what="pod bound by the Policy's profile")
    events = wait_for(lambda: events_for(api, ns, "nowhere", "FailedScheduling"), 60, what="FailedScheduling")
    assert "node(s) didn't match Pod's node affinity/selector" in events[0].note
