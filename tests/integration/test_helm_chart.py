"""The Helm chart (charts/py-scheduler) against the kustomize base (manifests/), with the pinned helm and kubectl.

With default values `helm template` must render the objects `kubectl kustomize manifests/` renders, object by
object; the differences are listed here and asserted, so a new one fails the test until it is listed (and
docs/helm.md says it). Integration-marked: it needs the helm and kubectl that e2e/cluster/build.sh builds
(no control plane: e2e-node installs the chart on a real node).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.cluster.cluster import build_binaries
from e2e.node import helm as node_helm
from e2e.rbac import render_manifests, select
from scheduler.config.load import load_dict
from scheduler.config.types import SchedulerConfiguration

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "py-scheduler"
NS = "py-scheduler"
RELEASE = "py-scheduler"
CHART_META = yaml.safe_load((CHART / "Chart.yaml").read_text())
# The labels Helm's conventions add to every templated object's metadata (not to selectors, nor to the pod
# template, nor to crds/, which Helm does not template): the known difference in labels.
HELM_LABELS = {
    "app.kubernetes.io/instance": RELEASE,
    "app.kubernetes.io/managed-by": "Helm",
    "app.kubernetes.io/version": CHART_META["appVersion"],
    "helm.sh/chart": f"py-scheduler-{CHART_META['version']}",
}
# kustomize's configMapGenerator appends a content hash to the ConfigMap's name (and rewrites every
# reference to it); the chart's name is fixed so that an upgrade edits it in place and the replicas reload it.
GENERATED_CM = re.compile(r"^py-scheduler-config-[a-z0-9]{10}$")


def binary(name: str) -> Path:
    path = build_binaries(build=False) / name
    assert path.is_file(), f"{path} missing: run `bash e2e/cluster/build.sh --helm` (make integration does)"
    return path


@pytest.fixture(scope="module")
def helm_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Helm's cache, configuration and data under a scratch directory, not the user's home."""
    home = tmp_path_factory.mktemp("helm")
    return {"HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"), "PATH": "/usr/bin:/bin"}  # fmt: skip


def helm(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary("helm")), *args], capture_output=True, text=True, env=env, check=check)


def template(env: dict[str, str], *args: str) -> list[dict[str, Any]]:
    """`helm template` of the chart as release py-scheduler in namespace py-scheduler, CRDs included."""
    out = helm(env, "template", RELEASE, str(CHART), "--namespace", NS, "--include-crds", *args).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def walk_replace(obj: Any, old: str, new: str) -> Any:
    """``obj`` with every string equal to ``old`` replaced by ``new``."""
    if isinstance(obj, dict):
        return {k: walk_replace(v, old, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [walk_replace(v, old, new) for v in obj]
    return new if obj == old else obj


def parse_config(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each ConfigMap's config.yaml parsed: the chart writes it with toYaml (sorted keys), kustomize as the file."""
    out = []
    for d in docs:
        if d["kind"] == "ConfigMap" and "config.yaml" in d.get("data", {}):
            d = {**d, "data": {**d["data"], "config.yaml": yaml.safe_load(d["data"]["config.yaml"])}}
        out.append(d)
    return out


def by_key(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    keyed = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    assert len(keyed) == len(docs), "one object per kind and name"
    return keyed


def strip_helm_labels(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` without HELM_LABELS, asserting a templated object has each of them with its value."""
    labels = dict(doc["metadata"].get("labels") or {})
    if doc["kind"] != "CustomResourceDefinition":
        got = {k: labels.pop(k, None) for k in HELM_LABELS}
        assert got == HELM_LABELS, f"{doc['kind']} {doc['metadata']['name']}: Helm's labels {got}"
    assert not set(labels) & set(HELM_LABELS), f"{doc['kind']} {doc['metadata']['name']} has Helm's labels"
    return {**doc, "metadata": {**doc["metadata"], "labels": labels}}


@pytest.fixture(scope="module")
def kustomized() -> dict[tuple[str, str], dict[str, Any]]:
    """`kubectl kustomize manifests/` with the generated ConfigMap name unhashed, keyed by kind and name."""
    docs = render_manifests(binary("kubectl"))
    (cm,) = [d["metadata"]["name"] for d in select(docs, "ConfigMap")]
    assert GENERATED_CM.match(cm), cm
    return by_key(parse_config([walk_replace(d, cm, "py-scheduler-config") for d in docs]))


def test_default_values_render_the_kustomize_objects(
    helm_env: dict[str, str], kustomized: dict[tuple[str, str], dict[str, Any]]
) -> None:
    rendered = by_key(parse_config([strip_helm_labels(d) for d in template(helm_env)]))
    # Helm keeps the release's namespace outside the chart (`--create-namespace`, or made beforehand with
    # the Pod Security labels): the one object only kustomize renders.
    assert set(kustomized) - set(rendered) == {("Namespace", NS)}
    assert set(rendered) - set(kustomized) == set(), "the chart renders nothing more by default"
    for key, want in kustomized.items():
        if key in rendered:
            assert rendered[key] == want, f"{key}: chart\n{json.dumps(rendered[key], indent=1)}\n!= kustomize"


def test_helm_lint_is_clean(helm_env: dict[str, str]) -> None:
    res = helm(helm_env, "lint", "--strict", str(CHART), "--namespace", NS, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 chart(s) failed" in res.stdout and "[WARNING]" not in res.stdout and "[ERROR]" not in res.stdout


def deployment_args(docs: list[dict[str, Any]]) -> list[str]:
    (dep,) = select(docs, "Deployment")
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    return list(c["args"])


def test_plugin_modules_and_extra_args_become_flags(helm_env: dict[str, str]) -> None:
    docs = template(helm_env, "--set-json", 'pluginModules=["my_plugin","other.plugins"]',
                    "--set-json", 'extraArgs=["--record-results"]', "--set", "securePort=10300")  # fmt: skip
    assert deployment_args(docs) == [
        "run", "--config=/etc/py-scheduler/config.yaml", "--secure-port=10300",
        "--plugin-module=my_plugin", "--plugin-module=other.plugins", "--record-results",
    ]  # fmt: skip
    (svc,) = select(docs, "Service")
    assert svc["spec"]["ports"][0]["port"] == 10300


def test_existing_config_map_is_mounted_and_readable_and_none_is_rendered(helm_env: dict[str, str]) -> None:
    docs = template(helm_env, "--set", "existingConfigMap=my-config")
    assert select(docs, "ConfigMap") == []
    (dep,) = select(docs, "Deployment")
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert vols["config"]["configMap"] == {"name": "my-config"}
    (reader,) = select(docs, "Role", "py-scheduler-config-reader")
    assert reader["rules"] == [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["my-config"],
                                "verbs": ["get"]}]  # fmt: skip


def test_inline_config_keeps_the_charts_leader_election(helm_env: dict[str, str]) -> None:
    profiles = [{"schedulerName": "py-scheduler",
                 "plugins": {"score": {"enabled": [{"name": "NodeAffinity", "weight": 10}]}}}]  # fmt: skip
    docs = template(helm_env, "--set-json", f"config.profiles={json.dumps(profiles)}",
                    "--set", "leaderElection.leaseDuration=30s", "--namespace", "sched")  # fmt: skip
    (cm,) = select(docs, "ConfigMap")
    config = yaml.safe_load(cm["data"]["config.yaml"])
    assert config["profiles"] == profiles
    assert config["leaderElection"] == {
        "leaderElect": True, "leaseDuration": "30s", "renewDeadline": "10s", "retryPeriod": "2s",
        "resourceLock": "leases", "resourceNamespace": "sched", "resourceName": "py-scheduler",
    }  # fmt: skip
    assert {d["metadata"].get("namespace") for d in docs if d["kind"] in ("Deployment", "ConfigMap", "Role")} == {
        "sched"
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--set", "leaderElection.enabled=false"), "replicas > 1 needs leaderElection.enabled"),
        (("--set-json", 'config.leaderElection={"leaderElect":false}'), "config.leaderElection"),
    ],
)
def test_values_that_would_break_leader_election_are_refused(
    helm_env: dict[str, str], args: tuple[str, ...], message: str
) -> None:
    res = helm(helm_env, "template", RELEASE, str(CHART), "--namespace", NS, *args, check=False)
    assert res.returncode != 0 and message in res.stderr, res.stderr
    one = template(helm_env, "--set", "leaderElection.enabled=false", "--set", "replicas=1")
    (cm,) = select(one, "ConfigMap")
    assert yaml.safe_load(cm["data"]["config.yaml"])["leaderElection"]["leaderElect"] is False


def manifest_file(*parts: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((ROOT / "manifests").joinpath(*parts).read_text()) if d]


def without_labels(docs: list[dict[str, Any]]) -> Iterator[tuple[tuple[str, str], dict[str, Any], dict[str, str]]]:
    """(kind, name), the object less its labels, its labels."""
    for d in docs:
        meta = dict(d["metadata"])
        labels = meta.pop("labels", {})
        yield (d["kind"], meta["name"]), {**d, "metadata": meta}, labels


def test_service_monitor_renders_manifests_monitoring(
    helm_env: dict[str, str], kustomized: dict[tuple[str, str], dict[str, Any]]
) -> None:
    """metrics.serviceMonitor.enabled adds manifests/monitoring/'s objects (labels aside: the chart's plus
    the ones asked for) and nothing else."""
    docs = template(helm_env, "--set", "metrics.serviceMonitor.enabled=true",
                    "--set", "metrics.serviceMonitor.labels.release=prometheus")  # fmt: skip
    extra = [d for d in docs if (d["kind"], d["metadata"]["name"]) not in kustomized]
    want = {
        key: obj
        for key, obj, _ in without_labels(
            manifest_file("monitoring", "servicemonitor.yaml") + manifest_file("monitoring", "metrics-reader.yaml")
        )
    }
    got = {key: (obj, labels) for key, obj, labels in without_labels(extra)}
    assert set(got) == set(want) == {("ServiceMonitor", "py-scheduler"),
                                     ("ClusterRole", "py-scheduler:metrics-reader"),
                                     ("ClusterRoleBinding", "py-scheduler:metrics-reader")}  # fmt: skip
    for key, (obj, _) in got.items():
        assert obj == want[key], key
    sm_labels = got[("ServiceMonitor", "py-scheduler")][1]
    assert sm_labels["release"] == "prometheus" and sm_labels["app.kubernetes.io/component"] == "scheduler"


def test_read_only_role_renders_manifests_readonly_and_binds_the_subjects(helm_env: dict[str, str]) -> None:
    subjects = [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]
    docs = template(helm_env, "--set", "readOnlyRole.enabled=true",
                    "--set-json", f"readOnlyRole.subjects={json.dumps(subjects)}")  # fmt: skip
    ((_, want, _),) = without_labels(manifest_file("readonly", "clusterrole.yaml"))
    ((_, role, _),) = without_labels(select(docs, "ClusterRole", "py-scheduler-readonly"))
    assert role == want
    (binding,) = select(docs, "ClusterRoleBinding", "py-scheduler-readonly")
    assert binding["subjects"] == subjects
    assert binding["roleRef"]["name"] == "py-scheduler-readonly"
    assert select(template(helm_env, "--set", "readOnlyRole.enabled=true"), "ClusterRoleBinding",
                  "py-scheduler-readonly") == []  # fmt: skip


def test_scheduling_constraints_replace_the_default_spread(helm_env: dict[str, str]) -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "role", "operator": "In", "values": ["control"]}]}]}}}  # fmt: skip
    tolerations = [{"key": "role", "operator": "Exists", "effect": "NoSchedule"}]
    docs = template(helm_env, "--set-json", f"affinity={json.dumps(affinity)}",
                    "--set-json", f"tolerations={json.dumps(tolerations)}", "--set", "nodeSelector.zone=a",
                    "--set", "image.repository=registry.example/py-scheduler", "--set", "image.tag=1.2.3")  # fmt: skip
    (dep,) = select(docs, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    assert (pod["affinity"], pod["tolerations"], pod["nodeSelector"]) == (affinity, tolerations, {"zone": "a"})
    assert pod["containers"][0]["image"] == "registry.example/py-scheduler:1.2.3"


def test_configuration_loads_and_e2e_nodes_upgrade_raises_the_weight(helm_env: dict[str, str], tmp_path: Path) -> None:
    """The chart's configuration loads as the scheduler loads it, and the values file of e2e-node's `helm upgrade`
    (e2e/node/helm.py) changes NodeAffinity's score weight from its default 2 to 10, and nothing else."""

    def loaded(*args: str) -> SchedulerConfiguration:
        (cm,) = select(template(helm_env, *args), "ConfigMap")
        return load_dict(yaml.safe_load(cm["data"]["config.yaml"]))

    def weights(cfg: SchedulerConfiguration) -> dict[str, int]:
        (profile,) = cfg.profiles
        return {p.name: p.weight for p in profile.plugins["score"]}

    default, upgraded = loaded(), loaded("-f", str(node_helm.weighted_values(tmp_path)))
    assert default.leader_election == upgraded.leader_election and default.leader_election.leader_elect
    assert weights(default)["NodeAffinity"] == 2 and weights(upgraded)["NodeAffinity"] == 10
    assert {**weights(default), "NodeAffinity": 10} == weights(upgraded)


def test_the_example_plugins_values_deploy_it(
    helm_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/node-label-score/deploy/values.yaml (docs/plugins.md's `helm install`) allows the plugin's module on
    the command line and renders a configuration that loads with NodeLabelScore scoring at weight 5."""
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "node-label-score" / "src"))
    values = ROOT / "examples" / "node-label-score" / "deploy" / "values.yaml"
    docs = template(helm_env, "-f", str(values))
    assert "--plugin-module=node_label_score" in deployment_args(docs)
    (cm,) = select(docs, "ConfigMap")
    (profile,) = load_dict(yaml.safe_load(cm["data"]["config.yaml"])).profiles
    assert {p.name: p.weight for p in profile.plugins["score"]}["NodeLabelScore"] == 5
