"""The example plugin as shipped (examples/node-label-score: Dockerfile, deploy/ overlay and Helm values) and
e2e-node's plugin run (e2e/node/plugin_image.py): the pure parts. The image is built and deployed on the
real node by `make e2e-node`; the overlay's rendering is checked with kubectl in
tests/integration/test_plugin_deploy.py."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.node import plugin_image
from scheduler.config.load import load
from scheduler.whatif.simulate import build_scheduler, run_simulation
from tests.test_example_plugin import EXAMPLE, MODULE, install_example

ROOT = EXAMPLE.parents[1]
DEPLOY = EXAMPLE / "deploy"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    target = install_example(tmp_path_factory)
    sys.path.insert(0, str(target))
    try:
        yield target
    finally:
        sys.path.remove(str(target))
        sys.modules.pop(MODULE, None)


def stages(dockerfile: str) -> list[list[str]]:
    """The Dockerfile's instructions per stage (continuation lines joined, comments dropped)."""
    text = "\n".join(line for line in dockerfile.splitlines() if not line.lstrip().startswith("#"))
    out: list[list[str]] = [[]]
    for instruction in text.replace("\\\n", " ").splitlines():
        if instruction.startswith("FROM "):
            out.append([])
        if instruction.strip():
            out[-1].append(" ".join(instruction.split()))
    return out


def test_the_image_is_the_projects_image_plus_only_the_files_the_plugin_added() -> None:
    _, scheduler, build, final = stages((EXAMPLE / "Dockerfile").read_text())
    assert scheduler == ["FROM ${SCHEDULER_IMAGE} AS scheduler"]
    assert final[0] == "FROM ${SCHEDULER_IMAGE}" and final[-1] == "COPY --from=build /added/ /"
    assert not any(i.startswith(("RUN", "USER", "ENTRYPOINT", "CMD", "ENV")) for i in final)  # the base's, unchanged
    run = next(i for i in build if i.startswith("RUN "))
    assert "pip --python /opt/py-scheduler/bin/python install /src/plugin" in run
    assert "compileall" in run and 'import node_label_score' in run
    ignored = (EXAMPLE / ".dockerignore").read_text().split()
    assert {"deploy", "tests", "build", "*.egg-info"} <= set(ignored)


def test_the_deployed_configuration_is_the_base_one_with_the_plugins_profile(installed: Path) -> None:
    base = yaml.safe_load((ROOT / "manifests" / "scheduler-config.yaml").read_text())
    ours = yaml.safe_load((DEPLOY / "scheduler-config.yaml").read_text())
    shipped = yaml.safe_load((EXAMPLE / "config.yaml").read_text())
    assert {k: v for k, v in ours.items() if k not in ("profiles", "pyScheduler")} == \
           {k: v for k, v in base.items() if k != "profiles"}  # fmt: skip
    assert ours["profiles"] == shipped["profiles"] and ours["pyScheduler"] == shipped["pyScheduler"]
    assert load(str(DEPLOY / "scheduler-config.yaml"), None).leader_election.leader_elect
    off = build_scheduler(str(DEPLOY / "scheduler-config.yaml"), [plugin_image.probe_pod("p")])
    assert off.sched.frameworks["py-scheduler"].score_plugin_weight["NodeLabelScore"] == 5


def test_the_helm_values_carry_the_same_configuration_image_and_module() -> None:
    values = yaml.safe_load((DEPLOY / "values.yaml").read_text())
    ours = yaml.safe_load((DEPLOY / "scheduler-config.yaml").read_text())
    assert values["config"] == {k: v for k, v in ours.items() if k != "leaderElection"}
    assert values["pluginModules"] == [MODULE]
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    (image,) = kustomization["images"]
    assert (values["image"]["repository"], values["image"]["tag"]) == (image["newName"], image["newTag"])
    assert f"--plugin-module={MODULE}" in kustomization["patches"][0]["patch"]


def place(cluster: list[dict[str, Any]], pods: list[dict[str, Any]], config: str | None, tmp: Path) -> list[Any]:
    (tmp / "cluster.yaml").write_text(yaml.safe_dump_all(cluster))
    (tmp / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    sim = run_simulation(str(tmp / "cluster.yaml"), str(tmp / "pods.yaml"), config)
    assert not sim.invalid
    return [r["node"] for r in sim.results]


@pytest.mark.usefixtures("installed")
def test_e2e_node_probes_go_to_the_big_node_by_default_and_to_the_labelled_one_with_the_plugin(tmp_path: Path) -> None:
    """e2e-node's margins (plugin_image.py), from the same nodes and pods: the two outcomes it asserts differ."""
    probes = [plugin_image.probe_pod(f"p{i}") for i in range(plugin_image.PROBES)]
    nodes = plugin_image.nodes()
    assert place(nodes, probes[:1], None, tmp_path) == [plugin_image.BIG]
    with_plugin = place(nodes, [*probes, plugin_image.probe_pod("after")], str(DEPLOY / "scheduler-config.yaml"),
                        tmp_path)  # fmt: skip
    assert with_plugin == [plugin_image.SMALL] * (plugin_image.PROBES + 1)


def test_the_refused_module_is_refused_by_the_allow_list_not_for_being_missing() -> None:
    from scheduler.config.registry import PluginModules

    modules = PluginModules()
    modules.allow_only([MODULE])
    refusal = modules.refusal(plugin_image.REFUSED_MODULE)
    assert refusal is not None and f"module {plugin_image.REFUSED_MODULE!r} is not an allowed plugin module" in refusal
