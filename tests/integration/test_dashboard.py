"""Issue 31 in a real headless browser: `py-scheduler dashboard` on the local control plane, run as the
read-only role's ServiceAccount, against what the live scheduler did and what the CLI answers.

Each test labels its own nodes and selects them with a nodeSelector, as tests/integration/test_explain.py
does, so the session's other nodes are filtered out (and counted, as the live scheduler counts them).
The screenshots are docs/dashboard.md's: set DASHBOARD_SCREENSHOTS=docs/img to refresh them.
"""

from __future__ import annotations

import functools
import http.client
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from e2e.cluster.cluster import LocalCluster, create_nodes
from e2e.kube import create_namespace, events_for, node_of, pod_manifest, unique, wait_for
from e2e.process import stop_scheduler
from e2e.rbac import ROOT, apply, request_token, write_kubeconfig
from scheduler.framework.results import SELECTED_NODE
from tests.integration.browser import Browser
from tests.integration.conftest import SchedulerProc, free_port, temporary_nodes

RECORDING = "dash-record"  # the scheduler name of this module's --record-results scheduler
AFFINITY = "node(s) didn't match Pod's node affinity/selector"


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("DASHBOARD_SCREENSHOTS")
    return Path(where) if where else tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = Browser()
    yield b
    b.close()


def reader_kubeconfig(cluster: LocalCluster, path: Path) -> Path:
    """A ServiceAccount bound to manifests/readonly/'s ClusterRole, and a kubeconfig acting as it."""
    (role,) = [d for d in yaml.safe_load_all((ROOT / "manifests/readonly/clusterrole.yaml").read_text()) if d]
    name = unique("dashboard-reader")
    apply([
        role,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "default"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]},
    ], cluster.kubeconfig)
    token = request_token(cluster.api_client(), "default", name)
    return write_kubeconfig(cluster.kubeconfig, token, path, user=f"system:serviceaccount:default:{name}")


class Dashboard:
    """One `py-scheduler dashboard` process on a free port."""

    def __init__(self, kubeconfig: Path, log: Path, *extra: str) -> None:
        self.url = f"http://127.0.0.1:{free_port()}/"
        cmd = [sys.executable, "-m", "scheduler.app.cli", "dashboard", "--kubeconfig", str(kubeconfig),
               "--address", self.url[len("http://"):-1], "--refresh-seconds", "1", *extra]
        self.log = log
        self.proc = subprocess.Popen(cmd, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(self._answers, 60, what="the dashboard serving")

    def _answers(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()
        try:
            with urllib.request.urlopen(self.url + "api/config", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        stop_scheduler(self.proc)


@pytest.fixture(scope="module")
def recorder(start_py_scheduler: Callable[..., SchedulerProc]) -> SchedulerProc:
    """A scheduler that writes result annotations, whose metrics the Scheduler page reads."""
    return start_py_scheduler("--scheduler-name", RECORDING, "--record-results", name="dashboard-record")


@pytest.fixture(scope="module")
def dashboard(cluster: LocalCluster, recorder: SchedulerProc, scheduler: SchedulerProc,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    d = tmp_path_factory.mktemp("dashboard")
    dash = Dashboard(reader_kubeconfig(cluster, d / "reader.kubeconfig"), d / "dashboard.log",
                     "--scheduler-name", "py-scheduler", "--scheduler-name", RECORDING,
                     "--metrics-url", f"http://127.0.0.1:{recorder.metrics_port}/metrics")
    yield dash
    dash.stop()


def cli_json(kubeconfig: str | Path, *args: str) -> Any:
    out = subprocess.run([sys.executable, "-m", "scheduler.app.cli", *args, "--kubeconfig", str(kubeconfig),
                          "--output", "json"], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def reason_counts(message: str) -> dict[str, int]:
    """kube-scheduler's "0/N nodes are available: 2 Insufficient cpu, 10 node(s) didn't match ...." as
    reason -> count (the part before the preemption clause)."""
    body = message.split(" nodes are available: ", 1)[1].split(". ", 1)[0].rstrip(".")
    return {m.group(2): int(m.group(1)) for m in (re.match(r"(\d+) (.*)", part) for part in body.split(", ")) if m}


def table(b: Browser, table_id: str) -> list[dict[str, str]]:
    """The rows of a table on the page, each as header text (sort marks dropped) -> cell text."""
    rows: list[dict[str, str]] = b.js(f"""(() => {{
        const t = document.getElementById({json.dumps(table_id)});
        if (!t) return [];
        const heads = [...t.querySelectorAll("thead th")].map(h => h.innerText.replace(/ [\\u25B2\\u25BC]$/, ""));
        return [...t.querySelectorAll("tbody tr")].map(tr =>
            Object.fromEntries([...tr.children].map((td, i) => [heads[i], td.innerText])));
    }})()""")
    return rows


def failed_scheduling_notes(api: client.ApiClient, ns: str, name: str) -> set[str]:
    """The notes of every FailedScheduling event of pod ns/name. A pod can be tried again before the page is read
    (a node of the test reaching the scheduler's cache after the pod did requeues it), and the page shows the
    latest attempt's message: it must be one of these, exactly."""
    return {e.note for e in events_for(api, ns, name, "FailedScheduling")}


def test_pending_page_shows_a_pending_pods_exact_failed_scheduling_message(
    cluster: LocalCluster, core: client.CoreV1Api, api: client.ApiClient, ns: str, dashboard: Dashboard,
    browser: Browser, shots: Path,
) -> None:
    label = {"it/dashboard": unique("pending")}
    with temporary_nodes(str(cluster.kubeconfig), 2, unique("dp"), cpu="2", labels=label):
        core.create_namespaced_pod(ns, pod_manifest("too-big", cpu="3", node_selector=label))
        wait_for(lambda: events_for(api, ns, "too-big", "FailedScheduling"), 60, what="FailedScheduling")
        browser.open(dashboard.url + "#/pending")
        browser.wait_text("#pending-names")  # the page has started
        for expected in ("skip", "nav-pending", "nav-nodes"):  # the keyboard reaches the page in reading order
            browser.key("Tab", "Tab", 9)
            assert browser.js("document.activeElement.id") == expected
        browser.js(f"""(() => {{ const f = document.getElementById("filter-text");
                       f.value = {json.dumps(ns)}; f.dispatchEvent(new Event("input")); }})()""")

        def row() -> dict[str, str] | None:
            rows = [r for r in table(browser, "pending") if r["Pod"] == f"{ns}/too-big"]
            return rows[0] if rows and rows[0]["Last FailedScheduling message"] else None

        shown = browser.wait(row, 60, what="the pending pod's row")
        assert shown["Last FailedScheduling message"] in failed_scheduling_notes(api, ns, "too-big")
        assert shown["Reason"] == "Unschedulable" and int(shown["Attempts"]) >= 1
        browser.js("document.activeElement.blur()")
        browser.screenshot(shots / "pending.png", full_page=False)
        # Keyboard: the pod's link opens its decision.
        browser.js(f"document.querySelector('#pending a[href=\"#/pod/{ns}/too-big\"]').focus()")
        browser.key("Enter", "Enter", 13)
        browser.wait(lambda: browser.js("location.hash") == f"#/pod/{ns}/too-big", 10, what="the pod's page")


def test_decision_page_lists_every_node_with_the_rejecting_plugin_and_reason(
    cluster: LocalCluster, core: client.CoreV1Api, api: client.ApiClient, ns: str, dashboard: Dashboard,
    browser: Browser, shots: Path,
) -> None:
    label = {"it/dashboard": unique("decision")}
    with temporary_nodes(str(cluster.kubeconfig), 3, unique("dd"), cpu="2", labels=label) as small:
        core.create_namespaced_pod(ns, pod_manifest("wont-fit", cpu="3", node_selector=label))
        wait_for(lambda: events_for(api, ns, "wont-fit", "FailedScheduling"), 60, what="FailedScheduling")
        browser.open(dashboard.url + f"#/pod/{ns}/wont-fit")

        def shown_note() -> str | None:
            message = browser.text("#message")
            return message if message in failed_scheduling_notes(api, ns, "wont-fit") else None

        note = browser.wait(shown_note, 120, what="the FailedScheduling message")
        rows = browser.wait(lambda: table(browser, "nodes-decision"), 30, what="the node table")
        every_node = {n.metadata.name for n in core.list_node().items}
        assert {r["Node"] for r in rows} == every_node
        assert all(r["Verdict"] == "filtered" and r["Rejected by"] and r["Reason"] for r in rows)
        for r in rows:
            if r["Node"] in small:
                assert (r["Rejected by"], r["Reason"]) == ("NodeResourcesFit", "Insufficient cpu")
            elif r["Rejected by"] == "NodeAffinity":  # the session's other nodes (unless a taint came first)
                assert r["Reason"] == AFFINITY
        # The counts kube-scheduler's message gives are the page's, reason by reason.
        by_reason = {r["Reason"]: int(r["Nodes"]) for r in table(browser, "reasons")}
        assert by_reason == reason_counts(note)
        assert rows[0]["Node"] in small  # NodeResourcesFit runs after NodeAffinity: these came closest
        browser.screenshot(shots / "decision.png")
        # Sortable from the keyboard: the Node column's button, then Enter.
        browser.js("document.querySelector('#nodes-decision button[data-sort=\"node\"]').focus()")
        browser.key("Enter", "Enter", 13)
        browser.wait(lambda: [r["Node"] for r in table(browser, "nodes-decision")] == sorted(every_node), 10,
                     what="rows sorted by node name")


def test_a_bound_pods_page_shows_its_node_first(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, dashboard: Dashboard, browser: Browser,
) -> None:
    label = {"it/dashboard": unique("bound")}
    with (temporary_nodes(str(cluster.kubeconfig), 1, unique("db-big"), cpu="16", memory="64Gi", labels=label) as [big],
          temporary_nodes(str(cluster.kubeconfig), 2, unique("db-small"), cpu="2", memory="4Gi", labels=label)):
        core.create_namespaced_pod(ns, pod_manifest("web", cpu="1", memory="1Gi", node_selector=label))
        assert wait_for(lambda: node_of(core, ns, "web"), 60, what="web bound") == big
        browser.open(dashboard.url + f"#/pod/{ns}/web")
        # The page's first answer may come from a snapshot a moment older than the new nodes; it refreshes.
        browser.wait(lambda: browser.text("#verdict") == f"Chosen node: {big}", 120, what=f"{big} chosen")
        first = browser.wait(lambda: table(browser, "nodes-decision"), 30, what="the node table")[0]
        assert (first["Rank"], first["Node"], first["Verdict"]) == ("1", big, "chosen")


def test_what_if_box_places_a_pasted_pod_where_simulate_from_cluster_does(
    cluster: LocalCluster, ns: str, dashboard: Dashboard, browser: Browser, shots: Path, tmp_path: Path,
) -> None:
    label = {"it/dashboard": unique("whatif")}
    with (temporary_nodes(str(cluster.kubeconfig), 2, unique("dw-a"), cpu="4", labels=label),
          temporary_nodes(str(cluster.kubeconfig), 1, unique("dw-b"), cpu="8", labels=label)):
        pod = pod_manifest("what-if", cpu="2", node_selector=label)
        pod["metadata"]["namespace"] = ns
        text = yaml.safe_dump(pod, sort_keys=False)
        (tmp_path / "pod.yaml").write_text(text)
        simulated = cli_json(cluster.kubeconfig, "simulate", "--from-cluster", "--pods", str(tmp_path / "pod.yaml"),
                             "--tie-break", "name")["results"][0]
        counted = cli_json(cluster.kubeconfig, "capacity", "--from-cluster", "--pod", str(tmp_path / "pod.yaml"),
                           "--max", "1000")
        assert simulated["node"]
        browser.open(dashboard.url + "#/nodes")
        browser.wait(lambda: browser.js("document.querySelectorAll('#zones table').length"), 60, what="the nodes")
        browser.js(f"document.getElementById('whatif-yaml').value = {json.dumps(text)}")
        browser.js("document.getElementById('whatif-submit').click()")
        assert browser.wait_text("#whatif-chosen", 120) == simulated["node"]
        assert browser.text("#whatif-capacity").startswith(f"{counted['count']} copies fit")
        browser.screenshot(shots / "nodes.png", full_page=False)
        # Broken YAML: a clear message in the box, and the page goes on.
        browser.js("document.getElementById('whatif-yaml').value = 'kind: Pod\\nmetadata: ['")
        browser.js("document.getElementById('whatif-submit').click()")
        error = browser.wait_text("#whatif-error", 60)
        assert error.startswith("Error: the pasted YAML: invalid YAML: ") and "line 2" in error


def test_scheduler_page_shows_queues_attempts_and_recorded_decisions(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, dashboard: Dashboard, recorder: SchedulerProc,
    browser: Browser, shots: Path,
) -> None:
    label = {"it/dashboard": unique("sched")}
    with temporary_nodes(str(cluster.kubeconfig), 2, unique("ds"), cpu="4", labels=label):
        core.create_namespaced_pod(ns, pod_manifest("recorded", scheduler_name=RECORDING, node_selector=label))
        wait_for(lambda: (core.read_namespaced_pod("recorded", ns).metadata.annotations or {}).get(SELECTED_NODE),
                 60, what="result annotations")
        node = node_of(core, ns, "recorded")
        browser.open(dashboard.url + "#/scheduler")
        queues = browser.wait(lambda: table(browser, "queues"), 60, what="the queues")
        assert {q["Queue"] for q in queues} >= {"active", "backoff", "unschedulable"}
        attempts = browser.wait(lambda: table(browser, "attempts"), 30, what="the attempts")
        assert any(a["Result"] == "scheduled" and int(a["Total"]) >= 1 for a in attempts)
        browser.wait(lambda: all(a["Per second"] != "(next refresh)" for a in table(browser, "attempts")), 30,
                     what="a rate over two scrapes")
        decisions = browser.wait(lambda: [d for d in table(browser, "decisions") if d["Pod"] == f"{ns}/recorded"],
                                 30, what="the recorded decision")
        assert decisions[0]["Outcome"] == f"bound to {node}"
        browser.screenshot(shots / "scheduler.png", full_page=False)


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A control plane of this test's own: it stops and restarts the API server."""
    c = LocalCluster(tmp_path_factory.mktemp("dashboard-restart") / "cluster")
    c.up(lean=True)
    try:
        create_nodes(str(c.kubeconfig), 2, prefix="keep")
        yield c
    finally:
        c.down()


def test_the_page_survives_the_api_server_restarting(
    own: LocalCluster, browser: Browser, shots: Path, tmp_path: Path,
) -> None:
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(own.kubeconfig)))
    ns = create_namespace(core, "dash")
    core.create_namespaced_pod(ns, pod_manifest("waiting"))  # no scheduler runs here: it stays pending
    dash = Dashboard(own.kubeconfig, tmp_path / "dashboard.log")
    try:
        browser.open(dash.url + "#/pending")

        def listed() -> bool:
            return any(r["Pod"] == f"{ns}/waiting" for r in table(browser, "pending"))

        browser.wait(listed, 60, what="the pod listed")
        own.kill("kube-apiserver")
        error = browser.wait_text("#error", 60)
        assert error.startswith("Error: cannot reach the API server at ") and "Traceback" not in error
        browser.screenshot(shots / "api-server-lost.png", full_page=False)
        own.restart("kube-apiserver")
        browser.wait(lambda: browser.js("document.getElementById('error').hidden") and listed(), 120,
                     what="the page back after the restart")
        assert dash.proc.poll() is None
    finally:
        dash.stop()


def test_another_sites_page_and_a_rebound_host_get_nothing(
    dashboard: Dashboard, browser: Browser, tmp_path: Path
) -> None:
    """A page of another origin (here http://localhost:<other port>) that posts a what-if to the dashboard
    from a real browser is refused (the browser sends its Origin), and a request naming another host (DNS
    rebinding: the attacker's name resolved to 127.0.0.1) is refused before the cluster is read; the
    dashboard's own page keeps working (test_what_if_box_... posts from it)."""
    port = int(dashboard.url.rsplit(":", 1)[1].strip("/"))
    page = ("<html><body><script>fetch('%sapi/whatif', {method: 'POST', mode: 'no-cors', body: 'kind: Pod'})"
            ".then(() => document.title = 'sent', () => document.title = 'sent')</script></body></html>")
    (tmp_path / "index.html").write_text(page % dashboard.url)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        before = dashboard.log.read_text().count("dashboard request refused")
        browser.open(f"http://localhost:{other.server_address[1]}/index.html")
        browser.wait(lambda: browser.js("document.title") == "sent", 60, what="the other page's POST")
        wait_for(lambda: dashboard.log.read_text().count("dashboard request refused") > before, 30,
                 what="the refusal in the dashboard's log")
        assert "cross-origin POST from 'http://localhost:" in dashboard.log.read_text()
    finally:
        other.shutdown()
        other.server_close()
    for host in ("attacker.example", f"attacker.example:{port}"):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/api/nodes", headers={"Host": host})
        answer = conn.getresponse()
        assert answer.status == 403 and b"is not one of this dashboard's names" in answer.read()
        conn.close()
