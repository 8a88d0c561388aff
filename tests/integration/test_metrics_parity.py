"""Metric names parity with kube-scheduler v1.37.2: both schedulers place a pod and fail one on the same
control plane, then every `scheduler_*` family py-scheduler exports must be one kube-scheduler exports
too, and every family kube-scheduler exports that py-scheduler lacks must be one docs/observability.md
lists as not built (an empty vector is not exported by either, so only families with samples count)."""

from __future__ import annotations

import re
import ssl
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from e2e.cluster.cluster import LocalCluster, build_binaries
from e2e.kube import node_of, pod_manifest, scheduled_condition, wait_for
from e2e.process import start_kube_scheduler, stop_scheduler
from tests.integration.conftest import SchedulerProc, free_port, temporary_nodes

KUBE = "kube-metrics"
OBSERVABILITY = Path(__file__).resolve().parents[2] / "docs" / "observability.md"
FAMILY = re.compile(r"^# TYPE (scheduler_[a-z_]+) ", re.M)
# Recorded when a cluster event meets an unschedulable pod: the session's py-scheduler has seen many, a
# fresh kube-scheduler none, so the test adds a node while both hold an unschedulable pod.
HINTS = "scheduler_queueing_hint_execution_duration_seconds"
# Recorded in 10 % of cycles by both, and at PreEnqueue by kube-scheduler only (docs/observability.md), so
# two cycles may leave it in one scrape and not the other.
SAMPLED = {"scheduler_plugin_execution_duration_seconds"}


def families(text: str) -> set[str]:
    """The scheduler_* families of a scrape that have a sample (prometheus_client declares a labelled
    family without series; Go's client leaves it out). A counter's family is named with its _total."""
    return {name for name in FAMILY.findall(text)
            if re.search(rf"^{name}(_bucket|_sum|_count)?[{{ ]", text, re.M)}


def not_built() -> set[str]:
    """The upstream metrics docs/observability.md says py-scheduler does not export."""
    text = OBSERVABILITY.read_text()
    section = text[text.index("Not exported, because"):text.index("How samples are taken")]
    return set(re.findall(r"`(scheduler_[a-z_]+)`", section))


@pytest.fixture
def kube_metrics(cluster: LocalCluster, workdir: Path) -> Iterator[int]:
    port = free_port()
    proc = start_kube_scheduler(build_binaries(build=False), cluster.kubeconfig, workdir / "kube-metrics", KUBE,
                                secure_port=port)
    try:
        yield port
    finally:
        stop_scheduler(proc)


def scrape_kube(port: int) -> str:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", timeout=10, context=ctx) as r:
        return str(r.read().decode())


def test_metric_names_match_kube_schedulers(
    cluster: LocalCluster, core: client.CoreV1Api, scheduler: SchedulerProc, kube_metrics: int, ns: str
) -> None:
    for who in (KUBE, "py-scheduler"):
        core.create_namespaced_pod(ns, pod_manifest(f"{who}-fits", scheduler_name=who))
        core.create_namespaced_pod(ns, pod_manifest(f"{who}-huge", scheduler_name=who, cpu="1000"))
    for who in (KUBE, "py-scheduler"):
        wait_for(lambda who=who: node_of(core, ns, f"{who}-fits"), 60, what=f"{who} bound its pod")
        wait_for(lambda who=who: scheduled_condition(core, ns, f"{who}-huge"), 60, what=f"{who} failed its pod")
    with temporary_nodes(str(cluster.kubeconfig), 1, f"{ns}-hint"):  # NodeAdd: both run their queueing hints
        wait_for(lambda: HINTS in families(scrape_kube(kube_metrics)), 60, what="kube-scheduler ran a queueing hint")
    time.sleep(2)  # the gauges are refreshed once a second
    kube = wait_for(lambda: families(scrape_kube(kube_metrics)) or None, 60, what="kube-scheduler's /metrics")
    py = families(scheduler.metrics())
    assert py - kube == set(), "py-scheduler exports families kube-scheduler v1.37.2 does not"
    assert kube - py - SAMPLED <= not_built(), "kube-scheduler exports families neither built nor listed as not built"
