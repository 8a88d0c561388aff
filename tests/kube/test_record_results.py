"""`run --record-results`: the merge patch kube/results.py sends for one attempt."""

from __future__ import annotations

import json

from scheduler.framework.results import PREFIX, RESULT_HISTORY, SELECTED_NODE, AttemptResult
from scheduler.kube.results import annotation_patch
from scheduler.model.pod import pod_from_api
from scheduler.testing import make_pod


def test_patch_carries_the_uid_the_results_and_the_history() -> None:
    result = AttemptResult(selected_node="n1", bind={"DefaultBinder": "success"})
    patch = annotation_patch(make_pod().namespace("ns").uid("u1").obj(), result)
    assert patch is not None
    meta = patch["metadata"]
    assert meta["uid"] == "u1"
    assert meta["annotations"][SELECTED_NODE] == "n1"
    assert meta["annotations"][PREFIX + "bind-result"] == '{"DefaultBinder":"success"}'
    history = json.loads(meta["annotations"][RESULT_HISTORY])
    assert history == [{k: v for k, v in meta["annotations"].items() if k != RESULT_HISTORY}]


def test_no_patch_when_the_pod_already_shows_these_results() -> None:
    result = AttemptResult(filter={"n1": {"NodeResourcesFit": "Insufficient cpu"}})
    first = annotation_patch(make_pod().namespace("ns").uid("u1").obj(), result)
    assert first is not None
    again = make_pod().namespace("ns").uid("u1").annotations(first["metadata"]["annotations"]).obj()
    assert annotation_patch(again, result) is None
    changed = AttemptResult(filter={"n1": {"NodeResourcesFit": "Insufficient memory"}})
    second = annotation_patch(again, changed)
    assert second is not None
    assert len(json.loads(second["metadata"]["annotations"][RESULT_HISTORY])) == 2


def test_results_too_large_for_annotations_are_not_sent() -> None:
    nodes = {f"node-{i:05d}": {"NodeResourcesFit": "Insufficient cpu", "TaintToleration": "passed"}
             for i in range(5000)}
    assert annotation_patch(make_pod().namespace("ns").uid("u1").obj(), AttemptResult(filter=nodes)) is None


class Patches:
    """Stands in for ApiWriter.patch_pod: records the patches."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, dict[str, object]]] = []

    def patch_pod(self, namespace: str, name: str, patch: dict[str, object]) -> None:
        self.sent.append((namespace, name, patch))


def test_the_writer_sends_one_patch_when_an_attempt_ends_and_none_before() -> None:
    from scheduler.framework.interface import NodeToStatus
    from scheduler.kube.results import ResultWriter

    api = Patches()
    writer = ResultWriter(api)
    pod = make_pod().namespace("ns").uid("u1").obj()
    writer.recorder.begin(pod)
    writer.recorder.selected_node(pod, "n1")
    writer.scheduled(pod, "n1", NodeToStatus())
    writer.close()
    assert api.sent == [], "the binding cycle is still to come"
    writer = ResultWriter(api)
    writer.recorder.begin(pod)
    writer.recorder.selected_node(pod, "n1")
    writer.bound(pod, "n1")
    writer.failed(pod, "gone", None)  # nothing left to write for this attempt
    writer.close()
    assert [(ns, name) for ns, name, _ in api.sent] == [("ns", "p")]


def test_pending_writes_are_bounded_and_the_excess_dropped() -> None:
    """An API server slower than the attempts: at most max_pending writes wait; the rest are counted."""
    import threading

    from scheduler.kube.results import ResultWriter

    release = threading.Event()

    class Stuck(Patches):
        def patch_pod(self, namespace: str, name: str, patch: dict[str, object]) -> None:
            release.wait(30)
            super().patch_pod(namespace, name, patch)

    api = Stuck()
    writer = ResultWriter(api, max_pending=3)
    for i in range(10):
        pod = pod_from_api({"metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}"},
                            "spec": {"containers": [{"name": "c"}]}})
        writer.recorder.begin(pod)
        writer.recorder.selected_node(pod, "n1")
        writer.bound(pod, "n1")
    assert writer.dropped == 7
    release.set()
    writer.close()
    assert len(api.sent) == 3


def test_a_bound_pod_with_claims_gets_its_devices_read_from_the_api_server() -> None:
    """py-scheduler/allocated-devices: per pod claim and request the allocated driver/pool/device, read with
    a GET (the watch may lag PreBind's write); a missing claim contributes nothing; outside the history."""
    from scheduler.kube.results import ALLOCATED_DEVICES, ResultWriter
    from scheduler.model.apierrors import NotFoundError

    claims = {("ns", "p-gpu-abcde"): {"status": {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-3"}]}}}}}

    class Api(Patches):
        def get_object(self, kind: str, namespace: str, name: str) -> dict[str, object]:
            assert kind == "ResourceClaim"
            if (namespace, name) not in claims:
                raise NotFoundError("gone")
            return claims[(namespace, name)]

    api = Api()
    writer = ResultWriter(api)  # type: ignore[arg-type]
    pod = pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
                        "spec": {"containers": [{"name": "c"}],
                                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"},
                                                    {"name": "nic", "resourceClaimName": "missing"}]},
                        "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]}})
    writer.recorder.begin(pod)
    writer.recorder.selected_node(pod, "n1")
    writer.bound(pod, "n1")
    writer.close()
    [(_, _, patch)] = api.sent
    annotations = patch["metadata"]["annotations"]  # type: ignore[index]
    assert json.loads(annotations[ALLOCATED_DEVICES]) == [
        {"claim": "gpu", "resourceClaim": "p-gpu-abcde", "request": "gpu", "driver": "gpu.example.com",
         "pool": "n1", "device": "gpu-3"}]
    assert ALLOCATED_DEVICES not in json.loads(annotations[RESULT_HISTORY])[0]
