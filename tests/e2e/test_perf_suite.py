"""The scheduler_perf interpreter's pure parts (e2e/perf/suite): Go templates, upstream's YAML, parameters,
sizes, skip reasons, op order. Inline fixtures in upstream's format, so no module cache is needed."""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.perf.suite import config
from e2e.perf.suite.gotemplate import TemplateError, render

CONFIG = """
- name: SchedulingBasic
  defaultPodTemplatePath: ../templates/pod-default.yaml
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
  - opcode: createPods
    countParam: $initPods
  - opcode: createPods
    countParam: $measurePods
    collectMetrics: true
  workloads:
  - name: 5Nodes
    labels: [integration-test, short]
    params: {initNodes: 5, initPods: 5, measurePods: 10}
  - name: 5000Nodes_10000Pods
    labels: [performance]
    threshold: 680
    params: {initNodes: 5000, initPods: 1000, measurePods: 10000}
  - name: Gated
    featureGates: {SomeGate: true}
    params: {initNodes: 1, initPods: 1, measurePods: 1}
- name: Slices
  featureGates: {DynamicResourceAllocation: true}
  workloadTemplate:
  - opcode: createAny
    templatePath: templates/slice.yaml
    countParam: $nodes
    templateParams:
      numDevices: $devices|8
  - opcode: sleep
    durationParam: $wait
  - opcode: createPods
    countParam: $pods
    steadyStateParam: $steady
    collectMetrics: true
  workloads:
  - name: small
    labels: [performance]
    params: {nodes: 4, pods: 8, wait: 1m30s, steady: false}
  - name: steady
    params: {nodes: 4, pods: 8, wait: 1s, steady: true}
- name: Gang
  featureGates: {GenericWorkload: true}
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
  - opcode: createPodGroups
    namespace: ns
    templatePath: pg.yaml
    countParam: $groups
    templateParams: {podsPerGroup: $podsPerGroup}
  - opcode: createPods
    namespace: ns
    countParam: $groups
    countMultiplierParam: $podsPerGroup
    collectMetrics: true
  workloads:
  - name: 10Nodes
    params: {initNodes: 10, groups: 3, podsPerGroup: 3}
  - name: 5000Nodes_1000Gangs
    labels: [performance]
    params: {initNodes: 5000, groups: 1000, podsPerGroup: 3}
- name: AlphaGang
  featureGates: {GenericWorkload: true}
  workloadTemplate:
  - opcode: createPodGroups
    namespace: ns
    templatePath: pg-alpha.yaml
    count: 1
  - opcode: createPods
    count: 1
  workloads:
  - name: one
    params: {}
"""
PODGROUP = """apiVersion: scheduling.k8s.io/{version}
kind: PodGroup
metadata:
  name: gang-{{{{.Index}}}}
spec:
  schedulingPolicy:
    gang:
      minCount: {{{{.podsPerGroup}}}}
"""


@pytest.fixture
def cases(tmp_path: Path) -> dict[str, config.TestCase]:
    (tmp_path / "misc").mkdir()
    (tmp_path / "misc" / "performance-config.yaml").write_text(CONFIG)
    (tmp_path / "misc" / "pg.yaml").write_text(PODGROUP.format(version="v1beta1"))
    (tmp_path / "misc" / "pg-alpha.yaml").write_text(PODGROUP.format(version="v1alpha3"))
    return config.load_cases(tmp_path)


def test_go_template_subset() -> None:
    src = ("{{$n := or .numDevices 3}}{{range $i := ($n | Int)}}d{{.}}-{{Mod $i 2}}{{if eq $i 1}}!{{else}},{{end}}"
           "{{end}} {{DivideInt .Index 5}} {{AddInt 8000 (Mod .Index (DivideInt .a .b))}} {{.missing}}")  # fmt: skip
    assert render(src, {"Index": 12, "a": 10.0, "b": 5.0}) == "d0-0,d1-1!d2-0, 2 8000 <no value>"
    assert render("{{- if .x -}} yes {{- else if .y}}y{{else}}no{{end}}", {"y": 1}) == "y"
    assert render("[{{JSON .s}}] {{.f}} {{.g}}", {"s": ["a"], "f": 3.0, "g": 1e6}) == '[["a"]] 3 1e+06'
    with pytest.raises(TemplateError):
        render("{{Nope 1}}", {})
    with pytest.raises(TemplateError):
        render("{{if .x}}", {})


def test_parse_and_params(cases: dict[str, config.TestCase]) -> None:
    basic = cases["SchedulingBasic"]
    assert basic.group == "misc" and basic.default_pod_template == "../templates/pod-default.yaml"
    w = basic.workload("5000Nodes_10000Pods")
    assert w.threshold == 680 and w.params["initNodes"] == 5000.0  # numbers are float64, as upstream decodes them
    ops = config.resolve_ops(basic, w.params)
    assert [(op["opcode"], op["count"]) for op in ops] == [("createNodes", 5000), ("createPods", 1000),
                                                            ("createPods", 10000)]  # fmt: skip
    assert ops[2]["collectMetrics"] and config.totals(ops) == (5000, 11000)
    slices = cases["Slices"]
    ops = config.resolve_ops(slices, slices.workload("small").params)
    assert ops[0]["templateParams"] == {"numDevices": 8.0}  # $devices|8: the default after the bar
    assert ops[1]["duration"] == 90.0 and ops[2]["steadyState"] is False
    with pytest.raises(config.ConfigError):
        config.resolve_template_params({"x": "$nope"}, {})


def test_sizes_and_skips(cases: dict[str, config.TestCase]) -> None:
    basic = cases["SchedulingBasic"]
    sizes = config.sizes(basic, lambda g: "no SomeGate" if g.get("SomeGate") else None)
    assert list(sizes) == [config.TWO_CORE, config.TINY, "5Nodes", "5000Nodes_10000Pods"]
    two = sizes[config.TWO_CORE]
    assert two.upstream.name == "5000Nodes_10000Pods"  # the first performance workload, scaled down
    assert two.nodes <= config.TWO_CORE_NODES and two.pods <= config.TWO_CORE_PODS
    assert (two.params["initNodes"], two.params["initPods"], two.params["measurePods"]) == (500.0, 100.0, 1000.0)
    assert sizes[config.TINY].upstream.name == "5Nodes"
    assert config.workload_skip_reason(basic, basic.workload("Gated"), lambda g: "no SomeGate") == "no SomeGate"
    slices = cases["Slices"]
    assert config.workload_skip_reason(slices, slices.workload("steady")) is None  # steady state runs
    assert config.count_params(slices) == {"nodes", "pods"}  # devices and durations are not counts



def test_workload_api_sizes_and_skips(cases: dict[str, config.TestCase]) -> None:
    gang = cases["Gang"]
    assert config.case_skip_reason(gang) is None
    two = config.sizes(gang)[config.TWO_CORE]
    # fewer groups of the same size: pods per group is a group's shape (minCount in its template), not a count
    assert (two.params["initNodes"], two.params["groups"], two.params["podsPerGroup"]) == (500.0, 100.0, 3.0)
    assert (two.nodes, two.pods) == (500, 300)
    assert config.workload_skip_reason(gang, gang.workload("10Nodes"), lambda g: "no gate") == "no gate"
    # GenericWorkload serves v1beta1 only: a v1alpha3 PodGroup would be refused
    alpha = cases["AlphaGang"]
    assert "PodGroups of scheduling.k8s.io/v1alpha3" in str(config.workload_skip_reason(alpha, alpha.workloads[0]))
    assert config.sizes(alpha) == {}


def test_plan_judges_py_gates_only_for_py(cases: dict[str, config.TestCase], monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from e2e.perf.suite import plan

    monkeypatch.setattr(plan, "suite_cases", lambda: cases)
    monkeypatch.setattr(plan, "py_gate_check", lambda g: "py lacks it" if g.get("GenericWorkload") else None)
    args = argparse.Namespace(workload=["Gang"], suite="all", size="tiny", schedulers="kube")
    assert [(c.name, s.upstream.name) for c, s in plan.suite_plan(args)] == [("Gang", "10Nodes")]
    args.schedulers = "py,kube"
    with pytest.raises(SystemExit, match="py lacks it"):
        plan.suite_plan(args)


def test_upstream_op_order_is_kept(tmp_path: Path) -> None:
    text = yaml.safe_dump([{"name": "C", "workloadTemplate": [
        {"opcode": "createNodes", "count": 1}, {"opcode": "createPods", "count": 2, "skipWaitToCompletion": True},
        {"opcode": "barrier", "stageRequirement": "Attempted"}, {"opcode": "deletePods", "namespace": "namespace-1"},
        {"opcode": "createPods", "count": 3, "collectMetrics": True}], "workloads": [{"name": "w"}]}])  # fmt: skip
    (case,) = config.parse_cases(text, tmp_path)
    ops = config.resolve_ops(case, {})
    assert [op["opcode"] for op in ops] == ["createNodes", "createPods", "barrier", "deletePods", "createPods"]
    assert config.case_skip_reason(case) is None


# ---- the ops that need more than a create: volumes, updates, steady state, claims allocated by the harness

OPS_CONFIG = """
- name: Volumes
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
    nodeAllocatableStrategy:
      nodeAllocatable: {attachable-volumes-csi-ebs.csi.aws.com: "39"}
      csiNodeAllocatable: {ebs.csi.aws.com: {count: 39}}
      migratedPlugins: [kubernetes.io/aws-ebs]
  - opcode: createPods
    countParam: $pods
    persistentVolumeTemplatePath: pv.yaml
    persistentVolumeClaimTemplatePath: pvc.yaml
    collectMetrics: true
  workloads:
  - name: small
    params: {nodes: 2, pods: 3}
- name: Updates
  workloadTemplate:
  - opcode: createNodes
    count: 1
  - opcode: updateAny
    countParam: $pods
    templatePath: update.yaml
    namespace: blocker
    subresources: [resize]
  - opcode: allocResourceClaims
    namespace: init
  - opcode: createPods
    countParam: $pods
    steadyStateParam: $steady
    durationParam: $duration
    collectMetrics: true
  workloads:
  - name: burst
    params: {pods: 2, steady: false, duration: 0s}
  - name: steady
    params: {pods: 2, steady: true, duration: 1s}
  - name: broken
    params: {steady: true, duration: 1s}
"""


def test_new_ops_run_here(tmp_path: Path) -> None:
    volumes, updates = config.parse_cases(OPS_CONFIG, tmp_path)
    assert config.case_skip_reason(volumes) is None and config.case_skip_reason(updates) is None
    assert config.totals(config.resolve_ops(volumes, volumes.workload("small").params)) == (2, 3)
    steady = config.resolve_ops(updates, updates.workload("steady").params)[3]
    assert steady["steadyState"] is True and steady["duration"] == 1.0 and steady["count"] == 2
    assert config.workload_skip_reason(updates, updates.workload("steady")) is None
    # upstream's patchParams fails a workload whose parameter is missing: skipped with the reason
    assert "pods is undefined" in str(config.workload_skip_reason(updates, updates.workload("broken")))
    assert set(config.sizes(updates)) == {config.TWO_CORE, config.TINY, "burst", "steady"}


def test_volume_pair_and_csi_node() -> None:
    from e2e.perf.suite.executor import MIGRATED_PLUGINS, csi_node, volume_pair

    pvc_t = yaml.safe_load("""
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {annotations: {pv.kubernetes.io/bind-completed: "true"}}
spec: {accessModes: [ReadOnlyMany], resources: {requests: {storage: 1Gi}}}
""")
    aws = yaml.safe_load("""
apiVersion: v1
kind: PersistentVolume
spec: {accessModes: [ReadOnlyMany], awsElasticBlockStore: {volumeID: x}, capacity: {storage: 1Gi}}
""")
    pvc, pv = volume_pair(pvc_t, aws, "ns-1", 7)
    assert pvc["metadata"]["name"] == "pvc-7" and pvc["spec"]["volumeName"] == "ns-1-vol-7"
    assert pv["metadata"]["name"] == "ns-1-vol-7" and pv["spec"]["awsElasticBlockStore"]["volumeID"] == "vol-7"
    assert pv["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "namespace": "ns-1", "name": "pvc-7",
                                      "apiVersion": "v1"}  # fmt: skip
    assert pv["status"] == {"phase": "Bound"} and pvc["status"] == {"phase": "Bound"}
    assert "claimRef" not in aws["spec"] and "name" not in pvc_t["metadata"]  # the templates are untouched
    csi = {**aws, "spec": {"csi": {"driver": "ebs.csi.aws.com"}}}
    _, pv = volume_pair(pvc_t, csi, "ns-1", 0)
    assert pv["spec"]["csi"] == {"driver": "ebs.csi.aws.com", "volumeHandle": "ns-1-vol-0"}
    node = csi_node("n1", {"ebs.csi.aws.com": {"count": 39}}, "kubernetes.io/aws-ebs")
    assert node["metadata"] == {"name": "n1", "annotations": {MIGRATED_PLUGINS: "kubernetes.io/aws-ebs"}}
    assert node["spec"]["drivers"] == [{"name": "ebs.csi.aws.com", "allocatable": {"count": 39}, "nodeID": "n1"}]


class FakeRest:
    """The executor's API (executor.Rest) in memory: what was written, in order."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.calls: list[tuple[str, str, str | None, str]] = []
        self.sent: list[dict[str, Any]] = []

    def list(self, api_version: str, kind: str, namespace: str | None = None,
             selector: str = "") -> list[dict[str, Any]]:  # fmt: skip
        return [copy.deepcopy(o) for o in self.objects if o["apiVersion"] == api_version and o["kind"] == kind
                and (namespace is None or o["metadata"].get("namespace") == namespace)]  # fmt: skip

    def create(self, obj: Mapping[str, Any], namespace: str | None = None, tries: int = 20) -> dict[str, Any]:
        self.calls.append(("create", obj["metadata"]["name"], namespace, ""))
        return dict(obj)

    def update(self, obj: Mapping[str, Any], name: str, namespace: str | None = None, subresource: str = "") -> None:
        self.calls.append(("update", name, namespace, subresource))
        self.sent.append(copy.deepcopy(dict(obj)))
        for i, o in enumerate(self.objects):
            meta = o["metadata"]
            if o["kind"] == obj["kind"] and meta["name"] == name and meta.get("namespace") == namespace:
                self.objects[i] = copy.deepcopy(dict(obj))


DRA_OBJECTS = """
- apiVersion: v1
  kind: Node
  metadata: {name: node-a}
- apiVersion: v1
  kind: Node
  metadata: {name: node-b}
- apiVersion: resource.k8s.io/v1
  kind: DeviceClass
  metadata: {name: test-class}
  spec:
    selectors: [{cel: {expression: device.driver == "test-driver.cdi.k8s.io"}}]
"""


def _slice(node: str, devices: int) -> dict[str, Any]:
    """One ResourceSlice of node-<node>, its pool pool-<node>, with ``devices`` devices dev-<i>."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"slice-{node}"},
            "spec": {"driver": "test-driver.cdi.k8s.io", "nodeName": f"node-{node}",
                     "pool": {"name": f"pool-{node}", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"dev-{i}"} for i in range(devices)]}}  # fmt: skip


def _claim(i: int, ns: str = "init") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"test-claim-{i}", "namespace": ns, "uid": f"uid-{ns}-{i}"},
            "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class",
                                                                            "allocationMode": "ExactCount",
                                                                            "count": 1}}]}}}  # fmt: skip


def test_alloc_resource_claims() -> None:
    from e2e.perf.suite.allocate import AllocationFailed, allocate_claims, features

    objects = [*yaml.safe_load(DRA_OBJECTS), _slice("a", 2), _slice("b", 1), *(_claim(i) for i in range(3)),
               _claim(0, "test")]  # fmt: skip
    api = FakeRest(objects)
    assert allocate_claims(api, "init", {}) == 3
    assert [c[3] for c in api.calls] == ["status"] * 3  # written as upstream's UpdateStatus
    taken = []
    for c in api.list("resource.k8s.io/v1", "ResourceClaim", "init"):
        (r,) = c["status"]["allocation"]["devices"]["results"]
        terms = c["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
        node = terms[0]["matchFields"][0]["values"][0]
        assert r["request"] == "req-0" and r["pool"] == f"pool-{node[-1]}"
        taken.append((r["pool"], r["device"]))
    assert sorted(taken) == [("pool-a", "dev-0"), ("pool-a", "dev-1"), ("pool-b", "dev-0")]  # every device once
    assert "status" not in api.list("resource.k8s.io/v1", "ResourceClaim", "test")[0]  # only its namespace
    assert allocate_claims(api, "init", {}) == 0  # nothing left to allocate
    with pytest.raises(AllocationFailed):  # the cluster is full: upstream's test fails the same way
        allocate_claims(FakeRest([*api.objects, _claim(9)]), "init", {})
    assert features({"DRAPrioritizedList": False}).prioritized_list is False
    assert features({}).prioritized_list is True


def _executor(tmp_path: Path, rest: Any, tracker: Any) -> Any:
    from e2e.perf.suite.executor import Executor

    (case,) = config.parse_cases(yaml.safe_dump([{"name": "C", "workloadTemplate": [], "workloads": []}]), tmp_path)
    return Executor(case, [], rest, None, tracker, "py-scheduler", lambda: {}, lambda _: None)  # type: ignore[arg-type]


def test_update_any(tmp_path: Path) -> None:
    (tmp_path / "update.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-blocker-{{ .Index }}\n"
        "spec:\n  containers:\n  - name: pause\n    image: pause\n")
    api = FakeRest([])
    ex = _executor(tmp_path, api, None)
    t0 = time.monotonic()
    ex.op_updateAny(3, {"count": 2, "templatePath": "update.yaml", "namespace": "blocker",
                        "subresources": ["resize"], "updatePerSecond": 20})  # fmt: skip
    assert time.monotonic() - t0 >= 0.09  # a tick of 1/20 s before each update
    assert all(o["spec"]["schedulerName"] == "py-scheduler" for o in api.sent)  # else the spec would change
    assert api.calls == [("update", f"pod-blocker-{i}", "blocker", sub) for i in (0, 1) for sub in ("resize", "status")]


class SteadyCluster(FakeRest):
    """Pods that a scheduler binds as soon as they exist (the tracker sees them bound), deletable."""

    def __init__(self) -> None:
        super().__init__([])
        self.live: dict[str, bool] = {}  # "ns/name" -> deleted
        self.created: list[str] = []

    def create(self, obj: Mapping[str, Any], namespace: str | None = None, tries: int = 20) -> dict[str, Any]:
        if obj.get("kind") != "Pod":
            return dict(obj)
        key = f"{namespace}/{obj['metadata']['name']}"
        self.live[key] = False
        self.created.append(key)
        return dict(obj)

    def path(self, obj: Mapping[str, Any], namespace: str | None) -> str:
        return f"/api/v1/namespaces/{namespace}/pods"

    def _call(self, method: str, path: str, body: Any = None, query: Any = ()) -> Any:
        assert method == "DELETE" and body == {"gracePeriodSeconds": 0, "propagationPolicy": "Background"}
        ns, name = path.split("/")[4], path.split("/")[-1]
        self.live[f"{ns}/{name}"] = True
        return {}

    def pods(self, namespaces: Any = (), selector: Any = None) -> list[Any]:
        from e2e.perf.suite.tracker import PodView

        return [PodView(k, 0.0, 1.0, True, gone, "n") for k, gone in list(self.live.items())]


def test_steady_state_keeps_count_in_flight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from e2e.perf.suite import executor

    cluster = SteadyCluster()

    def create_pods(conn: Any, pods: list[dict[str, Any]], concurrency: int = 32) -> tuple[dict[str, float], list[str]]:
        for p in pods:
            cluster.create(p, p["metadata"]["namespace"])
        return {}, []

    monkeypatch.setattr(executor, "create_pods", create_pods)
    ex = _executor(tmp_path, cluster, cluster)
    ex.op_createPods(2, {"count": 3, "steadyState": True, "duration": 0.3, "collectMetrics": True})
    (w,) = ex.windows
    assert w.steady and w.result["drained"] and w.namespaces == ["namespace-2"]
    assert len(cluster.created) > 3  # each scheduled pod was replaced by a new one
    assert sum(not gone for gone in cluster.live.values()) == 3  # and deleted: three in flight, always
    assert len(set(cluster.created)) == len(cluster.created) and ex.steady_made["namespace-2"] == len(cluster.created)


def test_node_allocatable_strategy_keeps_capacity(tmp_path: Path) -> None:
    ex = _executor(tmp_path, FakeRest([]), None)
    node = {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4", "pods": "110"}}}
    ex._prepare_nodes({"nodeAllocatableStrategy": {"nodeAllocatable": {"attachable-volumes-csi-x": "39"}}}, [node])
    # upstream patches a node whose allocatable the API server defaulted to its capacity
    assert node["status"]["allocatable"] == {"cpu": "4", "pods": "110", "attachable-volumes-csi-x": "39"}


def test_rest_paths() -> None:
    import threading

    from e2e.perf.suite.executor import ExecutionError, Rest

    rest = object.__new__(Rest)  # discovery answered in advance: no API server
    rest._lock = threading.Lock()
    rest._mapping = {("resource.k8s.io/v1", "ResourceClaim"): ("resourceclaims", True),
                     ("v1", "Node"): ("nodes", False)}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim"}
    assert rest.path(claim, "init") == "/apis/resource.k8s.io/v1/namespaces/init/resourceclaims"
    assert rest.path(claim, None, every_namespace=True) == "/apis/resource.k8s.io/v1/resourceclaims"  # a list
    assert rest.path({"apiVersion": "v1", "kind": "Node"}, None) == "/api/v1/nodes"
    with pytest.raises(ExecutionError):  # creating a namespaced object needs its namespace
        rest.path(claim, None)


def test_create_any_count(tmp_path: Path) -> None:
    (tmp_path / "claim.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-{{.Index}}\n")
    api = FakeRest([])
    ex = _executor(tmp_path, api, None)
    ex.namespaces.add("init")
    ex.op_createAny(0, {"templatePath": "claim.yaml", "count": 0, "namespace": "init"})  # $initClaims: 0
    assert api.calls == []
    ex.op_createAny(1, {"templatePath": "claim.yaml", "namespace": "init"})  # no count: one object
    ex.op_createAny(2, {"templatePath": "claim.yaml", "count": 2})
    assert [c[:3] for c in api.calls] == [("create", "c-0", "init"), ("create", "c-0", None), ("create", "c-1", None)]


class PodGroupRest(FakeRest):
    """Stores what it creates, in its namespace, as the API server would list it."""

    def create(self, obj: Mapping[str, Any], namespace: str | None = None, tries: int = 20) -> dict[str, Any]:
        super().create(obj, namespace, tries)
        stored = copy.deepcopy(dict(obj))
        stored["metadata"]["namespace"] = namespace
        self.objects.append(stored)
        return stored


def test_create_pod_groups(cases: dict[str, config.TestCase], monkeypatch: pytest.MonkeyPatch) -> None:
    from e2e.perf.suite import executor

    gang = cases["Gang"]
    (op,) = [o for o in config.resolve_ops(gang, gang.workload("10Nodes").params) if o["opcode"] == "createPodGroups"]
    api = PodGroupRest([])
    ex = executor.Executor(gang, [], api, None, None, "py-scheduler", lambda: {}, lambda _: None)  # type: ignore[arg-type]
    ex.namespaces.add("ns")
    ex.op_createPodGroups(1, op)
    assert sorted(o["metadata"]["name"] for o in api.objects) == ["gang-0", "gang-1", "gang-2"]
    assert {o["spec"]["schedulingPolicy"]["gang"]["minCount"] for o in api.objects} == {3}
    assert all("schedulerName" not in o["spec"] for o in api.objects)  # only pods name their scheduler
    monkeypatch.setattr(executor, "PODGROUP_CACHE_TIMEOUT", 0.2)
    lost = FakeRest([])  # creates succeed, the list never shows them
    ex = executor.Executor(gang, [], lost, None, None, "py-scheduler", lambda: {}, lambda _: None)  # type: ignore[arg-type]
    ex.namespaces.add("ns")
    with pytest.raises(executor.ExecutionError, match="timed out waiting for 3 PodGroups"):
        ex.op_createPodGroups(1, op)


def test_group_metrics() -> None:
    from e2e.perf.suite.run import group_metrics
    from e2e.perf.suite.tracker import PodView

    def pod(name: str, group: str | None, bound: float | None) -> PodView:
        return PodView(f"ns/{name}", 0.0, bound, True, False, "n" if bound else None, group)

    pods = [pod("a0", "a", 1.0), pod("a1", "a", 2.0), pod("b0", "b", 4.0), pod("b1", "b", None), pod("x", None, 0.5)]
    created = {p.key: 0.0 for p in pods}
    bound = {p.key: p.bound for p in pods if p.bound is not None}
    # group a complete at 2.0 (its last pod), b incomplete: 1 group over 0.0 -> 2.0
    assert group_metrics(pods, created, bound) == {"groups": 2, "groups_bound": 1, "groups_per_second": 0.5}
    assert group_metrics([pod("x", None, 0.5)], created, bound) == {}


def test_generated_node_names_never_collide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from e2e.perf.suite import executor

    draws = iter(["aaaaa", "aaaaa", "bbbbb", "aaaaa", "bbbbb", "ccccc"])
    monkeypatch.setattr(executor, "_rand5", lambda: next(draws))
    api = FakeRest([])
    _executor(tmp_path, api, None).op_createNodes(0, {"count": 3})
    assert sorted(c[1] for c in api.calls) == ["node-0-aaaaa", "node-0-bbbbb", "node-0-ccccc"]
