"""`explain` and `capacity` on hand-made clusters (the live snapshot is a list of the same objects), their
tables, and the CLI's one-line errors for bad input."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from structlog.testing import capture_logs

from scheduler.app.cli import dispatch, parser
from scheduler.testing import make_pod
from scheduler.whatif.capacity import capacity, format_capacity
from scheduler.whatif.explain import explain, format_explain
from scheduler.whatif.simulate import SimulationError
from tests.framework.test_results import EXISTING, NODES

CLUSTER = [*NODES, EXISTING]
DEFAULT = "default-scheduler"


def test_unschedulable_pod_gets_the_failed_scheduling_message_and_grouped_reasons() -> None:
    r = explain(make_pod().name("big").scheduler_name(DEFAULT).req(cpu="7", memory="1Gi").api(), CLUSTER, None)
    assert r["node"] is None
    assert r["message"].startswith("0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.")
    assert r["filtered"]["n1"] == {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu"}
    table = format_explain(r)
    assert f"Unschedulable: {r['message']}\n" in table
    assert "  NodeResourcesFit: Insufficient cpu (2): n1, n3\n" in table
    assert "\x1b[" not in table


def test_bound_pod_is_explained_without_itself_on_its_node() -> None:
    # "existing" (3 cpu) is on n1: with it removed n1 has 4 cpu free again; n3 (2 cpu) cannot hold it.
    r = explain(EXISTING, CLUSTER, None)
    assert (r["boundTo"], r["node"], r["profile"]) == ("n1", "n1", DEFAULT)
    assert r["filtered"]["n3"]["reason"] == "Insufficient cpu"
    assert r["sampling"] == {"numAllNodes": 3, "numFeasibleNodesToFind": 3, "startIndex": 0,
                             "evaluated": ["n1", "n2", "n3"], "notEvaluated": []}
    assert "Bound to n1; explained as if it were pending now" in format_explain(r)


def test_scores_are_sorted_by_total_limited_and_coloured_only_when_asked() -> None:
    r = explain(make_pod().name("a").scheduler_name(DEFAULT).req(cpu="1", memory="1Gi").api(), CLUSTER, None)
    assert r["node"] == "n3"
    totals = {n: s["total"] for n, s in r["scores"].items()}
    assert totals["n3"] > totals["n1"]
    for node, plugins in r["score_details"].items():
        assert sum(d["weighted"] for d in plugins.values()) == totals[node]
        assert plugins["TaintToleration"] == {"raw": 0, "normalized": 100, "weighted": 300}
    rows = format_explain(r).split("best first, 2 of 2:\n")[1].splitlines()
    assert rows[1].split()[:2] == ["n3", str(totals["n3"])] and rows[2].split()[0] == "n1"
    assert "1 of 2:" in format_explain(r, rows=1) and "\n  n1 " not in format_explain(r, rows=1)
    coloured = format_explain(r, color=True)
    assert "\x1b[32mn3\x1b[0m" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == format_explain(r)


def test_capacity_places_copies_until_the_first_failure() -> None:
    r = capacity(make_pod().name("web").scheduler_name(DEFAULT).req(cpu="1", memory="1Gi").api(), CLUSTER, None)
    # n1: 4 - 3 = 1 cpu free, n3: 2; n2 is tainted.
    assert r == {"count": 3, "nodes": {"n1": 1, "n3": 2},
                 "message": "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."}
    assert format_capacity(r) == ("3 pod(s) fit.\n  n3  2\n  n1  1\nStopped: 0/3 nodes are available: "
                                  "1 node(s) had untolerated taint(s), 2 Insufficient cpu.\n")
    seen: list[int] = []
    limited = capacity(make_pod().name("web").scheduler_name(DEFAULT).req(cpu="1", memory="1Gi").api(), CLUSTER, None,
                       max_count=2, progress=seen.append)
    assert (limited["count"], limited["message"], seen) == (2, "limit reached: --max 2", [1, 2])
    with pytest.raises(SimulationError, match="expected a Pod, got Node"):
        capacity(NODES[0], CLUSTER, None)


def write(tmp_path: Path, name: str, objects: list[dict[str, Any]] | str) -> str:
    path = tmp_path / name
    path.write_text(objects if isinstance(objects, str) else yaml.safe_dump_all(objects))
    return str(path)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    # dispatch, not main: main sets up logging for the whole process, which later tests capture themselves.
    with capture_logs():
        code = dispatch(parser().parse_args(list(argv)))
    out, err = capsys.readouterr()
    return code, out, err


def test_capacity_cli_json_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write(tmp_path, "cluster.yaml", CLUSTER)
    good = write(tmp_path, "pod.yaml",
                 [make_pod().name("web").scheduler_name(DEFAULT).req(cpu="1", memory="1Gi").api()])
    code, out, _ = run_cli(capsys, "capacity", "--pod", good, "--cluster", cluster, "--output", "json")
    assert code == 0 and yaml.safe_load(out)["count"] == 3
    bad = write(tmp_path, "bad.yaml", "kind: Pod\nmetadata: {name: [unclosed\n")
    code, out, err = run_cli(capsys, "capacity", "--pod", bad, "--cluster", cluster)
    assert code == 2 and out == "" and err.startswith(f"py-scheduler capacity: {bad}: invalid YAML")
    two = write(tmp_path, "two.yaml",
                [make_pod().name("a").scheduler_name("py-scheduler").req(cpu="1", memory="1Gi").api(),
                 make_pod().name("b").scheduler_name("py-scheduler").req(cpu="1", memory="1Gi").api()])
    code, _, err = run_cli(capsys, "capacity", "--pod", two, "--cluster", cluster)
    assert (code, err) == (2, f"py-scheduler capacity: {two}: expected exactly one Pod, found 2 objects\n")
    code, _, err = run_cli(capsys, "capacity", "--pod", good)
    assert (code, err) == (2, "py-scheduler capacity: give --cluster FILE, --from-cluster, or both\n")


def test_capacity_resolves_the_pods_priority_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """capacity's --cluster may hold PriorityClasses; a pod naming a missing one is refused as admission does."""
    # as written by a user, without spec.priority: admission fills it in
    web = make_pod().name("web").scheduler_name(DEFAULT).req(cpu="1", memory="1Gi").priority_class_name("gold").api()
    path = write(tmp_path, "pod.yaml", [web])
    code, _, err = run_cli(capsys, "capacity", "--pod", path, "--cluster", write(tmp_path, "c.yaml", CLUSTER))
    assert (code, err) == (2, f'py-scheduler capacity: {path}: pods "web" is forbidden: '
                              "no PriorityClass with name gold was found\n")
    gold = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gold"}, "value": 100}
    cluster = write(tmp_path, "c2.yaml", [*CLUSTER, gold])
    code, out, _ = run_cli(capsys, "capacity", "--pod", path, "--cluster", cluster, "--output", "json")
    assert code == 0 and yaml.safe_load(out)["count"] == 3


def test_unreachable_cluster_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = write(tmp_path, "kubeconfig", [{
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }])
    code, out, err = run_cli(capsys, "explain", "web", "--kubeconfig", kubeconfig)
    assert code == 1 and out == ""
    assert err.startswith("py-scheduler explain: cannot reach the API server at http://127.0.0.1:1")
    assert err.count("\n") == 1
    code, _, err = run_cli(capsys, "explain", "web", "--kubeconfig", str(tmp_path / "missing"))
    assert code == 1 and err.startswith("py-scheduler explain: cannot load the kubeconfig") and err.count("\n") == 1


def test_a_config_without_the_pods_profile_is_one_clear_error(tmp_path: Path) -> None:
    config = write(tmp_path, "config.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\n"
                   "kind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: other}]\n")
    with pytest.raises(SimulationError, match="no profile for the pod's schedulerName 'py-scheduler'"):
        explain(make_pod().name("a").scheduler_name("py-scheduler").req(cpu="1", memory="1Gi").api(), CLUSTER, config)


def test_invalid_yaml_is_reported_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "bad.yaml", "kind: Pod: [\n")
    code, _, err = run_cli(capsys, "capacity", "--pod", bad, "--cluster", bad)
    assert code == 2
    assert err == (f"py-scheduler capacity: {bad}: invalid YAML: mapping values are not allowed here "
                   "(line 1, column 10)\n")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal_and_after_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    from scheduler.app.cli import _Progress

    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdout", _Tty())
    bar = _Progress(10)
    bar(1)
    assert err.getvalue() == "", "nothing during the first second"
    bar.start -= 1.5
    bar(5)
    assert err.getvalue() == "\r[###############...............] 5/10 placed"
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # piped output: no bar at all
    piped = _Progress(10)
    piped.start -= 1.5
    piped(5)
    assert err.getvalue().count("placed") == 1


def test_a_pending_pods_nomination_holds_its_room() -> None:
    nominated = make_pod().name("preemptor").scheduler_name(DEFAULT).priority(100).req(cpu="2", memory="1Gi").api()
    nominated["status"] = {"nominatedNodeName": "n3"}
    r = explain(make_pod().name("a").scheduler_name(DEFAULT).req(cpu="1", memory="1Gi").api(), [*CLUSTER, nominated],
                None)
    assert r["node"] == "n1"
    assert r["filtered"]["n3"] == {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu"}
    other = make_pod().name("other").scheduler_name("someone-else").priority(100).req(cpu="2", memory="1Gi").api()
    other["status"] = {"nominatedNodeName": "n3"}
    assert explain(make_pod().name("a").scheduler_name(DEFAULT).req(cpu="1", memory="1Gi").api(), [*CLUSTER, other],
                   None)["node"] == "n3", \
        "another scheduler's nominations are not this scheduler's"


def test_long_node_lists_are_cut_in_the_table_only() -> None:
    many = [{**NODES[2], "metadata": {"name": f"m{i:02d}", "uid": f"m{i}"}} for i in range(12)]
    r = explain(make_pod().name("big").scheduler_name(DEFAULT).req(cpu="7", memory="1Gi").api(), many, None)
    assert len(r["filtered"]) == 12
    assert "Insufficient cpu (12): m00, m01, m02, m03, m04, m05, m06, m07, m08, m09 and 2 more\n" in format_explain(r)


def test_capacity_rejects_an_invalid_pod_and_leaves_out_invalid_cluster_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As simulate: what the API server would reject is named by its field path, never silently counted."""
    bad_pod = make_pod().name("web").scheduler_name(DEFAULT).req(cpu="1", memory="1Gi").api()
    bad_pod["spec"]["tolerations"] = [{"key": "k", "operator": "Sometimes"}]
    path = write(tmp_path, "pod.yaml", [bad_pod])
    code, out, err = run_cli(capsys, "capacity", "--pod", path, "--cluster", write(tmp_path, "c.yaml", CLUSTER))
    assert (code, out) == (2, "")
    assert "default/web: spec.tolerations[0].operator: unsupported value 'Sometimes'" in err
    bad_node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n9"},
                "status": {"allocatable": {"cpu": "-8", "memory": "8Gi", "pods": "110"}}}
    good = write(tmp_path, "good.yaml",
                 [make_pod().name("web").scheduler_name(DEFAULT).req(cpu="1", memory="1Gi").api()])
    code, out, err = run_cli(capsys, "capacity", "--pod", good, "--cluster",
                             write(tmp_path, "c2.yaml", [*CLUSTER, bad_node]), "--output", "json")
    assert code == 0 and yaml.safe_load(out)["count"] == 3  # n9 left out
    assert "invalid Node n9: status.allocatable.cpu: must be >= 0 (left out)" in err
