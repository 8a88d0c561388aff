"""Two py-scheduler replicas with leader election on the real control plane.

Only the holder of the Lease binds; when it is killed with SIGKILL (no release, no goodbye) while pods
are pending, the standby takes the lease once it expires and binds them, and no pod is bound twice.
A replica stopped with SIGTERM releases the lease (ReleaseOnCancel).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from e2e.cluster.cluster import LocalCluster
from e2e.kube import node_of, pod_manifest, scheduled_condition, wait_for
from e2e.process import stop_scheduler
from tests.integration.conftest import SchedulerProc, temporary_nodes

LEASE_S, RENEW_S, RETRY_S = 4, 3, 1
JITTER = 1.2  # client-go's JitterFactor: a standby retries every RETRY_S * [1, 2.2]


def create_pod(core: client.CoreV1Api, ns: str, manifest: dict[str, Any]) -> None:
    """POST a pod manifest (a dict: the client sends it as is; its stubs only know models)."""
    api: Any = core
    api.create_namespaced_pod(ns, manifest)


def write_config(path: Path, scheduler_name: str, namespace: str, lease: str,
                 timing: tuple[int, int, int] = (LEASE_S, RENEW_S, RETRY_S)) -> Path:
    """A configuration with leader election on ``lease``; ``timing`` is (leaseDuration, renewDeadline,
    retryPeriod) in seconds."""
    lease_s, renew_s, retry_s = timing
    path.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {
            "leaderElect": True, "leaseDuration": f"{lease_s}s", "renewDeadline": f"{renew_s}s",
            "retryPeriod": f"{retry_s}s", "resourceLock": "leases",
            "resourceNamespace": namespace, "resourceName": lease,
        },
        "profiles": [{"schedulerName": scheduler_name}],
    }))  # fmt: skip
    return path


def log_records(sp: SchedulerProc) -> list[dict[str, Any]]:
    """The structlog JSON lines of a scheduler's log (other lines, e.g. stdlib warnings, skipped)."""
    out = []
    for line in sp.log_text().splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def bound_pods(sp: SchedulerProc) -> Counter[str]:
    """pod key -> how many times this process logged a successful Binding for it."""
    return Counter(str(r.get("pod")) for r in log_records(sp) if r.get("event") == "bound")


def identity_of(sp: SchedulerProc) -> str | None:
    """The holder identity this process campaigns with (logged when it starts campaigning)."""
    for r in log_records(sp):
        if "campaigning" in str(r.get("event")) and r.get("identity"):
            return str(r["identity"])
    return None


def lease_spec(coord: client.CoordinationV1Api, ns: str, name: str) -> Any:
    try:
        return coord.read_namespaced_lease(name, ns).spec
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def http_status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except OSError:
        return 0


def test_only_the_leader_binds_and_the_standby_takes_over_after_kill_9(
    cluster: LocalCluster,
    api: client.ApiClient,
    core: client.CoreV1Api,
    ns: str,
    workdir: Path,
    start_py_scheduler: Callable[..., SchedulerProc],
) -> None:
    coord = client.CoordinationV1Api(api)
    sched_name, lease = f"le-{ns}", "py-scheduler-le"
    cfg = write_config(workdir / f"{ns}-le.yaml", sched_name, ns, lease)
    a = start_py_scheduler("--config", str(cfg), name="le-a")
    b = start_py_scheduler("--config", str(cfg), name="le-b")

    ids = wait_for(
        lambda: (identity_of(a), identity_of(b)) if identity_of(a) and identity_of(b) else None,
        60,
        what="both replicas campaigning",
    )
    assert ids[0] != ids[1]
    spec = wait_for(lambda: (s := lease_spec(coord, ns, lease)) and s.holder_identity and s, 60, what="a leader")
    assert spec.holder_identity in ids
    leader, standby = (a, b) if spec.holder_identity == ids[0] else (b, a)
    standby_id = ids[1] if leader is a else ids[0]
    assert spec.lease_duration_seconds == LEASE_S
    transitions_before = spec.lease_transitions or 0

    # Both replicas are Ready (leading / standing by) and live.
    for port in (leader.metrics_port, standby.metrics_port):
        wait_for(lambda port=port: http_status(port, "/readyz") == 200, 60, what="/readyz 200")  # type: ignore[misc]
        assert http_status(port, "/healthz") == 200

    # 1. Only the leader binds.
    first = [f"first-{i}" for i in range(10)]
    for n in first:
        create_pod(core, ns, pod_manifest(n, scheduler_name=sched_name))
    wait_for(lambda: all(node_of(core, ns, n) for n in first), 90, what="first pods bound")
    wait_for(lambda: all(bound_pods(leader)[f"{ns}/{n}"] == 1 for n in first), 30, what="leader logged bindings")
    assert not bound_pods(standby), "the standby bound pods while another replica held the lease"

    # 2. Pods the leader cannot place yet (their node does not exist) are pending when it is killed.
    gate = {"py-scheduler-test/le-gate": ns}
    second = [f"second-{i}" for i in range(10)]
    for n in second:
        create_pod(core, ns, pod_manifest(n, scheduler_name=sched_name, node_selector=gate))
    wait_for(lambda: all(scheduled_condition(core, ns, n) for n in second), 60, what="second pods tried, pending")
    assert not any(node_of(core, ns, n) for n in second)

    leader.proc.kill()  # SIGKILL: no release, the lease has to expire
    leader.proc.wait(10)
    killed_at = time.monotonic()
    with temporary_nodes(str(cluster.kubeconfig), 1, prefix=f"le-gate-{ns}", labels=gate):
        spec = wait_for(
            lambda: (s := lease_spec(coord, ns, lease)) and s.holder_identity == standby_id and s,
            60,
            0.1,
            what="the standby holding the lease",
        )
        took = time.monotonic() - killed_at
        # The lease expires LEASE_S after the standby last saw it renewed; the standby notices within
        # one jittered retry, and saw the last renewal at most one jittered retry after it happened.
        bound = LEASE_S + 2 * RETRY_S * (1 + JITTER) + 3
        assert took <= bound, f"takeover {took:.1f}s after the kill; expected within {bound:.1f}s"
        assert spec.lease_transitions == transitions_before + 1

        # 3. The new leader binds the pending pods; nobody binds any pod twice.
        wait_for(lambda: all(node_of(core, ns, n) for n in second), 90, what="second pods bound by the new leader")
        wait_for(
            lambda: all(bound_pods(standby)[f"{ns}/{n}"] == 1 for n in second), 30, what="new leader logged bindings"
        )
        total = bound_pods(leader) + bound_pods(standby)
        assert {k: v for k, v in total.items() if v != 1} == {}, "a pod was bound more than once"
        assert set(total) == {f"{ns}/{n}" for n in first + second}
        assert not any(f"{ns}/{n}" in bound_pods(leader) for n in second)
        assert {node_of(core, ns, n) for n in second} == {f"le-gate-{ns}-0"}

        # 4. SIGTERM: the new leader releases the lease on its way out.
        assert stop_scheduler(standby.proc) == 0
        spec = lease_spec(coord, ns, lease)
        assert spec.holder_identity in ("", None), f"lease still held by {spec.holder_identity}"
        assert spec.lease_duration_seconds == 1
        assert spec.lease_transitions == transitions_before + 1
