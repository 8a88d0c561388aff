"""Parity with upstream: kube-scheduler v1.34.10 (built from source) and py-scheduler receive the
same pods in the same cluster; their verdicts and FailedScheduling messages must be identical.

Both run their default profiles, so every message carries the PostFilter verdicts of
DynamicResources ("no new claims to deallocate") and DefaultPreemption ("preemption: ...").
Preemption itself is compared on two identical node groups, one per scheduler, so the two
preemptors never compete for the same victims.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch

from e2e.cluster.cluster import LocalCluster, build_binaries
from e2e.kube import node_of, pod_manifest, scheduled_condition, wait_for
from e2e.process import start_kube_scheduler, stop_scheduler
from tests.integration.conftest import SchedulerProc, temporary_nodes

KUBE, PY = "kube-parity", "py-parity"


@pytest.fixture(scope="module")
def both(
    cluster: LocalCluster, workdir: Path, start_py_scheduler: Callable[..., SchedulerProc]
) -> Iterator[None]:
    kube = start_kube_scheduler(build_binaries(build=False), cluster.kubeconfig, workdir, KUBE)
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
    # NodeAffinity's PreFilter rejects (UnschedulableAndUnresolvable) before DynamicResources' PreFilter
    # runs; upstream's DynamicResources PostFilter then fails reading its state ("not found").
    ("matchfields-conflict", {"extra_spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["a"]},
            {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}}}}}),
]


@pytest.mark.parametrize(("case", "kw"), CASES, ids=[c for c, _ in CASES])
def test_failure_messages_match_upstream(
    core: client.CoreV1Api, ns: str, both: None, case: str, kw: dict[str, Any]
) -> None:
    kube_pod, py_pod = twin(core, ns, case, **kw)
    kube_msg, py_msg = messages(core, ns, kube_pod, py_pod)
    assert py_msg == kube_msg
    if case == "matchfields-conflict":
        assert py_msg.endswith(": pod affinity terms conflict. not found")
    else:
        assert "no new claims to deallocate, preemption: " in py_msg


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


@pytest.fixture(scope="module")
def parity_priority_classes(api: client.ApiClient) -> Iterator[None]:
    sched_api = client.SchedulingV1Api(api)
    for name, value, policy in (("it-low", 10, None), ("it-high", 1000, None), ("it-high-never", 1000, "Never")):
        body: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                "metadata": {"name": name}, "value": value}
        if policy:
            body["preemptionPolicy"] = policy
        try:
            sched_api.create_priority_class(body)
        except client.ApiException as exc:
            if exc.status != 409:
                raise
    yield


def first_unschedulable_message(core: client.CoreV1Api, ns: str, name: str, since: str) -> str:
    """The message of the first PodScheduled=False condition the pod got after resourceVersion ``since``."""
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, ns, field_selector=f"metadata.name={name}",
                       resource_version=since, timeout_seconds=60):
        for c in ev["object"].status.conditions or []:
            if c.type == "PodScheduled" and c.status == "False":
                w.stop()
                return str(c.message)
    raise AssertionError(f"{name} got no PodScheduled=False condition")


def test_preemption_matches_upstream(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None, parity_priority_classes: None,
) -> None:
    """Per scheduler: node A holds a low-priority pod, node B a pod as important as the preemptor.
    Both preemptors must evict A's pod, be nominated to A and land there, after the same message;
    then a pod that cannot preempt anyone, and one that may not preempt, get the same messages."""
    kubeconfig = str(cluster.kubeconfig)
    with ExitStack() as stack:
        nodes = {side: stack.enter_context(temporary_nodes(kubeconfig, 2, f"pre-{side}", cpu="2",
                                                           labels={"parity/side": side}))
                 for side in (KUBE, PY)}
        for side, (a, b) in nodes.items():
            grace = {"terminationGracePeriodSeconds": 5}
            core.create_namespaced_pod(ns, pod_manifest(f"victim-{side}", cpu="1500m", priority_class="it-low",
                                                        extra_spec={"nodeName": a, **grace}))
            core.create_namespaced_pod(ns, pod_manifest(f"peer-{side}", cpu="1500m", priority_class="it-high",
                                                        extra_spec={"nodeName": b, **grace}))
        first: dict[str, str] = {}
        for side in (KUBE, PY):
            created = core.create_namespaced_pod(ns, pod_manifest(
                f"preemptor-{side}", scheduler_name=side, cpu="1", priority_class="it-high",
                node_selector={"parity/side": side}))
            first[side] = first_unschedulable_message(core, ns, f"preemptor-{side}", created.metadata.resource_version)
        assert first[PY] == first[KUBE]
        assert "2 Insufficient cpu" in first[PY] and "preemption" not in first[PY]
        for side, (a, _) in nodes.items():
            assert wait_for(lambda s=side: node_of(core, ns, f"preemptor-{s}"), 90, what=f"{side} preemptor bound") == a
            assert core.read_namespaced_pod(f"preemptor-{side}", ns).status.nominated_node_name == a
            assert wait_for(lambda s=side: _gone(core, ns, f"victim-{s}"), 60, what=f"{side} victim deleted")
        for case, cls in (("stuck", "it-low"), ("polite", "it-high-never")):
            msgs = {}
            for side in (KUBE, PY):
                created = core.create_namespaced_pod(ns, pod_manifest(
                    f"{case}-{side}", scheduler_name=side, cpu="1500m", priority_class=cls,
                    node_selector={"parity/side": side}))
                msgs[side] = first_unschedulable_message(core, ns, f"{case}-{side}", created.metadata.resource_version)
            assert msgs[PY] == msgs[KUBE], case
            expected = {"stuck": "2 No preemption victims found for incoming pod",
                        "polite": "preemption: not eligible due to preemptionPolicy=Never."}[case]
            assert expected in msgs[PY], msgs[PY]
        for side in (KUBE, PY):
            for name in (f"preemptor-{side}", f"peer-{side}", f"stuck-{side}", f"polite-{side}"):
                core.delete_namespaced_pod(name, ns, grace_period_seconds=0)


def _gone(core: client.CoreV1Api, ns: str, name: str) -> bool:
    try:
        core.read_namespaced_pod(name, ns)
    except client.ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False
