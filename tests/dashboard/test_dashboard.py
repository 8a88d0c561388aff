"""The dashboard's JSON from hand-made objects: the views (pending pods, one pod's decision, nodes by
zone, the scheduler's metrics and decisions) and the server's answers through a real Source over a
hand-made API (the engines run for real; the browser tests are in tests/integration/test_dashboard.py)."""

from __future__ import annotations

import fnmatch
import http.client
import json
import socket
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes.client.exceptions import ApiException

from scheduler.app.cli import dispatch, parser
from scheduler.dashboard import server as server_mod
from scheduler.dashboard import views
from scheduler.dashboard.server import INTERNAL, STATIC_DIR, DashboardServer, static_file
from scheduler.dashboard.source import Source
from scheduler.framework.results import PREFIX, SELECTED_NODE
from scheduler.kube.client import api_error
from scheduler.model.resources import Resource
from scheduler.testing import make_node
from tests.builders import sched_pod

PY = "py-scheduler"


def event(uid: str, note: str, when: str, count: int | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"reason": "FailedScheduling", "regarding": {"uid": uid}, "note": note, "eventTime": when}
    if count is not None:
        e["series"] = {"count": count, "lastObservedTime": when}
    return e


# ----- views -------------------------------------------------------------------------------------


def test_pending_pods_are_the_profiles_unbound_pods_with_their_last_failure_and_attempts() -> None:
    unschedulable = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                      "message": "condition message"}]
    pods = [
        sched_pod("old", "1").creation_timestamp("2026-01-01T00:00:00Z").phase("Pending")
        .status_field("conditions", unschedulable).api(),
        sched_pod("new", "1").creation_timestamp("2026-01-01T00:10:00Z").phase("Pending").api(),
        sched_pod("bound", "1", node_name="n1").phase("Pending").api(),
        sched_pod("other", "1", scheduler="default-scheduler").phase("Pending").api(),
        sched_pod("cond-only", "1").creation_timestamp("2026-01-01T00:05:00Z").phase("Pending")
        .status_field("conditions", unschedulable).api(),
    ]
    events = [
        event("uid-old", "0/3 nodes are available: first.", "2026-01-01T00:01:00.000000Z", count=4),
        event("uid-old", "0/3 nodes are available: latest.", "2026-01-01T00:02:00.000000Z"),
        {"reason": "Scheduled", "regarding": {"uid": "uid-new"}, "note": "bound"},
    ]
    now = 1767226200.0  # 2026-01-01T00:10:00Z
    out = views.pending_pods(pods, events, [PY], now)
    assert [p["name"] for p in out] == ["old", "cond-only", "new"]  # oldest first
    old = out[0]
    assert (old["message"], old["attempts"], old["reason"], old["ageSeconds"]) == (
        "0/3 nodes are available: latest.", 5, "Unschedulable", 600)
    assert (out[1]["message"], out[1]["attempts"]) == ("condition message", 0)  # no event yet: the condition's
    assert (out[2]["reason"], out[2]["message"]) == ("Pending", "")
    assert [p["attempts"] for p in views.pending_pods(pods, None, [PY], now)] == [None, None, None]


def test_a_decision_lists_the_nodes_that_came_closest_first() -> None:
    result = {
        "pod": "default/p", "profile": PY, "node": "b", "message": "", "victims": [], "boundTo": None,
        "filtered": {"x": {"plugin": "NodeUnschedulable", "reason": "unschedulable"},
                     "y": {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu"},
                     "z": {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu"}},
        "scores": {"a": {"total": 10}, "b": {"total": 30}},
        "score_details": {"a": {"P": {"raw": 1, "normalized": 10, "weighted": 10}},
                          "b": {"P": {"raw": 3, "normalized": 30, "weighted": 30}}},
        "sampling": {"numAllNodes": 6, "evaluated": ["a", "b", "x", "y", "z"], "notEvaluated": ["w"]},
        "scoreSkipped": [],
    }
    d = views.decision(result, ["NodeUnschedulable", "NodeName", "NodeResourcesFit"])
    rows = [(r["rank"], r["node"], r["verdict"], r["plugin"]) for r in d["rows"]]
    assert rows == [(1, "b", "chosen", None), (2, "a", "feasible", None), (3, "w", "not evaluated", None),
                    (4, "y", "filtered", "NodeResourcesFit"), (5, "z", "filtered", "NodeResourcesFit"),
                    (6, "x", "filtered", "NodeUnschedulable")]  # Fit runs after NodeUnschedulable: y, z got further
    assert d["rows"][0]["scores"] == {"P": {"raw": 3, "normalized": 30, "weighted": 30}}
    assert d["reasons"] == [{"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "count": 2},
                            {"plugin": "NodeUnschedulable", "reason": "unschedulable", "count": 1}]
    assert d["plugins"] == ["P"]


def test_a_preempting_pod_shows_its_nominated_node_first() -> None:
    result = {"pod": "default/p", "node": None, "message": "0/2 nodes are available: 2 Insufficient cpu.",
              "filtered": {"a": {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu"},
                           "b": {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu"}},
              "victims": ["default/low"], "nominatedNode": "b"}
    d = views.decision(result, ["NodeResourcesFit"])
    assert [(r["node"], r["verdict"]) for r in d["rows"]] == [("b", "nominated"), ("a", "filtered")]
    assert d["victims"] == ["default/low"] and d["message"].startswith("0/2")


def test_nodes_are_grouped_by_zone_with_requests_of_their_running_pods() -> None:
    na, nb, nc = (make_node().name(n).uid(n).allocatable(cpu=cpu, memory="8Gi", pods="110").condition("Ready", "True")
                  for n, cpu in (("a", "4"), ("b", "4"), ("c", "2")))
    tainted = nb.zone("z1").taint("dedicated", "gpu").unschedulable().condition("MemoryPressure", "True")
    pods = [sched_pod(n, cpu, node_name=node).phase(phase).api() for n, cpu, node, phase in (
        ("p1", "1500m", "a", "Pending"), ("p2", "500m", "a", "Pending"), ("pending", "1", "", "Pending"),
        ("done", "3", "a", "Succeeded"))]
    v = views.nodes_view([na.zone("z2").api(), tainted.api(), nc.api()], pods)
    assert [z["zone"] for z in v["zones"]] == [views.NO_ZONE, "z1", "z2"] and v["nodeCount"] == 3
    a = v["zones"][2]["nodes"][0]
    cpu, memory, pods_bar = a["resources"]
    assert (cpu["requested"], cpu["allocatable"], cpu["percent"], cpu["text"]) == (2000, 4000, 50, "2 of 4 cores (50%)")
    assert memory["text"] == "0 of 8.0Gi (0%)"
    assert (a["pods"], pods_bar["text"]) == (2, "2 of 110 pods (2%)")
    b = v["zones"][1]["nodes"][0]
    assert b["taints"] == ["dedicated=gpu:NoSchedule"] and b["unschedulable"] is True
    assert b["conditions"] == [{"type": "MemoryPressure", "status": "True"}, {"type": "Ready", "status": "True"}]


def test_resource_bars_show_millicores_and_extended_resources() -> None:
    alloc = Resource(milli_cpu=2500, memory=0, allowed_pod_number=0, scalar={"nvidia.com/gpu": 4})
    bars = views.resource_bars(Resource(milli_cpu=250, scalar={"nvidia.com/gpu": 1}), alloc, 0)
    assert [(b["name"], b["text"]) for b in bars] == [
        ("cpu", "250m of 2500m cores (10%)"), ("memory", "0 of 0"), ("pods", "0 of 0 pods"),
        ("nvidia.com/gpu", "1 of 4 (25%)")]


METRICS = """# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{{queue="active"}} 2
scheduler_pending_pods{{queue="unschedulable"}} 5
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{{profile="py-scheduler",result="scheduled"}} {scheduled}
scheduler_schedule_attempts_total{{profile="other",result="scheduled"}} 10
scheduler_schedule_attempts_total{{profile="py-scheduler",result="unschedulable"}} {unschedulable}
"""


def test_scheduler_view_gives_queue_sizes_and_attempts_per_second_between_two_scrapes() -> None:
    first = views.parse_metrics(METRICS.format(scheduled=20, unschedulable=3))
    second = views.parse_metrics(METRICS.format(scheduled=40, unschedulable=7))
    v = views.scheduler_view(second, first, 4.0)
    assert v["queues"] == {"active": 2, "unschedulable": 5}
    assert v["attemptsTotal"] == {"scheduled": 50, "unschedulable": 7}
    assert v["attemptsPerSecond"] == {"scheduled": 5.0, "unschedulable": 1.0}
    assert views.scheduler_view(first, None, 0.0)["attemptsPerSecond"] == {"scheduled": None, "unschedulable": None}


def test_recent_decisions_come_from_result_annotations_newest_first() -> None:
    def decided(name: str, when: str, ann: dict[str, str]) -> dict[str, Any]:
        cond = {"type": "PodScheduled", "status": "True", "lastTransitionTime": when}
        return sched_pod(name, cpu="1").annotations(ann).phase("Pending").status_field("conditions", [cond]).api()

    filters = json.dumps({"n1": {"NodeResourcesFit": "Insufficient cpu"}, "n2": {"NodeResourcesFit": "passed"}})
    pods = [decided("a", "2026-01-01T00:00:01Z", {SELECTED_NODE: "n1"}),
            decided("b", "2026-01-01T00:00:03Z", {SELECTED_NODE: "", PREFIX + "filter-result": filters}),
            decided("c", "2026-01-01T00:00:02Z", {}), sched_pod("d", cpu="1").phase("Pending").api()]
    out = views.recent_decisions(pods)
    assert [(d["pod"], d["node"], d["outcome"]) for d in out] == [
        ("default/b", None, "unschedulable: 1 of 2 nodes rejected"), ("default/a", "n1", "bound to n1")]


# ----- the server, through a real Source over a hand-made API -----------------------------------


class FakeApi:
    """Answers the snapshot's LISTs and pod GETs from hand-made objects; ``down`` makes every request
    fail as a lost API server does."""

    def __init__(self, objects: list[dict[str, Any]], events: list[dict[str, Any]] | None = None) -> None:
        self.objects = objects
        self.events = events or []
        self.down = False
        self.requests = 0
        self.events_forbidden = False
        self.host = "https://api.test:6443"

    def request(self, method: str, path: str, body: Any = None, content_type: str = "",
                timeout: float | None = None, accept: str = "") -> bytes:
        self.requests += 1
        if self.down:
            raise ConnectionRefusedError(111, "Connection refused")
        base = path.split("?")[0]
        if base == "/api/v1/nodes":
            return orjson.dumps({"items": [o for o in self.objects if o["kind"] == "Node"]})
        if base == "/api/v1/pods":
            return orjson.dumps({"items": [o for o in self.objects if o["kind"] == "Pod"]})
        if base == "/apis/events.k8s.io/v1/events":
            if self.events_forbidden:
                raise ApiException(status=403, reason="Forbidden")
            return orjson.dumps({"items": self.events})
        if base.startswith("/api/v1/namespaces/"):
            ns, name = base.split("/")[4], base.split("/")[6]
            for o in self.objects:
                if o["kind"] == "Pod" and (o["metadata"]["namespace"], o["metadata"]["name"]) == (ns, name):
                    return orjson.dumps(o)
            raise api_error(404, "Not Found")  # as RawApi raises it: apierrors.NotFoundError too
        return orjson.dumps({"items": []})


CLUSTER = [*(make_node().name(n).uid(n).allocatable(cpu=cpu, memory="8Gi", pods="110").condition("Ready", "True")
             .zone(zone).api() for n, cpu, zone in (("small", "2", "z1"), ("big", "8", "z2"))),
           sched_pod("running", "1", node_name="big").phase("Pending").api(),
           sched_pod("huge", "16").phase("Pending").api()]


@pytest.fixture
def fake() -> FakeApi:
    return FakeApi([dict(o) for o in CLUSTER],
                   [event("uid-huge", "0/2 nodes are available: 2 Insufficient cpu.", "2026-01-01T00:00:05Z")])


@pytest.fixture
def serve(fake: FakeApi) -> Iterator[DashboardServer]:
    srv = DashboardServer(("127.0.0.1", 0), Source(fake, None, [PY]))
    srv.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def call(srv: DashboardServer, method: str, path: str, body: str | None = None) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=60)
    conn.request(method, path, body=body.encode() if body is not None else None)
    r = conn.getresponse()
    status, data = r.status, json.loads(r.read())
    conn.close()
    return status, data


def test_pending_json_carries_the_failed_scheduling_message(serve: DashboardServer) -> None:
    status, body = call(serve, "GET", "/api/pending")
    assert status == 200 and body["schedulerNames"] == [PY] and body["note"] == ""
    (huge,) = body["pods"]
    assert (huge["name"], huge["message"], huge["attempts"]) == (
        "huge", "0/2 nodes are available: 2 Insufficient cpu.", 1)


def test_without_list_events_the_pending_pods_show_their_condition_and_why_attempts_are_unknown(
    serve: DashboardServer, fake: FakeApi
) -> None:
    fake.events_forbidden = True
    status, body = call(serve, "GET", "/api/pending")
    assert status == 200 and [(p["name"], p["attempts"]) for p in body["pods"]] == [("huge", None)]
    assert body["note"] == ("attempts unknown: forbidden: this user may not list events.events.k8s.io (HTTP 403); "
                            "bind the read-only role in manifests/readonly/")


def test_a_pods_decision_is_explains_answer(serve: DashboardServer) -> None:
    status, body = call(serve, "GET", "/api/pod?namespace=default&name=huge")
    assert status == 200
    assert body["node"] is None and body["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert body["reasons"] == [{"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "count": 2}]
    assert [r["node"] for r in body["rows"]] == ["big", "small"]
    status, bound = call(serve, "GET", "/api/pod?namespace=default&name=running")
    assert (bound["boundTo"], bound["node"], bound["rows"][0]["node"], bound["rows"][0]["verdict"]) == (
        "big", "big", "big", "chosen")


def test_the_what_if_box_places_and_counts_a_pasted_pod(serve: DashboardServer) -> None:
    pasted = "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  schedulerName: py-scheduler\n" \
             "  containers: [{name: c, resources: {requests: {cpu: '3'}}}]\n"
    status, body = call(serve, "POST", "/api/whatif", pasted)
    assert status == 200, body
    assert (body["pod"], body["node"]) == ("default/w", "big")
    assert body["capacity"]["count"] == 2 and body["capacity"]["nodes"] == {"big": 2}  # 8 - 1 running = 7 cpu
    assert body["capacity"]["message"].startswith("0/2 nodes are available")


@pytest.mark.parametrize(("path", "body", "code", "message"), [
    ("/api/pod?namespace=default&name=nope", None, 404, 'pod "nope" not found in namespace "default"'),
    ("/api/pod?namespace=default", None, 400, "give the pod's namespace and name"),
    ("/api/whatif", "kind: Pod\nmetadata: [", 400,
     "the pasted YAML: invalid YAML: expected the node content, but found '<stream end>' (line 2, column 12)"),
    ("/api/whatif", "kind: Node\nmetadata: {name: n}\n", 400, "the pasted YAML: Node n: only Pods can be scheduled"),
    ("/api/whatif", "", 400, "paste a Pod's YAML first"),
    ("/api/nowhere", None, 404, "no such API: GET /api/nowhere"),
])  # fmt: skip
def test_bad_input_is_a_clear_message(serve: DashboardServer, path: str, body: str | None, code: int,
                                      message: str) -> None:
    status, answer = call(serve, "POST" if body is not None else "GET", path, body)
    assert (status, answer) == (code, {"error": message})


def test_a_lost_api_server_is_a_message_and_the_server_keeps_serving(serve: DashboardServer, fake: FakeApi) -> None:
    fake.down = True
    status, body = call(serve, "GET", "/api/nodes")
    assert (status, body) == (502, {"error": "cannot reach the API server at https://api.test:6443: "
                                             "[Errno 111] Connection refused"})
    fake.down = False
    serve.source._snapshot = None  # the cached snapshot would answer for two seconds
    status, body = call(serve, "GET", "/api/nodes")
    assert status == 200 and [z["zone"] for z in body["zones"]] == ["z1", "z2"]


def test_an_internal_error_never_shows_its_text(serve: DashboardServer, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> dict[str, Any]:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(serve.source, "nodes", broken)
    assert call(serve, "GET", "/api/nodes") == (500, {"error": INTERNAL})
    assert call(serve, "GET", "/api/pending")[0] == 200


def test_scheduler_page_without_metrics_says_how_to_get_them(serve: DashboardServer) -> None:
    status, body = call(serve, "GET", "/api/scheduler")
    assert status == 200 and body["metrics"] is None
    assert body["metricsError"] == "no metrics URL: start the dashboard with --metrics-url"


def test_the_page_is_served_from_the_package_with_a_strict_policy(serve: DashboardServer) -> None:
    conn = http.client.HTTPConnection(*serve.server_address[:2], timeout=30)
    for path, name in (("/", "index.html"), ("/static/app.js", "app.js"), ("/static/style.css", "style.css")):
        conn.request("GET", path)
        r = conn.getresponse()
        assert (r.status, r.read()) == (200, static_file(name))
        assert "default-src 'self'" in (r.getheader("Content-Security-Policy") or "")
    conn.request("GET", "/static/../views.py")
    r = conn.getresponse()
    assert r.status == 404 and r.read()
    conn.close()
    assert b"http://" not in static_file("index.html") and b"https://" not in static_file("app.js")


def test_a_client_that_never_sends_its_request_is_dropped(fake: FakeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_mod._Handler, "timeout", 0.2)
    srv = DashboardServer(("127.0.0.1", 0), Source(fake, None, [PY]))
    srv.start()
    try:
        with socket.create_connection(srv.server_address[:2], timeout=30) as s:
            s.sendall(b"GET /api/pending HTTP/1.1\r\n")  # and never the rest of the headers
            assert s.recv(1024) == b""  # closed by the server, with no answer
        assert call(srv, "GET", "/api/pending")[0] == 200
    finally:
        srv.shutdown()
        srv.server_close()


def test_the_dashboard_subcommand_is_in_the_cli() -> None:
    args = parser().parse_args(["dashboard", "--address", "0.0.0.0:9000", "--scheduler-name", "a"])
    assert (args.command, args.address, args.scheduler_name, args.refresh_seconds) == (
        "dashboard", "0.0.0.0:9000", ["a"], 5.0)


def test_every_file_of_the_page_is_package_data_so_a_wheel_carries_it() -> None:
    root = Path(__file__).resolve().parents[2]
    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    globs = data["scheduler.dashboard"]
    static = root / "scheduler/dashboard" / STATIC_DIR
    files = sorted(p.relative_to(static.parent).as_posix() for p in static.iterdir())
    assert files and all(any(fnmatch.fnmatch(f, g) for g in globs) for f in files), (files, globs)
    assert {f.removeprefix(STATIC_DIR + "/") for f in files} == set(server_mod.STATIC)


@pytest.mark.parametrize(("argv", "message"), [
    (["--address", "8080"], "py-scheduler dashboard: --address '8080': expected HOST:PORT\n"),
    (["--kubeconfig", "/nonexistent/kubeconfig"], "py-scheduler dashboard: cannot load the kubeconfig: "),
])  # fmt: skip
def test_a_bad_start_is_one_line_and_exit_status_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert dispatch(parser().parse_args(["dashboard", *argv])) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err


class _Metrics(BaseHTTPRequestHandler):
    """A metrics endpoint behind a bearer token (as kube-rbac-proxy would put it)."""

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != "Bearer s3cret":
            self.send_error(401, "Unauthorized")
            return
        body = METRICS.format(scheduled=20, unschedulable=3).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.mark.parametrize(("token", "queues", "error"), [
    ("s3cret", {"active": 2, "unschedulable": 5}, ""),
    ("wrong", None, "metrics at {url}: HTTP 401 Unauthorized"),
])  # fmt: skip
def test_the_scheduler_page_reads_the_metrics_with_the_token(
    fake: FakeApi, token: str, queues: dict[str, int] | None, error: str
) -> None:
    metrics = ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    threading.Thread(target=metrics.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{metrics.server_address[1]}/metrics"
    try:
        out = Source(fake, None, [PY], metrics_url=url, metrics_token=token).scheduler()
    finally:
        metrics.shutdown()
        metrics.server_close()
    assert (out["metrics"] or {}).get("queues") == queues
    assert out["metricsError"] == error.format(url=url)


# ----- the Workload API's pod groups (GenericWorkload on) -----------------------------------------


def _pod_group(name: str, min_count: int, **status: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"pg-{name}", "generation": 1},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, "priority": 0}, "status": status}


def _member(name: str, group: str, cpu: str = "1", node: str | None = None) -> dict[str, Any]:
    pod = sched_pod(name, cpu, scheduler=PY, node_name=node).phase("Pending").api()
    pod["spec"] |= {"schedulingGroup": {"podGroupName": group}, "priority": 0}
    return pod


def test_pod_groups_view_lists_each_group_with_its_condition_and_members() -> None:
    failed = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
                              "message": "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"}]}
    objects = [_pod_group("train", 2, **failed), _pod_group("idle", 3),
               {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "cosched"}}]
    pods = [_member("t1", "train"), _member("t0", "train", node="n1"), _member("orphan", "missing"),
            sched_pod("plain", "1").api()]
    events = [event("uid-t1", "pod group is unschedulable, minCount (2) cannot be satisfied", "2026-01-01T00:00:05Z")]
    groups = {g["podGroup"]: g for g in views.pod_groups(objects, pods, events)}
    assert list(groups) == ["default/idle", "default/missing", "default/train"]  # Coscheduling's is not one
    train = groups["default/train"]
    assert (train["policy"], train["minCount"], train["bound"], train["pending"]) == ("gang", 2, 1, 1)
    assert train["condition"]["message"] == "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
    assert [(m["name"], m["node"], m["message"]) for m in train["members"]] == [
        ("t0", "n1", ""), ("t1", None, "pod group is unschedulable, minCount (2) cannot be satisfied")]
    assert (groups["default/missing"]["exists"], groups["default/idle"]["members"]) == (False, [])


class _WorkloadApi(FakeApi):
    """FakeApi that also serves the Workload API's PodGroups."""

    def request(self, method: str, path: str, body: Any = None, content_type: str = "",
                timeout: float | None = None, accept: str = "") -> bytes:
        base = path.split("?")[0]
        if base == "/apis/scheduling.k8s.io/v1beta1":  # discovery: served, as with GenericWorkload on
            return orjson.dumps({"resources": [{"name": "podgroups"}]})
        if base == "/apis/scheduling.k8s.io/v1beta1/podgroups":
            return orjson.dumps({"items": [o for o in self.objects if o["kind"] == "PodGroup"]})
        return super().request(method, path, body, content_type, timeout, accept)


def test_the_pod_group_pages_are_explains_answer_with_the_gate_on() -> None:
    from scheduler.framework.features import Features

    api = _WorkloadApi([*(dict(o) for o in CLUSTER if o["kind"] == "Node"), _pod_group("train", 3),
                        *(_member(f"t{i}", "train", cpu="2") for i in range(3))])
    srv = DashboardServer(("127.0.0.1", 0), Source(api, None, [PY], features=Features(enable_generic_workload=True)))
    srv.start()
    try:
        status, body = call(srv, "GET", "/api/podgroups")
        assert status == 200 and [g["podGroup"] for g in body["podGroups"]] == ["default/train"]
        status, group = call(srv, "GET", "/api/podgroup?namespace=default&name=train")
        # small (2 cpu) holds one 2-cpu member and big (8 cpu) the other two: the gang fits
        assert status == 200 and group["verdict"] == "scheduled" and all(m["node"] for m in group["members"])
        status, pod = call(srv, "GET", "/api/pod?namespace=default&name=t1")
        assert status == 200 and pod["podGroup"]["podGroup"] == "default/train"
        assert pod["podGroup"]["verdict"] == "scheduled" and pod["node"] in ("small", "big")
    finally:
        srv.shutdown()
        srv.server_close()
