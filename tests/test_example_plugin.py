"""The out-of-tree example plugin (examples/node-label-score): installed as a package, enabled by configuration,
it changes where `simulate` places pods as its docs say, and keeps opportunistic batching on.

The package is installed with the venv's own pip and setuptools into a temporary directory
(``--no-build-isolation --no-deps``: nothing is downloaded), then put on sys.path as site-packages would
be, so the test sees what a user's ``pip install`` gives: the module and its entry point."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.whatif.simulate import build_scheduler, run_simulation
from tests.builders import sched_node, sched_pod

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "node-label-score"
MODULE = "node_label_score"
ENTRY_POINT_GROUP = "py_scheduler.plugins"
LABEL = "example.com/generation"


def install_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example installed into a fresh directory (site-packages for it alone); returns that directory."""
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    # A copy keeps the checkout clean: setuptools writes build/ and *.egg-info next to the sources.
    shutil.copytree(EXAMPLE, build / EXAMPLE.name)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index",
         "--target", str(target), str(build / EXAMPLE.name)],
        check=True, capture_output=True, text=True,
    )
    return target


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The example installed into a fresh directory that is on sys.path for this module's tests."""
    target = install_example(tmp_path_factory)
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    try:
        yield target
    finally:
        sys.path.remove(str(target))
        sys.modules.pop(MODULE, None)


# Node "a" would win every tie by name; the label says "c" (generation 7) is the best, "b" (2) the worst
# labelled one, and unlabelled "a" and "d" come last.
CLUSTER = [sched_node(n, "8", "32Gi").labels({LABEL: value} if value else {}).api()
           for n, value in (("a", ""), ("b", "2"), ("c", "7"), ("d", ""), ("e", "not-a-number"))]


def config(plugin_name: str, args: dict[str, Any], *, register: bool) -> dict[str, Any]:
    """A profile enabling the plugin in multiPoint with weight 5; ``register`` names it through
    ``pyScheduler.registry`` rather than by its import path."""
    cfg: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "py-scheduler",
                      "plugins": {"multiPoint": {"enabled": [{"name": plugin_name, "weight": 5}]}},
                      "pluginConfig": [{"name": plugin_name, "args": args}]}],
    }
    if register:
        cfg["pyScheduler"] = {"registry": {plugin_name: f"{MODULE}:NodeLabelScore"}}
    return cfg


def simulate(tmp_path: Path, pods: list[dict[str, Any]], cfg: dict[str, Any] | None) -> list[str | None]:
    """The node each pod lands on, placing them in order with ties broken by node name."""
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(CLUSTER))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    config_path = None
    if cfg is not None:
        config_path = str(tmp_path / "config.yaml")
        Path(config_path).write_text(yaml.safe_dump(cfg))
    sim = run_simulation(str(tmp_path / "cluster.yaml"), str(tmp_path / "pods.yaml"), config_path, tie_break="name")
    assert not sim.invalid
    return [r["node"] for r in sim.results]


def test_without_the_plugin_ties_go_to_the_first_node_by_name(tmp_path: Path) -> None:
    assert simulate(tmp_path, [sched_pod("p0", cpu="100m", memory="64Mi").label("app", "web").api()], None) == ["a"]


@pytest.mark.usefixtures("installed")
def test_the_plugin_moves_pods_to_the_highest_label_value(tmp_path: Path) -> None:
    """With the example's own config.yaml."""
    shipped = yaml.safe_load((EXAMPLE / "config.yaml").read_text())
    pods = [sched_pod(f"p{i}", cpu="100m", memory="64Mi").label("app", "web").api() for i in range(3)]
    placed = simulate(tmp_path, pods, shipped)
    # Three small pods on 8-cpu nodes: the label's weight (5 x 100 against 1) outweighs LeastAllocated.
    assert placed == ["c", "c", "c"]


@pytest.mark.usefixtures("installed")
def test_a_score_plugin_named_by_its_import_path(tmp_path: Path) -> None:
    """Named by import path, the plugin keeps its own name (NodeLabelScore) for weights, batching and
    metrics: it scores with its weight and still signs pods."""
    cfg = config(f"{MODULE}:NodeLabelScore", {"label": LABEL}, register=False)
    assert simulate(tmp_path, [sched_pod("p0", cpu="100m", memory="64Mi").label("app", "web").api()], cfg) == ["c"]
    path = tmp_path / "config.yaml"
    off = build_scheduler(str(path), [sched_pod("p0", cpu="100m", memory="64Mi").label("app", "web").api()])
    fwk = off.sched.frameworks["py-scheduler"]
    assert fwk.score_plugin_weight["NodeLabelScore"] == 5
    assert fwk.sign_pod(sched_pod("p0", cpu="100m", memory="64Mi").label("app", "web").obj()) is not None


@pytest.mark.usefixtures("installed")
def test_two_score_plugins_with_one_name_are_refused(tmp_path: Path) -> None:
    """Registered under two names, one plugin class would score twice under one weight: refused."""
    cfg = config("NodeLabelScore", {"label": LABEL}, register=True)
    cfg["pyScheduler"]["registry"]["Again"] = f"{MODULE}:NodeLabelScore"
    cfg["profiles"][0]["plugins"]["multiPoint"]["enabled"].append({"name": "Again", "weight": 1})
    cfg["profiles"][0]["pluginConfig"].append({"name": "Again", "args": {"label": LABEL}})
    with pytest.raises(ValueError, match="'Again' is named 'NodeLabelScore', like another Score plugin"):
        simulate(tmp_path, [sched_pod("p0", cpu="100m", memory="64Mi").label("app", "web").api()], cfg)


@pytest.mark.usefixtures("installed")
def test_prefer_lower_moves_pods_to_the_lowest_label_value(tmp_path: Path) -> None:
    cfg = config("NodeLabelScore", {"label": LABEL, "preferLower": True}, register=True)
    assert simulate(tmp_path, [sched_pod("p0", cpu="100m", memory="64Mi").label("app", "web").api()], cfg) == ["b"]


@pytest.mark.usefixtures("installed")
def test_invalid_args_are_refused_naming_the_field(tmp_path: Path) -> None:
    cfg = config("NodeLabelScore", {"preferLower": True}, register=True)
    with pytest.raises(ValueError, match=r"args\.label: required"):
        simulate(tmp_path, [sched_pod("p0", cpu="100m", memory="64Mi").label("app", "web").api()], cfg)


@pytest.mark.usefixtures("installed")
def test_the_plugin_signs_pods_so_the_profile_keeps_batching(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config("NodeLabelScore", {"label": LABEL}, register=True)))
    off = build_scheduler(str(path), [sched_pod("p0", cpu="100m", memory="64Mi").label("app", "web").api()])
    fwk = off.sched.frameworks["py-scheduler"]
    assert fwk.sign_pod(sched_pod("p0", cpu="100m", memory="64Mi").label("app", "web").obj()) is not None


@pytest.mark.usefixtures("installed")
def test_batching_changes_no_decision(tmp_path: Path) -> None:
    """sign_pod is right when batching decides as the plain cycle does: many alike pods fill the
    labelled nodes one after another, so the ranking changes as nodes fill."""
    pods = [sched_pod(f"p{i}", cpu="100m", memory="64Mi").label("app", "web").api() for i in range(40)]
    for p in pods:
        p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    placements = []
    for batching in (True, False):
        cfg = config("NodeLabelScore", {"label": LABEL}, register=True)
        cfg["pyScheduler"]["opportunisticBatching"] = batching
        placements.append(simulate(tmp_path, pods, cfg))
    assert placements[0] == placements[1]
    # The 8-cpu nodes fill in label order: c (7), then b (2), then the rest.
    assert placements[0][:16] == ["c"] * 8 + ["b"] * 8


def test_the_entry_point_names_the_plugin_class(installed: Path) -> None:
    """The ``py_scheduler.plugins`` entry point resolves to the class the import path names."""
    dists = list(metadata.distributions(path=[str(installed)]))
    points = [ep for d in dists for ep in d.entry_points if ep.group == ENTRY_POINT_GROUP]
    assert [(ep.name, ep.value) for ep in points] == [("NodeLabelScore", f"{MODULE}:NodeLabelScore")]
    assert points[0].load() is importlib.import_module(MODULE).NodeLabelScore
