"""Configuration parity with kube-scheduler v1.37.2 (the binary the local control plane builds): for each
document, both accept it with the same plugins at every extension point (and the same weights), or both
refuse it. kube-scheduler is run with ``-v=2`` against an unreachable API server: it logs the plugins each
profile resolved to ("the scheduler starts to work with those plugins") or exits with its error before
it connects to anything; no control plane is started."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.cluster.cluster import build_binaries
from scheduler.config.errors import ConfigError
from scheduler.config.load import load_dict
from scheduler.config.types import EXTENSION_POINTS, WEIGHTED_POINTS

RESOLVED = "the scheduler starts to work with those plugins"
FAILED = re.compile(r'"command failed" err="(.*)"$')
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def profile(plugins: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "parity", "plugins": dict(plugins)}]}


def enabled(*names: str, weight: int | None = None) -> dict[str, Any]:
    return {"enabled": [{"name": n} if weight is None else {"name": n, "weight": weight} for n in names]}


GATED = ("GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount", "DeferredPodScheduling")

# (id, plugins): the pod-group points and the gated plugins, accepted and refused.
CASES: list[tuple[str, dict[str, Any]]] = [
    ("default", {}),
    ("gated-in-multipoint", {"multiPoint": {"enabled": [{"name": n} for n in GATED]}}),
    ("placement-score-weights", {"multiPoint": {"enabled": [{"name": "PodGroupPodsCount", "weight": 3}]},
                                 "placementScore": enabled("NodeResourcesFit", weight=4)}),
    ("placement-generate", {"placementGenerate": enabled("TopologyPlacementGenerator")}),
    ("pod-group-post-filter-off", {"podGroupPostFilter": {"disabled": [{"name": "*"}]}}),
    ("pod-group-post-filter-one", {"podGroupPostFilter": {"disabled": [{"name": "DynamicResources"}]}}),
    ("gang-at-its-points", {"preEnqueue": enabled("GangScheduling"), "permit": enabled("GangScheduling")}),
    ("deferred-at-its-points", {p: enabled("DeferredPodScheduling") for p in ("preFilter", "filter", "permit")}),
    ("gang-not-a-placement-generator", {"placementGenerate": enabled("GangScheduling")}),
    ("node-name-not-a-placement-scorer", {"placementScore": enabled("NodeName")}),
    ("topology-not-a-pod-group-post-filter", {"podGroupPostFilter": enabled("TopologyPlacementGenerator")}),
    ("pods-count-not-a-filter", {"filter": enabled("PodGroupPodsCount")}),
    ("unknown-placement-scorer", {"placementScore": enabled("Foo")}),
]


@pytest.fixture(scope="module")
def kube_scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    binary = build_binaries(build=False) / "kube-scheduler"
    if not binary.is_file():
        pytest.skip(f"{binary} not built (make binaries)")
    workdir = tmp_path_factory.mktemp("config-parity")
    (workdir / "kubeconfig").write_text(KUBECONFIG)
    yield binary, workdir


def upstream(binary: Path, workdir: Path, document: Mapping[str, Any]) -> dict[str, Any] | str:
    """kube-scheduler's resolved plugins of the first profile, or its error."""
    data = {**document, "leaderElection": {"leaderElect": False},
            "clientConnection": {"kubeconfig": str(workdir / "kubeconfig")}}
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    proc = subprocess.Popen([str(binary), f"--config={path}", "--secure-port=0", "-v=2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        for line in proc.stderr:
            if RESOLVED in line:
                return dict(json.loads(line[line.index("Plugins=") + len("Plugins="):]))
            failed = FAILED.search(line.strip())
            if failed:
                return failed.group(1)
        return f"exited with {proc.wait()}"
    finally:
        proc.kill()
        proc.wait(timeout=30)


def py_plugins(document: Mapping[str, Any]) -> dict[str, list[tuple[str, int]]] | str:
    """py-scheduler's resolved plugins per point (weights at the weighted points), or its error."""
    try:
        cfg = load_dict(document)
    except ConfigError as exc:
        return str(exc)
    p = cfg.profiles[0]
    return {point: [(r.name, r.weight if point in WEIGHTED_POINTS else 0) for r in p.plugins[point]]
            for point in EXTENSION_POINTS}


def upstream_plugins(resolved: Mapping[str, Any]) -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = {}
    for point in EXTENSION_POINTS:
        entries = resolved[point[0].upper() + point[1:]]["Enabled"] or []
        out[point] = [(e["Name"], (e["Weight"] or 1) if point in WEIGHTED_POINTS else 0) for e in entries]
    return out


@pytest.mark.parametrize("plugins", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_plugins_resolve_or_are_refused_as_upstream(kube_scheduler: tuple[Path, Path], plugins: dict[str, Any]) -> None:
    document = profile(plugins)
    theirs = upstream(*kube_scheduler, document)
    ours = py_plugins(document)
    if isinstance(theirs, str):
        assert isinstance(ours, str), f"kube-scheduler refused ({theirs}), py-scheduler accepted"
        return
    assert not isinstance(ours, str), f"py-scheduler refused ({ours}), kube-scheduler accepted"
    assert ours == upstream_plugins(theirs)
