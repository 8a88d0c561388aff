"""Configuration reload on the real control plane: a running py-scheduler picks up an edited --config
file within seconds (a new profile starts scheduling its pending pods) without losing a pod that was
being scheduled meanwhile, and refuses an invalid edit with one log line, an Event and the metric."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from e2e.cluster.cluster import LocalCluster
from e2e.kube import node_of, pod_manifest, wait_for
from e2e.process import start_scheduler, stop_scheduler
from e2e.rbac import NAMESPACE, apply, forbidden_lines, render_manifests, select, service_account_kubeconfig
from tests.integration.conftest import SchedulerProc

FIRST, SECOND = "reload-a", "reload-b"


def write_config(path: Path, *profiles: str, percentage: int = 0) -> None:
    """Replace the file in one step, as the kubelet swaps a mounted ConfigMap: written in place, a poll
    between the truncation and the write reads an empty file (refused, so counted and logged as one)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False}, "percentageOfNodesToScore": percentage,
        "profiles": [{"schedulerName": p} for p in profiles]}))
    os.replace(tmp, path)


def test_config_edit_takes_effect_without_losing_a_pod(
    core: client.CoreV1Api, api: client.ApiClient, ns: str, workdir: Path,
    start_py_scheduler: Callable[..., SchedulerProc],
) -> None:
    path = workdir / "reload.yaml"
    write_config(path, FIRST)
    proc = start_py_scheduler("--config", str(path), "--config-reload-seconds", "0.5", name="reload")
    try:
        wait_for(lambda: "py-scheduler started" in proc.log_text(), 60, what="reload scheduler initial sync")
        core.create_namespaced_pod(ns, pod_manifest("waiting", scheduler_name=SECOND))
        time.sleep(2)
        assert node_of(core, ns, "waiting") is None  # nobody serves reload-b yet

        # Pods of the first profile keep arriving while the configuration changes.
        for i in range(5):
            core.create_namespaced_pod(ns, pod_manifest(f"steady-{i}", scheduler_name=FIRST))
        write_config(path, FIRST, SECOND)
        edited = time.monotonic()
        for i in range(5, 10):
            core.create_namespaced_pod(ns, pod_manifest(f"steady-{i}", scheduler_name=FIRST))
        wait_for(lambda: node_of(core, ns, "waiting"), 30, what="the new profile's pending pod bound")
        assert time.monotonic() - edited < 15
        for i in range(10):
            wait_for(lambda i=i: node_of(core, ns, f"steady-{i}"), 30, what=f"steady-{i} bound")
        assert proc.metric("py_scheduler_config_reloads_total", 'result="success"') == 1

        # An invalid edit is refused once (one log line, one Event naming the field); the profiles stay.
        write_config(path, FIRST, SECOND, percentage=150)
        wait_for(lambda: proc.metric("py_scheduler_config_reloads_total", 'result="refused"'), 15,
                 what="the refusal counted")
        time.sleep(1.5)  # several more polls of the same bad content
        refusals = [line for line in proc.log_text().splitlines() if "refused, the running one stays" in line]
        assert len(refusals) == 1 and "percentageOfNodesToScore" in refusals[0]
        events = wait_for(lambda: [e for e in client.EventsV1Api(api).list_event_for_all_namespaces(
            field_selector="reason=ConfigurationRefused").items if str(path) in (e.note or "")], 15,
            what=f"the Event; scheduler log: {proc.log_text()[-3000:]}")
        assert "percentageOfNodesToScore" in events[-1].note and events[-1].type == "Warning"
        core.create_namespaced_pod(ns, pod_manifest("after", scheduler_name=SECOND))
        wait_for(lambda: node_of(core, ns, "after"), 30, what="the running configuration still schedules")
    finally:
        # Stopped here, not at the session's end: a configuration this test did not mean (the defaults,
        # which serve py-scheduler) would make it a second py-scheduler beside the session's main one,
        # and the next module's pods would be placed by two caches (test_spreading saw 3/2/4).
        stop_scheduler(proc.proc)


def test_config_configmap_reloads_under_the_manifests_rbac(
    cluster: LocalCluster, core: client.CoreV1Api, ns: str, workdir: Path,
) -> None:
    """As the manifests' ServiceAccount (get on its own ConfigMap only), --config-configmap loads the
    configuration and an edit of that ConfigMap adds a profile within seconds."""
    docs = render_manifests()
    sa_kubeconfig = service_account_kubeconfig(cluster, workdir / "reload-sa.kubeconfig", docs)
    (cm,) = [d["metadata"]["name"] for d in select(docs, "ConfigMap")]
    first, second = f"cm-{ns}-a", f"cm-{ns}-b"

    def publish(*profiles: str) -> None:
        """kubectl apply of the manifests' ConfigMap with this configuration (as an operator would edit it;
        apply, not create, so a later apply of the manifests sees its own annotation)."""
        text = yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                               "leaderElection": {"leaderElect": False},
                               "profiles": [{"schedulerName": p} for p in profiles]})
        (doc,) = select(docs, "ConfigMap")
        apply([{**doc, "data": {"config.yaml": text}}], cluster.kubeconfig)

    publish(first)
    log = workdir / f"{ns}-reload-cm.log"
    proc = start_scheduler(sa_kubeconfig, log, ["--config-configmap", f"{NAMESPACE}/{cm}",
                                                "--config-reload-seconds", "0.5"])
    try:
        wait_for(lambda: "py-scheduler started" in log.read_text(errors="replace"), 60, what="initial sync")
        core.create_namespaced_pod(ns, pod_manifest("one", scheduler_name=first))
        core.create_namespaced_pod(ns, pod_manifest("two", scheduler_name=second))
        wait_for(lambda: node_of(core, ns, "one"), 30, what="the ConfigMap's profile schedules")
        assert node_of(core, ns, "two") is None
        publish(first, second)
        wait_for(lambda: node_of(core, ns, "two"), 30, what="the added profile schedules after the edit")
    finally:
        stop_scheduler(proc)
    assert forbidden_lines(log.read_text(errors="replace")) == [], "the scheduler was denied API access"


def test_a_configmap_edit_naming_a_module_not_allowed_is_refused_without_importing_it(
    core: client.CoreV1Api, api: client.ApiClient, ns: str, workdir: Path, tmp_path: Path,
    start_py_scheduler: Callable[..., SchedulerProc], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whoever can edit the scheduler's ConfigMap cannot make it run code: a module that would write a
    marker file when imported (and is importable: it is on the scheduler's PYTHONPATH) is named in
    pyScheduler.registry; the edit is refused with an Event naming that field, and the file never appears."""
    marker = tmp_path / "imported"
    (tmp_path / "marker_plugin.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass P:\n    name = 'P'\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    name = f"sched-config-{ns}"

    def config(**extra: Any) -> dict[str, str]:
        return {"config.yaml": yaml.safe_dump({
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False}, "profiles": [{"schedulerName": f"cm-{ns}"}], **extra})}

    core.create_namespaced_config_map(ns, {"metadata": {"name": name}, "data": config()})
    proc = start_py_scheduler("--config-configmap", f"{ns}/{name}", "--config-reload-seconds", "0.5", name="cm-code")
    try:
        wait_for(lambda: "py-scheduler started" in proc.log_text(), 60, what="initial sync")
        core.patch_namespaced_config_map(name, ns, {"data": config(
            pyScheduler={"registry": {"Marker": "marker_plugin:P"}})})
        events = wait_for(lambda: [e for e in client.EventsV1Api(api).list_event_for_all_namespaces(
            field_selector="reason=ConfigurationRefused").items if name in (e.note or "")], 30,
            what=f"the refusal Event; scheduler log: {proc.log_text()[-3000:]}")
        note = events[-1].note
        assert "pyScheduler.registry.Marker" in note and "not an allowed plugin module" in note, note
        assert events[-1].type == "Warning"
        assert proc.metric("py_scheduler_config_reloads_total", 'result="refused"') == 1
        assert not marker.exists()
        core.create_namespaced_pod(ns, pod_manifest("still", scheduler_name=f"cm-{ns}"))
        wait_for(lambda: node_of(core, ns, "still"), 30, what="the running configuration still schedules")
        assert not marker.exists()
    finally:
        stop_scheduler(proc.proc)


def test_bad_args_for_an_out_of_tree_plugin_stop_the_start_with_one_line(
    workdir: Path, start_py_scheduler: Callable[..., SchedulerProc]
) -> None:
    """An out-of-tree plugin checks its own args when built: its ValueError is a configuration error at
    start-up (exit 2, one line naming the profile and the plugin), as an invalid field is, not a traceback."""
    path = workdir / "bad-plugin-args.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "pyScheduler": {"registry": {"SampleScorer": "tests.config.sample_plugins:SampleScorer"}},
        "profiles": [{"schedulerName": "bad-args", "plugins": {"multiPoint": {"enabled": [{"name": "SampleScorer"}]}},
                      "pluginConfig": [{"name": "SampleScorer", "args": {"colour": "red"}}]}]}))
    sp = start_py_scheduler("--config", str(path), "--plugin-module", "tests.config.sample_plugins", name="bad-args")
    assert sp.proc.wait(60) == 2, sp.log_text()[-3000:]
    text = sp.log_text()
    assert "Traceback" not in text, text[-3000:]
    [line] = [ln for ln in text.splitlines() if "invalid configuration" in ln]
    assert line == ("py-scheduler: invalid configuration: profile 'bad-args': initializing plugin 'SampleScorer': "
                    "SampleScorer args: unknown field(s) ['colour']"), line
