"""kube/snapshot.py's pagination and its one-line errors, with hand-made requesters (the real API server
is exercised in tests/integration/test_explain.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from kubernetes.client.exceptions import ApiException

from scheduler.kube.client import api_error
from scheduler.kube.snapshot import ClusterReadError, ClusterSnapshot, get_pod, list_objects, read_snapshot


class Pages:
    """Answers LISTs from a table path -> pages; records the paths asked for."""

    def __init__(self, answers: dict[str, list[dict[str, Any]]], fail: dict[str, Exception] | None = None) -> None:
        self.answers = answers
        self.fail = fail or {}
        self.asked: list[str] = []

    def request(self, method: str, path: str, body: Any = None, content_type: str = "",
                timeout: float | None = None, accept: str = "") -> bytes:
        self.asked.append(path)
        base = path.split("?")[0]
        if base in self.fail:
            raise self.fail[base]
        pages = self.answers.get(base, [{"items": []}])
        page = pages[1] if "continue=" in path else pages[0]
        return orjson.dumps(page)


def test_pages_are_followed_and_items_get_their_kind() -> None:
    raw = Pages({"/api/v1/nodes": [{"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "x"}},
                                   {"items": [{"metadata": {"name": "b"}}]}]})
    nodes = list(list_objects(raw, "Node", ("", "v1", "nodes")))
    assert [(n["kind"], n["apiVersion"], n["metadata"]["name"]) for n in nodes] == [("Node", "v1", "a"),
                                                                                    ("Node", "v1", "b")]
    assert raw.asked == ["/api/v1/nodes?limit=500", "/api/v1/nodes?limit=500&continue=x"]


def test_pods_are_listed_without_terminal_ones() -> None:
    raw = Pages({})
    read_snapshot(raw)
    (pods,) = [p for p in raw.asked if p.startswith("/api/v1/pods")]
    assert "fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed" in pods


@pytest.mark.parametrize(("exc", "message"), [
    (ApiException(status=403, reason="Forbidden"),
     "forbidden: this user may not list csinodes.storage.k8s.io (HTTP 403); bind the read-only role in "
     "manifests/readonly/"),
    (ApiException(status=500, reason="Internal Server Error"),
     "list csinodes.storage.k8s.io: HTTP 500 Internal Server Error"),
    (ConnectionRefusedError(111, "Connection refused"),
     "cannot reach the API server at the API server: [Errno 111] Connection refused"),
])  # fmt: skip
def test_list_errors_are_one_line_naming_the_permission(exc: Exception, message: str) -> None:
    raw = Pages({}, fail={"/apis/storage.k8s.io/v1/csinodes": exc})
    with pytest.raises(ClusterReadError) as err:
        read_snapshot(raw)
    assert str(err.value) == message


def test_unknown_pod_and_a_non_json_answer() -> None:
    raw = Pages({}, fail={"/api/v1/namespaces/ns/pods/web": api_error(404, "Not Found")})
    with pytest.raises(ClusterReadError, match=r'^pod "web" not found in namespace "ns"$'):
        get_pod(raw, "ns", "web")

    class Html(Pages):
        def request(self, method: str, path: str, body: Any = None, content_type: str = "",
                    timeout: float | None = None, accept: str = "") -> bytes:
            return b"<html>login</html>"

    with pytest.raises(ClusterReadError, match=r"^get pods: the server's answer is not JSON$"):
        get_pod(Html({}), "ns", "web")


DISCOVERY = "/apis/scheduling.k8s.io/v1beta1"
WORKLOAD_PODGROUPS = "/apis/scheduling.k8s.io/v1beta1/podgroups"


class Served(Pages):
    """Pages that also answers discovery of scheduling.k8s.io/v1beta1 with ``resources``."""

    def __init__(self, resources: list[str], answers: dict[str, list[dict[str, Any]]],
                 fail: dict[str, Exception] | None = None) -> None:
        super().__init__(answers, fail)
        self.resources = resources

    def request(self, method: str, path: str, body: Any = None, content_type: str = "",
                timeout: float | None = None, accept: str = "") -> bytes:
        if path == DISCOVERY and path not in self.fail:
            self.asked.append(path)
            return orjson.dumps({"resources": [{"name": r} for r in self.resources]})
        return super().request(method, path, body, content_type, timeout, accept)


def test_workload_pod_groups_are_listed_where_served_before_the_pods() -> None:
    group = {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    raw = Served(["workloads", "podgroups", "podgroups/status"], {WORKLOAD_PODGROUPS: [{"items": [group]}]})
    snap = read_snapshot(raw)
    assert snap.pod_groups() == [{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", **group}]
    assert snap.pod_groups()[0] in snap.objects
    everything = snap.all()
    assert everything.index(snap.pod_groups()[0]) < len(everything) - len(snap.pods)
    assert raw.asked.index(WORKLOAD_PODGROUPS + "?limit=500") < next(
        i for i, p in enumerate(raw.asked) if p.startswith("/api/v1/pods"))


@pytest.mark.parametrize("raw", [
    Served(["workloads"], {}),  # the group version without podgroups
    Pages({}, fail={DISCOVERY: api_error(404, "Not Found")}),  # GenericWorkload off: the group version is not served
])  # fmt: skip
def test_a_cluster_without_workload_pod_groups_reads_as_before(raw: Pages) -> None:
    snap = read_snapshot(raw)
    assert snap.pod_groups() == []
    assert not any(p.startswith(WORKLOAD_PODGROUPS) for p in raw.asked)


def test_coscheduling_pod_groups_are_not_the_workload_apis() -> None:
    cosched = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "g"}}
    assert ClusterSnapshot(objects=[cosched]).pod_groups() == []


def test_a_failed_discovery_is_one_line() -> None:
    raw = Pages({}, fail={DISCOVERY: ApiException(status=503, reason="Service Unavailable")})
    with pytest.raises(ClusterReadError) as err:
        read_snapshot(raw)
    assert str(err.value) == "discover podgroups.scheduling.k8s.io: HTTP 503 Service Unavailable"


def test_listing_workload_pod_groups_forbidden_names_the_permission() -> None:
    raw = Served(["podgroups"], {}, fail={WORKLOAD_PODGROUPS: ApiException(status=403, reason="Forbidden")})
    with pytest.raises(ClusterReadError) as err:
        read_snapshot(raw)
    assert str(err.value) == ("forbidden: this user may not list podgroups.scheduling.k8s.io (HTTP 403); bind the "
                              "read-only role in manifests/readonly/")
