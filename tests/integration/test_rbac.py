"""py-scheduler as its ServiceAccount, with exactly the manifests' RBAC, on the real control plane.

The scheduler binds, writes FailedScheduling events and PodScheduled conditions and holds its Lease
with no denied call in its log; the identity cannot read secrets; and a role missing a permission the
scheduler uses does show up as "forbidden" in the log (so the e2e runner's check can catch it).
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from e2e.cluster.cluster import LocalCluster
from e2e.kube import events_for, node_of, pod_manifest, scheduled_condition, wait_for
from e2e.process import start_scheduler, stop_scheduler
from e2e.rbac import (
    MANIFESTS,
    NAMESPACE,
    USERNAME,
    apply,
    can_i,
    forbidden_lines,
    kubectl_path,
    render_manifests,
    request_token,
    select,
    service_account_kubeconfig,
    whoami,
    write_kubeconfig,
    write_scheduler_config,
)
from tests.integration.conftest import free_port
from tests.integration.test_serving import https_get


def create_pod(core: client.CoreV1Api, ns: str, manifest: dict[str, Any]) -> None:
    """POST a pod manifest (a dict: the client sends it as is; its stubs only know models)."""
    api: Any = core
    api.create_namespaced_pod(ns, manifest)


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    return render_manifests()


@pytest.fixture(scope="module")
def sa_kubeconfig(cluster: LocalCluster, workdir: Path, docs: list[dict[str, Any]]) -> Path:
    return service_account_kubeconfig(cluster, workdir / "py-scheduler-sa.kubeconfig", docs)


@pytest.fixture(scope="module")
def sa_api(sa_kubeconfig: Path) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(sa_kubeconfig))


def test_kubeconfig_authenticates_as_the_service_account(sa_api: client.ApiClient) -> None:
    assert whoami(sa_api) == USERNAME


def test_service_account_cannot_read_secrets_or_write_beyond_its_role(sa_api: client.ApiClient) -> None:
    for verb in ("get", "list", "watch"):
        assert not can_i(sa_api, verb, "secrets"), f"{verb} secrets cluster-wide"
        assert not can_i(sa_api, verb, "secrets", namespace=NAMESPACE), f"{verb} secrets in {NAMESPACE}"
    with pytest.raises(client.ApiException) as err:
        client.CoreV1Api(sa_api).list_namespaced_secret(NAMESPACE)
    assert err.value.status == 403
    # What it must be able to do...
    assert can_i(sa_api, "create", "pods", subresource="binding", namespace="default")
    # The secure port's delegated authentication and authorization (system:auth-delegator).
    assert can_i(sa_api, "create", "tokenreviews", group="authentication.k8s.io")
    assert can_i(sa_api, "create", "subjectaccessreviews", group="authorization.k8s.io")
    assert can_i(sa_api, "patch", "pods", subresource="status", namespace="default")
    assert can_i(sa_api, "create", "events", group="events.k8s.io", namespace="default")
    assert can_i(sa_api, "watch", "csistoragecapacities", group="storage.k8s.io")
    assert can_i(sa_api, "update", "leases", group="coordination.k8s.io", namespace=NAMESPACE, name="py-scheduler")
    # ...and what it must not.
    assert not can_i(sa_api, "create", "pods", namespace="default")
    assert not can_i(sa_api, "update", "pods", subresource="status", namespace="default")
    assert not can_i(sa_api, "delete", "nodes")
    assert not can_i(sa_api, "update", "leases", group="coordination.k8s.io", namespace=NAMESPACE, name="other")
    assert not can_i(sa_api, "get", "leases", group="coordination.k8s.io", namespace="kube-system", name="py-scheduler")
    assert not can_i(sa_api, "list", "priorityclasses", group="scheduling.k8s.io")


def test_scheduler_as_service_account_binds_and_reports_failures(
    api: client.ApiClient,
    core: client.CoreV1Api,
    ns: str,
    workdir: Path,
    docs: list[dict[str, Any]],
    sa_kubeconfig: Path,
) -> None:
    """The manifests' config (leader election on py-scheduler/py-scheduler), its own profile name; its secure
    port reviews a scraper's token and access through the API server with the manifests' RBAC alone."""
    sched_name = f"rbac-{ns}"
    cfg = write_scheduler_config(docs, workdir / f"{ns}-rbac.yaml", scheduler_name=sched_name)
    log = workdir / f"{ns}-rbac-scheduler.log"
    secure_port = free_port()
    proc = start_scheduler(sa_kubeconfig, log, ["--config", str(cfg), "--metrics-port", str(free_port()),
                                                "--secure-port", str(secure_port), "--bind-address", "127.0.0.1"])
    try:
        create_pod(core, ns, pod_manifest("fits", scheduler_name=sched_name))
        create_pod(core, ns, pod_manifest("huge", scheduler_name=sched_name, cpu="512"))
        wait_for(lambda: node_of(core, ns, "fits"), 90, what="pod bound by the ServiceAccount's scheduler")
        cond = wait_for(lambda: scheduled_condition(core, ns, "huge"), 60, what="PodScheduled=False written")
        assert (cond.status, cond.reason) == ("False", "Unschedulable")
        ev = wait_for(lambda: events_for(api, ns, "huge", "FailedScheduling"), 60, what="FailedScheduling event")
        assert "Insufficient cpu" in ev[0].note
        wait_for(lambda: events_for(api, ns, "fits", "Scheduled"), 60, what="Scheduled event")
        # Reviewed, then refused by RBAC (the scheduler's own account may not get /metrics): a 401 would mean
        # the TokenReview itself was denied.
        code, body = https_get(secure_port, "/metrics", request_token(api))
        assert code == 403, body
        assert json.loads(body)["message"] == f'forbidden: User "{USERNAME}" cannot get path "/metrics"'
        assert proc.poll() is None, "the scheduler exited"
    finally:
        stop_scheduler(proc)
    text = log.read_text(errors="replace")
    assert forbidden_lines(text) == [], "the scheduler was denied API access"


def test_service_account_holds_the_lease(
    api: client.ApiClient, ns: str, workdir: Path, docs: list[dict[str, Any]], sa_kubeconfig: Path
) -> None:
    """With the manifests' config the scheduler acquires py-scheduler/py-scheduler through the Role."""
    cfg = write_scheduler_config(docs, workdir / f"{ns}-lease.yaml", scheduler_name=f"rbac-lease-{ns}")
    log = workdir / f"{ns}-rbac-lease.log"
    coord = client.CoordinationV1Api(api)
    proc = start_scheduler(sa_kubeconfig, log, ["--config", str(cfg), "--metrics-port", str(free_port())])
    try:

        def held() -> Any:
            try:
                spec: Any = coord.read_namespaced_lease("py-scheduler", NAMESPACE).spec
            except client.ApiException as exc:
                if exc.status == 404:
                    return None
                raise
            return spec if spec.holder_identity else None

        spec = wait_for(held, 60, what="lease py-scheduler/py-scheduler held")
        assert spec.lease_duration_seconds == 15
    finally:
        stop_scheduler(proc)
    assert forbidden_lines(log.read_text(errors="replace")) == []


@pytest.fixture
def restricted_kubeconfig(cluster: LocalCluster, workdir: Path, docs: list[dict[str, Any]]) -> Iterator[Path]:
    """A second ServiceAccount whose ClusterRole lacks list/watch on persistentvolumes."""
    name = "py-scheduler-restricted"
    role = copy.deepcopy(select(docs, "ClusterRole", "py-scheduler")[0])
    role["metadata"] = {"name": name}
    for r in role["rules"]:
        r["resources"] = [x for x in r["resources"] if x != "persistentvolumes"]
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": NAMESPACE}}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}],
    }  # fmt: skip
    objs = [*select(docs, "Namespace"), sa, role, binding]
    apply(objs, cluster.kubeconfig)
    admin = cluster.api_client()
    token = request_token(admin, NAMESPACE, name)
    try:
        yield write_kubeconfig(cluster.kubeconfig, token, workdir / f"{name}.kubeconfig", user=name)
    finally:
        client.RbacAuthorizationV1Api(admin).delete_cluster_role_binding(name)
        client.RbacAuthorizationV1Api(admin).delete_cluster_role(name)
        client.CoreV1Api(admin).delete_namespaced_service_account(name, NAMESPACE)


def test_a_missing_permission_shows_as_forbidden_in_the_log(workdir: Path, restricted_kubeconfig: Path) -> None:
    """The e2e runner fails on these lines; prove a real denial produces one."""
    log = workdir / "rbac-restricted.log"
    proc = start_scheduler(restricted_kubeconfig, log, ["--scheduler-name", "rbac-restricted"])
    try:
        lines = wait_for(lambda: forbidden_lines(log.read_text(errors="replace")), 60, what="a forbidden line")
    finally:
        stop_scheduler(proc)
    assert any("persistentvolume" in line.lower() for line in lines), lines


def test_manifests_pass_server_side_validation_and_restricted_pod_security(
    cluster: LocalCluster, sa_kubeconfig: Path
) -> None:
    """Every object is valid for the v1.37 API server, and the pod template meets the restricted Pod
    Security Standard that the namespace enforces (the server warns about templates that would not)."""
    kubectl = kubectl_path()
    res = subprocess.run(
        [str(kubectl), "--kubeconfig", str(cluster.kubeconfig), "apply", "--dry-run=server", "-k", str(MANIFESTS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "deployment.apps/py-scheduler" in res.stdout
    assert "would violate PodSecurity" not in res.stderr, res.stderr
    assert "Warning" not in res.stderr, res.stderr
