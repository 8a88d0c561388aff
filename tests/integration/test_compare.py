"""`simulate --from-cluster --compare RUNNING --config CANDIDATE --plugin-module M` on the real control plane,
with the out-of-tree example plugin (examples/node-label-score) in the candidate, run as the CLI a person
would run: each pod's node under each configuration, and nothing written to the cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from e2e.cluster.cluster import LocalCluster
from e2e.kube import pod_manifest, unique
from tests.integration.conftest import temporary_nodes
from tests.test_example_plugin import EXAMPLE, LABEL, install_example

RUNNING = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "py-scheduler"}]}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the example is installed, for the CLI's PYTHONPATH (as a user's pip install would put it)."""
    return install_example(tmp_path_factory)


def test_compare_shows_where_the_plugin_moves_pods_and_writes_nothing(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, site: Path, tmp_path: Path
) -> None:
    """The default profile prefers the big node (NodeResourcesFit, BalancedAllocation); the candidate's
    NodeLabelScore (weight 5) sends both pods to the small node labelled generation 9."""
    select = {"it/compare": unique("cmp")}
    kubeconfig = str(cluster.kubeconfig)
    with (temporary_nodes(kubeconfig, 1, unique("cmp-big"), cpu="16", memory="64Gi", labels=select) as [big],
          temporary_nodes(kubeconfig, 1, unique("cmp-new"), cpu="4", memory="16Gi",
                          labels={**select, LABEL: "9"}) as [new]):
        # A pending pod of the cluster: the snapshot's pending pods use no room and are never placed or bound.
        core.create_namespaced_pod(ns, pod_manifest("pending", node_selector=select, scheduler_name="nobody"))
        pods = [{**pod_manifest(f"web-{i}", cpu="1", memory="1Gi", node_selector=select),
                 "metadata": {"name": f"web-{i}", "namespace": ns}} for i in range(2)]
        (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
        (tmp_path / "running.yaml").write_text(yaml.safe_dump(RUNNING))
        events_before = _events(core, ns)
        out = subprocess.run(
            [sys.executable, "-m", "scheduler.app.cli", "simulate", "--from-cluster", "--kubeconfig", kubeconfig,
             "--pods", str(tmp_path / "pods.yaml"), "--config", str(EXAMPLE / "config.yaml"),
             "--plugin-module", "node_label_score", "--compare", str(tmp_path / "running.yaml"), "--output", "json"],
            capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(site)},
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout)
        assert [(r["pod"], r["running"]["node"], r["candidate"]["node"], r["differs"]) for r in result["results"]] == [
            (f"{ns}/web-0", big, new, True), (f"{ns}/web-1", big, new, True)]
        assert result["differing"] == 2 and result["invalid"] == []
        # Nothing written: the file's pods were never created, the cluster's pending pod is still unbound,
        # and no Event (Scheduled, FailedScheduling, ...) was recorded.
        pods_now = core.list_namespaced_pod(ns).items
        assert [(p.metadata.name, p.spec.node_name) for p in pods_now] == [("pending", None)]
        assert _events(core, ns) == events_before == []


def _events(core: client.CoreV1Api, ns: str) -> list[tuple[str, str]]:
    return [(e.reason, e.involved_object.name) for e in core.list_namespaced_event(ns).items]
