"""Parity with upstream: kube-scheduler v1.34.10 (built from source) and py-scheduler receive the
same pods in the same cluster; their verdicts and FailedScheduling messages must be identical.

DefaultPreemption and DynamicResources are disabled on the kube side because py-scheduler has no
preemption and no DRA yet: their PostFilter messages ("preemption: ...", "no new claims to
deallocate") would otherwise be appended to kube-scheduler's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster.cluster import LocalCluster, build_binaries
from e2e.kube import node_of, pod_manifest, scheduled_condition, wait_for
from e2e.process import start_kube_scheduler, stop_scheduler
from tests.integration.conftest import SchedulerProc, temporary_nodes

KUBE, PY = "kube-parity", "py-parity"


@pytest.fixture(scope="module")
def both(
    cluster: LocalCluster, workdir: Path, start_py_scheduler: Callable[..., SchedulerProc]
) -> Iterator[None]:
    kube = start_kube_scheduler(build_binaries(build=False), cluster.kubeconfig, workdir, KUBE,
                                plugins={"multiPoint": {"disabled": [{"name": "DefaultPreemption"},
                                                                          {"name": "DynamicResources"}]}})
    start_py_scheduler("--scheduler-name", PY, name="parity")
    try:
        yield
    finally:
        stop_scheduler(kube)


def twin(core: client.CoreV1Api, ns: str, name: str, **kw: Any) -> tuple[str, str]:
    for sched in (KUBE, PY):
        core.create_namespaced_pod(ns, pod_manifest(f"{name}-{sched}", scheduler_name=sched, **kw))
    return f"{name}-{KUBE}", f"{name}-{PY}"


def messages(core: client.CoreV1Api, ns: str, kube_pod: str, py_pod: str) -> tuple[str, str]:
    kc = wait_for(lambda: scheduled_condition(core, ns, kube_pod), 60, what=f"{kube_pod} attempted")
    pc = wait_for(lambda: scheduled_condition(core, ns, py_pod), 60, what=f"{py_pod} attempted")
    assert (kc.status, kc.reason) == ("False", "Unschedulable")
    assert (pc.status, pc.reason) == ("False", "Unschedulable")
    return kc.message, pc.message


CASES: list[tuple[str, dict[str, Any]]] = [
    ("cpu", {"cpu": "100"}),
    ("memory", {"memory": "1Ti"}),
    ("selector", {"node_selector": {"no-such-label": "x"}}),
    ("affinity", {"extra_spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                                     "values": ["zone-9"]}]}]}}}}}),
    ("nodename-and-cpu", {"cpu": "100", "extra_spec": {"nodeName": ""}}),
]


@pytest.mark.parametrize(("case", "kw"), CASES, ids=[c for c, _ in CASES])
def test_failure_messages_match_upstream(
    core: client.CoreV1Api, ns: str, both: None, case: str, kw: dict[str, Any]
) -> None:
    kube_pod, py_pod = twin(core, ns, case, **kw)
    kube_msg, py_msg = messages(core, ns, kube_pod, py_pod)
    assert py_msg == kube_msg


def test_taints_and_resources_histogram_matches_upstream(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None
) -> None:
    with (
        temporary_nodes(str(cluster.kubeconfig), 2, "parity-gpu", cpu="64", taints=["dedicated=gpu:NoSchedule"]),
        temporary_nodes(str(cluster.kubeconfig), 1, "parity-soft", cpu="64", taints=["team=a:PreferNoSchedule",
                                                                                    "hard:NoExecute"]),
    ):
        kube_pod, py_pod = twin(core, ns, "mixed", cpu="32")
        kube_msg, py_msg = messages(core, ns, kube_pod, py_pod)
        assert py_msg == kube_msg
        assert "untolerated taint" in py_msg


def test_unique_best_node_is_chosen_by_both(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None
) -> None:
    """Preferred node affinity makes one node the clear winner for both schedulers."""
    with temporary_nodes(str(cluster.kubeconfig), 3, "parity-pref", cpu="8", labels={"parity/pref": "x"}) as names:
        core.patch_node(names[1], {"metadata": {"labels": {"parity/best": "yes"}}})
        spec = {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "parity/pref", "operator": "Exists"}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": {"matchExpressions": [
                    {"key": "parity/best", "operator": "In", "values": ["yes"]}]}}]}}}
        kube_pod, py_pod = twin(core, ns, "pref", extra_spec=spec)
        kube_node = wait_for(lambda: node_of(core, ns, kube_pod), 60, what="kube pod bound")
        py_node = wait_for(lambda: node_of(core, ns, py_pod), 60, what="py pod bound")
        assert kube_node == py_node == names[1]
        for p in (kube_pod, py_pod):
            core.delete_namespaced_pod(p, ns, grace_period_seconds=0)
