"""The benchmark workloads, modelled on upstream's scheduler_perf (test/integration/scheduler_perf).

Pod templates are upstream's (``templates/pod-*.yaml``: one ``pause`` container with port 80 and
requests = limits ``cpu 100m, memory 500Mi``) with ``spec.schedulerName`` and an explicit name added.
Nodes are upstream's ``node-default.yaml`` (4 CPU, 32Gi, 110 pods, Ready) made by
``e2e.cluster.cluster.create_nodes`` with 3 zones (``topology.kubernetes.io/zone=zone-0..2``).

Like upstream, every workload creates nodes, then ``init`` pods in namespace ``sched-0`` that the
scheduler under test places (not measured), then the measured pods in ``sched-1``.

Differences from upstream, on purpose:

* SchedulingNodeAffinity: upstream labels every node ``zone1`` and requires ``zone In [zone1, zone2]``
  (so every node passes); here nodes keep their 3 zones and pods require ``zone In [zone-0, zone-1]``,
  so the filter rejects a third of the nodes.
* TopologySpreading: upstream's zones are ``moon-1..3``; here ``zone-0..2`` (same shape).
* SchedulingSelectorSpread is upstream's DefaultTopologySpreading (a Service selecting
  ``app: scheduler-perf``, measured pods from ``pod-with-label.yaml``). py-scheduler runs it with its
  SelectorSpread score plugin enabled on top of the default profile; kube-scheduler has had no
  SelectorSpread since 1.29 and runs its default profile (PodTopologySpread's system defaults spread
  the Service's pods), which is what upstream measures.
* SchedulingPodAntiAffinity: at most one pod per node fits, so the measured count is capped at
  ``nodes - init`` (upstream's 500Nodes variant is 100 init / 400 measured).
* PreemptionBasic (misc/performance-config.yaml): 4 low-priority pods of 900m per node fill it, then each
  measured high-priority pod (3 CPU) has to preempt 3 of them. Upstream's templates set ``spec.priority``
  directly (its test API server runs without the Priority admission plugin); here two PriorityClasses
  (``perf-low`` 0, ``perf-high`` 10) give the same values. The ceiling binder does not preempt, so the
  workload runs without it.
* SchedulingWithResourceClaimTemplate / SchedulingWithResourceClaim (dra/performance-config.yaml, the
  5000pods_500nodes variants): one ResourceSlice per node (``node-<i>``, pool ``resourceslice-<i>``, driver
  ``test-driver.cdi.k8s.io``) with upstream's ``basic-device-<k>`` devices and attributes, and DeviceClass
  ``test-class``. Nodes keep this harness's shape (zones; upstream's DRA nodes have none, which no default
  plugin reads here). The template workload's init claims (half the devices) are allocated by the harness
  as upstream's ``allocResourceClaims`` does (random node, no pod, set up once per size); its measured pods'
  claims are made from the template by kube-controller-manager's resourceclaim controller, which the lean
  bench control plane starts for it (and nothing else of KCM but the serviceaccount controller). The shared
  claim workload's claims (one per five pods, as upstream) are created by the harness before each run and
  deleted after it; its init pods are scheduled, as upstream's. DRA pods carry no CPU or memory requests,
  as upstream's templates. No ceiling binder: it would bind without allocating.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"
INIT_NAMESPACE = "sched-0"
MEASURE_NAMESPACE = "sched-1"
NAMESPACES = (INIT_NAMESPACE, MEASURE_NAMESPACE)
ZONES = 3
ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"
SERVICE_SELECTOR = {"app": "scheduler-perf"}

# Node shape of upstream's node-default.yaml.
NODE_CPU = "4"
NODE_MEMORY = "32Gi"
NODE_PODS = 110

# (nodes, measured pods) of the standard sizes.
SIZES: tuple[tuple[int, int], ...] = ((500, 1000), (1000, 3000), (5000, 10000))
LARGE_NODES = 5000
# The workloads `make bench` also runs at LARGE_NODES (SchedulingBasic aside, which runs at every size).
LARGE_SUITE_WORKLOADS = ("SchedulingPodAntiAffinity", "SchedulingPreferredPodAffinity", "SchedulingNodeAffinity",
                         "TopologySpreading")  # fmt: skip


def _container(resources: bool = True) -> dict[str, Any]:
    c: dict[str, Any] = {"image": PAUSE_IMAGE, "name": "pause"}
    if resources:
        c["ports"] = [{"containerPort": 80}]
        req = {"cpu": "100m", "memory": "500Mi"}
        c["resources"] = {"limits": dict(req), "requests": dict(req)}
    return c


def _pod(
    labels: dict[str, str] | None = None, spec: dict[str, Any] | None = None, resources: bool = True
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": dict(labels)} if labels else {},
        "spec": {**(spec or {}), "containers": [_container(resources)]},
    }
    return body


def pod_default() -> dict[str, Any]:
    """templates/pod-default.yaml"""
    return _pod()


def pod_with_pod_anti_affinity() -> dict[str, Any]:
    """templates/pod-with-pod-anti-affinity.yaml"""
    term = {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": HOSTNAME_KEY,
        "namespaces": [MEASURE_NAMESPACE, INIT_NAMESPACE],
    }
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return _pod({"color": "green"}, {"affinity": anti})


def pod_with_preferred_pod_affinity() -> dict[str, Any]:
    """templates/pod-with-preferred-pod-affinity.yaml"""
    term = {
        "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"color": "red"}},
            "topologyKey": HOSTNAME_KEY,
            "namespaces": [MEASURE_NAMESPACE, INIT_NAMESPACE],
        },
        "weight": 1,
    }
    aff = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}}
    return _pod({"color": "red"}, {"affinity": aff})


def pod_with_node_affinity() -> dict[str, Any]:
    """templates/pod-with-node-affinity.yaml, with this harness's zone names (2 of 3 zones)."""
    term = {"matchExpressions": [{"key": ZONE_KEY, "operator": "In", "values": ["zone-0", "zone-1"]}]}
    return _pod(spec={"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}})  # fmt: skip


def pod_with_topology_spreading() -> dict[str, Any]:
    """templates/pod-with-topology-spreading.yaml"""
    constraint = {
        "maxSkew": 5,
        "topologyKey": ZONE_KEY,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"color": "blue"}},
    }
    return _pod({"color": "blue"}, {"topologySpreadConstraints": [constraint]})


def pod_with_label() -> dict[str, Any]:
    """templates/pod-with-label.yaml (no resources, as upstream)."""
    return _pod(dict(SERVICE_SELECTOR), resources=False)


def pod_low_priority() -> dict[str, Any]:
    """templates/pod-low-priority.yaml: 900m, grace 0."""
    body = _pod(spec={"terminationGracePeriodSeconds": 0, "priorityClassName": "perf-low"})
    _set_requests(body, "900m")
    return body


def pod_high_priority() -> dict[str, Any]:
    """templates/pod-high-priority.yaml: 3 CPU, priority 10."""
    body = _pod(spec={"priorityClassName": "perf-high"})
    _set_requests(body, "3000m")
    return body


def _set_requests(body: dict[str, Any], cpu: str) -> None:
    res = body["spec"]["containers"][0]["resources"]
    res["requests"]["cpu"] = res["limits"]["cpu"] = cpu


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def service() -> dict[str, Any]:
    """templates/service.yaml, in the measured pods' namespace."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "service-0"},
        "spec": {"selector": dict(SERVICE_SELECTOR), "ports": [{"protocol": "TCP", "port": 80, "targetPort": 8000}]},
    }


# ---- DRA (dra/performance-config.yaml and its templates/)

DRA_DRIVER = "test-driver.cdi.k8s.io"
DEVICE_CLASS = "test-class"
CLAIM_TEMPLATE = "test-claim-template"
CLAIM_REQUEST = "req-0"
PCI_ROOTS = 2  # resourceslice-basic-devices.yaml's numPCIRoots default
PODS_PER_CLAIM = 5  # pod-with-claim-ref.yaml: five pods share a claim


def device_class() -> dict[str, Any]:
    """templates/deviceclass.yaml"""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]},
    }


def _basic_device(k: int) -> dict[str, Any]:
    root = k % PCI_ROOTS
    attrs: dict[str, dict[str, Any]] = {
        "driver": {"string": "xe"},
        "driverVersion": {"version": "1.2.3"},
        "resource.k8s.io/pciRoot": {"string": str(root)},
        "family": {"string": "Arc Pro B-Series"},
        "health": {"string": "Healthy"},
        "model": {"string": "B60"},
        "pciAddress": {"string": f"0000:0{k}:00.0"},
        "pciId": {"string": "0xe211"},
        "pciRoot": {"string": f"0{root}"},
        "resource.kubernetes.io/pciBusID": {"string": f"0000:0{k}:00.0"},
        "resource.kubernetes.io/pciRoot": {"string": f"pci0000:0{root}"},
        "sriov": {"bool": True},
        "type": {"string": "gpu"},
    }
    capacity = {"memory": {"value": "24480Mi"}, "millicores": {"value": "1k"}}
    return {"name": f"basic-device-{k}", "attributes": attrs, "capacity": capacity}


def resource_slice(index: int, node: str, devices: int) -> dict[str, Any]:
    """templates/resourceslice-basic-devices.yaml for node ``node`` (one slice, its own pool)."""
    pool = f"resourceslice-{index}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": pool},
        "spec": {
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
            "driver": DRA_DRIVER,
            "nodeName": node,
            "devices": [_basic_device(k) for k in range(devices)],
        },
    }


def _claim_spec() -> dict[str, Any]:
    return {"devices": {"requests": [{"name": CLAIM_REQUEST, "exactly": {"deviceClassName": DEVICE_CLASS}}]}}


def resource_claim(index: int, namespace: str) -> dict[str, Any]:
    """templates/resourceclaim.yaml: ``test-claim-<index>``, one device of the class."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"test-claim-{index}", "namespace": namespace},
        "spec": _claim_spec(),
    }


def resource_claim_template(namespace: str) -> dict[str, Any]:
    """templates/resourceclaimtemplate.yaml with its defaults (one request, no selectors or constraints)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": CLAIM_TEMPLATE, "namespace": namespace},
        "spec": {"spec": _claim_spec()},
    }


def claim_allocation(node: str, pool: str, device: str) -> dict[str, Any]:
    """``status.allocation`` of a claim given ``device`` of ``pool`` on ``node`` (what allocResourceClaims
    writes for the init claims: the node-local device and the node selector that pins its pods there)."""
    result = {"request": CLAIM_REQUEST, "driver": DRA_DRIVER, "pool": pool, "device": device}
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {"devices": {"results": [result]}, "nodeSelector": {"nodeSelectorTerms": [term]}}


def _pod_with_claim(source: dict[str, str]) -> dict[str, Any]:
    body = _pod(resources=False)
    body["spec"]["containers"][0]["resources"] = {"claims": [{"name": "resource"}]}
    body["spec"]["resourceClaims"] = [{"name": "resource", **source}]
    return body


def pod_with_claim_template() -> dict[str, Any]:
    """templates/pod-with-claim-template.yaml"""
    return _pod_with_claim({"resourceClaimTemplateName": CLAIM_TEMPLATE})


def pod_with_claim_ref() -> dict[str, Any]:
    """templates/pod-with-claim-ref.yaml; claim_for_pod names the claim of each pod."""
    return _pod_with_claim({"resourceClaimName": "test-claim-0"})


def claim_for_pod(body: dict[str, Any], index: int) -> None:
    """Point pod ``index`` of a pod-with-claim-ref batch at ``test-claim-<index // 5>`` (five share one)."""
    body["spec"]["resourceClaims"][0]["resourceClaimName"] = f"test-claim-{index // PODS_PER_CLAIM}"


def shared_claims(pods: int) -> int:
    """Claims a batch of ``pods`` pod-with-claim-ref pods needs."""
    return -(-pods // PODS_PER_CLAIM)


@dataclass(frozen=True)
class Dra:
    """What a DRA workload sets up beyond nodes: ``devices`` per node in one ResourceSlice each, claims
    allocated without pods at set-up (nodes -> count), whether pods use shared claims that the harness
    creates per run, and the KCM controllers it needs."""

    devices: int
    allocated_claims: Callable[[int], int] = lambda n: 0
    shared_claims: bool = False
    controllers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workload:
    name: str
    init_template: Callable[[], dict[str, Any]]
    measure_template: Callable[[], dict[str, Any]]
    init_pods: Callable[[int], int]  # nodes -> init pods
    max_pods: Callable[[int, int], int] | None = None  # (nodes, init) -> most measured pods that can fit
    services: tuple[Callable[[], dict[str, Any]], ...] = ()
    # extra plugins py-scheduler enables on top of its default profile (score plugin name -> weight)
    py_score_plugins: dict[str, int] = field(default_factory=dict)
    priority_classes: tuple[tuple[str, int], ...] = ()
    ceiling: bool = True  # the ceiling binder can stand for the workload (False: it needs preemption or DRA)
    dra: Dra | None = None
    note: str = ""

    def sizes(self, nodes: int, pods: int, init: int | None = None) -> tuple[int, int]:
        """(init pods, measured pods) for a requested size, capped where the workload cannot fit more."""
        n_init = self.init_pods(nodes) if init is None else init
        if self.max_pods is not None:
            pods = min(pods, self.max_pods(nodes, n_init))
        return n_init, pods


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        # misc/performance-config.yaml: 500Nodes 500 init, 5000Nodes_10000Pods 1000 init
        Workload("SchedulingBasic", pod_default, pod_default, lambda n: min(n, 1000)),
        # affinity/performance-config.yaml: 500Nodes 100 init / 400; 5000Nodes 1000 init
        Workload(
            "SchedulingPodAntiAffinity",
            pod_with_pod_anti_affinity,
            pod_with_pod_anti_affinity,
            lambda n: n // 5,
            max_pods=lambda n, i: max(n - i, 0),
            note="one pod per node fits: measured pods capped at nodes - init",
        ),
        Workload(
            "SchedulingPreferredPodAffinity",
            pod_with_preferred_pod_affinity,
            pod_with_preferred_pod_affinity,
            lambda n: n,
        ),
        Workload(
            "SchedulingNodeAffinity",
            pod_with_node_affinity,
            pod_with_node_affinity,
            lambda n: n,
            note="pods require zone In [zone-0, zone-1] (2 of 3 zones)",
        ),
        # topology_spreading/performance-config.yaml: 500Nodes 1000 init, 5000Nodes 5000 init
        Workload("TopologySpreading", pod_default, pod_with_topology_spreading, lambda n: min(2 * n, 5000)),
        Workload(
            "SchedulingSelectorSpread",
            pod_default,
            pod_with_label,
            lambda n: min(2 * n, 5000),
            services=(service,),
            py_score_plugins={"SelectorSpread": 1},
            note="py: default profile + SelectorSpread; kube: default profile (no SelectorSpread since 1.29)",
        ),
        # misc/performance-config.yaml 1000Nodes: 4000 init / 1000 measured
        Workload(
            "PreemptionBasic",
            pod_low_priority,
            pod_high_priority,
            lambda n: 4 * n,
            max_pods=lambda n, i: n,
            priority_classes=(("perf-low", 0), ("perf-high", 10)),
            ceiling=False,
            note="4 low-priority 900m pods per node, then one 3-CPU high-priority pod per node preempts 3 of them",
        ),
        # dra/performance-config.yaml 5000pods_500nodes: 10 devices per node, 2500 claims allocated at set-up
        # (5 per node), 2500 measured pods, one claim each from the template
        Workload(
            "SchedulingWithResourceClaimTemplate",
            pod_with_claim_template,
            pod_with_claim_template,
            lambda n: 0,
            max_pods=lambda n, i: 5 * n,
            ceiling=False,
            dra=Dra(devices=10, allocated_claims=lambda n: 5 * n, controllers=("resourceclaim-controller",)),
            note="10 devices per node, half allocated at set-up; claims from a template (KCM resourceclaim)",
        ),
        # 5000pods_500nodes: 2 devices per node, 2500 init pods (500 claims), 2500 measured (500 claims)
        Workload(
            "SchedulingWithResourceClaim",
            pod_with_claim_ref,
            pod_with_claim_ref,
            lambda n: 5 * n,
            max_pods=lambda n, i: max(10 * n - i, 0),
            ceiling=False,
            dra=Dra(devices=2, shared_claims=True),
            note="2 devices per node, five pods share a claim; claims created by the harness per run",
        ),
    )
}


def pod_body(template: dict[str, Any], name: str, namespace: str, scheduler_name: str) -> dict[str, Any]:
    """A pod from ``template`` named ``name`` for ``scheduler_name`` (the template is not modified)."""
    body = copy.deepcopy(template)
    body["metadata"]["name"] = name
    body["metadata"]["namespace"] = namespace
    body["spec"]["schedulerName"] = scheduler_name
    return body


def default_suite(skip_large: bool = False) -> list[tuple[str, int, int]]:
    """(workload, nodes, measured pods) of ``make bench``: SchedulingBasic at all sizes, PreemptionBasic at
    upstream's 1000 nodes, the others at 500/1000, and the affinity and spreading ones again at 5000 nodes
    with 3000 pods (what e2e.perf.goals checks)."""
    suite = [("SchedulingBasic", n, p) for n, p in SIZES if not (skip_large and n >= LARGE_NODES)]
    suite += [(name, 500, 1000) for name, w in WORKLOADS.items()
              if name not in ("SchedulingBasic", "PreemptionBasic") and w.dra is None]  # fmt: skip
    if not skip_large:  # the affinity and spreading goals are also set at 5000 nodes
        suite += [(name, LARGE_NODES, 3000) for name in LARGE_SUITE_WORKLOADS]
    suite.append(("PreemptionBasic", 1000, 1000))
    return suite


def node_zone(node: str) -> str | None:
    """Zone of a node made by ``create_nodes(..., zones=ZONES)``: ``node-<i>`` is in ``zone-<i % ZONES>``."""
    try:
        return f"zone-{int(node.rsplit('-', 1)[1]) % ZONES}"
    except (IndexError, ValueError):
        return None


def violations(workload: str, placements: Mapping[str, str]) -> int | None:
    """How many placements break the workload's hard constraint (``placements``: "ns/name" -> node);
    None for workloads without one. A scheduler that follows the rules scores 0; the ceiling binder
    does not look at constraints."""
    if workload == "SchedulingPodAntiAffinity":  # at most one pod per node
        per_node = Counter(placements.values())
        return sum(c - 1 for c in per_node.values() if c > 1)
    if workload == "SchedulingNodeAffinity":  # zone-0 / zone-1 only
        return sum(1 for node in placements.values() if node_zone(node) not in ("zone-0", "zone-1"))
    if workload == "TopologySpreading":  # measured (blue) pods: zone skew <= maxSkew 5
        per_zone = Counter(node_zone(n) for k, n in placements.items() if k.startswith(MEASURE_NAMESPACE + "/"))
        counts = [per_zone.get(f"zone-{z}", 0) for z in range(ZONES)]
        return max(0, max(counts) - min(counts) - 5) if placements else 0
    return None
