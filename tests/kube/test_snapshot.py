"""kube/snapshot.py's pagination and its one-line errors, with hand-made requesters (the real API server
is exercised in tests/integration/test_explain.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from kubernetes.client.exceptions import ApiException

from scheduler.kube.client import api_error
from scheduler.kube.snapshot import ClusterReadError, get_pod, list_objects, read_snapshot


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
