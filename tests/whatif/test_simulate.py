"""`py-scheduler simulate`: the same core, offline; outputs and input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scheduler.app.cli import main

CLUSTER = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {topology.kubernetes.io/zone: a}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: n2, labels: {topology.kubernetes.io/zone: b}}
  spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
  status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: n3, labels: {topology.kubernetes.io/zone: c}}
  status: {allocatable: {cpu: "2", memory: 4Gi, pods: "110"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: existing, namespace: default}
  spec: {nodeName: n1, containers: [{name: c, image: nginx, resources: {requests: {cpu: "3"}}}]}
"""

PODS = """
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: default}
spec:
  schedulerName: py-scheduler
  containers: [{name: c, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: default}
spec:
  schedulerName: py-scheduler
  containers: [{name: c, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: default}
spec: {schedulerName: py-scheduler, containers: [{name: c, image: nginx, resources: {requests: {cpu: "3"}}}]}
"""

# Only NodeResourcesFit (LeastAllocated) and TaintToleration, so the scores below follow by hand.
CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: py-scheduler
  plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: NodeResourcesFit, weight: 1}, {name: TaintToleration, weight: 3},
                {name: DefaultBinder}]
      disabled: [{name: "*"}]
"""


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str, pods: str = PODS,
        cluster: str = CLUSTER) -> tuple[int, str, str]:
    (tmp_path / "cluster.yaml").write_text(cluster)
    (tmp_path / "pods.yaml").write_text(pods)
    (tmp_path / "config.yaml").write_text(CONFIG)
    code = main(["--log-level", "ERROR", "simulate", "--cluster", str(tmp_path / "cluster.yaml"),
                 "--pods", str(tmp_path / "pods.yaml"), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_has_decisions_filters_and_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(tmp_path, capsys, "--config", str(tmp_path / "config.yaml"), "--tie-break", "name",
                       "--output", "json")
    assert code == 0
    results = json.loads(out)["results"]
    assert [r["pod"] for r in results] == ["default/a", "default/b", "default/big"]
    a, b, big = results
    # a: n1 cpu 4000/4000 used after a -> 0, mem (200Mi+1Gi)/8Gi -> 85, avg 42; n3 cpu 50, mem 75 -> 62.
    assert a["node"] == "n3"
    assert a["scores"]["n3"] == {"NodeResourcesFit": 62, "TaintToleration": 100, "total": 362}
    assert a["scores"]["n1"] == {"NodeResourcesFit": 42, "TaintToleration": 100, "total": 342}
    assert a["filtered"] == {"n2": {"plugin": "TaintToleration",
                                    "reason": "node(s) had untolerated taint(s)"}}
    assert a["message"] == ""
    # b sees a on n3: n3 cpu 2000/2000 -> 0, mem 2Gi/4Gi -> 50: 25 < n1's 42 (a's requests are counted).
    assert b["node"] == "n1"
    assert big["node"] is None
    assert big["message"] == ("0/3 nodes are available: 1 node(s) had untolerated taint(s), "
                              "2 Insufficient cpu.")
    assert big["filtered"]["n3"]["plugin"] == "NodeResourcesFit"


def test_table_output_is_readable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(tmp_path, capsys, "--config", str(tmp_path / "config.yaml"), "--seed", "7")
    assert code == 0
    assert "default/a" in out and "-> n3" in out
    assert "(unschedulable)" in out


@pytest.mark.parametrize(
    ("cluster", "fragment"),
    [
        ("apiVersion: v1\nkind: Node\nmetadata: {labels: {}}\n", "missing field metadata.name"),
        ("- a\n- b\n", "expected an object"),
        ("kind: Node\nmetadata: {name: x\n", "invalid YAML"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n",
         "Pod default/p: field spec.nodeName: cluster pods must be bound"),
        ("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: x}\n", "Secret x/s: unsupported kind Secret"),
    ],
)
def test_malformed_input_names_object_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cluster: str, fragment: str
) -> None:
    code, _, err = run(tmp_path, capsys, cluster=cluster)
    assert code == 2
    assert fragment in err
    assert "Traceback" not in err


def test_malformed_pod_gets_a_message_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = ("apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {schedulerName: py-scheduler, containers: "
            "[{name: c, image: x, resources: {requests: {memory: 12XB}}}]}\n")
    code, out, _ = run(tmp_path, capsys, "--output", "json", pods=pods)
    assert code == 0
    (r,) = json.loads(out)["results"]
    assert r["node"] is None
    assert "spec.containers[0].resources.requests.memory" in r["message"]


def test_invalid_objects_are_reported_by_field_and_the_valid_ones_placed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_node = ("\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n4}\nspec: {taints: [{key: k, effect: Never}]}\n"
                "status: {allocatable: {cpu: '64', memory: 64Gi, pods: '110'}}\n")
    pods = PODS + """
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  schedulerName: py-scheduler
  containers: [{name: c, image: nginx, resources: {requests: {memory: "-1Gi"}}}]
  tolerations: [{key: k, operator: Sometimes}]
"""
    code, out, _ = run(tmp_path, capsys, "--output", "json", "--seed", "1", pods=pods,
                       cluster=CLUSTER + bad_node)
    assert code == 0
    doc = json.loads(out)
    a, b, big, p = doc["results"]
    assert a["node"] and b["node"] and big["node"] is None
    assert p["node"] is None
    assert p["invalid"] == ["default/p: spec.containers[0].resources.requests.memory: must be >= 0",
                            "default/p: spec.tolerations[0].operator: unsupported value 'Sometimes' "
                            "(supported: Equal, Exists)"]
    assert doc["invalid"][0] == "Node n4: spec.taints[0].effect: unsupported value 'Never' " \
                                "(supported: NoExecute, NoSchedule, PreferNoSchedule)"
    assert "n4" not in a["scores"]  # the invalid node takes no part
    _, table, _ = run(tmp_path, capsys, pods=pods, cluster=CLUSTER + bad_node)
    assert "invalid default/p: spec.tolerations[0].operator" in table
