"""The example plugin's kustomize overlay (examples/node-label-score/deploy) and e2e-node's copy of it,
rendered with the pinned kubectl: manifests/ with only the image, the --plugin-module flag and the
configuration changed."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster.cluster import build_binaries
from e2e.node import plugin_image

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "examples" / "node-label-score" / "deploy"


def render(path: Path) -> list[dict[str, Any]]:
    kubectl = build_binaries(build=False) / "kubectl"
    out = subprocess.run([str(kubectl), "kustomize", str(path)], check=True, capture_output=True, text=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind)


def test_the_overlay_changes_only_the_image_the_plugin_module_and_the_configuration() -> None:
    base, ours = render(ROOT / "manifests"), render(DEPLOY)
    assert [(d["kind"], d["metadata"]["name"]) for d in ours if d["kind"] != "ConfigMap"] == \
           [(d["kind"], d["metadata"]["name"]) for d in base if d["kind"] != "ConfigMap"]  # fmt: skip
    container = by_kind(ours, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    base_container = by_kind(base, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "py-scheduler-node-label-score:0.1.0"
    assert container["args"] == [*base_container["args"], "--plugin-module=node_label_score"]
    config_map = by_kind(ours, "ConfigMap")
    assert config_map["data"]["config.yaml"] == (DEPLOY / "scheduler-config.yaml").read_text()
    volumes = by_kind(ours, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert config_map["metadata"]["name"] in [v.get("configMap", {}).get("name") for v in volumes]
    # Everything else as in manifests/: the same RBAC (the plugin reads only nodes), probes, security context.
    strip = {"image", "args"}
    assert {k: v for k, v in container.items() if k not in strip} == \
           {k: v for k, v in base_container.items() if k not in strip}  # fmt: skip
    # The config reader Role names the new ConfigMap (kustomize follows the generated name).
    others = [d for d in ours if d["kind"] not in ("ConfigMap", "Deployment")]
    renamed = yaml.safe_dump_all(others).replace(config_map["metadata"]["name"],
                                                  by_kind(base, "ConfigMap")["metadata"]["name"])
    assert renamed == yaml.safe_dump_all([d for d in base if d["kind"] not in ("ConfigMap", "Deployment")])
    assert config_map["metadata"]["name"] in yaml.safe_dump_all(others)


def test_e2e_nodes_copy_changes_only_the_image_name() -> None:
    ours, e2e = render(DEPLOY), render(plugin_image.OVERLAY)
    container = by_kind(e2e, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == plugin_image.IMAGE
    assert yaml.safe_dump_all(e2e).replace(plugin_image.IMAGE, "py-scheduler-node-label-score:0.1.0") == \
           yaml.safe_dump_all(ours)  # fmt: skip
