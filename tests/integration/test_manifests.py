"""The kustomize base in manifests/: renders with the pinned kubectl, least-privilege RBAC, a hardened pod.

Rendering uses the kubectl that e2e/cluster/build.sh builds, so these checks are integration tests (`make
integration` builds the binaries first; `make unit` needs none); a missing kubectl is a failure, not a skip.
Also here: e2e-node's overlay changes nothing but the image.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.cluster.cluster import build_binaries
from e2e.node.run import OVERLAY
from e2e.rbac import forbidden_lines, scheduler_config_text, select
from scheduler.config.load import load_dict
from scheduler.kube.kinds import WATCHED_KINDS

ROOT = Path(__file__).resolve().parents[2]
NS = "py-scheduler"

# (apiGroup, resource) -> the verbs the scheduler needs cluster-wide besides those of the kinds it
# watches (which follow from kube/kinds.py's WATCHED_KINDS): bindings, status writes, events.
WRITES_BESIDES_WATCHED_KINDS: dict[tuple[str, str], set[str]] = {
    ("", "pods/binding"): {"create"},
    ("", "pods/status"): {"patch"},
    ("", "events"): {"create", "patch"},
    ("events.k8s.io", "events"): {"create", "patch"},
    ("scheduling.x-k8s.io", "podgroups/status"): {"update", "patch"},
    # The Workload API: the PodGroupInitiallyScheduled condition (upstream's role: patch and update).
    ("scheduling.k8s.io", "podgroups/status"): {"update", "patch"},
    # DynamicResources: PreBind and PostFilter update the claim status, Unreserve patches reservedFor;
    # DRAResourceClaimGranularStatusAuthorization (beta, on) also checks the binding pseudo-subresource.
    ("resource.k8s.io", "resourceclaims/status"): {"update", "patch"},
    ("resource.k8s.io", "resourceclaims/binding"): {"update", "patch"},
}
# (apiGroup, resource) -> the exact verbs the scheduler needs cluster-wide.
EXPECTED_CLUSTER_RULES: dict[tuple[str, str], set[str]] = {
    **{(k.group, k.plural): set(k.verbs) for k in WATCHED_KINDS},
    **WRITES_BESIDES_WATCHED_KINDS,
}


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    kubectl = build_binaries(build=False) / "kubectl"
    assert kubectl.is_file(), f"{kubectl} missing: run `make binaries` (bash e2e/cluster/build.sh)"
    out = subprocess.run(
        [str(kubectl), "kustomize", str(ROOT / "manifests")], check=True, capture_output=True, text=True
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = select(docs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {[d['metadata']['name'] for d in found]}"
    return found[0]


def expand(rules: list[dict[str, Any]]) -> Iterator[tuple[str, str, str, tuple[str, ...]]]:
    """(apiGroup, resource, verb, resourceNames) for every combination a rule grants."""
    for r in rules:
        for g in r.get("apiGroups") or []:
            for res in r.get("resources") or []:
                for v in r.get("verbs") or []:
                    yield g, res, v, tuple(r.get("resourceNames") or ())


def test_renders_the_expected_objects(docs: list[dict[str, Any]]) -> None:
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    cm = one(docs, "ConfigMap")["metadata"]["name"]
    assert cm.startswith("py-scheduler-config-"), "the generated ConfigMap name carries a content hash"
    assert kinds == sorted([
        ("Namespace", NS), ("ServiceAccount", "py-scheduler"), ("ClusterRole", "py-scheduler"),
        ("ClusterRoleBinding", "py-scheduler"), ("ClusterRoleBinding", "py-scheduler:auth-delegator"),
        ("Role", "py-scheduler-leader-election"), ("RoleBinding", "py-scheduler-leader-election"),
        ("Role", "py-scheduler-config-reader"), ("RoleBinding", "py-scheduler-config-reader"), ("ConfigMap", cm),
        ("Deployment", "py-scheduler"),
        ("Service", "py-scheduler-metrics"), ("CustomResourceDefinition", "podgroups.scheduling.x-k8s.io"),
        ("PodDisruptionBudget", "py-scheduler"),
    ])  # fmt: skip
    for d in docs:
        assert d["apiVersion"] and d["metadata"]["name"]
        if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"):
            assert d["metadata"].get("namespace") == NS, f"{d['kind']} {d['metadata']['name']} not in {NS}"


def test_cluster_role_grants_exactly_what_the_scheduler_uses(docs: list[dict[str, Any]]) -> None:
    rules = one(docs, "ClusterRole", "py-scheduler")["rules"]
    granted: dict[tuple[str, str], set[str]] = {}
    for group, res, verb, names in expand(rules):
        assert not names, "cluster-wide rules are not limited by name"
        granted.setdefault((group, res), set()).add(verb)
    assert granted == EXPECTED_CLUSTER_RULES
    for r in rules:
        assert not r.get("nonResourceURLs"), "discovery comes from the built-in system:discovery role"


def test_no_wildcards_and_no_secrets_anywhere(docs: list[dict[str, Any]]) -> None:
    for kind in ("ClusterRole", "Role"):
        for role in select(docs, kind):
            for r in role["rules"]:
                for field in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
                    assert all("*" not in v for v in r.get(field) or []), f"{kind} {field} has a wildcard: {r}"
                assert "secrets" not in (r.get("resources") or []), f"{kind} grants secrets: {r}"
                assert not {"escalate", "bind", "impersonate"} & set(r.get("verbs") or [])


def test_lease_role_is_namespaced_and_limited_to_the_lease(docs: list[dict[str, Any]]) -> None:
    role = one(docs, "Role", "py-scheduler-leader-election")
    grants = set(expand(role["rules"]))
    assert grants == {
        ("coordination.k8s.io", "leases", "create", ()),
        ("coordination.k8s.io", "leases", "get", ("py-scheduler",)),
        ("coordination.k8s.io", "leases", "update", ("py-scheduler",)),
    }


def test_config_reader_role_reads_only_the_generated_config_map(docs: list[dict[str, Any]]) -> None:
    """`run --config-configmap` (reload without restart) needs get on that one ConfigMap, nothing more."""
    cm = one(docs, "ConfigMap")["metadata"]["name"]
    assert set(expand(one(docs, "Role", "py-scheduler-config-reader")["rules"])) == {("", "configmaps", "get", (cm,))}


@pytest.mark.parametrize("kind", ["ClusterRoleBinding", "RoleBinding"])
def test_bindings_name_the_service_account(docs: list[dict[str, Any]], kind: str) -> None:
    role_kind = "ClusterRole" if kind == "ClusterRoleBinding" else "Role"
    roles = {r["metadata"]["name"] for r in select(docs, role_kind)}
    # The built-in system:auth-delegator binding is checked on its own.
    bindings = [b for b in select(docs, kind) if not b["roleRef"]["name"].startswith("system:")]
    assert {b["roleRef"]["name"] for b in bindings} == roles, "every role is bound, once"
    for b in bindings:
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": "py-scheduler", "namespace": NS}]
        assert b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                                "name": b["metadata"]["name"]}


def test_scheduler_config_loads_with_leader_election_on_its_own_lease(docs: list[dict[str, Any]]) -> None:
    cfg = load_dict(yaml.safe_load(scheduler_config_text(docs)))
    assert [p.scheduler_name for p in cfg.profiles] == ["py-scheduler"]
    le = cfg.leader_election
    assert le.leader_elect is True
    assert (le.resource_namespace, le.resource_name) == (NS, "py-scheduler")
    assert (le.lease_duration_seconds, le.renew_deadline_seconds, le.retry_period_seconds) == (15, 10, 2)
    role = one(docs, "Role", "py-scheduler-leader-election")
    assert role["metadata"]["namespace"] == le.resource_namespace
    assert any(le.resource_name in (r.get("resourceNames") or []) for r in role["rules"])


def test_deployment_is_two_hardened_replicas_with_probes(docs: list[dict[str, Any]]) -> None:
    dep = one(docs, "Deployment", "py-scheduler")
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "py-scheduler"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (c,) = pod["containers"]
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] is True
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not sc.get("privileged")
    for kind in ("requests", "limits"):
        assert set(c["resources"][kind]) == {"cpu", "memory"}
    port = {p["name"]: p["containerPort"] for p in c["ports"]}["https"]
    assert f"--secure-port={port}" in c["args"] and not any(a.startswith("--metrics-port") for a in c["args"])
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "https", "scheme": "HTTPS"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    # The config comes from the generated ConfigMap, mounted where --config points.
    cm = one(docs, "ConfigMap")["metadata"]["name"]
    vols = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert vols["config"]["configMap"]["name"] == cm
    assert f"--config={mounts['config']['mountPath']}/config.yaml" in c["args"]
    assert mounts["config"]["readOnly"] is True
    assert "tmp" in mounts and "emptyDir" in vols["tmp"], "a writable /tmp on a read-only root"
    assert not any(v.get("hostPath") for v in pod["volumes"])
    assert dep["spec"]["selector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()


def test_one_replica_survives_voluntary_disruptions_and_the_scheduler_is_critical(docs: list[dict[str, Any]]) -> None:
    pdb = one(docs, "PodDisruptionBudget", "py-scheduler")
    dep = one(docs, "Deployment", "py-scheduler")
    assert pdb["spec"]["minAvailable"] == 1 < dep["spec"]["replicas"]
    assert pdb["spec"]["selector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    assert dep["spec"]["template"]["spec"]["priorityClassName"] == "system-cluster-critical"


def test_metrics_service_selects_the_scheduler_pods(docs: list[dict[str, Any]]) -> None:
    svc = one(docs, "Service", "py-scheduler-metrics")
    dep = one(docs, "Deployment", "py-scheduler")
    assert svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    (port,) = svc["spec"]["ports"]
    assert port["targetPort"] == "https"


def test_namespace_enforces_the_restricted_pod_security_standard(docs: list[dict[str, Any]]) -> None:
    labels = one(docs, "Namespace", NS)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_forbidden_detector_catches_denials_and_ignores_ordinary_numbers() -> None:
    """e2e/run.py fails a run on these lines; latencies or counts that happen to be 403 must not trip it."""
    lines = [
        '{"kind": "PersistentVolume", "status": 403, "event": "cannot list objects; plugins reading them see none"}',
        'WARNING kopf: persistentvolumes is forbidden: User "system:serviceaccount:x:y" cannot list resource',
        "kubernetes.client.exceptions.ApiException: (403)",
        '{"pod": "ns/p", "node": "n", "latency_ms": 403.0, "event": "bound"}',
        '{"event": "caches synced", "pods": 403, "nodes": 1403}',
    ]
    assert forbidden_lines("\n".join(lines)) == lines[:3]


def test_kind_cluster_has_one_control_plane_and_three_zoned_workers() -> None:
    cfg = yaml.safe_load((ROOT / "e2e" / "kind" / "kind-config.yaml").read_text())
    assert cfg["kind"] == "Cluster" and cfg["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    roles = [n["role"] for n in cfg["nodes"]]
    assert roles == ["control-plane", "worker", "worker", "worker"]
    zones = [n["labels"]["topology.kubernetes.io/zone"] for n in cfg["nodes"] if n["role"] == "worker"]
    assert len(set(zones)) == 3


def test_kind_overlay_deploys_the_image_run_sh_builds() -> None:
    kubectl = build_binaries(build=False) / "kubectl"
    out = subprocess.run(
        [str(kubectl), "kustomize", str(ROOT / "e2e" / "kind" / "overlay")], check=True, capture_output=True, text=True
    ).stdout
    dep = one([d for d in yaml.safe_load_all(out) if d], "Deployment", "py-scheduler")
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    run_sh = (ROOT / "e2e" / "kind" / "run.sh").read_text()
    assert f'IMAGE="{c["image"]}"' in run_sh
    assert c["imagePullPolicy"] == "IfNotPresent" and not c["image"].endswith(":latest")


def test_kind_run_without_docker_or_kind_stops_with_exit_code_2(tmp_path: Path) -> None:
    """Only `dirname` on PATH: docker and kind are missing whatever this machine has installed."""
    (tmp_path / "dirname").symlink_to(shutil.which("dirname") or "/usr/bin/dirname")
    res = subprocess.run(
        ["/bin/bash", str(ROOT / "e2e" / "kind" / "run.sh")],
        env={"PATH": str(tmp_path), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2, res.stderr
    assert "docker kind not found on PATH" in res.stderr


def test_dockerfile_is_multi_stage_non_root_and_ships_only_the_venv() -> None:
    lines = [ln.strip() for ln in (ROOT / "Dockerfile").read_text().splitlines() if ln.strip()]
    froms = [ln for ln in lines if ln.startswith("FROM ")]
    assert len(froms) >= 2 and " AS build" in froms[0], "a build stage and a final stage"
    final = lines[lines.index(froms[-1]) :]
    users = [ln.split()[1] for ln in final if ln.startswith("USER ")]
    assert users and users[-1].split(":")[0].isdigit() and users[-1].split(":")[0] != "0", users
    copies = [ln for ln in final if ln.startswith("COPY ")]
    assert copies == ["COPY --from=build /opt/py-scheduler /opt/py-scheduler"], "the final stage gets only the venv"
    assert not any(tool in ln for ln in final for tool in ("apt-get install", "gcc", "build-essential"))
    ignore = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines() if ln.strip()[:1] not in ("", "#")]
    assert ignore[0] == "*", ".dockerignore starts from nothing (no .venv, .git, .cluster in the context)"
    assert {"!pyproject.toml", "!README.md", "!scheduler"} <= set(ignore)


def test_podgroup_crd_is_scheduler_plugins_v1alpha1_with_a_status_subresource(docs: list[dict[str, Any]]) -> None:
    crd = one(docs, "CustomResourceDefinition", "podgroups.scheduling.x-k8s.io")["spec"]
    assert (crd["group"], crd["scope"], crd["names"]["kind"], crd["names"]["plural"]) == (
        "scheduling.x-k8s.io", "Namespaced", "PodGroup", "podgroups")
    (version,) = crd["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    props = version["schema"]["openAPIV3Schema"]["properties"]
    assert set(props["spec"]["properties"]) == {"minMember", "minResources", "scheduleTimeoutSeconds"}
    assert {"phase", "scheduled", "running", "succeeded", "failed", "scheduleStartTime"} <= set(
        props["status"]["properties"])


def test_coscheduling_example_config_loads_and_names_the_group_label() -> None:
    from scheduler.config.types_pluginargs import CoschedulingArgs
    from scheduler.plugins.helper.podgroup import POD_GROUP_LABEL

    cfg = load_dict(yaml.safe_load((ROOT / "manifests" / "examples" / "coscheduling-config.yaml").read_text()))
    (profile,) = cfg.profiles
    assert [p.name for p in profile.plugins["queueSort"]] == ["Coscheduling"]
    assert "Coscheduling" in [p.name for p in profile.plugins["permit"]]
    assert profile.plugin_config["Coscheduling"] == CoschedulingArgs(60, 5)
    job = next(d for d in yaml.safe_load_all((ROOT / "manifests" / "examples" / "gang-job.yaml").read_text())
               if d["kind"] == "Job")
    assert job["spec"]["template"]["metadata"]["labels"] == {POD_GROUP_LABEL: "trainer"}

def test_service_monitor_component_is_optional_and_scrapes_the_metrics_service(docs: list[dict[str, Any]]) -> None:
    assert not select(docs, "ServiceMonitor"), "the ServiceMonitor must stay out of the default kustomization"
    kubectl = build_binaries(build=False) / "kubectl"
    with tempfile.TemporaryDirectory(dir=ROOT, prefix=".overlay-") as overlay:  # kustomize wants relative paths
        (Path(overlay) / "kustomization.yaml").write_text(yaml.safe_dump({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": ["../manifests"], "components": ["../manifests/monitoring"],
        }))
        out = subprocess.run([str(kubectl), "kustomize", overlay], check=True, capture_output=True, text=True).stdout
    rendered = [d for d in yaml.safe_load_all(out) if d]
    monitor = one(rendered, "ServiceMonitor", "py-scheduler")
    service = one(rendered, "Service", "py-scheduler-metrics")
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    ports = {p["name"] for p in service["spec"]["ports"]}
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["https"] and "https" in ports
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics" and endpoint["scheme"] == "https"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    role = one(rendered, "ClusterRole", "py-scheduler:metrics-reader")
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_the_scheduler_may_delegate_authentication_and_authorization(docs: list[dict[str, Any]]) -> None:
    """The secure port's TokenReviews and SubjectAccessReviews: system:auth-delegator, bound as upstream binds it."""
    binding = one(docs, "ClusterRoleBinding", "py-scheduler:auth-delegator")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": "system:auth-delegator"}
    sa = one(docs, "ServiceAccount", "py-scheduler")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "py-scheduler",
                                    "namespace": sa["metadata"]["namespace"]}]


def optional_docs(path: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((ROOT / "manifests" / path).read_text()) if d]


def test_cluster_role_file_grants_the_watched_kinds_table_and_the_writes() -> None:
    """The same check as above on manifests/clusterrole.yaml itself (no kustomize needed): a row added
    to WATCHED_KINDS without its rule, or a rule left behind, fails here."""
    (role,) = optional_docs("clusterrole.yaml")
    granted: dict[tuple[str, str], set[str]] = {}
    for group, res, verb, _ in expand(role["rules"]):
        granted.setdefault((group, res), set()).add(verb)
    assert granted == EXPECTED_CLUSTER_RULES


def test_read_only_role_lists_what_the_snapshot_lists_and_writes_nothing() -> None:
    (role,) = optional_docs("readonly/clusterrole.yaml")
    granted = {(g, res, v) for g, res, v, _ in expand(role["rules"])}
    wanted = {(k.group, k.plural, "list") for k in WATCHED_KINDS if not k.crd}  # gated kinds: listed when served
    dashboard = {("events.k8s.io", "events", "list")}  # its pending pods' attempts (FailedScheduling events)
    assert granted == wanted | {("", "pods", "get")} | dashboard, "exactly the reads of kube/snapshot.py"


def test_record_results_role_adds_only_patch_on_pods_for_the_service_account() -> None:
    role, binding = optional_docs("record-results/clusterrole.yaml")
    assert set(expand(role["rules"])) == {("", "pods", "patch", ())}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "py-scheduler", "namespace": NS}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]

def test_overlay_changes_only_the_image_of_manifests() -> None:
    kubectl = build_binaries(build=False) / "kubectl"
    assert kubectl.is_file(), f"{kubectl} missing: run `make binaries` (bash e2e/cluster/build.sh)"

    def render(path: Path) -> list[dict[str, object]]:
        out = subprocess.run([str(kubectl), "kustomize", str(path)], check=True, capture_output=True, text=True)
        return [d for d in yaml.safe_load_all(out.stdout) if d]

    base, overlay = render(OVERLAY.parents[2] / "manifests"), render(OVERLAY)
    image = "localhost/py-scheduler:e2e"
    deploy = next(d for d in overlay if d["kind"] == "Deployment")
    assert [c["image"] for c in deploy["spec"]["template"]["spec"]["containers"]] == [image]  # type: ignore[index]
    restored = yaml.safe_dump_all(overlay).replace(image, "py-scheduler:0.1.0")
    assert restored == yaml.safe_dump_all(base)
