"""`run --record-results`: the merge patch kube/results.py sends for one attempt."""

from __future__ import annotations

import json

from scheduler.framework.results import PREFIX, RESULT_HISTORY, SELECTED_NODE, AttemptResult
from scheduler.kube.results import annotation_patch
from scheduler.model.pod import Pod, pod_from_api


def make_pod(annotations: dict[str, str] | None = None) -> Pod:
    return pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "annotations": annotations or {}},
                         "spec": {"containers": [{"name": "c"}]}})


def test_patch_carries_the_uid_the_results_and_the_history() -> None:
    result = AttemptResult(selected_node="n1", bind={"DefaultBinder": "success"})
    patch = annotation_patch(make_pod(), result)
    assert patch is not None
    meta = patch["metadata"]
    assert meta["uid"] == "u1"
    assert meta["annotations"][SELECTED_NODE] == "n1"
    assert meta["annotations"][PREFIX + "bind-result"] == '{"DefaultBinder":"success"}'
    history = json.loads(meta["annotations"][RESULT_HISTORY])
    assert history == [{k: v for k, v in meta["annotations"].items() if k != RESULT_HISTORY}]


def test_no_patch_when_the_pod_already_shows_these_results() -> None:
    result = AttemptResult(filter={"n1": {"NodeResourcesFit": "Insufficient cpu"}})
    first = annotation_patch(make_pod(), result)
    assert first is not None
    again = make_pod(first["metadata"]["annotations"])
    assert annotation_patch(again, result) is None
    changed = AttemptResult(filter={"n1": {"NodeResourcesFit": "Insufficient memory"}})
    second = annotation_patch(again, changed)
    assert second is not None
    assert len(json.loads(second["metadata"]["annotations"][RESULT_HISTORY])) == 2


def test_results_too_large_for_annotations_are_not_sent() -> None:
    nodes = {f"node-{i:05d}": {"NodeResourcesFit": "Insufficient cpu", "TaintToleration": "passed"}
             for i in range(5000)}
    assert annotation_patch(make_pod(), AttemptResult(filter=nodes)) is None
