"""The cycle observer's recorder: what each plugin said, in kube-scheduler-simulator's annotation shapes.

The cycles are real ones (the offline scheduler and real plugins on hand-made nodes), so the values
below follow from the plugins' formulas, as in tests/whatif/test_simulate.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scheduler.eventhandlers import ADDED
from scheduler.framework import results
from scheduler.framework.results import (
    MAX_ANNOTATION_BYTES,
    PREFIX,
    RESULT_HISTORY,
    SELECTED_NODE,
    ResultRecorder,
    status_text,
    with_history,
)
from scheduler.framework.status import Code, Status
from scheduler.model.pod import pod_from_api
from scheduler.testing import make_pod
from scheduler.whatif.simulate import add_cluster, attempt, build_scheduler
from tests.whatif.test_simulate import CONFIG

NODES = [
    {"kind": "Node", "metadata": {"name": n, "uid": n, "labels": {}}, "spec": spec,
     "status": {"allocatable": {"cpu": cpu, "memory": mem, "pods": "110"}}}
    for n, cpu, mem, spec in (
        ("n1", "4", "8Gi", {}),
        ("n2", "8", "16Gi", {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}),
        ("n3", "2", "4Gi", {}),
    )
]
EXISTING = {"kind": "Pod", "metadata": {"name": "existing", "namespace": "default", "uid": "e1"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]}}


def one_attempt(tmp_path: Path, target: dict[str, Any], cluster: list[dict[str, Any]],
                config: str | None = CONFIG) -> dict[str, str]:
    path = None
    if config is not None:
        (tmp_path / "config.yaml").write_text(config)
        path = str(tmp_path / "config.yaml")
    off = build_scheduler(path, [target])
    add_cluster(off.sched, cluster, "test")
    off.sched.on_pod_event(ADDED, target)
    assert attempt(off, f"default/{target['metadata']['name']}") is not None
    result = off.results.result(target["metadata"]["uid"])
    assert result is not None
    return result.annotations()


def test_a_bound_pod_gets_every_key_with_string_leaves(tmp_path: Path) -> None:
    ann = one_attempt(tmp_path, make_pod().name("a").scheduler_name("py-scheduler").req(cpu="1", memory="1Gi").api(),
                      [*NODES, EXISTING])
    get = {k.removeprefix(PREFIX): (v if k == SELECTED_NODE else json.loads(v)) for k, v in ann.items()}
    assert get["selected-node"] == "n3"
    # NodeResourcesFit has no NormalizeScore (raw = normalized); TaintToleration's raw count 0 normalizes to
    # 100 and has weight 3.
    assert get["score-result"] == {"n1": {"NodeResourcesFit": "42", "TaintToleration": "0"},
                                   "n3": {"NodeResourcesFit": "62", "TaintToleration": "0"}}
    assert get["finalscore-result"] == {"n1": {"NodeResourcesFit": "42", "TaintToleration": "300"},
                                        "n3": {"NodeResourcesFit": "62", "TaintToleration": "300"}}
    assert get["filter-result"]["n1"] == {"NodeResourcesFit": "passed", "TaintToleration": "passed"}
    assert get["filter-result"]["n2"]["TaintToleration"] == "node(s) had untolerated taint(s)"
    assert get["prefilter-result-status"]["NodeResourcesFit"] == "success"
    assert get["bind-result"] == {"DefaultBinder": "success"}
    assert get["postfilter-result"] == {} and get["permit-result"] == {}
    assert set(get) == {"prefilter-result-status", "prefilter-result", "filter-result", "postfilter-result",
                        "prescore-result", "score-result", "finalscore-result", "reserve-result", "permit-result",
                        "permit-result-timeout", "prebind-result", "bind-result", "selected-node"}


def test_preemption_dry_runs_do_not_overwrite_the_filter_verdicts(tmp_path: Path) -> None:
    low = {"kind": "Pod", "metadata": {"name": "low", "namespace": "default", "uid": "low"},
           "spec": {"nodeName": "n3", "priority": 0,
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}
    high = make_pod().name("high").scheduler_name("default-scheduler").priority(100).req(cpu="1", memory="1Gi").api()
    ann = one_attempt(tmp_path, high, [NODES[2], low], config=None)
    assert json.loads(ann[PREFIX + "filter-result"])["n3"]["NodeResourcesFit"] == "Insufficient cpu"
    assert json.loads(ann[PREFIX + "postfilter-result"]) == {"n3": {"DefaultPreemption": "preemption victim"}}
    assert ann[SELECTED_NODE] == ""


def test_status_text_follows_the_simulator() -> None:
    assert status_text(None) == "success"
    assert status_text(Status(Code.SKIP)) == ""
    assert status_text(Status(Code.WAIT, ["later"])) == "wait"
    assert status_text(Status(Code.UNSCHEDULABLE, ["no room"])) == "no room"


def test_history_appends_caps_and_stays_within_the_size_bound() -> None:
    entry = {SELECTED_NODE: "n1"}
    first = with_history(entry, None, 2)
    assert json.loads(first[RESULT_HISTORY]) == [entry]
    second = with_history({SELECTED_NODE: "n2"}, first[RESULT_HISTORY], 2)
    third = with_history({SELECTED_NODE: "n3"}, second[RESULT_HISTORY], 2)
    assert [h[SELECTED_NODE] for h in json.loads(third[RESULT_HISTORY])] == ["n2", "n3"]
    assert json.loads(with_history(entry, "not json", 5)[RESULT_HISTORY]) == [entry]
    big = {PREFIX + "filter-result": "x" * (MAX_ANNOTATION_BYTES // 2 + 1)}
    assert RESULT_HISTORY not in with_history(big, None, 5), "the history gives way to the current result"
    assert with_history(entry, None, 0) == entry


def test_the_oldest_attempts_give_way_and_taken_ones_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "MAX_OPEN_ATTEMPTS", 2)
    recorder = ResultRecorder()
    pods = [pod_from_api({"metadata": {"name": n, "namespace": "d", "uid": n}, "spec": {"containers": []}})
            for n in ("a", "b", "c")]
    for p in pods:
        recorder.begin(p)
    assert recorder.result("a") is None and recorder.result("c") is not None, "the oldest gives way"
    assert recorder.take("c") is not None and recorder.result("c") is None
