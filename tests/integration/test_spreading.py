"""Spreading on the real control plane, with workload controllers (kube-controller-manager creates the pods).

This module's nine nodes sit in three zones of its own (``it-spread-a/b/c``, three nodes each) and carry a
label the workloads select, so the base nodes never count: (a) a Deployment with a zone
topologySpreadConstraint lands 3/3/3; (b) required pod anti-affinity on the hostname puts one replica per
eligible node and leaves the rest Pending with upstream's exact message; (c) the seed-era SelectorSpread,
enabled by configuration in a separate py-scheduler, spreads a ReplicaSet across zones first.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from e2e.cluster.cluster import LocalCluster
from e2e.kube import wait_for
from e2e.process import stop_scheduler
from tests.integration.conftest import SchedulerProc, temporary_nodes

MEMBER = {"it-spread/member": "yes"}
ZONE, HOSTNAME = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
ZONES = ("it-spread-a", "it-spread-b", "it-spread-c")
SELECTOR_SPREAD_SCHEDULER = "it-selector-spread"


@pytest.fixture(scope="module")
def spread_nodes(cluster: LocalCluster) -> Iterator[dict[str, str]]:
    """Node name -> zone, for 3 nodes in each of ZONES."""
    with ExitStack() as stack:
        zone_of: dict[str, str] = {}
        for zone in ZONES:
            names = stack.enter_context(temporary_nodes(
                str(cluster.kubeconfig), 3, f"spr-{zone[-1]}", labels={**MEMBER, ZONE: zone}))
            zone_of.update(dict.fromkeys(names, zone))
        yield zone_of


def pod_template(labels: Mapping[str, str], scheduler_name: str = "py-scheduler",
                 **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": dict(labels)},
        "spec": {
            "schedulerName": scheduler_name,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
            **spec,
        },
    }


# Preferred node affinity for zone a (NodeAffinity weight 2 x 100): with nothing spreading them, the pods would
# pile into zone a. Spreading must overcome it, which makes 3/3/3 and 2/2/2 proof that it worked.
PREFER_ZONE_A = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [ZONES[0]]}]}}]}}


def workload(kind: str, name: str, replicas: int, template: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": dict(template["metadata"]["labels"])},
                     "template": template}}


def pods_of(core: client.CoreV1Api, ns: str, labels: Mapping[str, str]) -> list[Any]:
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    items: Any = core.list_namespaced_pod(ns, label_selector=selector).items
    return [p for p in items if p.metadata.deletion_timestamp is None]


def placed(core: client.CoreV1Api, ns: str, labels: Mapping[str, str], count: int) -> list[str] | None:
    """The nodes of the workload's pods once exactly ``count`` of them are bound, else None."""
    nodes = [p.spec.node_name for p in pods_of(core, ns, labels) if p.spec.node_name]
    return nodes if len(nodes) == count else None


def bound_or_log(proc: SchedulerProc, fn: Callable[[], list[str] | None], what: str) -> list[str]:
    """wait_for(fn); on timeout the failure carries the tail of the scheduler's log."""
    try:
        return wait_for(fn, 90, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- scheduler (exit status {proc.proc.poll()}) log tail ---\n"
                             f"{proc.log_text()[-6000:]}") from None


def ignore_missing(delete: Callable[..., Any], *args: Any, **kw: Any) -> None:
    try:
        delete(*args, **kw)
    except client.ApiException as exc:
        if exc.status != 404:
            raise


def delete_workloads(api: client.ApiClient, core: client.CoreV1Api, ns: str) -> None:
    """Controllers first (so they stop replacing pods), then the pods, before the module's nodes go."""
    apps = client.AppsV1Api(api)
    deployments: Any = apps.list_namespaced_deployment(ns).items
    for d in deployments:
        ignore_missing(apps.delete_namespaced_deployment, d.metadata.name, ns, propagation_policy="Background")
    replica_sets: Any = apps.list_namespaced_replica_set(ns).items
    for rs in replica_sets:  # the garbage collector may have deleted a Deployment's ReplicaSet already
        ignore_missing(apps.delete_namespaced_replica_set, rs.metadata.name, ns, propagation_policy="Background")
    wait_for(lambda: not apps.list_namespaced_replica_set(ns).items or None, 60, what="replica sets gone")
    core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)


def test_deployment_with_zone_spread_constraint_lands_3_3_3(
    api: client.ApiClient, core: client.CoreV1Api, ns: str, scheduler: SchedulerProc, spread_nodes: dict[str, str],
) -> None:
    labels = {"app": "zone-spread"}
    template = pod_template(labels, nodeSelector=MEMBER, affinity=PREFER_ZONE_A, topologySpreadConstraints=[{
        "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": labels}}])
    body: Any = workload("Deployment", "zone-spread", 9, template)
    try:
        client.AppsV1Api(api).create_namespaced_deployment(ns, body)
        nodes = bound_or_log(scheduler, lambda: placed(core, ns, labels, 9), "9 replicas bound")
        assert set(nodes) <= set(spread_nodes)
        # maxSkew 1 over three zones holding nine pods admits only 3/3/3 (zone a is preferred, not forced).
        assert Counter(spread_nodes[n] for n in nodes) == dict.fromkeys(ZONES, 3)
    finally:
        delete_workloads(api, core, ns)


def test_required_hostname_anti_affinity_leaves_the_extra_replicas_pending(
    api: client.ApiClient, core: client.CoreV1Api, ns: str, scheduler: SchedulerProc, spread_nodes: dict[str, str],
) -> None:
    """K = 3 eligible nodes (zone it-spread-a), K + 2 = 5 replicas that refuse to share a host."""
    labels = {"app": "one-per-host"}
    eligible = {n for n, z in spread_nodes.items() if z == ZONES[0]}
    template = pod_template(labels, nodeSelector={**MEMBER, ZONE: ZONES[0]}, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": labels}, "topologyKey": HOSTNAME}]}})
    body: Any = workload("ReplicaSet", "one-per-host", len(eligible) + 2, template)
    try:
        client.AppsV1Api(api).create_namespaced_replica_set(ns, body)
        nodes = bound_or_log(scheduler, lambda: placed(core, ns, labels, len(eligible)), "one replica per node")
        assert sorted(nodes) == sorted(eligible)
        n = len(core.list_node().items)
        k = len(eligible)
        # On the K nodes the pod's own anti-affinity term (checked before the existing pods') fails:
        # Unschedulable, but nothing there has a lower priority. Elsewhere the nodeSelector fails:
        # UnschedulableAndUnresolvable, not worth a preemption attempt. Items sorted as strings.
        filters = sorted([f"{k} node(s) didn't match pod anti-affinity rules",
                          f"{n - k} node(s) didn't match Pod's node affinity/selector"])
        preemption = sorted([f"{k} No preemption victims found for incoming pod",
                             f"{n - k} Preemption is not helpful for scheduling"])
        expected = (f"0/{n} nodes are available: {', '.join(filters)}. "
                    f"preemption: 0/{n} nodes are available: {', '.join(preemption)}.")

        def pending_messages() -> list[str] | None:
            pending = [p for p in pods_of(core, ns, labels) if not p.spec.node_name]
            msgs = [c.message for p in pending for c in p.status.conditions or []
                    if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"]
            return msgs if len(pending) == 2 and len(msgs) == 2 and set(msgs) == {expected} else None

        try:
            wait_for(pending_messages, 45, what="the two extra replicas Pending with upstream's message")
        except AssertionError:
            pending = [p for p in pods_of(core, ns, labels) if not p.spec.node_name]
            got = [(p.metadata.name, [(c.reason, c.message) for c in p.status.conditions or []]) for p in pending]
            raise AssertionError(f"expected 2 pending pods with\n{expected!r}\ngot {got!r}") from None
        assert sorted(placed(core, ns, labels, k) or []) == sorted(eligible)
    finally:
        delete_workloads(api, core, ns)


@pytest.fixture
def selector_spread_config(tmp_path: Path) -> Path:
    """A profile that spreads with SelectorSpread at weight 100 and has PodTopologySpread (whose
    system-default constraints would also spread a ReplicaSet) disabled."""
    path = tmp_path / "selector-spread.yaml"
    path.write_text(json.dumps({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{
            "schedulerName": SELECTOR_SPREAD_SCHEDULER,
            "plugins": {"multiPoint": {"enabled": [{"name": "SelectorSpread", "weight": 100}],
                                       "disabled": [{"name": "PodTopologySpread"}]}},
        }],
    }))
    return path


def test_selector_spread_by_config_spreads_a_replicaset_across_zones_first(
    api: client.ApiClient, core: client.CoreV1Api, ns: str, spread_nodes: dict[str, str],
    selector_spread_config: Path, start_py_scheduler: Callable[..., SchedulerProc],
) -> None:
    """Six replicas over nine nodes in three zones, preferring zone a. SelectorSpread has weight 100, so a
    33-point step of its score (3300) outweighs the zone-a preference (200): the first pod goes to zone a; the zone
    term (2/3 of the score) sends the second and third to the other two zones (100 against 33 for zone a's
    empty nodes); with every zone at one pod the fourth goes to an empty node (zone a, by preference); the
    fifth and sixth to empty nodes of the zones with fewer pods (66 against 33): 2/2/2, one pod per node.
    Node spreading alone would have put the first three pods on zone a's three nodes.

    The ReplicaSet and its six pending pods exist before the scheduler starts, so its initial list already
    holds the ReplicaSet whose selector SelectorSpread counts by (no race with the watch)."""
    labels = {"app": "selector-spread"}
    template = pod_template(labels, SELECTOR_SPREAD_SCHEDULER, nodeSelector=MEMBER, affinity=PREFER_ZONE_A)
    body: Any = workload("ReplicaSet", "selector-spread", 6, template)
    proc: SchedulerProc | None = None
    try:
        client.AppsV1Api(api).create_namespaced_replica_set(ns, body)
        wait_for(lambda: len(pods_of(core, ns, labels)) == 6 or None, 60, what="6 pending replicas created")
        # With --config leader election is on by default: this process is the only replica.
        proc = start_py_scheduler("--config", str(selector_spread_config), "--no-leader-elect", name="selector-spread")
        nodes = bound_or_log(proc, lambda: placed(core, ns, labels, 6), "6 replicas bound")
        assert set(nodes) <= set(spread_nodes)
        assert len(set(nodes)) == 6, nodes
        assert Counter(spread_nodes[n] for n in nodes) == dict.fromkeys(ZONES, 2)
    finally:
        delete_workloads(api, core, ns)
        if proc is not None:
            stop_scheduler(proc.proc)
