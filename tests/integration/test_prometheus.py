"""Issue 16: a real Prometheus scrapes py-scheduler on the local control plane; PromQL over its HTTP API
sees the workload, and every query of the Grafana dashboard evaluates against it."""

from __future__ import annotations

import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from e2e.kube import create_namespace, delete_namespace, node_of, pod_manifest, scheduled_condition, wait_for
from e2e.process import stop_scheduler
from e2e.rbac import request_token
from tests.integration.conftest import SchedulerProc, free_port
from tests.integration.prometheus import Prometheus

PROFILE = "prom-test"
PODS = 6
DASHBOARD = Path(__file__).resolve().parents[2] / "manifests" / "grafana-dashboard.json"


@pytest.fixture(scope="module")
def observed(
    api: client.ApiClient, core: client.CoreV1Api, start_py_scheduler: Callable[..., SchedulerProc],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Prometheus, SchedulerProc]]:
    """A py-scheduler serving its own profile, scraped every second over its secure port (HTTPS, with the
    token of a ServiceAccount that RBAC allows to get /metrics, as the ServiceMonitor scrapes); PODS pods
    bound and one that fits nowhere, then enough scrapes for rate() windows."""
    secure_port = free_port()
    sched = start_py_scheduler("--scheduler-name", PROFILE, "--secure-port", str(secure_port),
                               "--bind-address", "127.0.0.1", name="prom")
    ns = create_namespace(core, "prom")
    token = metrics_reader_token(api, core, ns)
    prom = Prometheus(tmp_path_factory.mktemp("prometheus"), free_port(), [f"127.0.0.1:{secure_port}"], token=token)
    prom.start()
    scheduled = f'sum(scheduler_schedule_attempts_total{{profile="{PROFILE}",result="scheduled"}})'
    try:
        # Two waves: rate() and increase() need a scrape before the second wave's samples.
        for wave in (range(PODS // 2), range(PODS // 2, PODS)):
            for i in wave:
                core.create_namespaced_pod(ns, pod_manifest(f"p{i}", scheduler_name=PROFILE))
            for i in wave:
                wait_for(lambda i=i: node_of(core, ns, f"p{i}"), 60, what=f"p{i} bound")
            wait_for(lambda n=wave.stop: (prom.scalar(scheduled) or 0) >= n or None, 30, what="scrape of the wave")
        core.create_namespaced_pod(ns, pod_manifest("too-big", scheduler_name=PROFILE, cpu="500"))
        wait_for(lambda: scheduled_condition(core, ns, "too-big"), 60, what="too-big attempted")
        yield prom, sched
    finally:
        delete_namespace(core, ns)
        prom.stop()
        rbac = client.RbacAuthorizationV1Api(api)
        rbac.delete_cluster_role_binding(f"{ns}-metrics-reader")
        rbac.delete_cluster_role(f"{ns}-metrics-reader")


def metrics_reader_token(api: client.ApiClient, core: client.CoreV1Api, ns: str) -> str:
    """A token of ServiceAccount ``ns/prometheus``, which a ClusterRole lets get /metrics (as
    manifests/monitoring/metrics-reader.yaml lets the cluster's Prometheus)."""
    core.create_namespaced_service_account(ns, {"metadata": {"name": "prometheus"}})
    rbac = client.RbacAuthorizationV1Api(api)
    name = f"{ns}-metrics-reader"
    rbac.create_cluster_role({"metadata": {"name": name},
                              "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    rbac.create_cluster_role_binding({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": ns}]})
    return request_token(api, ns, "prometheus", 3600)


def test_prometheus_sees_pods_scheduled_and_attempts_by_result(observed: tuple[Prometheus, SchedulerProc]) -> None:
    prom, _ = observed
    scheduled = prom.scalar(f'sum(scheduler_schedule_attempts_total{{profile="{PROFILE}",result="scheduled"}})')
    assert scheduled == PODS
    unschedulable = f'sum(scheduler_schedule_attempts_total{{profile="{PROFILE}",result="unschedulable"}})'
    assert wait_for(lambda: prom.scalar(unschedulable), 30, what="unschedulable attempt scraped") >= 1
    by_result = prom.query(f'sum by (result) (scheduler_schedule_attempts_total{{profile="{PROFILE}"}})')
    assert {r["metric"]["result"] for r in by_result["data"]["result"]} >= {"scheduled", "unschedulable"}
    waiting = 'sum(scheduler_pending_pods{queue=~"unschedulable|backoff"})'
    assert wait_for(lambda: prom.scalar(waiting) == 1 or None, 30, what="too-big waiting in the queue")


def test_histogram_quantile_is_finite(observed: tuple[Prometheus, SchedulerProc]) -> None:
    prom, _ = observed
    wait_for(lambda: prom.scalar("sum(increase(scheduler_scheduling_algorithm_duration_seconds_count[2m]))"), 30,
             what="two scrapes of the algorithm histogram")
    p99 = prom.scalar("histogram_quantile(0.99, sum by (le) "
                      "(rate(scheduler_scheduling_algorithm_duration_seconds_bucket[2m])))")
    assert p99 is not None and math.isfinite(p99) and 0 < p99 < 10
    e2e = prom.scalar(f'histogram_quantile(0.9, sum by (le) (scheduler_scheduling_attempt_duration_seconds_bucket'
                      f'{{profile="{PROFILE}",result="scheduled"}}))')
    assert e2e is not None and math.isfinite(e2e)


def dashboard_queries() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    queries = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    queries += [v["query"] for v in dash["templating"]["list"] if v["type"] == "query"]
    return queries


def test_every_dashboard_query_evaluates_and_names_exported_metrics(
    observed: tuple[Prometheus, SchedulerProc],
) -> None:
    prom, sched = observed
    exported = {line.split()[2] for line in sched.metrics().splitlines() if line.startswith("# TYPE ")}
    queries = dashboard_queries()
    assert len(queries) >= 15
    for query in queries:
        names = set(re.findall(r"\b((?:py_)?scheduler_[a-z_]+)", query))
        assert names, query
        for name in names:
            family = re.sub(r"_(bucket|sum|count)$", "", name)
            assert name in exported or family in exported, f"{query}: {name} is not exported by py-scheduler"
        label_values = re.fullmatch(r"label_values\((\w+), (\w+)\)", query)
        if label_values:  # a Grafana variable query: the series it reads must exist
            body = prom.api("series", **{"match[]": label_values.group(1)})
            assert body["status"] == "success" and body["data"], query
            continue
        expr = query.replace("$__rate_interval", "1m").replace("$job", ".*")
        body = prom.query(expr)
        assert body["status"] == "success", f"{expr}: {body.get('errorType')}: {body.get('error')}"


def test_attempt_log_lines_are_structured(observed: tuple[Prometheus, SchedulerProc]) -> None:
    _, sched = observed
    lines = [json.loads(line) for line in sched.log_text().splitlines() if line.startswith("{")]
    bound = [e for e in lines if e.get("event") == "bound"]
    assert len(bound) == PODS
    assert all(e["level"] == "info" and e["profile"] == PROFILE and e["node"] and e["cycle"] >= 1 for e in bound)
    failed = [e for e in lines if e.get("event") == "unschedulable" and e["pod"].endswith("/too-big")]
    assert failed and failed[0]["level"] == "info" and "Insufficient cpu" in failed[0]["message"]


def test_scrapes_racing_a_sigterm_leave_a_clean_exit(
    core: client.CoreV1Api, start_py_scheduler: Callable[..., SchedulerProc],
) -> None:
    """Clients scraping (and hanging up mid-response) while the scheduler shuts down: exit code 0, no traceback."""
    sched = start_py_scheduler("--scheduler-name", "prom-shutdown", name="prom-shutdown")

    def serving() -> bool:
        try:
            return "scheduler_pending_pods" in sched.metrics()
        except OSError:
            return False

    wait_for(serving, 60, what="metrics served")
    stop = threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", sched.metrics_port), timeout=2) as c:
                    c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                    c.recv(100)  # read a little, then hang up mid-response
            except OSError:
                time.sleep(0.01)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(1)
    code = stop_scheduler(sched.proc)
    stop.set()
    for t in threads:
        t.join(10)
    assert code == 0, sched.log_text()[-3000:]
    assert "Traceback" not in sched.log_text()
