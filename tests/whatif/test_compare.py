"""`py-scheduler simulate --compare RUNNING --config CANDIDATE`: the same pods placed under two
configurations on one cluster, side by side, and `--plugin-module` loading plugins as `run` would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from scheduler.app.cli import main
from scheduler.config.load import load
from scheduler.config.registry import PLUGIN_MODULES
from scheduler.whatif.simulate import format_comparison, run_comparison, run_simulation

# A small and a big node with memory in proportion to cpu, so that BalancedAllocation scores both alike and
# NodeResourcesFit alone decides: LeastAllocated (the default) prefers big, MostAllocated prefers small.
CLUSTER = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: small}, status: {allocatable: {cpu: "4", memory: 4Gi, pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: big}, status: {allocatable: {cpu: "16", memory: 16Gi, pods: "110"}}}
"""


def pod(name: str, cpu: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\n"
            f"spec: {{schedulerName: py-scheduler, containers: [{{name: c, image: nginx, "
            f"resources: {{requests: {{cpu: '{cpu}', memory: {cpu}Gi}}}}}}]}}\n")


PODS = "---\n".join([pod("web-0", "1"), pod("web-1", "1"), pod("huge", "20")])
def config(**profile: object) -> str:
    """A KubeSchedulerConfiguration with one py-scheduler profile (its other fields from ``profile``)."""
    return yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           "profiles": [{"schedulerName": "py-scheduler", **profile}]})


CANDIDATE = config(pluginConfig=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}])
RUNNING = config()
# A candidate with an out-of-tree plugin named by import path (the test suite's sample plugins).
WITH_PLUGIN = config(plugins={"filter": {"enabled": [{"name": "tests.config.sample_plugins:SampleFilter"}]}})
HUGE = "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory."


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {}
    for name, text in (("cluster", CLUSTER), ("pods", PODS), ("candidate", CANDIDATE), ("running", RUNNING),
                       ("plugin", WITH_PLUGIN)):
        (tmp_path / f"{name}.yaml").write_text(text)
        paths[name] = str(tmp_path / f"{name}.yaml")
    return paths


def test_each_side_is_the_simulation_of_its_configuration(files: dict[str, str]) -> None:
    cmp = run_comparison(files["cluster"], files["pods"], files["running"], files["candidate"])
    for side, config in (("running", files["running"]), ("candidate", files["candidate"])):
        alone = run_simulation(files["cluster"], files["pods"], config)
        assert [r[side]["node"] for r in cmp.results] == [r["node"] for r in alone.results]
    assert [(r["pod"], r["running"]["node"], r["candidate"]["node"], r["differs"]) for r in cmp.results] == [
        ("default/web-0", "big", "small", True),
        ("default/web-1", "big", "small", True),
        ("default/huge", None, None, False),
    ]
    assert cmp.results[2]["running"]["message"].startswith(HUGE)
    assert cmp.differing == 2 and not cmp.invalid


def test_without_a_running_file_the_default_profile_is_compared(files: dict[str, str]) -> None:
    """The same configuration on both sides places every pod alike."""
    same = run_comparison(files["cluster"], files["pods"], None, files["running"])
    assert same.differing == 0 and same.running == "(default profile)"
    assert [r["running"] for r in same.results] == [r["candidate"] for r in same.results]


def test_the_table_marks_the_pods_placed_differently_and_says_why_one_is_not_placed(files: dict[str, str]) -> None:
    table = format_comparison(run_comparison(files["cluster"], files["pods"], files["running"], files["candidate"]))
    lines = table.splitlines()
    assert lines[0].split() == ["POD", "RUNNING", "CANDIDATE"]
    assert lines[1].split() == ["default/web-0", "big", "small", "*"]
    assert lines[3].split() == ["default/huge", "(unschedulable)", "(unschedulable)"]
    assert lines[4].startswith(f"    running: {HUGE}") and lines[5].startswith(f"    candidate: {HUGE}")
    assert lines[-1].startswith("2 of 3 pod(s) placed differently")


def test_cli_json_gives_both_nodes_and_whether_they_differ(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["simulate", "--cluster", files["cluster"], "--pods", files["pods"], "--config", files["candidate"],
                 "--compare", files["running"], "--output", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["running"] == files["running"] and out["candidate"] == files["candidate"]
    assert out["differing"] == 2 and out["invalid"] == []
    assert out["results"][0] == {
        "pod": "default/web-0", "differs": True,
        "running": {"node": "big", "message": "", "victims": []},
        "candidate": {"node": "small", "message": "", "victims": []},
    }


def test_an_invalid_pod_is_reported_once_and_placed_by_neither(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.yaml").write_text(PODS + "---\n" + pod("bad", "-1"))
    code = main(["simulate", "--cluster", files["cluster"], "--pods", str(tmp_path / "bad.yaml"),
                 "--config", files["candidate"], "--compare", files["running"], "--output", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert len(out["invalid"]) == 2 and all(e.startswith("default/bad: ") for e in out["invalid"])
    bad = out["results"][-1]
    assert bad["running"]["node"] is None and bad["candidate"]["node"] is None and not bad["differs"]


def test_plugin_module_refuses_a_candidate_run_would_refuse_and_restores_the_default(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """With --plugin-module, a module neither it nor an entry point allows is refused, as `run` refuses it,
    naming the file; the what-if commands' default (every module) is back afterwards."""
    args = ["simulate", "--cluster", files["cluster"], "--pods", files["pods"], "--config", files["plugin"],
            "--compare", files["running"]]
    assert main([*args, "--plugin-module", "some_other_plugin"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"py-scheduler simulate: {files['plugin']}: ") and err.count("\n") == 1
    assert "module 'tests.config.sample_plugins' is not an allowed plugin module" in err
    assert PLUGIN_MODULES.refusal("tests.config.sample_plugins") is None
    assert main([*args, "--plugin-module", "tests.config"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("0 of 3 pod(s) placed differently")
    assert load(files["plugin"], None).profiles[0].scheduler_name == "py-scheduler"
