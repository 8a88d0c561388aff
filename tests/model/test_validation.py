"""simulate's input validation: one table per field class, each row an invalid field and the path and
detail reported, plus the valid forms that must pass (a false rejection hides a pod from simulate)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler.model.validation import validate, validate_node, validate_pod


def pod(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                            "spec": {"containers": [{"name": "c", "image": "x"}]}}
    base["spec"].update(spec)
    return base


def node(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    base.update(fields)
    return base


def container(**fields: Any) -> list[dict[str, Any]]:
    return [{"name": "c", "image": "x", **fields}]


def required(*exprs: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(exprs)}
    if fields is not None:
        term = {"matchFields": fields}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def errors(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate(obj)]


def check(obj: dict[str, Any], expected: str) -> None:
    got = errors(obj)
    assert any(expected in e for e in got), got


NODE_AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"


@pytest.mark.parametrize(("affinity", "expected"), [
    (required({"key": "zone", "operator": "Near", "values": ["a"]}),
     f"{NODE_AFFINITY}.matchExpressions[0].operator: unsupported value 'Near'"),
    (required({"key": "cores", "operator": "Gt", "values": ["many"]}),
     f"{NODE_AFFINITY}.matchExpressions[0].values[0]: 'many' must be an integer when operator is Gt"),
    (required({"key": "cores", "operator": "Lt", "values": ["1", "2"]}),
     f"{NODE_AFFINITY}.matchExpressions[0].values: must be specified single value when operator is Lt"),
    (required({"key": "cores", "operator": "Gt", "values": ["1.5"]}), "'1.5' must be an integer"),
    (required({"key": "zone", "operator": "In", "values": []}),
     f"{NODE_AFFINITY}.matchExpressions[0].values: must be specified when operator is In"),
    (required({"key": "zone", "operator": "Exists", "values": ["a"]}), "may not be specified when operator is Exists"),
    (required({"key": "bad key!", "operator": "Exists"}),
     "matchExpressions[0].key: 'bad key!' is not a valid label key"),
    (required({"key": "zone", "operator": "In", "values": [7]}), "matchExpressions[0].values[0]: 7 is not"),
    (required(fields=[{"key": "metadata.uid", "operator": "In", "values": ["x"]}]),
     f"{NODE_AFFINITY}.matchFields[0].key: unsupported value 'metadata.uid'"),
    (required(fields=[{"key": "metadata.name", "operator": "Exists"}]), "matchFields[0].operator"),
    (required(fields=[{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]),
     "matchFields[0].values: must have exactly one value"),
    ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
     "nodeSelectorTerms: must have at least one node selector term"),
    ({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 0, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}}]}},
     "preferredDuringSchedulingIgnoredDuringExecution[0].weight: 0: must be in the range 1-100"),
])
def test_node_affinity(affinity: dict[str, Any], expected: str) -> None:
    check(pod(affinity=affinity), expected)


POD_AFFINITY = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"


@pytest.mark.parametrize(("term", "expected"), [
    ({"labelSelector": {"matchLabels": {"app": "a"}}}, f"{POD_AFFINITY}.topologyKey: can not be empty"),
    ({"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Gt",
                                                                       "values": ["1"]}]}},
     f"{POD_AFFINITY}.labelSelector.matchExpressions[0].operator: unsupported value 'Gt'"),
    ({"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "a b"}}},
     f"{POD_AFFINITY}.labelSelector.matchLabels.app: 'a b' is not a valid label value"),
    ({"topologyKey": "zone", "namespaces": ["Not_A_Namespace"]}, f"{POD_AFFINITY}.namespaces[0]"),
    ({"topologyKey": "zone", "matchLabelKeys": ["app"]},
     f"{POD_AFFINITY}.matchLabelKeys: must not be specified when labelSelector is not set"),
])
def test_pod_affinity_and_label_selectors(term: dict[str, Any], expected: str) -> None:
    check(pod(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}), expected)


@pytest.mark.parametrize(("toleration", "expected"), [
    ({"key": "k", "operator": "Sometimes", "value": "v"},
     "spec.tolerations[0].operator: unsupported value 'Sometimes'"),
    ({"key": "k", "operator": "Exists", "value": "v"}, "spec.tolerations[0].operator: value must be empty"),
    ({"operator": "Equal", "value": "v"}, "spec.tolerations[0].operator: must be Exists when key is empty"),
    ({"key": "k", "effect": "NoRun"}, "spec.tolerations[0].effect: unsupported value 'NoRun'"),
    ({"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5},
     "spec.tolerations[0].effect: must be NoExecute when tolerationSeconds is set"),
    ({"key": "k", "value": "a b"}, "spec.tolerations[0].value: 'a b' is not a valid label value"),
    ("dedicated", "spec.tolerations[0]: must be an object"),
])
def test_tolerations(toleration: Any, expected: str) -> None:
    check(pod(tolerations=[toleration]), expected)


@pytest.mark.parametrize(("resources", "expected"), [
    ({"requests": {"memory": "-1Gi"}}, "spec.containers[0].resources.requests.memory: must be >= 0"),
    ({"requests": {"cpu": "lots"}}, "spec.containers[0].resources.requests.cpu: 'lots' is not a valid quantity"),
    ({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
     "spec.containers[0].resources.requests.cpu: must be less than or equal to cpu limit of 1"),
    ({"requests": {"example.com/gpu": "1"}}, "limit must be set for non overcommitable resource example.com/gpu"),
    ({"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}},
     "requests.example.com/gpu: must be equal to example.com/gpu limit of 2"),
    ({"requests": {"example.com/gpu": "500m"}, "limits": {"example.com/gpu": "500m"}},
     "requests.example.com/gpu: must be an integer"),
    ({"requests": {"pods": "1"}}, "requests.pods: must be a standard resource for containers"),
    ({"limits": {"memory": "-5"}}, "spec.containers[0].resources.limits.memory: must be >= 0"),
])
def test_container_resources(resources: dict[str, Any], expected: str) -> None:
    check(pod(containers=container(resources=resources)), expected)


@pytest.mark.parametrize(("spec", "expected"), [
    ({"resources": {"requests": {"ephemeral-storage": "1Gi"}}},
     "spec.resources.requests.ephemeral-storage: unsupported value 'ephemeral-storage'"),
    ({"resources": {"requests": {"cpu": "-1"}}}, "spec.resources.requests.cpu: must be >= 0"),
    ({"overhead": {"cpu": "-100m"}}, "spec.overhead.cpu: must be >= 0"),
    ({"resources": {"requests": {"cpu": "500m"}},
      "containers": [{"name": "a", "resources": {"requests": {"cpu": "400m"}}},
                     {"name": "b", "resources": {"requests": {"cpu": "200m"}}}]},
     "spec.resources.requests.cpu: must be greater than or equal to aggregate container requests of 0.6"),
    ({"initContainers": container(resources={"requests": {"memory": "1Qi"}})},
     "spec.initContainers[0].resources.requests.memory: '1Qi' is not a valid quantity"),
])
def test_pod_level_resources_and_overhead(spec: dict[str, Any], expected: str) -> None:
    check(pod(**spec), expected)


@pytest.mark.parametrize(("ports", "expected"), [
    ([{"containerPort": 0}], "spec.containers[0].ports[0].containerPort: 0: must be between 1 and 65535"),
    ([{"containerPort": 80, "hostPort": 70000}], "spec.containers[0].ports[0].hostPort: 70000"),
    ([{"containerPort": 80, "protocol": "HTTP"}], "spec.containers[0].ports[0].protocol: unsupported value 'HTTP'"),
    ([{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81, "hostPort": 8080}],
     "spec.containers[0].ports[1].hostPort: duplicate value 8080/TCP"),
    ([{"containerPort": "80"}], "ports[0].containerPort: '80'"),
])
def test_ports(ports: list[dict[str, Any]], expected: str) -> None:
    check(pod(containers=container(ports=ports)), expected)


SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
          "labelSelector": {"matchLabels": {"app": "a"}}}


@pytest.mark.parametrize(("change", "expected"), [
    ({"maxSkew": 0}, "spec.topologySpreadConstraints[0].maxSkew: 0: must be greater than zero"),
    ({"topologyKey": ""}, "spec.topologySpreadConstraints[0].topologyKey: can not be empty"),
    ({"whenUnsatisfiable": "Maybe"}, "spec.topologySpreadConstraints[0].whenUnsatisfiable: unsupported value 'Maybe'"),
    ({"minDomains": 0}, "spec.topologySpreadConstraints[0].minDomains: 0: must be greater than zero"),
    ({"minDomains": 2, "whenUnsatisfiable": "ScheduleAnyway"},
     "minDomains: can only be used when whenUnsatisfiable is DoNotSchedule"),
    ({"nodeTaintsPolicy": "Sometimes"}, "spec.topologySpreadConstraints[0].nodeTaintsPolicy: unsupported value"),
    ({"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}},
     "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].values: must be specified"),
])
def test_topology_spread_constraints(change: dict[str, Any], expected: str) -> None:
    check(pod(topologySpreadConstraints=[{**SPREAD, **change}]), expected)


def test_duplicate_spread_constraints() -> None:
    check(pod(topologySpreadConstraints=[SPREAD, SPREAD]), "spec.topologySpreadConstraints[1]: duplicate")


@pytest.mark.parametrize(("obj", "expected"), [
    (pod(priority=2**31), "spec.priority: 2147483648 must be a 32-bit integer"),
    (pod(priority="high"), "spec.priority: 'high' must be a 32-bit integer"),
    (pod(preemptionPolicy="Always"), "spec.preemptionPolicy: unsupported value 'Always'"),
    (pod(schedulingGates=[{"name": "not a gate"}]), "spec.schedulingGates[0].name"),
    (pod(nodeSelector={"zone": "a b"}), "spec.nodeSelector.zone: 'a b' is not a valid label value"),
    (pod(containers=[]), "spec.containers: required"),
    (pod(containers=[{"name": "c"}, {"name": "c"}]), "spec.containers[1].name: duplicate container name 'c'"),
    ({**pod(), "metadata": {"name": "Bad_Name", "namespace": "default"}}, "metadata.name: 'Bad_Name'"),
    ({**pod(), "metadata": {"name": "p", "labels": {"app": "a b"}}}, "metadata.labels.app"),
])
def test_priorities_names_and_scalars(obj: dict[str, Any], expected: str) -> None:
    check(obj, expected)


@pytest.mark.parametrize(("obj", "expected"), [
    (node(spec={"taints": [{"key": "k", "effect": "Never"}]}), "spec.taints[0].effect: unsupported value 'Never'"),
    (node(spec={"taints": [{"key": "k"}]}), "spec.taints[0].effect: required"),
    (node(spec={"taints": [{"effect": "NoSchedule"}]}), "spec.taints[0].key: required"),
    (node(spec={"taints": [{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}]}),
     "spec.taints[1]: duplicate taint k:NoSchedule"),
    (node(status={"allocatable": {"cpu": "-4"}}), "status.allocatable.cpu: must be >= 0"),
    (node(status={"capacity": {"memory": "eight"}}), "status.capacity.memory: 'eight' is not a valid quantity"),
    ({**node(), "metadata": {"name": "N1"}}, "metadata.name: 'N1'"),
])
def test_nodes(obj: dict[str, Any], expected: str) -> None:
    assert any(expected in str(e) for e in validate_node(obj)), validate_node(obj)


VALID_POD = pod(
    containers=[{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}],
                 "resources": {"requests": {"cpu": "500m", "memory": "1Gi", "example.com/gpu": "1",
                                            "hugepages-2Mi": "2Mi"},
                               "limits": {"cpu": "1", "example.com/gpu": "1", "hugepages-2Mi": "2Mi"}}}],
    initContainers=[{"name": "init", "image": "x", "restartPolicy": "Always"}],
    resources={"requests": {"cpu": "1", "memory": "2Gi"}},
    overhead={"cpu": "10m"},
    priority=-5, preemptionPolicy="Never", schedulerName="py-scheduler",
    nodeSelector={"kubernetes.io/os": "linux"},
    schedulingGates=[{"name": "example.com/wait"}],
    tolerations=[{"operator": "Exists"}, {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
                 {"key": "k", "effect": "NoExecute", "tolerationSeconds": 30}, {"key": "k", "operator": ""}],
    topologySpreadConstraints=[{**SPREAD, "minDomains": 2, "nodeAffinityPolicy": "Honor",
                                "matchLabelKeys": ["pod-template-hash"]},
                               {**SPREAD, "whenUnsatisfiable": "ScheduleAnyway"}],
    affinity={
        **required({"key": "cores", "operator": "Gt", "values": ["-3"]},
                   {"key": "zone", "operator": "NotIn", "values": ["a", ""]}),
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {},
                                                "namespaceSelector": {"matchLabels": {"team": "a"}},
                                                "matchLabelKeys": ["app"]}}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "namespaces": ["default"],
             "labelSelector": {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}}]},
    },
)


def test_valid_objects_pass() -> None:
    assert validate_pod(VALID_POD) == []
    assert validate_node(node(spec={"taints": [{"key": "k", "effect": "NoSchedule"},
                                               {"key": "k", "effect": "NoExecute"}]})) == []
    matchfields = pod(affinity=required(fields=[{"key": "metadata.name", "operator": "In", "values": ["n1"]}]))
    assert validate_pod(matchfields) == []


def test_every_invalid_field_is_reported_not_just_the_first() -> None:
    bad = copy.deepcopy(VALID_POD)
    bad["spec"]["tolerations"][1]["operator"] = "Sometimes"
    bad["spec"]["containers"][0]["resources"]["requests"]["memory"] = "-1"
    assert errors(bad) == [
        "spec.containers[0].resources.requests.memory: must be >= 0",
        "spec.tolerations[1].operator: unsupported value 'Sometimes' (supported: Equal, Exists)",
    ]


def test_other_kinds_are_checked_for_metadata_only() -> None:
    pvc = {"kind": "PersistentVolumeClaim", "metadata": {"name": "Claim!", "namespace": "default"}, "spec": 5}
    assert errors(pvc) == ["metadata.name: 'Claim!' is not a valid DNS subdomain (lowercase alphanumerics, '-', .)"]
