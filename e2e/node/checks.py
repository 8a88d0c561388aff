"""What e2e-node checks once manifests/ is applied: the deployment on the real node, scheduling onto kwok
nodes, /metrics through the Service, leader takeover, and configuration reload (accepted and refused).

Each check raises CheckFailed with what it saw; ``run_checks`` returns each check's duration.
"""

from __future__ import annotations

import ssl
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from e2e.node.host import NODE_NAME, log
from e2e.rbac import forbidden_lines

NAMESPACE = "py-scheduler"
LEASE = "py-scheduler"
SERVICE = "py-scheduler-metrics"
SELECTOR = "app.kubernetes.io/name=py-scheduler,app.kubernetes.io/component=scheduler"
WORKLOAD_NS = "e2e-node"
SCHEDULER_NAME = "py-scheduler"
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
KWOK_LABEL = ("type", "kwok")
# The reload check's node: preferred by the probe pods' node affinity, avoided by their taint toleration
# score. The probe (no requests, so BalancedAllocation skips it; no volumes or claims, so VolumeBinding,
# DynamicResources and ImageLocality give 0 everywhere) meets the 10 plain kwok nodes with the 300 workload
# pods spread over them (28-35 each, none on the target, which their TaintToleration score avoids):
#                      TaintToleration  NodeAffinity  NodeResourcesFit   total (default / NodeAffinity 10)
#   kwok-0..9          100 x 3 = 300    0             92-93 (of 32 cpu)  392-393 / 392-393
#   kwok-target          0 x 3 =   0    100 x 2 = 200 99 (empty)         299     / 100 x 10 + 99 = 1099
# With the default weights the target loses by 93 or more; with NodeAffinity at 10 it wins by 706 or more
# (`py-scheduler simulate` on the same nodes and pods gives these numbers). Neither depends on ties, on the
# exact spread, or on the real node: workload pods select kwok nodes (KWOK_LABEL), since the real node's
# NodeResourcesFit score depends on this host's cores (83 on 2 cores; 96 on 16, where it beats kwok nodes
# holding 30 pods and took 4 of the 300 in the same simulation without the selector).
TARGET_NODE = "kwok-target"
RELOAD_PLUGINS = {"score": {"enabled": [{"name": "NodeAffinity", "weight": 10}]}}  # the accepted edit
TARGET_LABEL = ("e2e-node/target", "yes")
AVOID_TAINT = {"key": "e2e-node/avoid", "value": "yes", "effect": "PreferNoSchedule"}
LEASE_DURATION = 15.0  # manifests/scheduler-config.yaml
TAKEOVER_SLACK = 5.0


class CheckFailed(AssertionError):
    """A check saw something other than what it expects; the message says what."""


@dataclass
class Ctx:
    """The API clients every check uses."""

    core: k8s.CoreV1Api
    coord: k8s.CoordinationV1Api
    events: k8s.EventsV1Api
    api: k8s.ApiClient


def wait(what: str, probe: Callable[[], Any], timeout: float, interval: float = 1.0) -> Any:
    """Poll ``probe`` until it returns something truthy; on timeout fail with its last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise CheckFailed(f"{what}: not within {timeout:.0f} s (last seen: {last!r})")


# --------------------------------------------------------------------------------------------------
# objects


def kwok_node(name: str, labels: dict[str, str] | None = None, taints: Iterable[dict[str, str]] = ()) -> dict[str, Any]:
    """A kwok node (kwok here manages only nodes labelled type=kwok), tainted so that the default scheduler
    keeps py-scheduler's own pods on the real node."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, KWOK_LABEL[0]: KWOK_LABEL[1],
                                               **(labels or {})}},
        "spec": {"taints": [KWOK_TAINT, *taints]},
        "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                   "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"}},
    }  # fmt: skip


def workload_pod(name: str, prefer_target: bool = False) -> dict[str, Any]:
    """A pause pod for py-scheduler on a kwok node (kwok runs it; nothing is pulled): it selects and
    tolerates them, so the real node is never a candidate."""
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER_NAME,
        "nodeSelector": dict([KWOK_LABEL]),
        "tolerations": [{**KWOK_TAINT, "operator": "Equal"}],
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
    }
    if prefer_target:
        term = {"matchExpressions": [{"key": TARGET_LABEL[0], "operator": "In", "values": [TARGET_LABEL[1]]}]}
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": term}]}}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": WORKLOAD_NS}, "spec": spec}


def kwok_nodes(count: int) -> list[dict[str, Any]]:
    """``count`` plain kwok nodes plus the reload check's target node."""
    plain = [kwok_node(f"kwok-{i}") for i in range(count)]
    return [*plain, kwok_node(TARGET_NODE, dict([TARGET_LABEL]), [AVOID_TAINT])]


def create_kwok_nodes(ctx: Ctx, count: int) -> set[str]:
    """Create ``kwok_nodes(count)`` and wait for kwok to make them Ready; returns their names."""
    names = []
    for node in kwok_nodes(count):
        ctx.core.create_node(node)
        names.append(node["metadata"]["name"])
    wait("kwok nodes Ready", lambda: all(node_ready(ctx.core.read_node(n)) for n in names), 60)
    return set(names)


def node_ready(obj: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (obj.status.conditions or []))


def scheduler_pods(ctx: Ctx) -> list[Any]:
    pods = ctx.core.list_namespaced_pod(NAMESPACE, label_selector=SELECTOR).items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def lease_holder(ctx: Ctx) -> str:
    """The pod name part of the Lease's holder identity (``<hostname>_<uuid>``; hostname = pod name)."""
    lease = ctx.coord.read_namespaced_lease(LEASE, NAMESPACE)
    return str(lease.spec.holder_identity or "").rpartition("_")[0]


PROBE = "metrics-probe"  # the ServiceAccount the checks scrape as, allowed to get /metrics and nothing else


def _metrics_token(ctx: Ctx) -> str:
    """A token of a ServiceAccount that RBAC lets get the non-resource URL /metrics, as a user's Prometheus
    has: the secure port authenticates it with a TokenReview and authorizes it with a SubjectAccessReview."""
    rbac = k8s.RbacAuthorizationV1Api(ctx.api)
    objects: list[tuple[Callable[..., Any], Any]] = [
        (lambda body: ctx.core.create_namespaced_service_account(NAMESPACE, body),
         {"metadata": {"name": PROBE}}),
        (rbac.create_cluster_role,
         {"metadata": {"name": PROBE}, "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
        (rbac.create_cluster_role_binding,
         {"metadata": {"name": PROBE},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": PROBE},
          "subjects": [{"kind": "ServiceAccount", "name": PROBE, "namespace": NAMESPACE}]}),
    ]
    for create, body in objects:
        try:
            create(body=body)
        except k8s.ApiException as exc:
            if exc.status != 409:
                raise
    req = ctx.core.create_namespaced_service_account_token(PROBE, NAMESPACE, {"spec": {"expirationSeconds": 3600}})
    return str(req.status.token)


def _scrape(ctx: Ctx, host: str) -> str:
    """GET https://host:10259/metrics from this host (it reaches pod and Service IPs through the CNI bridge and
    kube-proxy's rules) with the probe's bearer token; the serving certificate is self-signed, so unverified."""
    tls = ssl.create_default_context()
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"https://{host}:10259/metrics",
                                 headers={"Authorization": f"Bearer {_metrics_token(ctx)}"})
    with urllib.request.urlopen(req, timeout=10, context=tls) as resp:
        return str(resp.read().decode())


def metrics_via_service(ctx: Ctx) -> str:
    """GET /metrics through the Service's cluster IP (kube-proxy picks a replica), as a scraper does."""
    return _scrape(ctx, str(ctx.core.read_namespaced_service(SERVICE, NAMESPACE).spec.cluster_ip))


def metrics_of_pod(ctx: Ctx, pod: str) -> str:
    """GET /metrics of one replica at its pod IP."""
    return _scrape(ctx, str(ctx.core.read_namespaced_pod(pod, NAMESPACE).status.pod_ip))


def sample(text: str, name: str, labels: str = "") -> float:
    """Sum of the samples of ``name`` whose label set contains ``labels`` (Prometheus text format)."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and labels in line and line[len(name) : len(name) + 1] in ("{", " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


# --------------------------------------------------------------------------------------------------
# checks


def check_deployment(ctx: Ctx) -> list[str]:
    """Both replicas Running and Ready on the real node, as uid 65532; exactly one holds the Lease."""

    def ready_pods() -> list[Any] | None:
        pods = scheduler_pods(ctx)
        ok = [p for p in pods if p.status.phase == "Running" and _pod_ready(p)]
        return ok if len(ok) == 2 and len(pods) == 2 else None

    pods = wait("2 py-scheduler replicas Running and Ready", ready_pods, 300, 2)
    names = sorted(p.metadata.name for p in pods)
    where = {p.metadata.name: p.spec.node_name for p in pods}
    if set(where.values()) != {NODE_NAME}:
        raise CheckFailed(f"replicas not on the real node {NODE_NAME}: {where}")
    procs = scheduler_processes()
    if len(procs) != 2 or any(uid != 65532 or not ro for uid, ro in procs.values()):
        raise CheckFailed(f"want 2 scheduler processes as uid 65532 on a read-only root: {procs}")
    holder = wait("a leader in the Lease", lambda: lease_holder(ctx), 60)
    if holder not in names:
        raise CheckFailed(f"Lease held by {holder!r}, not one of the replicas {names}")
    log(f"replicas {names} Running+Ready on {NODE_NAME}; leader {holder}")
    return names


def scheduler_processes() -> dict[int, tuple[int, bool]]:
    """pid -> (uid, root filesystem read-only) of every py-scheduler process on this host (the node):
    what the kubelet made of the image's USER and the manifests' securityContext."""
    found: dict[int, tuple[int, bool]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if not any(a.endswith(b"/opt/py-scheduler/bin/py-scheduler") for a in argv[:2]):
                continue
            uid = int(next(line for line in (proc / "status").read_text().splitlines() if line.startswith("Uid:"))
                      .split()[1])  # fmt: skip
            root = next(line.split() for line in (proc / "mountinfo").read_text().splitlines()
                        if line.split()[4] == "/")  # fmt: skip
        except (OSError, StopIteration):
            continue
        found[int(proc.name)] = (uid, "ro" in root[5].split(","))
    return found


def _pod_ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def create_workload(ctx: Ctx, prefix: str, count: int) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(count)]
    for name in names:
        ctx.core.create_namespaced_pod(WORKLOAD_NS, workload_pod(name))
    return names


def wait_bound_running(ctx: Ctx, names: list[str], kwok_nodes: set[str], timeout: float) -> dict[str, str]:
    """Every pod of ``names`` bound to a kwok node and Running (kwok's doing); returns pod -> node."""
    wanted = set(names)

    def done() -> dict[str, str] | None:
        pods = [p for p in ctx.core.list_namespaced_pod(WORKLOAD_NS).items if p.metadata.name in wanted]
        bound = {p.metadata.name: p.spec.node_name for p in pods if p.spec.node_name}
        running = sum(1 for p in pods if p.status.phase == "Running")
        if len(pods) != len(wanted):
            raise CheckFailed(f"pods lost: {sorted(wanted - {p.metadata.name for p in pods})[:10]}")
        return bound if len(bound) == len(wanted) and running == len(wanted) else None

    placed: dict[str, str] = wait(f"{len(names)} pods bound and Running", done, timeout, 2)
    stray = {p: n for p, n in placed.items() if n not in kwok_nodes}
    if stray:
        raise CheckFailed(f"pods bound outside the kwok nodes: {dict(list(stray.items())[:5])}")
    return placed


def check_scheduling(ctx: Ctx, kwok_nodes: set[str], replicas: list[str]) -> None:
    """200 pods bound to kwok nodes and Running; exactly one replica (the leader) scheduled them."""
    names = create_workload(ctx, "batch", 200)
    wait_bound_running(ctx, names, kwok_nodes, 240)
    attempts = {pod: sample(metrics_of_pod(ctx, pod), "scheduler_schedule_attempts_total") for pod in replicas}
    leaders = [pod for pod, n in attempts.items() if n > 0]
    if len(leaders) != 1 or attempts[leaders[0]] < 200:
        raise CheckFailed(f"scheduling attempts per replica {attempts}: want one replica with >= 200")
    log(f"200 pods bound to kwok nodes and Running; attempts per replica {attempts}")


def check_metrics_service(ctx: Ctx) -> None:
    """/metrics answers through the Service, in Prometheus text format, with the scheduler's series."""
    text = metrics_via_service(ctx)
    for series in ("scheduler_schedule_attempts_total", "py_scheduler_config_reloads_total", "scheduler_pending_pods"):
        if f"# TYPE {series.removesuffix('_total')}" not in text and f"# TYPE {series}" not in text:
            raise CheckFailed(f"/metrics through the Service lacks {series}: {text[:500]!r}")
    log(f"/metrics through Service {SERVICE}: {len(text.splitlines())} lines")


def check_takeover(ctx: Ctx, kwok_nodes: set[str]) -> float:
    """Delete the leader's pod while pods keep coming: the standby must take the Lease within
    leaseDuration + slack (from the delete call to the Lease's acquireTime, both this host's clock), and
    every pod ends bound exactly once. Returns the takeover time."""
    leader = lease_holder(ctx)
    standby = [p.metadata.name for p in scheduler_pods(ctx) if p.metadata.name != leader]
    deleted = datetime.now(UTC)
    ctx.core.delete_namespaced_pod(leader, NAMESPACE)
    with ThreadPoolExecutor(max_workers=1) as pool:  # pods keep arriving while the Lease changes hands
        created = pool.submit(create_workload, ctx, "failover", 100)
        new = wait("a new Lease holder", lambda: (h := lease_holder(ctx)) and h != leader and h, LEASE_DURATION * 3,
                   0.2)  # fmt: skip
        names = created.result()
    acquired = ctx.coord.read_namespaced_lease(LEASE, NAMESPACE).spec.acquire_time
    took = (acquired - deleted).total_seconds()
    # The standby or the Deployment's replacement replica, whichever campaigns first after the release.
    if new not in {p.metadata.name for p in scheduler_pods(ctx)} or new == leader:
        raise CheckFailed(f"Lease went to {new!r}, not a live replica (standby was {standby})")
    if took > LEASE_DURATION + TAKEOVER_SLACK:
        raise CheckFailed(f"takeover took {took:.1f} s > leaseDuration {LEASE_DURATION:.0f} + {TAKEOVER_SLACK:.0f} s")
    log(f"leader {leader} deleted; {new} took over in {took:.1f} s")
    wait_bound_running(ctx, [*names, *(f"batch-{i}" for i in range(200))], kwok_nodes, 240)
    scheduled = Counter((e.regarding.name, e.regarding.uid) for e in _events(ctx, WORKLOAD_NS, "Scheduled"))
    twice = {name: n for (name, _), n in scheduled.items() if n > 1}
    if twice:
        raise CheckFailed(f"{len(twice)} pods with more than one Scheduled event (bound twice?): "
                          f"{dict(list(twice.items())[:10])}")  # fmt: skip
    wait("2 replicas Ready again", lambda: sum(_pod_ready(p) for p in scheduler_pods(ctx)) == 2, 180, 2)
    return took


def _events(ctx: Ctx, namespace: str, reason: str) -> list[Any]:
    """events.k8s.io Events with ``reason``, selected by the server: the client's Event model rejects
    core/v1 events without eventTime (the kubelet's), and one of them would fail a whole unfiltered list."""
    return list(ctx.events.list_namespaced_event(namespace, field_selector=f"reason={reason}").items)


def _config_map(ctx: Ctx) -> Any:
    """The scheduler's ConfigMap: the one the Deployment mounts (its name carries the generator's hash)."""
    pod = scheduler_pods(ctx)[0]
    name = next(v.config_map.name for v in pod.spec.volumes if v.config_map is not None)
    return ctx.core.read_namespaced_config_map(name, NAMESPACE)


def edit_config(ctx: Ctx, edit: Callable[[dict[str, Any]], None]) -> float:
    """Change config.yaml in the mounted ConfigMap in place (as ``kubectl edit`` does); returns when."""
    cm = _config_map(ctx)
    config = yaml.safe_load(cm.data["config.yaml"])
    edit(config)
    ctx.core.patch_namespaced_config_map(
        cm.metadata.name, NAMESPACE, {"data": {"config.yaml": yaml.safe_dump(config, sort_keys=False)}}
    )
    return time.time()


def reload_events(ctx: Ctx, reason: str, since: float) -> dict[str, Any]:
    """The newest ``reason`` Event per replica pod, recorded after ``since`` (epoch seconds)."""
    found: dict[str, Any] = {}
    for e in _events(ctx, NAMESPACE, reason):
        when = e.event_time or e.metadata.creation_timestamp
        if when is not None and when.timestamp() >= since - 1:
            found[e.regarding.name] = e
    return found


def probe_node(ctx: Ctx, name: str) -> str:
    ctx.core.create_namespaced_pod(WORKLOAD_NS, workload_pod(name, prefer_target=True))
    pod = wait(f"probe {name} bound", lambda: ctx.core.read_namespaced_pod(name, WORKLOAD_NS).spec.node_name, 60)
    return str(pod)


def check_reload(ctx: Ctx) -> None:
    """A plugin weight edited in the ConfigMap changes placement without a restart; an invalid edit is
    refused with a Warning Event and the running configuration (the new weight) stays."""
    replicas = sorted(p.metadata.name for p in scheduler_pods(ctx))
    restarts = restart_counts(ctx)
    before = probe_node(ctx, "probe-default")
    if before == TARGET_NODE:
        raise CheckFailed(f"with default weights the probe should avoid {TARGET_NODE}, it went there")

    def weight(config: dict[str, Any]) -> None:
        config["profiles"][0]["plugins"] = RELOAD_PLUGINS

    since = edit_config(ctx, weight)
    wait("ConfigurationReloaded from both replicas",
         lambda: set(reload_events(ctx, "ConfigurationReloaded", since)) >= set(replicas), 180, 2)  # fmt: skip
    after = probe_node(ctx, "probe-weighted")
    if after != TARGET_NODE:
        raise CheckFailed(f"with NodeAffinity weight 10 the probe should go to {TARGET_NODE}, it went to {after}")
    log(f"weight edit reloaded by {replicas}: probe moved from {before} to {after}")

    def invalid(config: dict[str, Any]) -> None:
        config["percentageOfNodesToScore"] = 250

    since = edit_config(ctx, invalid)
    refused = wait("ConfigurationRefused from both replicas",
                   lambda: (r := reload_events(ctx, "ConfigurationRefused", since)) and set(r) >= set(replicas) and r,
                   180, 2)  # fmt: skip
    notes = {pod: e.note for pod, e in refused.items()}
    if not all(e.type == "Warning" and "percentageOfNodesToScore" in (e.note or "") for e in refused.values()):
        raise CheckFailed(f"refusal Events should be Warnings naming percentageOfNodesToScore: {notes}")
    still = probe_node(ctx, "probe-after-refusal")
    if still != TARGET_NODE:
        raise CheckFailed(f"after the refused edit the running weights should stay; probe went to {still}")
    if restart_counts(ctx) != restarts or sorted(p.metadata.name for p in scheduler_pods(ctx)) != replicas:
        raise CheckFailed(f"replicas restarted or replaced during reload: {restarts} -> {restart_counts(ctx)}")
    log(f"invalid edit refused with Warning Events by {sorted(refused)}; running configuration kept")


def restart_counts(ctx: Ctx) -> dict[str, int]:
    return {
        p.metadata.name: sum(s.restart_count for s in (p.status.container_statuses or []))
        for p in scheduler_pods(ctx)
    }


def check_logs(ctx: Ctx) -> None:
    """No replica was denied an API call: manifests/' RBAC covers what the scheduler does (as e2e-kind)."""
    for pod in scheduler_pods(ctx):
        text = ctx.core.read_namespaced_pod_log(pod.metadata.name, NAMESPACE)
        denied = forbidden_lines(text)
        if denied:
            raise CheckFailed(f"{pod.metadata.name} was denied API access: {denied[:5]}")
        if "Traceback" in text:
            raise CheckFailed(f"{pod.metadata.name} logged a traceback: {text[text.index('Traceback'):][:2000]}")
    log("replica logs: no denied API call, no traceback")
