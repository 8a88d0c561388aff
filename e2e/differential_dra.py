"""The differential test with devices (DRA): kube-scheduler v1.37.2 on the local control plane against
`py-scheduler simulate` on the same objects read back from the API, pod after pod.

Each seed builds a random device inventory on 2-4 fresh nodes: one or two drivers, per node a slice of
0-4 devices with attributes (`model`, `numa`) and a `memory` capacity, sometimes a shared pool (a slice
for `allNodes` or for the nodes of one zone); a DeviceClass per driver, sometimes a narrower one with a
CEL selector; then 2-5 pods, each with one or two claims: from a ResourceClaimTemplate (made by
kube-controller-manager's resourceclaim controller), a ResourceClaim of its own, or one shared with an
earlier pod. Requests are ExactCount (1-2) or All, with CEL selectors, sometimes a `firstAvailable`
list (DynamicResources' Score), sometimes a `matchAttribute` constraint on `numa`.

For each pod in turn, kube-scheduler decides; then nodes, namespaces, bound pods, slices, classes and
claims are read back (the claims kube-scheduler has just allocated for this pod shown as they were
before: no allocation, no reservation) and `simulate` places the pod. They must agree as in
e2e/differential.py (node, message, scores) and, where both chose the same node, on **the devices**
(driver/pool/device per claim request, from kube-scheduler's `status.allocation`). A pod kube-scheduler
could not place is deleted before the next one, so that each step starts from kube-scheduler's state.

`python -m e2e.differential_dra --scenarios 20` runs a batch on a fresh local control plane;
tests/integration/test_differential.py runs a small seeded batch in `make test`.
"""

from __future__ import annotations

import json
import random
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from e2e.cluster.cluster import node_manifest
from e2e.differential import (
    IMAGE,
    KUBE,
    SCENARIO_LABEL,
    ZONE,
    ZONES,
    Differential,
    Verdict,
    batch_args,
    compare,
    differential_cluster,
    kube_scores,
    report,
)
from e2e.kube import create_namespace, delete_if_present, delete_namespace, wait_for
from scheduler.app.logging import configure as configure_logging
from scheduler.model.pod import pod_from_api
from scheduler.plugins.helper.dynamicresources.claims import allocated_devices
from scheduler.whatif.simulate import run_simulation

GROUP, VERSION = "resource.k8s.io", "v1"
CLUSTER_KINDS = {"resourceslices": "ResourceSlice", "deviceclasses": "DeviceClass",
                 "devicetaintrules": "DeviceTaintRule"}


@dataclass
class DraScenario:
    seed: int
    nodes: list[dict[str, Any]]
    cluster_objects: list[tuple[str, dict[str, Any]]]  # (plural, body): slices and classes
    namespaced: list[tuple[str, dict[str, Any]]]  # (plural, body): claims and templates
    pods: list[dict[str, Any]]  # placed in order, each compared


@dataclass
class DraVerdict:
    verdict: Verdict
    pod: str
    kube_devices: list[tuple[str, ...]] = field(default_factory=list)
    py_devices: list[tuple[str, ...]] = field(default_factory=list)


# ----- random inventories and claims ----------------------------------------------------------------


def _device(r: random.Random, j: int) -> dict[str, Any]:
    return {"name": f"dev-{j}",
            "attributes": {"model": {"string": r.choice("abc")}, "numa": {"int": r.randint(0, 1)}},
            "capacity": {"memory": {"value": r.choice(["8Gi", "16Gi", "40Gi"])}}}


def _slice(
    name: str, driver: str, pool: str, devices: list[dict[str, Any]], **where: Any
) -> tuple[str, dict[str, Any]]:
    return "resourceslices", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceSlice", "metadata": {"name": name},
        "spec": {"driver": driver, "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices, **where}}


def _class(name: str, expression: str) -> tuple[str, dict[str, Any]]:
    return "deviceclasses", {"apiVersion": f"{GROUP}/{VERSION}", "kind": "DeviceClass", "metadata": {"name": name},
                             "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def _selectors(r: random.Random, driver: str) -> list[dict[str, Any]]:
    choices = [f'device.attributes["{driver}"].model == "{r.choice("abc")}"',
               f'device.capacity["{driver}"].memory.compareTo(quantity("16Gi")) >= 0',
               f'device.attributes["{driver}"].numa == {r.randint(0, 1)}']
    return [{"cel": {"expression": r.choice(choices)}}] if r.random() < 0.4 else []


def _request(r: random.Random, i: int, classes: list[tuple[str, str]]) -> dict[str, Any]:
    cls, driver = r.choice(classes)
    if r.random() < 0.15:
        other, other_driver = r.choice(classes)
        return {"name": f"r{i}", "firstAvailable": [
            {"name": "s0", "deviceClassName": other, "count": 2, "selectors": _selectors(r, other_driver)},
            {"name": "s1", "deviceClassName": cls, "count": 1}]}
    exactly: dict[str, Any] = {"deviceClassName": cls, "selectors": _selectors(r, driver)}
    if r.random() < 0.1:
        exactly["allocationMode"] = "All"
    else:
        exactly["count"] = r.choice([1, 1, 2])
    return {"name": f"r{i}", "exactly": exactly}


def _claim_spec(r: random.Random, classes: list[tuple[str, str]]) -> dict[str, Any]:
    requests = [_request(r, i, classes) for i in range(r.choice([1, 1, 2]))]
    devices: dict[str, Any] = {"requests": requests}
    if r.random() < 0.3:
        devices["constraints"] = [{"matchAttribute": f"{r.choice(classes)[1]}/numa"}]
    return {"devices": devices}


def generate_dra(seed: int) -> DraScenario:
    """The DRA scenario of `seed`: the same objects on every machine."""
    r = random.Random(seed)
    nodes = [node_manifest(f"dr{seed}-{i}", i, zones=0, regions=0, cpu="16", memory="64Gi", pods=110,
                           labels={SCENARIO_LABEL: f"d{seed}", ZONE: r.choice(ZONES)})
             for i in range(r.randint(2, 4))]
    drivers = [f"gpu.dr{seed}.example.com"] + ([f"nic.dr{seed}.example.com"] if r.random() < 0.5 else [])
    objects: list[tuple[str, dict[str, Any]]] = []
    classes: list[tuple[str, str]] = []
    for driver in drivers:
        short = driver.split(".")[0]
        for n in nodes:
            name = n["metadata"]["name"]
            devices = [_device(r, j) for j in range(r.randint(0, 4))]
            if devices:
                objects.append(_slice(f"{name}-{short}", driver, name, devices, nodeName=name))
        if r.random() < 0.4:
            shared = [_device(r, j) for j in range(r.randint(1, 3))]
            where: dict[str, Any] = {"allNodes": True} if r.random() < 0.5 else {"nodeSelector": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [r.choice(ZONES)]}]}]}}
            objects.append(_slice(f"dr{seed}-{short}-shared", driver, "shared", shared, **where))
        objects.append(_class(f"dr{seed}-{short}", f'device.driver == "{driver}"'))
        classes.append((f"dr{seed}-{short}", driver))
        if r.random() < 0.5:
            objects.append(_class(f"dr{seed}-{short}-a",
                                  f'device.driver == "{driver}" && device.attributes["{driver}"].model == "a"'))
            classes.append((f"dr{seed}-{short}-a", driver))
    namespaced: list[tuple[str, dict[str, Any]]] = []
    pods: list[dict[str, Any]] = []
    named: list[str] = []
    for i in range(r.randint(2, 5)):
        refs = []
        for c in range(r.choice([1, 1, 2])):
            roll = r.random()
            # a claim of an earlier pod (shared); never one this pod names already (kube-scheduler v1.37.2
            # fails PreBind for a pod naming one claim twice, forever: "got allocated elsewhere")
            mine = {ref.get("resourceClaimName") for ref in refs}
            if roll < 0.15 and [n for n in named if n not in mine]:
                refs.append({"name": f"c{c}", "resourceClaimName": r.choice([n for n in named if n not in mine])})
                continue
            spec = _claim_spec(r, classes)
            if roll < 0.6:
                namespaced.append(("resourceclaimtemplates", {
                    "apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceClaimTemplate",
                    "metadata": {"name": f"t{i}-{c}"}, "spec": {"spec": spec}}))
                refs.append({"name": f"c{c}", "resourceClaimTemplateName": f"t{i}-{c}"})
            else:
                namespaced.append(("resourceclaims", {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceClaim",
                                                      "metadata": {"name": f"claim{i}-{c}"}, "spec": spec}))
                named.append(f"claim{i}-{c}")
                refs.append({"name": f"c{c}", "resourceClaimName": f"claim{i}-{c}"})
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"},
                     "spec": {"schedulerName": KUBE, "terminationGracePeriodSeconds": 0,
                              "containers": [{"name": "c", "image": IMAGE}], "resourceClaims": refs}})
    return DraScenario(seed, nodes, objects, namespaced, pods)


# ----- running one scenario -------------------------------------------------------------------------


_DEVICE = re.compile(r"device \S+/\S+/\S+")


def same_error_on_another_node(kube: str, py: str) -> bool:
    """A Filter error aborts the cycle at the first node that fails; kube-scheduler filters nodes in
    parallel, so which node's error (and so which device the allocator names) it reports is a race.
    The same error naming another device is agreement."""
    return kube != py and kube.startswith("running \"DynamicResources\" filter plugin") and (
        _DEVICE.sub("device D", kube) == _DEVICE.sub("device D", py))


def _items(resp: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [{"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, **item} for item in resp.get("items") or []]


def _device_tuples(devices: list[dict[str, str]]) -> list[tuple[str, ...]]:
    return [(d["claim"], d["request"], d["driver"], d["pool"], d["device"]) for d in devices]


def _devices_on(node: str, cluster_path: Path, pods_path: Path) -> list[dict[str, str]]:
    """simulate's devices for the pod when it must go to ``node`` (required node affinity on its name)."""
    pod = yaml.safe_load(pods_path.read_text())
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}
    pinned = pods_path.with_name("pinned.yaml")
    pinned.write_text(yaml.safe_dump(pod))
    (result,) = run_simulation(str(cluster_path), str(pinned), tie_break="name").results
    return list(result.get("devices") or []) if result["node"] == node else []


class DraDifferential:
    """The DRA scenarios, run against the kube-scheduler of a Differential."""

    def __init__(self, diff: Differential) -> None:
        self.diff = diff
        self.core = diff.core
        self.objs = client.CustomObjectsApi(diff.api)

    @contextmanager
    def _placed(self, sc: DraScenario) -> Iterator[str]:
        ns = create_namespace(self.core, f"dradiff-{sc.seed}")
        try:
            for n in sc.nodes:
                self.core.create_node(n)
            for plural, body in sc.cluster_objects:
                self.objs.create_cluster_custom_object(GROUP, VERSION, plural, body)
            for plural, body in sc.namespaced:
                self.objs.create_namespaced_custom_object(GROUP, VERSION, ns, plural, body)
            time.sleep(1.0)  # both schedulers' watches have the inventory
            yield ns
        finally:
            delete_namespace(self.core, ns)
            for plural, body in reversed(sc.cluster_objects):
                delete_if_present(lambda plural=plural, body=body: self.objs.delete_cluster_custom_object(
                    GROUP, VERSION, plural, body["metadata"]["name"]))
            for n in sc.nodes:
                delete_if_present(lambda n=n: self.core.delete_node(n["metadata"]["name"]))
            time.sleep(1.0)

    def _snapshot(self, ns: str, name: str, before: set[str], workdir: Path) -> tuple[Path, Path, dict[str, Any],
                                                                                     list[dict[str, Any]]]:
        """simulate's files (the pod's new claims as they were before kube-scheduler allocated them), the
        pod as kube-scheduler left it and the claims as they are now."""
        nodes = json.loads(self.core.list_node(_preload_content=False).data)["items"]
        namespaces = json.loads(self.core.list_namespace(_preload_content=False).data)["items"]
        pods = json.loads(self.core.list_pod_for_all_namespaces(_preload_content=False).data)["items"]
        nodes = [{"apiVersion": "v1", "kind": "Node", **n} for n in nodes]
        namespaces = [{"apiVersion": "v1", "kind": "Namespace", **n} for n in namespaces]
        pods = [{"apiVersion": "v1", "kind": "Pod", **p} for p in pods]
        mine = next(p for p in pods if p["metadata"]["namespace"] == ns and p["metadata"]["name"] == name)
        bound = [p for p in pods if p is not mine and p["spec"].get("nodeName")
                 and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
        statuses = (mine.get("status") or {}).get("resourceClaimStatuses")
        pending = {**mine, "spec": {k: v for k, v in mine["spec"].items() if k != "nodeName"},
                   "status": {"resourceClaimStatuses": statuses} if statuses else {}}
        claims_now = [c for c in self._all_claims()]
        claims = [c if c["metadata"]["uid"] in before else {**c, "status": {}} for c in claims_now]
        dra = [o for plural, kind in CLUSTER_KINDS.items()
               for o in _items(self.objs.list_cluster_custom_object(GROUP, VERSION, plural), kind)]
        cluster_path, pods_path = workdir / "cluster.yaml", workdir / "pods.yaml"
        cluster_path.write_text(yaml.safe_dump_all(nodes + namespaces + bound + dra + claims))
        pods_path.write_text(yaml.safe_dump(pending))
        return cluster_path, pods_path, mine, claims_now

    def _all_claims(self) -> list[dict[str, Any]]:
        return _items(self.objs.list_cluster_custom_object(GROUP, VERSION, "resourceclaims"), "ResourceClaim")

    def _allocated_uids(self) -> set[str]:
        return {c["metadata"]["uid"] for c in self._all_claims() if (c.get("status") or {}).get("allocation")}

    def run(self, sc: DraScenario) -> list[DraVerdict]:
        out = []
        with self._placed(sc) as ns, tempfile.TemporaryDirectory(prefix="dradiff-") as tmp:
            for i, pod in enumerate(sc.pods):
                name = pod["metadata"]["name"]
                before = self._allocated_uids()
                self.core.create_namespaced_pod(ns, pod)
                kube_node, kube_message = self.diff.decision(ns, name)
                work = Path(tmp) / name
                work.mkdir()
                cluster_path, pods_path, kube_pod, claims_now = self._snapshot(ns, name, before, work)
                sim = run_simulation(str(cluster_path), str(pods_path), tie_break="name")
                (result,) = sim.results
                v = Verdict(sc.seed * 100 + i, kube_node, result["node"], kube_message, result["message"],
                            len(kube_scores(self.diff.log, f"{ns}/{name}")))
                v.problems.extend(f"simulate rejected {e}" for e in sim.invalid)
                compare(v, kube_scores(self.diff.log, f"{ns}/{name}"), result["scores"])
                if same_error_on_another_node(kube_message, result["message"]):
                    v.problems = [p for p in v.problems if not p.startswith("messages differ")]
                by_name = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims_now}
                kube_devices = _device_tuples(allocated_devices(pod_from_api(kube_pod),
                                                                lambda n, c, m=by_name: m.get((n, c))))
                py_devices = _device_tuples(result.get("devices") or [])
                if kube_node is not None and not v.problems and kube_node != result["node"]:
                    # a tie kube-scheduler broke otherwise: simulate again, held to kube's node
                    py_devices = _device_tuples(_devices_on(kube_node, cluster_path, pods_path))
                if kube_node is not None and not v.problems and kube_devices != py_devices:
                    v.problems.append(f"devices differ on {kube_node}:\n  kube: {kube_devices}\n  py:   {py_devices}")
                out.append(DraVerdict(v, f"{ns}/{name}", kube_devices, py_devices))
                if kube_node is None:  # the next pod starts from kube-scheduler's state without this one
                    self.core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
                    wait_for(lambda name=name: not self.core.list_namespaced_pod(
                        ns, field_selector=f"metadata.name={name}").items, 60, what=f"{name} deleted")
        return out


def main(argv: list[str] | None = None) -> int:
    args = batch_args(argv, "python -m e2e.differential_dra", __doc__, 20)
    configure_logging("WARNING")  # simulate's per-attempt lines would bury the verdicts
    pods = failed = placed = same_node = 0
    with differential_cluster("py-scheduler-dradiff-", base_nodes=2, zones=2) as diff:
        dra = DraDifferential(diff)
        for seed in range(args.first_seed, args.first_seed + args.scenarios):
            for d in dra.run(generate_dra(seed)):
                v = d.verdict
                pods += 1
                placed += v.kube_node is not None
                same_node += v.kube_node is not None and v.kube_node == v.py_node
                failed += report(f"seed {seed} {d.pod}", v, f"devices={len(d.kube_devices)}")
    print(f"{pods - failed}/{pods} pods agree ({placed} placed by kube-scheduler, {same_node} on the same node)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
