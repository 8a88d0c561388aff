"""e2e-node's Helm run: after the checks of the `kubectl apply -k` install, the same image installed again from
charts/py-scheduler with `helm install`, then a `helm upgrade` of the configuration (a score weight) that the
running replicas reload without a restart, and keep scheduling with.

The reload scenario is check_reload's (checks.py: a probe pod avoids kwok-target under the default weights and
goes there with NodeAffinity's weight at 10), so the move of the probe shows the upgraded configuration in use.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from kubernetes import client as k8s

from e2e.cluster.cluster import LocalCluster
from e2e.node import checks
from e2e.node.host import NodeError, log
from e2e.node.image import timed

CHART = Path(__file__).resolve().parents[2] / "charts" / "py-scheduler"
RELEASE = "py-scheduler"
# The image e2e-node built and imported into the node's containerd (image.APP_IMAGE), as chart values.
IMAGE_VALUES = ("--set", "image.repository=localhost/py-scheduler", "--set", "image.tag=e2e")
RELOAD_LOG = "configuration accepted"  # reload.py's log line for an accepted configuration


def helm(cluster: LocalCluster, bin_dir: Path, state: Path, *args: str, timeout: float = 600) -> str:
    """Run the pinned helm against the cluster, its cache and configuration under ``state``."""
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig),
           **{f"HELM_{d}_HOME": str(state / "helm" / d.lower()) for d in ("CACHE", "CONFIG", "DATA")}}  # fmt: skip
    res = subprocess.run([str(bin_dir / "helm"), *args], capture_output=True, text=True, env=env,
                         timeout=timeout, check=False)  # fmt: skip
    if res.returncode != 0:
        raise NodeError(f"helm {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def run_helm(
    cluster: LocalCluster,
    bin_dir: Path,
    state: Path,
    ctx: checks.Ctx,
    kwok: set[str],
    uninstall_kustomize: Callable[[], object],
    timings: dict[str, float],
) -> None:
    """Replace the kustomize install by a Helm release, check it schedules, upgrade its configuration and
    check that the same replicas reload it and keep scheduling; each phase timed into ``timings``."""
    timed("helm: kubectl delete -k (the kustomize install)", uninstall_kustomize, timings)
    _delete_probes(ctx)
    timed("helm: install", lambda: helm(cluster, bin_dir, state, "install", RELEASE, str(CHART),
                                        "--namespace", checks.NAMESPACE, "--create-namespace", *IMAGE_VALUES,
                                        "--wait", "--timeout", "5m"), timings)  # fmt: skip
    replicas: list[str] = []
    timed("helm: replicas Ready, one leader", lambda: replicas.extend(checks.check_deployment(ctx)), timings)
    timed("helm: 20 pods scheduled", lambda: _schedule(ctx, kwok, "helm-batch", 20), timings)
    timed("helm: upgrade reloaded",
          lambda: check_upgrade_reloads(cluster, bin_dir, state, ctx, kwok, replicas), timings)  # fmt: skip
    checks.check_logs(ctx)


def _delete_probes(ctx: checks.Ctx) -> None:
    """The kustomize run's probe pods leave kwok-target, so the Helm run's probes meet the nodes check_reload's
    arithmetic is for (the 300 workload pods stay where they are)."""
    for pod in ctx.core.list_namespaced_pod(checks.WORKLOAD_NS).items:
        if pod.metadata.name.startswith("probe-"):
            ctx.core.delete_namespaced_pod(pod.metadata.name, checks.WORKLOAD_NS, grace_period_seconds=0)


def _schedule(ctx: checks.Ctx, kwok: set[str], prefix: str, count: int) -> None:
    checks.wait_bound_running(ctx, checks.create_workload(ctx, prefix, count), kwok, 120)


def weighted_values(state: Path) -> Path:
    """A values file whose configuration raises NodeAffinity's score weight to 10 (check_reload's edit)."""
    path = state / "helm-weighted-values.yaml"
    profile = {"schedulerName": checks.SCHEDULER_NAME, "plugins": checks.RELOAD_PLUGINS}
    path.write_text(yaml.safe_dump({"config": {"profiles": [profile]}}, sort_keys=False))
    return path


def check_upgrade_reloads(
    cluster: LocalCluster, bin_dir: Path, state: Path, ctx: checks.Ctx, kwok: set[str], replicas: list[str]
) -> None:
    """`helm upgrade` of a score weight: the Deployment does not roll (same generation, same pods, no
    restart), each replica logs the reload and records a ConfigurationReloaded Event, a probe pod moves to
    the node the new weight favours, and more pods are scheduled after it."""
    apps = k8s.AppsV1Api(ctx.api)
    generation = apps.read_namespaced_deployment(RELEASE, checks.NAMESPACE).metadata.generation
    before = checks.probe_node(ctx, "helm-probe-default")
    if before == checks.TARGET_NODE:
        raise checks.CheckFailed(f"with default weights the probe should avoid {checks.TARGET_NODE}, it went there")
    since = time.time()
    helm(cluster, bin_dir, state, "upgrade", RELEASE, str(CHART), "--namespace", checks.NAMESPACE, "--reuse-values",
         "-f", str(weighted_values(state)), "--wait", "--timeout", "5m")  # fmt: skip
    revision = yaml.safe_load(helm(cluster, bin_dir, state, "status", RELEASE, "-n", checks.NAMESPACE, "-o", "yaml"))
    if revision.get("version") != 2:
        raise checks.CheckFailed(f"want release revision 2 after the upgrade: {revision.get('version')}")
    checks.wait(
        "ConfigurationReloaded from both replicas",
        lambda: set(checks.reload_events(ctx, "ConfigurationReloaded", since)) >= set(replicas),
        180,
        2,
    )
    after = checks.probe_node(ctx, "helm-probe-weighted")
    if after != checks.TARGET_NODE:
        raise checks.CheckFailed(f"after the upgrade (NodeAffinity weight 10) the probe should go to "
                                 f"{checks.TARGET_NODE}, it went to {after}")  # fmt: skip
    _schedule(ctx, kwok, "helm-after-upgrade", 20)
    want = (replicas, dict.fromkeys(replicas, 0), generation)
    seen = (sorted(p.metadata.name for p in checks.scheduler_pods(ctx)), checks.restart_counts(ctx),
            apps.read_namespaced_deployment(RELEASE, checks.NAMESPACE).metadata.generation)  # fmt: skip
    if seen != want:
        raise checks.CheckFailed(f"the upgrade restarted or replaced replicas: (pods, restarts, generation) {seen}, "
                                 f"want {want}")  # fmt: skip
    for pod in replicas:
        if RELOAD_LOG not in ctx.core.read_namespaced_pod_log(pod, checks.NAMESPACE):
            raise checks.CheckFailed(f"{pod} did not log {RELOAD_LOG!r}")
    log(f"helm upgrade (revision 2) reloaded by {replicas} without a restart: probe moved {before} -> {after}")
