"""`explain` and the dashboard for the Workload API's pod groups on a control plane with the gates on
(kube-apiserver, KCM and kube-scheduler v1.37.2): run as the CLI a person would run, explain's answer for a gang
kube-scheduler could not place is what kube-scheduler did (the PodGroup's condition, each member's message), and
it says why a group whose PodGroup is missing, or whose members are too few, never reached a cycle. The dashboard,
as the read-only role's ServiceAccount, shows the same in a real headless browser.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from e2e.cluster.cluster import WORKLOAD_GATES, LocalCluster, build_binaries
from e2e.kube import create_namespace, pod_manifest, wait_for
from e2e.process import gate_flag, start_kube_scheduler, stop_scheduler
from tests.integration.browser import Browser
from tests.integration.conftest import temporary_nodes
from tests.integration.test_dashboard import Dashboard, reader_kubeconfig, table

KUBE = "kube-explain-workload"
GROUP, VERSION, PLURAL = "scheduling.k8s.io", "v1beta1", "podgroups"
TOLERATIONS = [{"key": key, "operator": "Exists", "effect": "NoSchedule"}
               for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]


@pytest.fixture(scope="module")
def gated(workdir: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(workdir / "explain-workload-cluster", feature_gates=WORKLOAD_GATES)
    cluster.up()
    kube = start_kube_scheduler(build_binaries(build=False), cluster.kubeconfig, workdir, KUBE,
                                feature_gates=WORKLOAD_GATES)
    try:
        with temporary_nodes(str(cluster.kubeconfig), 2, "xpg", cpu="2"):
            yield cluster
    finally:
        stop_scheduler(kube)
        cluster.down()


@pytest.fixture
def apis(gated: LocalCluster) -> tuple[client.CoreV1Api, client.CustomObjectsApi]:
    api = config.new_client_from_config(config_file=str(gated.kubeconfig))
    return client.CoreV1Api(api), client.CustomObjectsApi(api)


def explain(cluster: LocalCluster, ns: str, target: str, output: str = "json") -> Any:
    out = subprocess.run([sys.executable, "-m", "scheduler.app.cli", "explain", target, "-n", ns, "--kubeconfig",
                          str(cluster.kubeconfig), "--feature-gates", gate_flag(WORKLOAD_GATES), "--output", output],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout) if output == "json" else out.stdout


def create(core: client.CoreV1Api, custom: client.CustomObjectsApi, ns: str, group: str, min_count: int | None,
           members: int, cpu: str) -> list[str]:
    """The PodGroup (None: none is created) and its members, for kube-scheduler."""
    if min_count is not None:
        custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup", "metadata": {"name": group},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}})
    names = [f"{group}-{i}" for i in range(members)]
    for name in names:
        manifest = pod_manifest(name, scheduler_name=KUBE, cpu=cpu, memory=None,
                                extra_spec={"schedulingGroup": {"podGroupName": group}})
        manifest["spec"]["tolerations"] = TOLERATIONS
        core.create_namespaced_pod(ns, manifest)
    return names


def condition_of(custom: client.CustomObjectsApi, ns: str, group: str) -> dict[str, Any] | None:
    pg = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, group)
    return next((c for c in (pg.get("status") or {}).get("conditions") or []
                 if c["type"] == "PodGroupInitiallyScheduled"), None)


def test_explain_of_a_gang_that_does_not_fit_is_what_kube_scheduler_did(
    gated: LocalCluster, apis: tuple[client.CoreV1Api, client.CustomObjectsApi]
) -> None:
    core, custom = apis
    ns = create_namespace(core, "xpg")
    members = create(core, custom, ns, "big", 3, 3, cpu="2")  # 2 cpu per node, 2 nodes: 2 of 3 fit

    def messages() -> dict[str, str] | None:
        got = {}
        for name in members:
            pod = core.read_namespaced_pod(name, ns)
            cond = next((c for c in pod.status.conditions or [] if c.type == "PodScheduled"), None)
            if pod.spec.node_name or cond is None or cond.status != "False":
                return None
            got[name] = cond.message
        return got

    live = wait_for(lambda: condition_of(custom, ns, "big"), 60, what="kube-scheduler's PodGroup condition")
    by_kube = wait_for(messages, 60, what="kube-scheduler's member messages")
    assert (live["status"], live["reason"]) == ("False", "Unschedulable")
    r = explain(gated, ns, "podgroup/big")
    assert (r["verdict"], r["exists"], r["minCount"]) == ("unschedulable", True, 3)
    assert r["liveCondition"]["message"] == live["message"]
    assert r["condition"]["message"] == live["message"]  # the cycle now decides as kube-scheduler's did
    assert {m["pod"].split("/")[1]: m["message"] for m in r["members"]} == by_kube
    table = explain(gated, ns, "podgroup/big", output="table")
    assert f"Last cycle (live): PodGroupInitiallyScheduled=False Unschedulable: {live['message']}\n" in table
    member = explain(gated, ns, "big-0")
    assert member["podGroup"]["podGroup"] == f"{ns}/big" and member["message"] == by_kube["big-0"]


def test_explain_says_why_a_group_never_reached_a_cycle(
    gated: LocalCluster, apis: tuple[client.CoreV1Api, client.CustomObjectsApi]
) -> None:
    core, custom = apis
    ns = create_namespace(core, "xpg")
    create(core, custom, ns, "ghost", None, 2, cpu="100m")
    create(core, custom, ns, "few", 3, 2, cpu="100m")
    ghost = explain(gated, ns, "podgroup/ghost")
    assert (ghost["verdict"], ghost["exists"]) == ("waitingForPodGroup", False)
    assert {m["message"] for m in ghost["members"]} == {
        'waiting for pods\'s pod group "ghost" to appear in scheduling queue'}
    few = explain(gated, ns, "podgroup/few")
    assert few["verdict"] == "waitingForMembers" and few["liveCondition"] is None
    assert {m["gatedBy"] for m in few["members"]} == {"GangScheduling"}
    pods = {p.metadata.name: p.spec.node_name for p in core.list_namespaced_pod(ns).items}
    assert pods == {"ghost-0": None, "ghost-1": None, "few-0": None, "few-1": None}  # kube-scheduler agrees


def test_the_dashboards_pod_group_pages_show_the_group_as_the_read_only_role(
    gated: LocalCluster, apis: tuple[client.CoreV1Api, client.CustomObjectsApi], tmp_path: Path
) -> None:
    core, custom = apis
    ns = create_namespace(core, "xpg")
    create(core, custom, ns, "wide", 2, 2, cpu="3")  # no node has 3 cpu
    live = wait_for(lambda: condition_of(custom, ns, "wide"), 60, what="kube-scheduler's PodGroup condition")
    dash = Dashboard(reader_kubeconfig(gated, tmp_path / "reader.kubeconfig"), tmp_path / "dashboard.log",
                     "--scheduler-name", KUBE, "--feature-gates", gate_flag(WORKLOAD_GATES))
    browser = Browser()
    try:
        browser.open(dash.url + "#/podgroups")

        def row() -> dict[str, str] | None:
            rows = [r for r in table(browser, "podgroups") if r["Pod group"] == f"{ns}/wide"]
            return rows[0] if rows else None

        shown = browser.wait(row, 60, what="the group's row")
        assert shown["Policy"] == "gang, minCount 2" and shown["Bound"] == "0 of 2"
        assert live["message"] in shown["PodGroupInitiallyScheduled"]
        browser.open(dash.url + f"#/podgroup/{ns}/wide")
        verdict = browser.wait_text("#group-verdict")
        assert verdict.startswith("unschedulable: ") and live["message"] in verdict
        members = browser.wait(lambda: table(browser, "group-members") or None, 60, what="the members' table")
        assert sorted(m["Member"] for m in members) == [f"{ns}/wide-0", f"{ns}/wide-1"]
    finally:
        browser.close()
        dash.stop()
