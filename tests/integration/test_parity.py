"""Parity with upstream: kube-scheduler v1.37.2 (built from source) and py-scheduler receive the
same pods in the same cluster; their verdicts and FailedScheduling messages must be identical.

``DISABLED_PLUGINS`` is the knob: those plugins are disabled in both schedulers' profiles. It is empty: both
run their default profiles, so every failure message compared here ends with the PostFilter verdicts of
DynamicResources (in v1.37 none for a pod without claims) and DefaultPreemption ("preemption: ..."). Preemption
itself (victims, nomination) is compared in test_preemption.py.

Failure cases create both twins at once (neither binds, so they cannot disturb each other) and compare the
PodScheduled messages once both schedulers have settled on one. Success cases schedule the kube twin,
delete it, then schedule the py twin, so the first never takes room, ports or a topology domain from the
second; each is built so one node is the unique answer. Pods placed on nodes by the tests (``spec.nodeName``)
are existing workload that both schedulers only count.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster.cluster import LocalCluster, build_binaries
from e2e.kube import events_for, gone, node_of, pod_manifest, scheduled_condition, wait_for
from e2e.process import start_kube_scheduler, stop_scheduler
from tests.integration.conftest import SchedulerProc, temporary_nodes

KUBE, PY = "kube-parity", "py-parity"
NOBODY = "parity-nobody"  # schedulerName of pods the tests place themselves (no scheduler serves it)

DISABLED_PLUGINS: list[str] = []
PLUGINS = {"multiPoint": {"disabled": [{"name": n} for n in DISABLED_PLUGINS]}}

HOSTNAME, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"


@pytest.fixture(scope="module")
def both(
    cluster: LocalCluster, workdir: Path, start_py_scheduler: Callable[..., SchedulerProc]
) -> Iterator[None]:
    kube = start_kube_scheduler(build_binaries(build=False), cluster.kubeconfig, workdir, KUBE, plugins=PLUGINS)
    py_config = workdir / "py-parity.yaml"
    py_config.write_text(json.dumps({  # JSON is YAML
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": PY, "plugins": PLUGINS}],
    }))
    start_py_scheduler("--config", str(py_config), name="parity")
    try:
        yield
    finally:
        stop_scheduler(kube)


# ----- helpers ----------------------------------------------------------------------------------------


# The taints the node lifecycle controller puts on a node whose kwok heartbeat came late (a loaded 2-core
# machine). Such a taint can land between the two twins' attempts; neither scheduler then tries again (no
# plugin that rejected the pod registers a node gaining a taint), so the messages would differ for good
# although each scheduler was right for the cluster it saw. Every twin tolerates them: they are the
# environment's, not the case's (a case's own taints are other keys).
LIFECYCLE_TOLERATIONS = [{"key": key, "operator": "Exists", "effect": "NoSchedule"}
                         for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]


def scheduled_pod(name: str, sched: str, **kw: Any) -> dict[str, Any]:
    """A pod for scheduler ``sched``, tolerating the node lifecycle taints."""
    manifest = pod_manifest(name, scheduler_name=sched, **kw)
    spec = manifest["spec"]
    spec["tolerations"] = [*spec.get("tolerations", []), *LIFECYCLE_TOLERATIONS]
    return manifest


def twin(core: client.CoreV1Api, ns: str, name: str, **kw: Any) -> tuple[str, str]:
    for sched in (KUBE, PY):
        core.create_namespaced_pod(ns, scheduled_pod(f"{name}-{sched}", sched, **kw))
    return f"{name}-{KUBE}", f"{name}-{PY}"


def attempted(core: client.CoreV1Api, ns: str, kube_pod: str, py_pod: str) -> tuple[str, str]:
    kc = wait_for(lambda: scheduled_condition(core, ns, kube_pod), 60, what=f"{kube_pod} attempted")
    pc = wait_for(lambda: scheduled_condition(core, ns, py_pod), 60, what=f"{py_pod} attempted")
    assert (kc.status, kc.reason) == ("False", "Unschedulable"), kc
    assert (pc.status, pc.reason) == ("False", "Unschedulable"), pc
    assert pc.observed_generation == kc.observed_generation, (kc, pc)  # PodObservedGenerationTracking
    return kc.message, pc.message


def messages(core: client.CoreV1Api, ns: str, kube_pod: str, py_pod: str, settle: float = 20.0) -> tuple[str, str]:
    """Both FailedScheduling messages. A scheduler whose watch delivered the cluster's last change after its
    first attempt retries on that event, so differing messages are re-read for up to ``settle`` seconds."""
    kube_msg, py_msg = attempted(core, ns, kube_pod, py_pod)
    deadline = time.monotonic() + settle
    while kube_msg != py_msg and time.monotonic() < deadline:
        time.sleep(0.5)
        kube_msg, py_msg = attempted(core, ns, kube_pod, py_pod)
    return kube_msg, py_msg


def differing(core: client.CoreV1Api, ns: str, kube_pod: str, py_pod: str) -> str:
    """What a failed comparison leaves to go on: each twin's FailedScheduling notes in order (did a scheduler
    retry?) and the taints the API server holds on every node now."""
    lines = []
    for pod in (kube_pod, py_pod):
        notes = [(e.event_time or e.deprecated_last_timestamp, e.note)
                 for e in events_for(core.api_client, ns, pod, "FailedScheduling")]
        lines.append(f"{pod}: {sorted(notes, key=lambda n: str(n[0]))}")
    for node in core.list_node().items:
        taints = [(t.key, t.effect, t.time_added) for t in node.spec.taints or []]
        lines.append(f"node {node.metadata.name} rv={node.metadata.resource_version} taints={taints}")
    return "\n".join(lines)


def compare(core: client.CoreV1Api, ns: str, name: str, *expected: str, **kw: Any) -> str:
    """Create twins, assert identical messages containing ``expected``; return the message."""
    kube_pod, py_pod = twin(core, ns, name, **kw)
    kube_msg, py_msg = messages(core, ns, kube_pod, py_pod)
    assert py_msg == kube_msg, differing(core, ns, kube_pod, py_pod)
    for needle in expected:
        assert needle in kube_msg, kube_msg
    return kube_msg


def placed_by_both(core: client.CoreV1Api, ns: str, name: str, **kw: Any) -> tuple[str, str]:
    """Schedule the kube twin, remove it, then schedule the py twin; return both nodes."""
    nodes: list[str] = []
    for sched in (KUBE, PY):
        pod = f"{name}-{sched}"
        core.create_namespaced_pod(ns, scheduled_pod(pod, sched, **kw))
        nodes.append(wait_for(lambda pod=pod: node_of(core, ns, pod), 60, what=f"{pod} bound"))
        core.delete_namespaced_pod(pod, ns, grace_period_seconds=0)
        wait_for(lambda pod=pod: gone(core, ns, pod), 60, what=f"{pod} deleted")
    return nodes[0], nodes[1]


def place(core: client.CoreV1Api, ns: str, name: str, node: str, **kw: Any) -> str:
    """An existing pod bound to ``node`` by the test (no scheduler involved)."""
    extra = {"nodeName": node, **kw.pop("extra_spec", {})}
    core.create_namespaced_pod(ns, pod_manifest(name, scheduler_name=NOBODY, extra_spec=extra, **kw))
    return name


def running(core: client.CoreV1Api, ns: str, names: Sequence[str]) -> None:
    """Wait until kwok runs the placed pods, then give both schedulers' watches a moment."""
    for n in names:
        wait_for(lambda n=n: core.read_namespaced_pod(n, ns).status.phase == "Running", 60,
                 what=f"{n} running")
    time.sleep(1.0)


@contextmanager
def pods_removed(core: client.CoreV1Api, ns: str) -> Iterator[None]:
    """Delete every pod of the test namespace on exit (before the test's nodes go away)."""
    try:
        yield
    finally:
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)


def label_nodes(core: client.CoreV1Api, labels: Mapping[str, Mapping[str, str]]) -> None:
    for node, node_labels in labels.items():
        core.patch_node(node, {"metadata": {"labels": dict(node_labels)}})


def histogram(message: str) -> list[str]:
    """The "<count> <reason>" items of a FitError message, in their order (the PostFilter part is cut off)."""
    return message.split(": ", 1)[1].split(". ", 1)[0].rstrip(".").split(", ")


def assert_histogram(message: str, own: Sequence[str], others: int, other_reason: str = AFFINITY_REASON) -> None:
    """The items, sorted as strings ("10 ..." before "2 ..."), are exactly ``own`` (the test's nodes) plus the
    ``others`` nodes outside the test, rejected for ``other_reason`` (the node lifecycle controller's taints
    on a base node are tolerated: LIFECYCLE_TOLERATIONS)."""
    items = histogram(message)
    assert items == sorted(items), message
    assert all(item in items for item in own), message
    rest = [item.split(" ", 1) for item in items if item not in own]
    assert {reason for _, reason in rest} <= {other_reason}, message
    assert sum(int(count) for count, _ in rest) == others, message


def node_count(core: client.CoreV1Api) -> int:
    return len(core.list_node().items)


def node_affinity(*terms: Mapping[str, Any]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [dict(t) for t in terms]}}}}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def host_port_container(port: int, **extra: Any) -> dict[str, Any]:
    return {"name": extra.pop("name", "c"), "image": "registry.k8s.io/pause:3.10",
            "ports": [{"containerPort": port, "hostPort": port}], **extra}


# ----- simple failure messages ------------------------------------------------------------------------

CASES: list[tuple[str, dict[str, Any]]] = [
    ("cpu", {"cpu": "100"}),
    ("memory", {"memory": "1Ti"}),
    ("selector", {"node_selector": {"no-such-label": "x"}}),
    ("affinity", {"extra_spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                                     "values": ["zone-9"]}]}]}}}}}),
    ("nodename-and-cpu", {"cpu": "100", "extra_spec": {"nodeName": ""}}),
    # NotIn every zone OR DoesNotExist on a label every node has: no term matches anywhere.
    ("affinity-notin-doesnotexist", {"extra_spec": node_affinity(
        {"matchExpressions": [expr(ZONE, "NotIn", "zone-0", "zone-1", "zone-2")]},
        {"matchExpressions": [expr(HOSTNAME, "DoesNotExist")]})}),
    # matchFields metadata.name In: PreFilterResult narrows to base-0, the rest are "didn't satisfy plugin".
    ("matchfields-one-node", {"cpu": "100", "extra_spec": node_affinity(
        {"matchFields": [expr("metadata.name", "In", "base-0")]})}),
    ("matchfields-unknown-node", {"extra_spec": node_affinity(
        {"matchFields": [expr("metadata.name", "In", "no-such-node")]})}),
    # Two names ANDed in one term: the PreFilter conflict.
    ("matchfields-conflict", {"extra_spec": node_affinity(
        {"matchFields": [expr("metadata.name", "In", "base-0"), expr("metadata.name", "In", "base-1")]})}),
    ("pod-affinity-no-match", {"extra_spec": {"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"parity-app": "nobody"}}, "topologyKey": ZONE}]}}}}),
    ("extended-resource-nowhere", {"extra_spec": {"containers": [{
        "name": "c", "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}}]}}),
    ("pod-level-cpu", {"cpu": None, "memory": None, "extra_spec": {"resources": {"requests": {"cpu": "100"}}}}),
]

EXPECTED: dict[str, list[str]] = {
    "affinity-notin-doesnotexist": [AFFINITY_REASON],
    "matchfields-one-node": ["1 Insufficient cpu", "node(s) didn't satisfy plugin(s) [NodeAffinity]"],
    "matchfields-unknown-node": ["node(s) didn't satisfy plugin(s) [NodeAffinity]."],
    "matchfields-conflict": ["nodes are available: pod affinity terms conflict."],
    "pod-affinity-no-match": ["node(s) didn't match pod affinity rules."],
    "extended-resource-nowhere": ["Insufficient example.com/gpu."],
    "pod-level-cpu": ["Insufficient cpu."],
}


@pytest.mark.parametrize(("case", "kw"), CASES, ids=[c for c, _ in CASES])
def test_failure_messages_match_upstream(
    core: client.CoreV1Api, ns: str, both: None, case: str, kw: dict[str, Any]
) -> None:
    compare(core, ns, case, *EXPECTED.get(case, []), **kw)


def test_taints_and_resources_histogram_matches_upstream(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None
) -> None:
    with (
        temporary_nodes(str(cluster.kubeconfig), 2, "parity-gpu", cpu="64", taints=["dedicated=gpu:NoSchedule"]),
        temporary_nodes(str(cluster.kubeconfig), 1, "parity-soft", cpu="64", taints=["team=a:PreferNoSchedule",
                                                                                    "hard:NoExecute"]),
        pods_removed(core, ns),
    ):
        compare(core, ns, "mixed", "untolerated taint", cpu="32")


def test_unique_best_node_is_chosen_by_both(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None
) -> None:
    """Preferred node affinity makes one node the clear winner for both schedulers."""
    with temporary_nodes(str(cluster.kubeconfig), 3, "parity-pref", cpu="8", labels={"parity/pref": "x"}) as names:
        core.patch_node(names[1], {"metadata": {"labels": {"parity/best": "yes"}}})
        time.sleep(1.0)  # both schedulers' node watches see the label before the pods exist
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


# ----- node affinity: Gt / Lt parsed as strconv.ParseInt -------------------------------------------------


def test_node_affinity_gt_lt(cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None) -> None:
    """Node labels 3, 5 and "1_0" (a valid label value that ParseInt rejects, Python's int() reads 10)."""
    with temporary_nodes(str(cluster.kubeconfig), 3, "pp-gen", labels={"parity/gen-node": "y"}) as names, \
            pods_removed(core, ns):
        label_nodes(core, {names[0]: {"parity/gen": "3"}, names[1]: {"parity/gen": "5"},
                           names[2]: {"parity/gen": "1_0"}})
        time.sleep(1.0)
        gen_node = {"matchExpressions": [expr("parity/gen-node", "In", "y")]}
        # Gt 6: nothing (the "1_0" node is not 10).
        compare(core, ns, "gt-6", AFFINITY_REASON, extra_spec=node_affinity(
            {"matchExpressions": [*gen_node["matchExpressions"], expr("parity/gen", "Gt", "6")]}))
        # Lt "1_0": the requirement itself does not parse, so the term matches no node.
        compare(core, ns, "lt-underscore", AFFINITY_REASON, extra_spec=node_affinity(
            {"matchExpressions": [*gen_node["matchExpressions"], expr("parity/gen", "Lt", "1_0")]}))
        # Gt 4 and Lt 8: only the "5" node, chosen by both.
        assert placed_by_both(core, ns, "gt-4-lt-8", extra_spec=node_affinity(
            {"matchExpressions": [*gen_node["matchExpressions"], expr("parity/gen", "Gt", "4"),
                                  expr("parity/gen", "Lt", "8")]})) == (names[1], names[1])


# ----- host ports -----------------------------------------------------------------------------------------


def test_host_port_conflicts(cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None) -> None:
    """Port 18080 is held by an app container on one node and by a sidecar (restartable init container) on
    another; a regular init container's port on the third is free again once the pod runs."""
    with temporary_nodes(str(cluster.kubeconfig), 3, "pp-port", labels={"parity/port": "yes"}) as names, \
            pods_removed(core, ns):
        placed = [
            place(core, ns, "holder-app", names[0], extra_spec={"containers": [host_port_container(18080)]}),
            place(core, ns, "holder-sidecar", names[1], extra_spec={
                "initContainers": [host_port_container(18080, name="side", restartPolicy="Always")],
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}),
        ]
        running(core, ns, placed)
        want_port = {"node_selector": {"parity/port": "yes"}, "extra_spec": {
            "containers": [host_port_container(18080)]}}
        # Only the third node is free: both choose it.
        assert placed_by_both(core, ns, "port-free", **want_port) == (names[2], names[2])
        running(core, ns, [place(core, ns, "holder-init", names[2], extra_spec={
            "initContainers": [host_port_container(18081, name="init")],
            "containers": [host_port_container(18080)]})])
        n = node_count(core)
        msg = compare(core, ns, "port-taken", **want_port)
        assert_histogram(msg, ["3 node(s) didn't have free ports for the requested pod ports"], n - 3)
        # The regular init container's port 18081 is not held.
        assert placed_by_both(core, ns, "port-18081", node_selector={HOSTNAME: names[2]}, extra_spec={
            "containers": [host_port_container(18081)]}) == (names[2], names[2])


# ----- inter-pod (anti-)affinity ----------------------------------------------------------------------------


def test_pod_anti_affinity(cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None) -> None:
    """Two nodes run parity-app=web pods (the incoming pod's anti-affinity); the third runs a pod whose
    required anti-affinity repels parity-app=db, the incoming pod's label (the symmetric check)."""
    with temporary_nodes(str(cluster.kubeconfig), 3, "pp-anti", labels={"parity/anti": "yes"}) as names, \
            pods_removed(core, ns):
        placed = [
            place(core, ns, "web-0", names[0], labels={"parity-app": "web"}),
            place(core, ns, "web-1", names[1], labels={"parity-app": "web"}),
            place(core, ns, "no-db", names[2], extra_spec={"affinity": {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"parity-app": "db"}}, "topologyKey": HOSTNAME}]}}}),
        ]
        running(core, ns, placed)
        anti_web = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"parity-app": "web"}}, "topologyKey": HOSTNAME}]}}}
        n = node_count(core)
        msg = compare(core, ns, "anti", labels={"parity-app": "db"}, node_selector={"parity/anti": "yes"},
                      extra_spec=anti_web)
        assert_histogram(msg, ["2 node(s) didn't match pod anti-affinity rules",
                               "1 node(s) didn't satisfy existing pods anti-affinity rules"], n - 3)
        # Without the db label only the web pods repel it: the third node is the one place left.
        assert placed_by_both(core, ns, "anti-ok", labels={"parity-app": "api"}, node_selector={"parity/anti": "yes"},
                              extra_spec=anti_web) == (names[2], names[2])


def test_pod_affinity(cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None) -> None:
    """The first pod of a group (it matches its own required affinity, no pod matches yet) may go anywhere
    feasible; preferred node affinity makes one node the answer. A group member with a peer must follow it."""
    with temporary_nodes(str(cluster.kubeconfig), 3, "pp-aff", labels={"parity/aff": "yes"}) as names, \
            pods_removed(core, ns):
        label_nodes(core, {names[2]: {"parity/best": "yes"}})
        time.sleep(1.0)
        group = {"parity-group": "g1"}
        affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": group}, "topologyKey": HOSTNAME}]},
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": {"matchExpressions": [expr("parity/best", "In", "yes")]}}]}}
        kw: dict[str, Any] = {"labels": group, "node_selector": {"parity/aff": "yes"},
                              "extra_spec": {"affinity": affinity}}
        assert placed_by_both(core, ns, "first", **kw) == (names[2], names[2])
        # A peer now runs on the first node: its hostname domain is the only one that satisfies the term.
        running(core, ns, [place(core, ns, "peer", names[0], labels=group)])
        assert placed_by_both(core, ns, "second", **kw) == (names[0], names[0])
        # Not matching its own term and no matching pod anywhere: rejected everywhere.
        no_match = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"parity-group": "g2"}}, "topologyKey": HOSTNAME}]}}
        compare(core, ns, "no-group", "node(s) didn't match pod affinity rules.", labels=group,
                extra_spec={"affinity": no_match})


# ----- topology spread, cordoned nodes, histogram of several reasons ------------------------------------------


def test_topology_spread_and_unschedulable(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None
) -> None:
    """Domains d0 (2 matching pods), d1 (1) and d2 (0, its node cordoned but still counted): maxSkew 1
    fails d0 and d1, NodeUnschedulable rejects d2, every other node lacks the topology key."""
    with temporary_nodes(str(cluster.kubeconfig), 3, "pp-spread") as names, pods_removed(core, ns):
        label_nodes(core, {names[i]: {"parity/domain": f"d{i}"} for i in range(3)})
        core.patch_node(names[2], {"spec": {"unschedulable": True}})
        app = {"parity-app": "spread"}
        running(core, ns, [place(core, ns, "s-0", names[0], labels=app), place(core, ns, "s-1", names[0], labels=app),
                           place(core, ns, "s-2", names[1], labels=app)])
        spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "parity/domain",
                                                 "whenUnsatisfiable": "DoNotSchedule",
                                                 "labelSelector": {"matchLabels": app}}]}
        n = node_count(core)
        msg = compare(core, ns, "spread", labels=app, extra_spec=spread)
        assert msg.startswith(f"0/{n} nodes are available: ")
        assert_histogram(msg, ["1 node(s) were unschedulable",
                               "2 node(s) didn't match pod topology spread constraints"],
                         n - 3, "node(s) didn't match pod topology spread constraints (missing required label)")
        # Uncordoned, d2 is the only domain within the skew (the pending twins go first: they would take it).
        for p in ("spread-" + KUBE, "spread-" + PY):
            core.delete_namespaced_pod(p, ns, grace_period_seconds=0)
            wait_for(lambda p=p: gone(core, ns, p), 60, what=f"{p} deleted")
        core.patch_node(names[2], {"spec": {"unschedulable": False}})
        wait_for(lambda: not any(t.key == "node.kubernetes.io/unschedulable"
                                 for t in core.read_node(names[2]).spec.taints or []), 60, what="uncordoned")
        time.sleep(1.0)
        assert placed_by_both(core, ns, "spread-ok", labels=app, extra_spec=spread) == (names[2], names[2])


def test_cordoned_nodes(cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None) -> None:
    with temporary_nodes(str(cluster.kubeconfig), 2, "pp-cordon", labels={"parity/cordon": "yes"}) as names, \
            pods_removed(core, ns):
        for name in names:
            core.patch_node(name, {"spec": {"unschedulable": True}})
        time.sleep(1.0)
        n = node_count(core)
        msg = compare(core, ns, "cordoned", node_selector={"parity/cordon": "yes"})
        assert_histogram(msg, ["2 node(s) were unschedulable"], n - 2)


def test_too_many_pods_and_cpu_on_one_node(cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None) -> None:
    """One node allowing a single pod already runs one: both reasons of that node are counted."""
    with temporary_nodes(str(cluster.kubeconfig), 1, "pp-full", pods=1, labels={"parity/full": "yes"}) as names, \
            pods_removed(core, ns):
        running(core, ns, [place(core, ns, "only", names[0])])
        n = node_count(core)
        msg = compare(core, ns, "full", cpu="8", node_selector={"parity/full": "yes"})
        assert_histogram(msg, ["1 Insufficient cpu", "1 Too many pods"], n - 1)
        compare(core, ns, "full-small", "1 Too many pods", node_selector={"parity/full": "yes"})


def test_extended_resources(cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None) -> None:
    """Three nodes with one example.com/gpu each, two of them in use."""
    gpu = "example.com/gpu"
    with temporary_nodes(str(cluster.kubeconfig), 3, "pp-gpu", labels={"parity/gpu": "yes"}) as names, \
            pods_removed(core, ns):
        for name in names:
            core.patch_node_status(name, {"status": {"capacity": {gpu: "1"}, "allocatable": {gpu: "1"}}})
        wait_for(lambda: all((core.read_node(x).status.allocatable or {}).get(gpu) == "1" for x in names), 30,
                 what="gpu allocatable")

        def gpus(count: str, name: str = "c") -> dict[str, Any]:
            return {"name": name, "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {gpu: count}, "limits": {gpu: count}}}

        running(core, ns, [place(core, ns, f"user-{i}", names[i], extra_spec={"containers": [gpus("1")]})
                           for i in range(2)])
        assert placed_by_both(core, ns, "one-gpu", extra_spec={"containers": [gpus("1")]}) == (names[2], names[2])
        n = node_count(core)
        compare(core, ns, "two-gpus", f"{n} Insufficient {gpu}.", extra_spec={"containers": [gpus("2")]})
        # Summed over containers (and a sidecar): 1 + 1 does not fit a 1-gpu node.
        compare(core, ns, "gpu-sidecar", f"{n} Insufficient {gpu}.", extra_spec={
            "initContainers": [dict(gpus("1", "side"), restartPolicy="Always")], "containers": [gpus("1")]})


def test_pod_level_requests_count_in_scores(cluster: LocalCluster, core: client.CoreV1Api, ns: str, both: None) -> None:
    """Node A runs a pod whose 3 cpu are requested at pod level (its container requests nothing), node B a
    pod whose container requests 2 cpu. NodeInfo's non-zero cpu is 3000m on A (pod-level requests win over
    the 100m container default), so LeastAllocated (60 vs 73) and BalancedAllocation (61 vs 73) prefer B;
    counting A's pod as 100m would make A win (97 + 61 against 73 + 73)."""
    with temporary_nodes(str(cluster.kubeconfig), 2, "pp-podlevel", labels={"parity/podlevel": "yes"}) as names, \
            pods_removed(core, ns):
        running(core, ns, [
            place(core, ns, "pod-level", names[0], cpu=None, memory=None,
                  extra_spec={"resources": {"requests": {"cpu": "3"}}}),
            place(core, ns, "container-level", names[1], cpu="2", memory=None),
        ])
        assert placed_by_both(core, ns, "light", node_selector={"parity/podlevel": "yes"}) == (names[1], names[1])


def test_node_affinity_prescore_error(core: client.CoreV1Api, ns: str, both: None) -> None:
    """A preferred term with Gt "five" passes API validation but not labels.NewRequirement: PreScore fails
    and the pod's condition carries the error (reason SchedulerError), worded identically by both."""
    spec = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "preference": {"matchExpressions": [expr("parity/gen", "Gt", "five")]}}]}}}
    kube_pod, py_pod = twin(core, ns, "prescore-error", extra_spec=spec)
    kc = wait_for(lambda: scheduled_condition(core, ns, kube_pod), 60, what=f"{kube_pod} attempted")
    pc = wait_for(lambda: scheduled_condition(core, ns, py_pod), 60, what=f"{py_pod} attempted")
    assert (pc.status, pc.reason, pc.message) == (kc.status, kc.reason, kc.message)
    assert (kc.status, kc.reason) == ("False", "SchedulerError")
    assert kc.message == ('running PreScore plugin "NodeAffinity": [0].matchExpressions[0].values[0]: Invalid value: '
                          "\"five\": for 'Gt', 'Lt' operators, the value must be an integer")
