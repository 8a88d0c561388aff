"""The scheduler_perf interpreter's pure parts (e2e/perf/suite): Go templates, upstream's YAML, parameters,
sizes, skip reasons, op order. Inline fixtures in upstream's format, so no module cache is needed."""

from __future__ import annotations

from pathlib import Path

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
  - opcode: createPodGroups
    namespace: ns
    templatePath: pg.yaml
    count: 1
  workloads:
  - name: one
    params: {}
"""


@pytest.fixture
def cases(tmp_path: Path) -> dict[str, config.TestCase]:
    (tmp_path / "misc").mkdir()
    (tmp_path / "misc" / "performance-config.yaml").write_text(CONFIG)
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
    assert "steady state" in str(config.workload_skip_reason(slices, slices.workload("steady")))
    assert config.count_params(slices) == {"nodes", "pods"}  # devices and durations are not counts
    assert "Workload API" in str(config.case_skip_reason(cases["Gang"]))
    assert config.sizes(cases["Gang"]) == {}


def test_upstream_op_order_is_kept(tmp_path: Path) -> None:
    text = yaml.safe_dump([{"name": "C", "workloadTemplate": [
        {"opcode": "createNodes", "count": 1}, {"opcode": "createPods", "count": 2, "skipWaitToCompletion": True},
        {"opcode": "barrier", "stageRequirement": "Attempted"}, {"opcode": "deletePods", "namespace": "namespace-1"},
        {"opcode": "createPods", "count": 3, "collectMetrics": True}], "workloads": [{"name": "w"}]}])  # fmt: skip
    (case,) = config.parse_cases(text, tmp_path)
    ops = config.resolve_ops(case, {})
    assert [op["opcode"] for op in ops] == ["createNodes", "createPods", "barrier", "deletePods", "createPods"]
    assert config.case_skip_reason(case) is None
