"""``python -m e2e.node``: bring up the control plane and a real node, build and import the images, apply
manifests/ through the overlay, run the checks, tear everything down (also on failure or Ctrl-C).

Timings of each phase are printed and written to ``<dir>/timings.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from e2e.cluster.cluster import ClusterError, LocalCluster, build_binaries
from e2e.node import checks, helm, image, plugin_image
from e2e.node.host import NODE_IP, PAUSE_IMAGE, NodeError, RealNode, ensure_packages, log

HERE = Path(__file__).resolve().parent
OVERLAY = HERE / "overlay"
KWOK_NODES = 10
# One run per host: the node's link, bridge, address, iptables chains, kubepods cgroups, kernel tunables
# and the image cache are host-wide, whichever checkout runs it (a clone's `make test` beside a worktree's).
HOST_LOCK = Path("/run/lock/py-scheduler-e2e-node.lock")

# The control plane as LocalCluster runs it, but reachable from the node's pods: the API server listens
# on every address and advertises the node IP, so the kubernetes Service (through kube-proxy) leads to it;
# ServiceAccount admission gives pods their token; kwok manages only its own nodes, not the kubelet's.
CLUSTER_FLAGS: dict[str, dict[str, str | None]] = {
    "kube-apiserver": {
        "bind-address": "0.0.0.0",
        "advertise-address": NODE_IP,
        "endpoint-reconciler-type": "lease",
        "disable-admission-plugins": "TaintNodesByCondition",
        "kubelet-preferred-address-types": "InternalIP",
    },
    "kwok": {
        "manage-all-nodes": None,
        "manage-nodes-with-label-selector": "=".join(checks.KWOK_LABEL),
    },
}


def kubectl(cluster: LocalCluster, bin_dir: Path, *args: str, timeout: float = 300) -> str:
    res = subprocess.run(
        [str(bin_dir / "kubectl"), f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    if res.returncode != 0:
        raise NodeError(f"kubectl {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def run_all(state: Path, keep: bool) -> dict[str, Any]:
    """Everything, in order; the finally block tears down whatever was started."""
    timings: dict[str, float] = {}
    t_all = time.monotonic()
    installed = ensure_packages()
    timings["apt-get install"] = round(time.monotonic() - t_all, 1)
    t0 = time.monotonic()
    build = ["bash", str(HERE.parent / "cluster" / "build.sh"), "--node", "--helm"]
    subprocess.run(build, check=True, stdout=subprocess.DEVNULL)
    bin_dir = build_binaries(build=False)
    timings["binaries"] = round(time.monotonic() - t0, 1)
    image.timed("base image (mmdebstrap)", image.base_image, timings)
    image.timed("app image (buildah, Dockerfile)", image.app_image, timings)
    image.timed("plugin image (buildah, examples/node-label-score/Dockerfile)", plugin_image.build, timings)
    image.timed("pause image", lambda: image.pause_image(bin_dir / "pause"), timings)

    cluster = LocalCluster(state / "cluster", flags=CLUSTER_FLAGS)
    node = RealNode(state / "node", bin_dir, cluster.kubeconfig)
    ok = False
    try:
        image.timed("control plane up", lambda: cluster.up(build=False), timings)
        image.timed("containerd up", node.up, timings)
        image.timed("images into containerd", lambda: _import_images(node, state), timings)
        image.timed("kubelet Ready", node.start_kube, timings)
        image.timed("checks", lambda: _checks(cluster, bin_dir, state, timings), timings)
        ok = True
    except BaseException:
        _dump(cluster, bin_dir)
        raise
    finally:
        t_down = time.monotonic()
        if keep and not ok:
            log(f"--keep: leaving the cluster and node up for inspection; `python -m e2e.node down --dir {state}`")
        else:
            problems = _down(state)
            if problems and ok:
                raise NodeError(f"teardown: {problems}")
    timings["teardown"] = round(time.monotonic() - t_down, 1)
    timings["total"] = round(time.monotonic() - t_all, 1)
    result = {"ok": ok, "timings_s": timings, "apt_installed": installed}
    (state / "timings.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def _import_images(node: RealNode, state: Path) -> None:
    for name in (image.APP_IMAGE, plugin_image.IMAGE, PAUSE_IMAGE):
        archive = image.export(name, state / "image.tar")
        node.ctr("images", "import", str(archive))
        archive.unlink()


def _checks(cluster: LocalCluster, bin_dir: Path, state: Path, timings: dict[str, float]) -> None:
    from kubernetes import client as k8s

    api = cluster.api_client()
    ctx = checks.Ctx(k8s.CoreV1Api(api), k8s.CoordinationV1Api(api), k8s.EventsV1Api(api), api)
    kwok = checks.create_kwok_nodes(ctx, KWOK_NODES)
    ctx.core.create_namespace({"metadata": {"name": checks.WORKLOAD_NS}})
    image.timed("apply -k overlay", lambda: kubectl(cluster, bin_dir, "apply", "-k", str(OVERLAY)), timings)
    replicas: list[str] = []

    def deployment() -> None:
        replicas.extend(checks.check_deployment(ctx))

    image.timed("check: replicas Ready, one leader", deployment, timings)
    image.timed("check: 200 pods on kwok nodes", lambda: checks.check_scheduling(ctx, kwok, replicas), timings)
    image.timed("check: /metrics via Service", lambda: checks.check_metrics_service(ctx), timings)
    took: list[float] = []
    image.timed("check: leader takeover", lambda: took.append(checks.check_takeover(ctx, kwok)), timings)
    timings["takeover (s after delete)"] = round(took[0], 1)
    image.timed("check: config reload", lambda: checks.check_reload(ctx), timings)
    image.timed("check: logs", lambda: checks.check_logs(ctx), timings)

    def apply_plugin() -> str:
        return kubectl(cluster, bin_dir, "apply", "-k", str(plugin_image.OVERLAY))

    image.timed("check: plugin image", lambda: plugin_image.check(ctx, apply_plugin, timings), timings)
    # The same image once more, installed with Helm in place of `kubectl apply -k`.
    uninstall = functools.partial(kubectl, cluster, bin_dir, "delete", "-k", str(OVERLAY), "--wait=true")
    image.timed("helm", lambda: helm.run_helm(cluster, bin_dir, state, ctx, kwok, uninstall, timings), timings)
    api.close()


def _dump(cluster: LocalCluster, bin_dir: Path) -> None:
    """What a failed run needs for its post-mortem, before the teardown removes it."""
    for args in (
        ("get", "nodes,pods", "-A", "-o", "wide"),
        ("-n", checks.NAMESPACE, "describe", "pods"),
        ("-n", checks.NAMESPACE, "logs", "-l", checks.SELECTOR, "--prefix", "--tail=100"),
        ("-n", checks.NAMESPACE, "get", "events", "--sort-by=.lastTimestamp"),
    ):
        try:
            print(f"---- kubectl {' '.join(args)}\n{kubectl(cluster, bin_dir, *args, timeout=60)}", file=sys.stderr)
        except Exception as e:
            print(f"---- kubectl {' '.join(args)}: {e}", file=sys.stderr)


def _down(state: Path) -> list[str]:
    """Node first (its pods need the API server gone last), then the control plane."""
    problems: list[str] = []
    bin_dir = build_binaries(build=False)
    cluster = LocalCluster(state / "cluster")
    node = RealNode(state / "node", bin_dir, cluster.kubeconfig)
    if (state / "node").exists():
        problems += node.down()
    try:
        cluster.down(keep_logs=True)
    except Exception as e:
        problems.append(f"control plane: {e}")
    for p in problems:
        log(f"teardown problem: {p}")
    return problems


@contextlib.contextmanager
def host_lock() -> Iterator[None]:
    """Hold the host's e2e-node lock, waiting (and saying so) while another run holds it."""
    HOST_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(HOST_LOCK, "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another e2e-node run holds {HOST_LOCK}; waiting for it")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.node", description=__doc__.splitlines()[0])
    parser.add_argument("cmd", choices=("run", "down", "clean-cache"), help="run: everything; down: tear down")
    parser.add_argument("--dir", default=os.environ.get("PY_SCHEDULER_NODE_DIR", ".node"), help="state [.node]")
    parser.add_argument("--keep", action="store_true", help="on failure, leave everything up to inspect")
    args = parser.parse_args(argv)
    state = Path(args.dir).resolve()
    state.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        print("e2e-node needs root (containerd, kubelet, network namespaces)", file=sys.stderr)
        return 1
    try:
        with host_lock():
            if args.cmd == "down":
                return 1 if _down(state) else 0
            if args.cmd == "clean-cache":
                image.remove_cache()
                return 0
            result = run_all(state, args.keep)
    except (NodeError, ClusterError, checks.CheckFailed, subprocess.CalledProcessError) as e:
        print(f"e2e-node FAILED: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0
