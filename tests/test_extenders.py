"""HTTP extenders through `simulate`, against a real extender server (tests/extender_server.py)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.config.load import build_registry, load_dict
from scheduler.config.types import Extender as ExtenderConfig
from scheduler.eventhandlers import ADDED
from scheduler.extender import HTTPExtender, build_extenders
from scheduler.framework.extender import ExtenderError
from scheduler.model.pod import pod_from_api
from scheduler.scheduler import Scheduler
from scheduler.testing import make_container, make_pod
from scheduler.whatif.offline import RecordingBinder, RecordingEventSink
from scheduler.whatif.simulate import run_simulation
from tests.builders import sched_node, sched_pod

from .extender_server import ExtenderServer


@pytest.fixture
def server() -> Iterator[ExtenderServer]:
    s = ExtenderServer().start()
    yield s
    s.stop()


def simulate(tmp_path: Path, cluster: list[dict[str, Any]], pods: list[dict[str, Any]],
             extenders: list[dict[str, Any]], profile: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(cluster))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "extenders": extenders, "profiles": [{"schedulerName": "py-scheduler", **(profile or {})}]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    return run_simulation(str(tmp_path / "cluster.yaml"), str(tmp_path / "pods.yaml"),
                          str(tmp_path / "config.yaml"), seed=1, tie_break="name").results


THREE = [sched_node("node-a").api(), sched_node("node-b").api(), sched_node("node-c").api()]


def test_filter_sends_nodes_and_merges_failed_nodes_into_the_message(server: ExtenderServer, tmp_path: Path) -> None:
    server.behaviour.failed = {"node-a": "extender says no"}
    server.behaviour.unresolvable = {"node-b": "extender says never"}
    ext = {"urlPrefix": f"{server.url}/ok", "filterVerb": "filter"}
    placed, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()], [ext])
    assert placed["node"] == "node-c"
    body = server.calls("filter")[0]
    assert set(body) == {"Pod", "Nodes", "NodeNames"}
    assert body["NodeNames"] is None
    assert body["Pod"]["metadata"]["name"] == "p"
    assert sorted(n["metadata"]["name"] for n in body["Nodes"]["items"]) == ["node-a", "node-b", "node-c"]

    server.behaviour.failed["node-c"] = "extender says no"
    failed, = simulate(tmp_path, THREE, [sched_pod("q", cpu="1").no_uid().api()], [ext])
    assert failed["node"] is None
    assert failed["message"].startswith("0/3 nodes are available: 1 extender says never, 2 extender says no.")
    # FailedNodes are preemption candidates, FailedAndUnresolvableNodes are not.
    assert failed["message"].endswith("preemption: 0/3 nodes are available: 1 Preemption is not helpful for "
                                      "scheduling, 2 No preemption victims found for incoming pod.")


def test_node_cache_capable_extender_gets_node_names(server: ExtenderServer, tmp_path: Path) -> None:
    server.behaviour.failed = {"node-a": "no"}
    ext = {"urlPrefix": f"{server.url}/ok", "filterVerb": "filter", "nodeCacheCapable": True}
    placed, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()], [ext])
    body = server.calls("filter")[0]
    assert body["Nodes"] is None and sorted(body["NodeNames"]) == ["node-a", "node-b", "node-c"]
    assert placed["node"] == "node-b"  # tie-break by name among the two left


def test_prioritize_scores_are_weighted_and_scaled(server: ExtenderServer, tmp_path: Path) -> None:
    server.behaviour.scores = {"node-c": 7, "node-b": 3}
    ext = {"urlPrefix": f"{server.url}/ok", "prioritizeVerb": "prioritize", "weight": 2}
    placed, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()], [ext])
    assert placed["node"] == "node-c"
    scores = placed["scores"]
    name = f"{server.url}/ok"
    assert scores["node-c"][name] == 7 and scores["node-b"][name] == 3 and scores["node-a"][name] == 0
    # 7 x weight 2 x (MaxNodeScore 100 / MaxExtenderPriority 10) is added to the plugins' total.
    plugins_c = sum(v for k, v in scores["node-c"].items() if k not in ("total", name))
    assert scores["node-c"]["total"] > 140
    assert scores["node-c"]["total"] - scores["node-a"]["total"] == 140 + plugins_c - sum(
        v for k, v in scores["node-a"].items() if k not in ("total", name))


def test_bind_extender_binds_instead_of_default_binder(server: ExtenderServer, tmp_path: Path) -> None:
    ext = {"urlPrefix": f"{server.url}/ok", "bindVerb": "bind"}
    placed, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()], [ext])
    assert placed["node"] is not None
    assert server.bindings == [{"PodName": "p", "PodNamespace": "default", "PodUID": "sim-pod-default-p",
                                "Node": placed["node"]}]


def test_bind_error_fails_the_binding(server: ExtenderServer, tmp_path: Path) -> None:
    server.behaviour.bind = lambda body: "no room at the inn"
    ext = {"urlPrefix": f"{server.url}/ok", "bindVerb": "bind"}
    result, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()], [ext])
    assert result["node"] is None and "no room at the inn" in result["message"]


def test_managed_resources_limit_interest_and_ignored_by_scheduler(server: ExtenderServer, tmp_path: Path) -> None:
    server.behaviour.failed = {"node-a": "no"}
    ext = {"urlPrefix": f"{server.url}/ok", "filterVerb": "filter",
           "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}]}
    gpu_pod = make_pod().name("gpu").scheduler_name("py-scheduler").no_uid()
    gpu_pod.container(make_container().req(cpu="1").res({"example.com/gpu": "1"}))
    plain, gpu = simulate(tmp_path, THREE, [sched_pod("plain", cpu="1").no_uid().api(), gpu_pod.api()], [ext])
    assert [b["Pod"]["metadata"]["name"] for b in server.calls("filter")] == ["gpu"]
    # No node advertises example.com/gpu: NodeResourcesFit ignores it, the extender decides.
    assert gpu["node"] in ("node-b", "node-c")
    assert plain["node"] is not None


def test_preempt_verb_narrows_candidates(server: ExtenderServer, tmp_path: Path) -> None:
    cluster = [sched_node("node-a", "2").api(), sched_node("node-b", "2").api(),
               sched_pod("low-a", cpu="2", node_name="node-a", priority=0).no_uid().api(),
               sched_pod("low-b", cpu="2", node_name="node-b", priority=0).no_uid().api()]
    server.behaviour.preempt_nodes = {"node-b"}
    ext = {"urlPrefix": f"{server.url}/ok", "preemptVerb": "preempt"}
    result, = simulate(tmp_path, cluster, [sched_pod("high", cpu="2", priority=100).no_uid().api()], [ext])
    assert result["victims"] == ["default/low-b"]
    assert result["node"] == "node-b"
    body = server.calls("preempt")[0]
    assert set(body) == {"Pod", "NodeNameToVictims"}
    assert sorted(body["NodeNameToVictims"]) == ["node-a", "node-b"]
    assert body["NodeNameToVictims"]["node-a"]["Pods"][0]["metadata"]["name"] == "low-a"
    assert body["NodeNameToVictims"]["node-a"]["NumPDBViolations"] == 0


def test_preempt_meta_victims_for_node_cache_capable(server: ExtenderServer, tmp_path: Path) -> None:
    cluster = [sched_node("node-a", "2").api(),
               sched_pod("low-a", cpu="2", node_name="node-a", priority=0).no_uid().api()]
    ext = {"urlPrefix": f"{server.url}/ok", "preemptVerb": "preempt", "nodeCacheCapable": True}
    result, = simulate(tmp_path, cluster, [sched_pod("high", cpu="2", priority=100).no_uid().api()], [ext])
    assert result["victims"] == ["default/low-a"]
    body = server.calls("preempt")[0]
    assert body["NodeNameToMetaVictims"] == {"node-a": {"Pods": [{"UID": "sim-pod-default-low-a"}],
                                                       "NumPDBViolations": 0}}


def test_extender_refusing_every_candidate_prevents_preemption(server: ExtenderServer, tmp_path: Path) -> None:
    cluster = [sched_node("node-a", "2").api(),
               sched_pod("low-a", cpu="2", node_name="node-a", priority=0).no_uid().api()]
    server.behaviour.preempt_nodes = set()
    ext = {"urlPrefix": f"{server.url}/ok", "preemptVerb": "preempt"}
    result, = simulate(tmp_path, cluster, [sched_pod("high", cpu="2", priority=100).no_uid().api()], [ext])
    assert result["node"] is None and result["victims"] == []
    assert result["message"].endswith("no candidate node for preemption")


def test_timeout_fails_the_cycle(server: ExtenderServer, tmp_path: Path) -> None:
    server.behaviour.slow_seconds = 6.0
    ext = {"urlPrefix": f"{server.url}/slow", "filterVerb": "filter", "httpTimeout": "300ms"}
    began = time.monotonic()
    result, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()], [ext])
    assert time.monotonic() - began < 5  # the extender would have answered after 6 s
    assert result["node"] is None
    assert f'Post "{server.url}/slow/filter"' in result["message"] and "timed out" in result["message"]


def test_http_500_fails_the_cycle_and_ignorable_is_skipped(server: ExtenderServer, tmp_path: Path) -> None:
    ext = {"urlPrefix": f"{server.url}/broken", "filterVerb": "filter"}
    result, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()], [ext])
    assert result["node"] is None
    assert result["message"] == f"failed filter with extender at URL {server.url}/broken/filter, code 500"

    ignorable = {**ext, "ignorable": True, "prioritizeVerb": "prioritize", "weight": 1, "bindVerb": "bind"}
    result, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()], [ignorable])
    assert result["node"] is not None
    assert [r.verb for r in server.requests if r.mode == "broken"][-3:] == ["filter", "prioritize", "bind"]


def test_prioritize_error_is_ignored_even_when_not_ignorable(server: ExtenderServer, tmp_path: Path) -> None:
    ext = {"urlPrefix": f"{server.url}/broken", "prioritizeVerb": "prioritize", "weight": 1}
    result, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()], [ext])
    assert result["node"] is not None
    assert f"{server.url}/broken" not in result["scores"][result["node"]]


def test_ignorable_extenders_are_called_last() -> None:
    first = ExtenderConfig("http://a", ignorable=True)
    second = ExtenderConfig("http://b")
    assert [e.name() for e in build_extenders([first, second])] == ["http://b", "http://a"]


def test_answers_decode_case_insensitively_and_must_name_input_nodes(server: ExtenderServer) -> None:
    ext = HTTPExtender(ExtenderConfig(f"{server.url}/ok/", filter_verb="filter", node_cache_capable=True))
    p = pod_from_api({**sched_pod("p", cpu="1").no_uid().api(),
                      "metadata": {"name": "p", "namespace": "default", "uid": "u1"}})
    original = server.answer
    server.answer = lambda verb, body: {"nodenames": ["x"], "failednodes": {"y": "full"}}  # type: ignore[method-assign]
    from scheduler.framework.types import NodeInfo
    from scheduler.model.node import node_from_api
    x, y = NodeInfo(node_from_api(sched_node("x").api())), NodeInfo(node_from_api(sched_node("y").api()))
    try:
        result = ext.filter(p, [x, y])
        assert [n.name for n in result.nodes] == ["x"] and result.failed_nodes == {"y": "full"}
        server.answer = lambda verb, body: {"NodeNames": ["z"]}  # type: ignore[method-assign]
        with pytest.raises(ExtenderError, match="not found in the input node list"):
            ext.filter(p, [x, y])
    finally:
        server.answer = original  # type: ignore[method-assign]


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[ExtenderServer, bytes]]:
    """An HTTPS extender with a self-signed certificate for "localhost" (not for 127.0.0.1)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    s = ExtenderServer(tls=(str(cert), str(key))).start()
    yield s, cert.read_bytes()
    s.stop()


def test_https_with_and_without_verification(tls_server: tuple[ExtenderServer, bytes], tmp_path: Path) -> None:
    server, ca = tls_server
    server.behaviour.failed = {"node-a": "no"}
    base = {"urlPrefix": f"{server.url}/ok", "filterVerb": "filter"}
    # enableHTTPS without a CA: the certificate is not verified (upstream makeTransport).
    result, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()], [{**base, "enableHTTPS": True}])
    assert result["node"] == "node-b"
    # With the CA, the certificate must match: it names localhost, not 127.0.0.1 ...
    ca_data = base64.b64encode(ca).decode()
    result, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()],
                       [{**base, "tlsConfig": {"caData": ca_data}}])
    assert result["node"] is None and "CERTIFICATE_VERIFY_FAILED" in result["message"]
    # ... unless serverName says which name to verify.
    result, = simulate(tmp_path, THREE, [sched_pod("p", cpu="1").no_uid().api()],
                       [{**base, "tlsConfig": {"caData": ca_data,
                                                                             "serverName": "localhost"}}])
    assert result["node"] == "node-b"


def test_pod_rejected_by_an_extender_is_requeued_by_any_cluster_event(server: ExtenderServer) -> None:
    """Extenders register no events: the rejector "Extender" makes every event worth a retry."""
    server.behaviour.failed = {"node-a": "no"}
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "extenders": [{"urlPrefix": f"{server.url}/ok", "filterVerb": "filter"}]})
    sched = Scheduler(cfg, build_registry(cfg), RecordingBinder(), RecordingEventSink(), synchronous_binding=True)
    sched.on_node_event(ADDED, {**sched_node("node-a").api(), "metadata": {"name": "node-a", "resourceVersion": "1"}})
    sched.on_pod_event(ADDED,
                       {**sched_pod("p", cpu="1").no_uid().api(),
                        "metadata": {"name": "p", "namespace": "default", "uid": "u1"}})
    assert sched.schedule_one(timeout=0)
    assert sched.queue.lengths()["unschedulable"] == 1
    # A label change no plugin's hints care about for this pod still moves it: the extender might accept now.
    sched.on_node_event("MODIFIED",
                        {**sched_node("node-a").api(), "metadata": {"name": "node-a", "resourceVersion": "2",
                                                                   "labels": {"x": "y"}}})
    assert sched.queue.lengths()["unschedulable"] == 0


def test_policy_extenders_are_called(server: ExtenderServer, tmp_path: Path) -> None:
    """A seed-era Policy's extenders (keys as its Go decoding accepted them, httpTimeout in ns)."""
    server.behaviour.failed = {"node-a": "no", "node-b": "no"}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(THREE))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([sched_pod("p", cpu="1").no_uid().api()]))
    (tmp_path / "policy.json").write_text(json.dumps({
        "kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "PodFitsResources"}],
        "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
        "extenders": [{"urlPrefix": f"{server.url}/ok", "filterVerb": "filter", "enableHttps": False,
                       "httpTimeout": 2000000000, "nodeCacheCapable": True}]}))
    result, = run_simulation(str(tmp_path / "cluster.yaml"), str(tmp_path / "pods.yaml"), tie_break="name",
                             policy_path=str(tmp_path / "policy.json")).results
    assert result["node"] == "node-c"
    assert sorted(server.calls("filter")[0]["NodeNames"]) == ["node-a", "node-b", "node-c"]
