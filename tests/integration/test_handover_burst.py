"""A rollout during a burst: two py-scheduler replicas with leader election on one Lease, 2,000 pods created at
once, and the leader stopped as a rollout stops it (SIGTERM) while it is binding them; the standby takes over.

Who bound each pod is read from the API server's audit log, not from the schedulers' own logs: each replica
authenticates as its own ServiceAccount, so every Binding the API server answered carries the binder's
username, its response code and the server's timestamps, and the new leader's first write of the Lease (a
standby only reads it) marks the takeover. A replica's log only says what it believed; the audit log says
what was committed, including a write that a replica sent and never logged.
"""

from __future__ import annotations

import json
import signal
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import client, config

from e2e.cluster.cluster import LocalCluster
from e2e.kube import pod_manifest, wait_for
from e2e.process import stop_scheduler
from e2e.rbac import request_token, write_kubeconfig
from tests.integration.conftest import SchedulerProc, temporary_nodes
from tests.integration.test_leader_election import bound_pods, identity_of, lease_spec, write_config

PODS = 2000
NODES = 20
STOP_AFTER = PODS // 4  # the leader is stopped once it has bound this many
WORKERS = 16


@contextmanager
def binder_identities(api: client.ApiClient, admin_kubeconfig: Path, ns: str, names: list[str],
                      workdir: Path) -> Iterator[dict[str, Path]]:
    """A ServiceAccount per replica, bound to cluster-admin (RBAC is test_rbac's subject, not this test's),
    and a kubeconfig acting as each: name -> kubeconfig."""
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    crbs = []
    out = {}
    try:
        for name in names:
            core.create_namespaced_service_account(ns, {"metadata": {"name": name}})
            crb = f"{ns}-{name}"
            rbac.create_cluster_role_binding({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": crb},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]})  # fmt: skip
            crbs.append(crb)
            token = request_token(api, ns, name, 3600)
            out[name] = write_kubeconfig(admin_kubeconfig, token, workdir / f"{crb}.kubeconfig", user=name)
        yield out
    finally:
        for crb in crbs:
            rbac.delete_cluster_role_binding(crb)


def create_pods(kubeconfig: Path, ns: str, names: list[str], scheduler_name: str,
                selector: dict[str, str], created: list[str]) -> None:
    """POST the pods from WORKERS threads at once (no model decoding of the answers); ``created`` grows."""
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    cfg.connection_pool_maxsize = WORKERS
    with client.ApiClient(configuration=cfg) as api:
        post: Callable[..., Any] = client.CoreV1Api(api).create_namespaced_pod

        def one(name: str) -> None:
            body = pod_manifest(name, scheduler_name=scheduler_name, cpu="10m", memory="16Mi", node_selector=selector)
            resp = post(ns, body, _preload_content=False, _request_timeout=60)
            resp.read()  # an unread answer left in a pooled connection would be read as the next one's
            resp.release_conn()
            created.append(name)

        with ThreadPoolExecutor(WORKERS) as pool:
            list(pool.map(one, names))


def audit_events(path: Path, ns: str) -> list[dict[str, Any]]:
    """The audit log's completed requests on objects of namespace ``ns``."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        event = json.loads(line)
        if event.get("stage") == "ResponseComplete" and (event.get("objectRef") or {}).get("namespace") == ns:
            out.append(event)
    return out


def when(event: dict[str, Any], field: str) -> datetime:
    return datetime.fromisoformat(event[field])


def unbound(core: client.CoreV1Api, ns: str) -> int:
    """How many of the namespace's pods have no node yet."""
    return len(core.list_namespaced_pod(ns, field_selector="spec.nodeName=").items)


def test_a_rollout_during_a_burst_binds_every_pod_once_and_never_after_the_handover(
    cluster: LocalCluster, api: client.ApiClient, core: client.CoreV1Api, ns: str, workdir: Path,
    start_py_scheduler: Callable[..., SchedulerProc],
) -> None:
    coord = client.CoordinationV1Api(api)
    sched_name, lease = f"burst-{ns}", "py-scheduler-burst"
    # A generous renewDeadline: the burst loads the API server, and on a loaded 2-core host a renewal took longer
    # than upstream's 10 s default, which ends a leader's term (and process) as upstream's would: not what this
    # test is about. A SIGTERM releases the Lease, so the takeover does not wait for the lease to expire.
    cfg = write_config(workdir / f"{ns}-burst.yaml", sched_name, ns, lease, timing=(60, 40, 2))
    selector = {"py-scheduler-test/burst": ns}
    with (binder_identities(api, cluster.kubeconfig, ns, ["binder-a", "binder-b"], workdir) as kubeconfigs,
          temporary_nodes(str(cluster.kubeconfig), NODES, prefix=f"burst-{ns}", labels=selector, pods=150)):
        a = start_py_scheduler("--config", str(cfg), "--kubeconfig", str(kubeconfigs["binder-a"]), name="burst-a")
        b = start_py_scheduler("--config", str(cfg), "--kubeconfig", str(kubeconfigs["binder-b"]), name="burst-b")
        try:
            ids = wait_for(lambda: (identity_of(a), identity_of(b)) if identity_of(a) and identity_of(b) else None,
                           60, what="both replicas campaigning")
            spec = wait_for(lambda: (s := lease_spec(coord, ns, lease)) and s.holder_identity and s, 60,
                            what="a leader")
            leader, standby = (a, b) if spec.holder_identity == ids[0] else (b, a)
            old_user, new_user = (f"system:serviceaccount:{ns}:binder-{x}" for x in
                                  (("a", "b") if leader is a else ("b", "a")))
            wait_for(lambda: "py-scheduler started" in standby.log_text(), 60, what="the standby synced")

            names = [f"burst-{i}" for i in range(PODS)]
            created: list[str] = []
            burst = threading.Thread(target=create_pods, args=(cluster.kubeconfig, ns, names, sched_name, selector,
                                                               created), daemon=True)
            burst.start()

            def leader_bound_enough() -> bool:
                if leader.proc.poll() is not None:  # e.g. a renewal slower than renewDeadline on a loaded host
                    raise AssertionError(f"the leader exited before the rollout: {leader.log_text()[-1500:]}")
                return sum(bound_pods(leader).values()) >= STOP_AFTER

            try:
                wait_for(leader_bound_enough, 120, 0.1)
            except AssertionError as exc:
                raise AssertionError(
                    f"the leader bound {sum(bound_pods(leader).values())} pods of {len(created)} created, not "
                    f"{STOP_AFTER}: {str(exc)[-2000:]}") from None
            leader.proc.send_signal(signal.SIGTERM)  # as a rollout stops the old replica
            in_flight_at_stop = len(created) - sum(bound_pods(leader).values())
            burst.join(180)
            assert len(created) == PODS
            assert leader.proc.wait(30) == 0, "the old leader did not stop cleanly"
            wait_for(lambda: unbound(core, ns) == 0, 240, 0.5, what="every pod bound")

            events = audit_events(cluster.audit_log, ns)
            bindings = [e for e in events if e["objectRef"].get("subresource") == "binding"]
            committed = [e for e in bindings if e["responseStatus"].get("code") == 201]
            per_pod = Counter(e["objectRef"]["name"] for e in committed)
            assert set(per_pod) == set(names), f"{len(set(names) - set(per_pod))} pods without a Binding"
            assert {k: v for k, v in per_pod.items() if v != 1} == {}, "a pod was bound more than once"
            takeover = min((e for e in events if e["objectRef"].get("resource") == "leases"
                            and e["objectRef"].get("name") == lease and e["user"]["username"] == new_user
                            and e["responseStatus"].get("code", 0) < 300),
                           key=lambda e: when(e, "requestReceivedTimestamp"))
            took = when(takeover, "requestReceivedTimestamp")
            by_user: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for e in bindings:
                by_user[e["user"]["username"]].append(e)
            assert set(by_user) <= {old_user, new_user}, set(by_user)
            late = [e["objectRef"]["name"] for e in by_user[old_user] if when(e, "stageTimestamp") >= took]
            assert late == [], f"the old leader sent Bindings answered after the new one took the Lease: {late[:5]}"
            old_bound = sum(1 for e in by_user[old_user] if e["responseStatus"].get("code") == 201)
            new_bound = sum(1 for e in by_user[new_user] if e["responseStatus"].get("code") == 201)
            assert old_bound >= STOP_AFTER and new_bound > 0, (old_bound, new_bound)
            assert in_flight_at_stop > 0, "the burst was over before the leader was stopped"

            failed = core.list_namespaced_event(ns, field_selector="reason=FailedScheduling").items
            assert failed == [], [f"{e.involved_object.name}: {e.message}" for e in failed[:5]]
            not_scheduled = [p.metadata.name for p in core.list_namespaced_pod(ns).items
                             for c in (p.status.conditions or []) if c.type == "PodScheduled" and c.status == "False"]
            assert not_scheduled == []
            print(f"burst handover: {old_bound} pods bound by the old leader, {new_bound} by the new one, "
                  f"{in_flight_at_stop} created but not bound by the old leader at its SIGTERM")
        finally:
            stop_scheduler(a.proc)
            stop_scheduler(b.proc)
