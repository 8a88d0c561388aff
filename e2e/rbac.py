"""Run py-scheduler as its in-cluster ServiceAccount against the local control plane.

Why: the ClusterRole and Role in manifests/ must be exactly enough. The e2e run and the RBAC
integration test apply those very roles (rendered by ``kubectl kustomize manifests/``), get a token for
``system:serviceaccount:py-scheduler:py-scheduler`` from the TokenRequest API and give the scheduler a
kubeconfig with that token, so a missing permission fails the run (a 403 in the scheduler's log)
instead of surfacing first in someone's cluster.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from e2e.cluster.cluster import LocalCluster, build_binaries

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "manifests"
NAMESPACE = "py-scheduler"
SERVICE_ACCOUNT = "py-scheduler"
USERNAME = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
# What a local run needs from the base: identity and permissions, not the Deployment (no kubelet runs
# it here; the scheduler runs as a process) nor the Service.
RBAC_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
TOKEN_SECONDS = 24 * 3600  # outlives any test session; the local apiserver sets no maximum

# A permission problem in the scheduler's log: the API server's "... is forbidden: User ... cannot ..."
# (kopf and the client repeat it), or a logged HTTP status 403.
_FORBIDDEN = re.compile(r"forbidden|\bstatus\"?\s*[:=]\s*403\b|\(403\)|HTTP 403", re.IGNORECASE)


def kubectl_path() -> Path:
    """The kubectl that build.sh builds (pinned to the cluster's version)."""
    return build_binaries(build=False) / "kubectl"


def render_manifests(kubectl: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """``kubectl kustomize manifests/`` as a list of objects."""
    out = subprocess.run(
        [str(kubectl or kubectl_path()), "kustomize", str(MANIFESTS)], check=True, capture_output=True, text=True
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def select(docs: Iterable[Mapping[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    """The rendered objects of one kind (and name)."""
    return [dict(d) for d in docs if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name)]


def scheduler_config_text(docs: Iterable[Mapping[str, Any]]) -> str:
    """The KubeSchedulerConfiguration the Deployment mounts (the generated ConfigMap's config.yaml)."""
    (cm,) = [d for d in select(docs, "ConfigMap") if d["metadata"]["name"].startswith("py-scheduler-config")]
    return str(cm["data"]["config.yaml"])


def write_scheduler_config(docs: Iterable[Mapping[str, Any]], path: Path, **overrides: Any) -> Path:
    """Write the manifests' scheduler config to ``path``; ``scheduler_name=`` / ``leader_election=`` change it.

    Tests that share a cluster with other schedulers give the profile their own name; the lease stays
    the manifests' one (the Role only allows that name).
    """
    cfg = yaml.safe_load(scheduler_config_text(docs))
    if "scheduler_name" in overrides:
        cfg["profiles"] = [{"schedulerName": overrides["scheduler_name"]}]
    if "leader_election" in overrides:
        cfg["leaderElection"] = {**cfg.get("leaderElection", {}), **overrides["leader_election"]}
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def apply(docs: Iterable[Mapping[str, Any]], kubeconfig: str | os.PathLike[str], kubectl: Path | None = None) -> None:
    """``kubectl apply`` the objects with the admin kubeconfig (idempotent)."""
    body = yaml.safe_dump_all([dict(d) for d in docs], sort_keys=False)
    subprocess.run(
        [str(kubectl or kubectl_path()), "--kubeconfig", str(kubeconfig), "apply", "-f", "-"],
        input=body, check=True, capture_output=True, text=True,
    )  # fmt: skip


def request_token(
    api: client.ApiClient, namespace: str = NAMESPACE, name: str = SERVICE_ACCOUNT, seconds: int = TOKEN_SECONDS
) -> str:
    """A bound token for the ServiceAccount from the TokenRequest API (what a pod's projected volume gets)."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}}
    core: Any = client.CoreV1Api(api)  # Any: the client's stubs want models, a dict body is what it sends
    return str(core.create_namespaced_service_account_token(name, namespace, body).status.token)


def write_kubeconfig(admin_kubeconfig: str | os.PathLike[str], token: str, path: Path, user: str = USERNAME) -> Path:
    """A kubeconfig for the same cluster (server, CA) as the admin one, authenticated by ``token``."""
    admin = yaml.safe_load(Path(admin_kubeconfig).read_text())
    current = admin["current-context"]
    ctx = next(c["context"] for c in admin["contexts"] if c["name"] == current)
    cluster = next(c for c in admin["clusters"] if c["name"] == ctx["cluster"])
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "py-scheduler-sa", "context": {"cluster": cluster["name"], "user": user}}],
        "current-context": "py-scheduler-sa",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    path.chmod(0o600)
    return path


def service_account_kubeconfig(cluster: LocalCluster, path: Path, docs: list[dict[str, Any]] | None = None) -> Path:
    """Apply the manifests' RBAC objects to ``cluster`` and write a kubeconfig acting as the ServiceAccount."""
    docs = docs if docs is not None else render_manifests()
    objs = [d for kind in RBAC_KINDS for d in select(docs, kind)]
    apply(objs, cluster.kubeconfig)
    token = request_token(cluster.api_client())
    return write_kubeconfig(cluster.kubeconfig, token, path)


def role_kubeconfig(cluster: LocalCluster, role: str, path: Path, name: str) -> Path:
    """A ServiceAccount ``name`` in the default namespace bound to the ClusterRole ``role``, and a kubeconfig acting
    as it: a person's read-only access (manifests/readonly/) as the cluster would grant it."""
    apply([
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "default"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]},
    ], cluster.kubeconfig)  # fmt: skip
    token = request_token(cluster.api_client(), "default", name)
    return write_kubeconfig(cluster.kubeconfig, token, path, user=f"system:serviceaccount:default:{name}")


def can_i(
    api: client.ApiClient,
    verb: str,
    resource: str,
    *,
    group: str = "",
    namespace: str = "",
    subresource: str = "",
    name: str = "",
) -> bool:
    """SelfSubjectAccessReview: may the client's own identity do this?"""
    attrs = {"verb": verb, "resource": resource, "group": group}
    for key, value in (("namespace", namespace), ("subresource", subresource), ("name", name)):
        if value:
            attrs[key] = value
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attrs},
    }
    authz: Any = client.AuthorizationV1Api(api)
    return bool(authz.create_self_subject_access_review(body).status.allowed)


def whoami(api: client.ApiClient) -> str:
    """The username the API server authenticated (SelfSubjectReview)."""
    authn: Any = client.AuthenticationV1Api(api)
    review = authn.create_self_subject_review({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return str(review.status.user_info.username)


def forbidden_lines(log_text: str) -> list[str]:
    """Lines of a scheduler log that report a denied API call."""
    return [line for line in log_text.splitlines() if _FORBIDDEN.search(line)]


def apply_podgroup_crd(kubeconfig: str | os.PathLike[str], timeout: float = 60.0) -> None:
    """``kubectl apply`` manifests/podgroup-crd.yaml as a user would (so a later ``kubectl apply -k
    manifests/`` finds its last-applied annotation) and wait until PodGroups are served."""
    kubectl, crd = str(kubectl_path()), str(MANIFESTS / "podgroup-crd.yaml")
    base = [kubectl, "--kubeconfig", str(kubeconfig)]
    subprocess.run([*base, "apply", "-f", crd], check=True, capture_output=True, text=True, timeout=timeout)
    subprocess.run([*base, "wait", "--for=condition=Established", "-f", crd, f"--timeout={int(timeout)}s"],
                   check=True, capture_output=True, text=True, timeout=timeout + 10)
