"""e2e-node's plugin run: the out-of-tree example shipped as a user ships it, then checked on the real node.

examples/node-label-score/Dockerfile builds on the project's image (``localhost/py-scheduler:e2e``, made just
before) with buildah; its overlay (examples/node-label-score/deploy, through e2e/node/plugin-overlay for the
local image name) replaces the running deployment. The checks: a probe pod placed by the default profile
goes to the big unlabelled node; once the plugin's replicas lead, pods go to the small node the plugin's
label prefers; a configuration edit naming a module the image was not started with (``os:system``) is
refused with a ConfigurationRefused Warning from each replica, and the running configuration (the plugin)
keeps placing pods.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from e2e.node import checks, image
from e2e.node.checks import CheckFailed, Ctx, wait
from e2e.node.host import log

HERE = Path(__file__).resolve().parent
PLUGIN_DIR = image.REPO / "examples" / "node-label-score"
IMAGE = "localhost/py-scheduler-node-label-score:e2e"
OVERLAY = HERE / "plugin-overlay"
LABEL = "example.com/generation"  # examples/node-label-score/deploy/scheduler-config.yaml
# The probes select these two nodes only. The default profile prefers BIG: for a 1-cpu, 1Gi pod
# NodeResourcesFit gives it 98 against SMALL's 81 and BalancedAllocation 98 against 93. The plugin (weight 5)
# adds 5 x 100 to SMALL (generation 9, the only labelled one) and 0 to BIG, so SMALL wins by about 480.
GROUP = ("e2e-node/plugin", "yes")
BIG, SMALL = "plugin-big", "plugin-small"
PROBES = 3  # 3 cpu of SMALL's 4: each still fits, so none is placed for lack of room elsewhere
REFUSED_MODULE = "os"


def build() -> None:
    """The example's Dockerfile, unchanged, on the project's image and its Python base (both local)."""
    volumes = ["-v", f"{image.HOST_CA_BUNDLE}:{image.HOST_CA_BUNDLE}:ro"] if image.HOST_CA_BUNDLE.is_file() else []
    image.buildah(
        "bud", "--quiet", "--layers", "--network", "host", "--pull=never", *volumes,
        "--build-arg", f"SCHEDULER_IMAGE={image.APP_IMAGE}", "--build-arg", f"PYTHON_IMAGE={image.BASE_IMAGE}",
        "-t", IMAGE, "-f", str(PLUGIN_DIR / "Dockerfile"), str(PLUGIN_DIR),
    )  # fmt: skip


def nodes() -> list[dict[str, Any]]:
    big = checks.kwok_node(BIG, dict([GROUP]))
    small = checks.kwok_node(SMALL, {GROUP[0]: GROUP[1], LABEL: "9"})
    small["status"]["allocatable"] = small["status"]["capacity"] = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return [big, small]


def probe_pod(name: str) -> dict[str, Any]:
    pod = checks.workload_pod(name)
    pod["spec"]["nodeSelector"] = {**pod["spec"]["nodeSelector"], GROUP[0]: GROUP[1]}
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    return pod


def _placed(ctx: Ctx, names: list[str]) -> dict[str, str]:
    for name in names:
        ctx.core.create_namespaced_pod(checks.WORKLOAD_NS, probe_pod(name))

    def bound() -> dict[str, str] | None:
        found = {n: ctx.core.read_namespaced_pod(n, checks.WORKLOAD_NS).spec.node_name for n in names}
        return found if all(found.values()) else None

    placed: dict[str, str] = wait(f"{names} bound", bound, 90)
    return placed


def _plugin_replicas(ctx: Ctx) -> list[str] | None:
    """Both replicas run the plugin's image, Ready, and one of them holds the Lease (else None)."""
    pods = checks.scheduler_pods(ctx)
    ours = [p for p in pods if p.spec.containers[0].image == IMAGE and p.status.phase == "Running"
            and any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))]
    names = sorted(p.metadata.name for p in ours)
    if len(ours) != 2 or len(pods) != 2 or checks.lease_holder(ctx) not in names:
        return None
    return names


def check(ctx: Ctx, apply_overlay: Callable[[], object], timings: dict[str, float]) -> None:
    """Default placement, the plugin's image deployed, its placement, and a refused module."""
    for node in nodes():
        ctx.core.create_node(node)
    wait("plugin nodes Ready", lambda: all(checks.node_ready(ctx.core.read_node(n)) for n in (BIG, SMALL)), 60)
    default = _placed(ctx, ["plugin-default"])
    if default != {"plugin-default": BIG}:
        raise CheckFailed(f"the default profile should place the probe on {BIG}: {default}")
    image.timed("apply -k plugin overlay", apply_overlay, timings)
    replicas = wait("2 replicas of the plugin image Ready, one leading", lambda: _plugin_replicas(ctx), 300, 2)
    log(f"plugin image {IMAGE} rolled out: {replicas}")
    placed = _placed(ctx, [f"plugin-{i}" for i in range(PROBES)])
    if set(placed.values()) != {SMALL}:
        raise CheckFailed(f"NodeLabelScore should place every probe on {SMALL} ({LABEL}=9): {placed}")
    log(f"NodeLabelScore placed {sorted(placed)} on {SMALL}; the default profile chose {BIG}")
    _check_refused_module(ctx, replicas)
    checks.check_logs(ctx)
    _remove(ctx, ["plugin-default", *placed, "plugin-after-refusal"])


def _remove(ctx: Ctx, probes: list[str]) -> None:
    """The probes and the two plugin nodes go, so the checks after this one meet the kwok nodes they made."""
    for name in probes:
        ctx.core.delete_namespaced_pod(name, checks.WORKLOAD_NS, grace_period_seconds=0)
    for node in (BIG, SMALL):
        ctx.core.delete_node(node)
    names = {BIG, SMALL}
    wait("plugin nodes deleted", lambda: not names & {n.metadata.name for n in ctx.core.list_node().items}, 60)


def _check_refused_module(ctx: Ctx, replicas: list[str]) -> None:
    """docs/security.md: a reload naming a module that is neither --plugin-module nor an entry point's is
    refused (the module is not imported) and the running configuration stays."""
    restarts = checks.restart_counts(ctx)

    def register(config: dict[str, Any]) -> None:
        config.setdefault("pyScheduler", {}).setdefault("registry", {})["Shell"] = f"{REFUSED_MODULE}:system"

    since = checks.edit_config(ctx, register)
    refused = wait("ConfigurationRefused from both replicas",
                   lambda: (r := checks.reload_events(ctx, "ConfigurationRefused", since)) and set(r) >= set(replicas)
                   and r, 180, 2)  # fmt: skip
    notes = {pod: e.note for pod, e in refused.items()}
    want = f"module {REFUSED_MODULE!r} is not an allowed plugin module"
    if not all(e.type == "Warning" and want in (e.note or "") for e in refused.values()):
        raise CheckFailed(f"refusal Events should be Warnings saying {want!r}: {notes}")
    still = _placed(ctx, ["plugin-after-refusal"])
    if still != {"plugin-after-refusal": SMALL}:
        raise CheckFailed(f"after the refused edit NodeLabelScore should still place on {SMALL}: {still}")
    if checks.restart_counts(ctx) != restarts:
        raise CheckFailed(f"replicas restarted during the refused reload: {restarts} -> {checks.restart_counts(ctx)}")
    log(f"configuration naming {REFUSED_MODULE}:system refused by {sorted(refused)}; the plugin keeps placing")
