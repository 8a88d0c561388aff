"""Issue 12 on the real control plane: `explain`, `capacity`, `simulate --from-cluster` and
`run --record-results`, run as the CLI a person would run, against what the live scheduler did.

Each test labels its own nodes and selects them with a nodeSelector, so the session's other nodes are
filtered out (and counted in the messages, as the live scheduler counts them).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from e2e.cluster.cluster import LocalCluster
from e2e.kube import events_for, node_of, pod_manifest, unique, wait_for
from e2e.rbac import ROOT, apply, role_kubeconfig
from scheduler.framework.results import PREFIX
from tests.integration.conftest import SchedulerProc, temporary_nodes


def cli(kubeconfig: str | Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scheduler.app.cli", *args, "--kubeconfig", str(kubeconfig)],
                          capture_output=True, text=True, timeout=120)


def explain_json(kubeconfig: str | Path, ns: str, pod: str) -> dict[str, Any]:
    out = cli(kubeconfig, "explain", pod, "-n", ns, "--output", "json")
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_explain_of_a_pending_pod_prints_its_failed_scheduling_message(
    cluster: LocalCluster, core: client.CoreV1Api, api: client.ApiClient, scheduler: SchedulerProc, ns: str
) -> None:
    label = {"it/explain": unique("pending")}
    with temporary_nodes(str(cluster.kubeconfig), 2, unique("xp"), cpu="2", labels=label):
        core.create_namespaced_pod(ns, pod_manifest("too-big", cpu="3", node_selector=label))
        # The attempt that saw every node: the scheduler's node watch may deliver the test's second node after its
        # pod watch delivered the pod (watches of two kinds keep no order between them); that node's arrival
        # retries the pod, and explain, reading the cluster now, answers as that retry did.
        whole = f"0/{len(core.list_node().items)} nodes are available: "
        event = wait_for(lambda: next((e for e in events_for(api, ns, "too-big", "FailedScheduling")
                                       if e.note.startswith(whole)), None), 60, what="FailedScheduling")
        table = cli(cluster.kubeconfig, "explain", "too-big", "-n", ns)
        assert table.returncode == 0, table.stderr
        assert f"Unschedulable: {event.note}\n" in table.stdout
        assert "NodeResourcesFit: Insufficient cpu (2)" in table.stdout
        assert explain_json(cluster.kubeconfig, ns, "too-big")["message"] == event.note


def test_explain_of_a_bound_pod_names_its_unique_best_node_first(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str
) -> None:
    label = {"it/explain": unique("bound")}
    with (temporary_nodes(str(cluster.kubeconfig), 1, unique("xp-big"), cpu="16", memory="64Gi", labels=label) as [big],
          temporary_nodes(str(cluster.kubeconfig), 2, unique("xp-small"), cpu="2", memory="4Gi", labels=label)):
        core.create_namespaced_pod(ns, pod_manifest("web", cpu="1", memory="1Gi", node_selector=label))
        assert wait_for(lambda: node_of(core, ns, "web"), 60, what="web bound") == big
        result = explain_json(cluster.kubeconfig, ns, "web")
        assert result["boundTo"] == big and result["node"] == big
        ranked = sorted(result["scores"], key=lambda n: -result["scores"][n]["total"])
        assert ranked[0] == big and result["scores"][big]["total"] > result["scores"][ranked[1]]["total"]
        table = cli(cluster.kubeconfig, "explain", "web", "-n", ns).stdout
        rows = table.split("best first")[1].splitlines()
        assert rows[2].split()[0] == big, table  # [1] is the header


def test_record_results_annotations_parse_back_to_the_scores_explain_prints(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, start_py_scheduler: Callable[..., SchedulerProc]
) -> None:
    label = {"it/explain": unique("record")}
    with (temporary_nodes(str(cluster.kubeconfig), 1, unique("rr-a"), cpu="8", memory="16Gi", labels=label),
          temporary_nodes(str(cluster.kubeconfig), 2, unique("rr-b"), cpu="4", memory="8Gi", labels=label)):
        start_py_scheduler("--scheduler-name", "record-test", "--record-results", name="record")
        core.create_namespaced_pod(ns, pod_manifest("rec", scheduler_name="record-test", cpu="1", memory="1Gi",
                                                    node_selector=label))

        def annotations() -> dict[str, str] | None:
            got = core.read_namespaced_pod("rec", ns).metadata.annotations or {}
            return got if PREFIX + "finalscore-result" in got else None

        ann = wait_for(annotations, 60, what="result annotations")
        node = node_of(core, ns, "rec")
        assert ann[PREFIX + "selected-node"] == node
        assert json.loads(ann[PREFIX + "bind-result"]) == {"DefaultBinder": "success"}
        history = json.loads(ann[PREFIX + "result-history"])
        assert history[-1][PREFIX + "selected-node"] == node
        raw = json.loads(ann[PREFIX + "score-result"])
        final = json.loads(ann[PREFIX + "finalscore-result"])
        assert len(final) == 3  # the three labelled nodes were scored
        details = explain_json(cluster.kubeconfig, ns, "rec")["score_details"]
        assert {n: {p: str(d["weighted"]) for p, d in ps.items()} for n, ps in details.items()} == final
        assert {n: {p: str(d["raw"]) for p, d in ps.items()} for n, ps in details.items()} == raw
        filters = json.loads(ann[PREFIX + "filter-result"])
        assert all(v == "passed" for v in filters[node].values())


def test_capacity_counts_copies_until_the_first_failure(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, tmp_path: Path
) -> None:
    label = {"it/explain": unique("capacity")}
    with (temporary_nodes(str(cluster.kubeconfig), 1, unique("cap-a"), cpu="2", labels=label) as [a],
          temporary_nodes(str(cluster.kubeconfig), 1, unique("cap-b"), cpu="3", labels=label) as [b]):
        # One cpu of node a is already taken by a bound pod.
        taken = pod_manifest("taken", scheduler_name="nobody", cpu="1", memory=None)
        taken["spec"]["nodeName"] = a
        core.create_namespaced_pod(ns, taken)
        pod = pod_manifest("replica", scheduler_name="default-scheduler", cpu="1", memory=None, node_selector=label)
        # Other tests' nodes may carry taints (a fake node the node controller marks unreachable): tolerated,
        # every other node fails on the nodeSelector alone, whatever ran before.
        pod["spec"]["tolerations"] = [{"operator": "Exists"}]
        (tmp_path / "pod.yaml").write_text(yaml.safe_dump({**pod, "metadata": {"name": "replica", "namespace": ns}}))
        out = cli(cluster.kubeconfig, "capacity", "--pod", str(tmp_path / "pod.yaml"), "--from-cluster",
                  "--output", "json")
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout)
        # By hand: a has 2 - 1 = 1 cpu free, b has 3; every other node fails the nodeSelector.
        total = len(core.list_node().items)
        reasons = sorted(["2 Insufficient cpu", f"{total - 2} node(s) didn't match Pod's node affinity/selector"])
        assert result == {"count": 4, "nodes": {a: 1, b: 3},
                          "message": f"0/{total} nodes are available: {', '.join(reasons)}."}
        limited = json.loads(cli(cluster.kubeconfig, "capacity", "--pod", str(tmp_path / "pod.yaml"),
                                 "--from-cluster", "--max", "2", "--output", "json").stdout)
        assert limited["count"] == 2 and limited["message"] == "limit reached: --max 2"


@pytest.fixture(scope="module")
def readonly_role(cluster: LocalCluster) -> dict[str, Any]:
    (role,) = [d for d in yaml.safe_load_all((ROOT / "manifests/readonly/clusterrole.yaml").read_text()) if d]
    apply([role], cluster.kubeconfig)
    return dict(role)


def test_read_only_commands_work_under_the_read_only_role_and_name_a_missing_permission(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, ns: str,
    tmp_path: Path, readonly_role: dict[str, Any],
) -> None:
    core.create_namespaced_pod(ns, pod_manifest("ro"))
    wait_for(lambda: node_of(core, ns, "ro"), 60, what="ro bound")
    reader = role_kubeconfig(cluster, "py-scheduler-readonly", tmp_path / "reader.kubeconfig", unique("reader"))
    assert cli(reader, "explain", "ro", "-n", ns).returncode == 0
    huge = pod_manifest("one", cpu="100", scheduler_name="default-scheduler")
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(huge))
    capacity = cli(reader, "capacity", "--pod", str(tmp_path / "pod.yaml"), "--from-cluster")
    assert capacity.returncode == 0 and capacity.stdout.startswith("0 pod(s) fit."), capacity.stderr
    simulate = cli(reader, "simulate", "--from-cluster", "--pods", str(tmp_path / "pod.yaml"))
    assert simulate.returncode == 0 and "Insufficient cpu" in simulate.stdout, simulate.stderr
    # The same role without `list csinodes`: the command names exactly that permission, in one line.
    partial = copy.deepcopy(readonly_role)
    partial["metadata"]["name"] = unique("py-scheduler-readonly-partial")
    for rule in partial["rules"]:
        if "csinodes" in rule["resources"]:
            rule["resources"].remove("csinodes")
    apply([partial], cluster.kubeconfig)
    limited = role_kubeconfig(cluster, partial["metadata"]["name"], tmp_path / "limited.kubeconfig",
                              unique("reader"))
    out = cli(limited, "explain", "ro", "-n", ns)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert "forbidden: this user may not list csinodes.storage.k8s.io" in out.stderr


def test_unknown_pod_is_one_line_and_a_non_zero_exit(cluster: LocalCluster, ns: str) -> None:
    out = cli(cluster.kubeconfig, "explain", "no-such-pod", "-n", ns)
    assert out.returncode == 1
    assert out.stderr == f'py-scheduler explain: pod "no-such-pod" not found in namespace "{ns}"\n'
