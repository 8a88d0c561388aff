"""`py-scheduler simulate` scenarios, one per plugin: each shows what the plugin does to placement.

Every scenario runs the real CLI (`simulate --output json --tie-break name`) on a small cluster and a
profile that enables only the plugins under test (plus PrioritySort and DefaultBinder), so the expected
nodes, normalized scores and FailedScheduling messages can be derived by hand from upstream's formulas
(kube-scheduler v1.37.2, ``pkg/scheduler/framework/plugins``; the legacy plugins from the releases named
in their modules). The derivation is the comment above each assertion.

Reading the output: ``scores[node][plugin]`` is the plugin's normalized (0-100), unweighted score and
``total`` the weighted sum; a plugin whose PreScore returned Skip is absent. ``filtered`` holds the nodes a
Filter (or PreFilter) rejected. Ties go to the smallest node name. Pods are scheduled in file order, each
placed pod counting for the next.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from scheduler.app.cli import main
from scheduler.testing import PodWrapper, make_container, make_pod
from tests.builders import sched_node, sched_pod

ZONE, REGION, HOSTNAME = "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "kubernetes.io/hostname"
MiB = 1024 * 1024

# ----- builders -----------------------------------------------------------------------------------


def service(name: str, selector: Mapping[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": dict(selector), "ports": [{"port": 80}]}}


# Upstream stops filtering at the first feasible node when a profile has no Score plugin (and rotates the
# start node between cycles); the filter-only scenarios add EqualPriority (every node scores 1) so that
# every node is filtered and ties go to the smallest name.
EQUAL = "EqualPriority"


def profile(
    *plugins: str | tuple[str, int],
    args: Mapping[str, Mapping[str, Any]] | None = None,
    **points: Mapping[str, Any],
) -> dict[str, Any]:
    """A profile with only PrioritySort, ``plugins`` (name or (name, weight)) and DefaultBinder."""
    enabled: list[dict[str, Any]] = [{"name": "PrioritySort"}]
    for p in plugins:
        enabled.append({"name": p} if isinstance(p, str) else {"name": p[0], "weight": p[1]})
    enabled.append({"name": "DefaultBinder"})
    prof: dict[str, Any] = {
        "schedulerName": "py-scheduler",
        "plugins": {"multiPoint": {"enabled": enabled, "disabled": [{"name": "*"}]}, **points},
    }
    if args:
        prof["pluginConfig"] = [{"name": n, "args": dict(a)} for n, a in args.items()]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [prof]}


def simulate(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    cluster: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run the CLI; results by pod name. ``config=None`` runs the default profile."""
    (tmp_path / "cluster.yaml").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(cluster)}))
    (tmp_path / "pods.yaml").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(pods)}))
    argv = ["--log-level", "ERROR", "simulate", "--cluster", str(tmp_path / "cluster.yaml"),
            "--pods", str(tmp_path / "pods.yaml"), "--tie-break", "name", "--output", "json"]
    if config is not None:
        (tmp_path / "config.yaml").write_text(json.dumps(config))
        argv += ["--config", str(tmp_path / "config.yaml")]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    results = json.loads(out)["results"]
    assert [r["pod"] for r in results] == [f"default/{p['metadata']['name']}" for p in pods]
    return {r["pod"].split("/", 1)[1]: r for r in results}


def plugin_scores(result: Mapping[str, Any], plugin: str) -> dict[str, int]:
    return {n: s[plugin] for n, s in result["scores"].items() if plugin in s}


def filtered(result: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    return {n: (f["plugin"], f["reason"]) for n, f in result["filtered"].items()}


def placements(results: Mapping[str, Mapping[str, Any]]) -> dict[str, str | None]:
    return {name: r["node"] for name, r in results.items()}


# ----- NodeResourcesFit ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "busy", "empty", "chosen"),
    [
        # LeastAllocated: per resource (allocatable - requested)·100/allocatable, averaged with weights 1:1.
        # busy: cpu 2+1 of 4 -> 25, memory 4+2 of 8Gi -> 25 => 25. empty: cpu 1 of 4 -> 75, memory 2 of 8 -> 75.
        ("LeastAllocated", 25, 75, "n-empty"),
        # MostAllocated: requested·100/allocatable. busy: 75 and 75 => 75; empty: 25 and 25 => 25.
        ("MostAllocated", 75, 25, "n-busy"),
    ],
)
def test_node_resources_fit_scoring_strategy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], strategy: str, busy: int, empty: int, chosen: str
) -> None:
    cluster = [sched_node("n-busy").api(), sched_node("n-empty").api(),
               sched_pod("existing", cpu="2", memory="4Gi", node_name="n-busy").api()]
    config = profile("NodeResourcesFit", args={"NodeResourcesFit": {"scoringStrategy": {
        "type": strategy, "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}})
    r = simulate(tmp_path, capsys, cluster, [sched_pod("p", cpu="1", memory="2Gi").api()], config)["p"]
    assert plugin_scores(r, "NodeResourcesFit") == {"n-busy": busy, "n-empty": empty}
    assert r["node"] == chosen


def test_node_resources_fit_weights_and_filter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = [sched_node("n-cpu-free", cpu="8", memory="8Gi").api(),
               sched_node("n-mem-free", cpu="4", memory="32Gi").api(),
               sched_pod("existing", cpu="2", memory="6Gi", node_name="n-cpu-free").api()]
    # LeastAllocated with cpu weight 3, memory weight 1: (3·cpu + mem) / 4, integer division.
    config = profile("NodeResourcesFit", args={"NodeResourcesFit": {"scoringStrategy": {
        "type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}}})
    pods = [sched_pod("p", cpu="2", memory="2Gi").api(), sched_pod("huge", cpu="9").api(),
            sched_pod("fat", memory="40Gi").api()]
    res = simulate(tmp_path, capsys, cluster, pods, config)
    # n-cpu-free: cpu (8-4)·100/8 = 50, memory (8-8)·100/8 = 0 -> (150 + 0)/4 = 37.
    # n-mem-free: cpu (4-2)·100/4 = 50, memory (32-2)·100/32 = 93 (93.75 truncated) -> (150 + 93)/4 = 60.
    assert plugin_scores(res["p"], "NodeResourcesFit") == {"n-cpu-free": 37, "n-mem-free": 60}
    assert res["p"]["node"] == "n-mem-free"
    # 9 cpus fit nowhere; 40Gi neither. No PostFilter plugin in this profile: the message ends after the histogram.
    assert res["huge"]["node"] is None
    assert res["huge"]["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert res["fat"]["message"] == "0/2 nodes are available: 2 Insufficient memory."
    assert filtered(res["fat"]) == {"n-cpu-free": ("NodeResourcesFit", "Insufficient memory"),
                                    "n-mem-free": ("NodeResourcesFit", "Insufficient memory")}


# ----- NodeResourcesBalancedAllocation ------------------------------------------------------------


def test_balanced_allocation_prefers_the_node_the_pod_balances(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = [sched_node("n-empty").api(), sched_node("n-memory-heavy").api(),
               sched_pod("cache", cpu="0", memory="3Gi", node_name="n-memory-heavy").api()]
    pods = [sched_pod("cpu-heavy", cpu="2", memory="1Gi").api(), sched_pod("best-effort").api()]
    res = simulate(tmp_path, capsys, cluster, pods, profile("NodeResourcesBalancedAllocation"))
    # balance b = int((1 - |f_cpu - f_mem|/2)·100) on fractions of allocatable (real requests); v1.37 scores
    # the change: 50 + (50 + b_with - b_without) / 2.
    # n-empty: with cpu 2/4 = 0.5, memory 1/8 = 0.125 -> std 0.1875 -> 81; without 100 -> 50 + 31/2 = 65.
    # n-memory-heavy: with cpu 0.5, memory (3+1)/8 = 0.5 -> 100; without 0 vs 3/8 -> 81 -> 50 + 69/2 = 84:
    # the fuller node wins because the pod balances it.
    assert plugin_scores(res["cpu-heavy"], "NodeResourcesBalancedAllocation") == {"n-empty": 65,
                                                                                   "n-memory-heavy": 84}
    assert res["cpu-heavy"]["node"] == "n-memory-heavy"
    # A best-effort pod is skipped by PreScore (upstream #129138): no score at all, ties broken by name.
    assert res["best-effort"]["scores"] == {"n-empty": {"total": 0}, "n-memory-heavy": {"total": 0}}
    assert res["best-effort"]["node"] == "n-empty"


# ----- ImageLocality ------------------------------------------------------------------------------


def test_image_locality(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    size = 1023 * MiB
    cluster = [
        sched_node("n1").image(["registry.example/app:v1"], size).api(),
        sched_node("n2").image(["docker.io/library/nginx@sha256:0123", "nginx:latest"], size).api(),
    ]
    pods = [make_pod().name(n).scheduler_name("py-scheduler").container(make_container().image(image)).api()
            for n, image in (("app", "registry.example/app:v1"), ("web", "nginx"), ("other", "busybox"))]
    res = simulate(tmp_path, capsys, cluster, pods, profile("ImageLocality"))
    # Image on 1 of 2 nodes: scaled size = 1023 MiB · 1/2 = 511.5 MiB; clamp to [23, 1000] MiB per container;
    # score = 100·(511.5 - 23)/(1000 - 23) = 50 exactly. A node without the image: below 23 MiB -> 0.
    assert plugin_scores(res["app"], "ImageLocality") == {"n1": 50, "n2": 0}
    assert res["app"]["node"] == "n1"
    # "nginx" is normalized to "nginx:latest", one of n2's image names.
    assert plugin_scores(res["web"], "ImageLocality") == {"n1": 0, "n2": 50}
    assert res["web"]["node"] == "n2"
    assert plugin_scores(res["other"], "ImageLocality") == {"n1": 0, "n2": 0}


# ----- TaintToleration ----------------------------------------------------------------------------


def test_taint_toleration_filter_and_prefer_no_schedule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    soft1 = {"key": "soft1", "value": "x", "effect": "PreferNoSchedule"}
    soft2 = {"key": "soft2", "value": "y", "effect": "PreferNoSchedule"}
    cluster = [
        sched_node("n-clean").api(),
        sched_node("n-dedicated").labels({"pool": "gpu"}).taints([{"key": "dedicated", "value": "gpu",
                                                                   "effect": "NoSchedule"}]).api(),
        sched_node("n-soft1").taints([soft1]).api(),
        sched_node("n-soft2").taints([soft1, soft2]).api(),
    ]
    pods = [
        sched_pod("plain").api(),
        sched_pod("tolerates-soft1").tolerations([{"key": "soft1", "operator": "Exists",
                                                   "effect": "PreferNoSchedule"}]).api(),
        sched_pod("gpu").node_selector({"pool": "gpu"}).tolerations([{"key": "dedicated", "operator": "Equal",
                                                                "value": "gpu", "effect": "NoSchedule"}]).api(),
        sched_pod("gpu-no-toleration").node_selector({"pool": "gpu"}).api(),
    ]
    res = simulate(tmp_path, capsys, cluster, pods, profile(("TaintToleration", 3), "NodeAffinity"))
    # Filter: the NoSchedule taint is not tolerated (UnschedulableAndUnresolvable).
    assert filtered(res["plain"]) == {"n-dedicated": ("TaintToleration", "node(s) had untolerated taint(s)")}
    # Score: untolerated PreferNoSchedule taints, 0/1/2, reverse-normalized: 100 - 100·c/max(c) = 100, 50, 0.
    assert plugin_scores(res["plain"], "TaintToleration") == {"n-clean": 100, "n-soft1": 50, "n-soft2": 0}
    assert res["plain"]["scores"]["n-soft1"]["total"] == 150  # weight 3; NodeAffinity skips (no preferred terms)
    assert res["plain"]["node"] == "n-clean"
    # Tolerating soft1: counts 0/0/1 -> 100, 100, 0.
    assert plugin_scores(res["tolerates-soft1"], "TaintToleration") == {"n-clean": 100, "n-soft1": 100,
                                                                         "n-soft2": 0}
    assert res["gpu"]["node"] == "n-dedicated"
    # The filters run in profile order: the tainted node fails TaintToleration, the others NodeAffinity.
    assert res["gpu-no-toleration"]["message"] == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), "
        "3 node(s) didn't match Pod's node affinity/selector.")


# ----- NodeAffinity -------------------------------------------------------------------------------


def test_node_affinity_required_and_preferred(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = [
        sched_node("n1").labels({"disk": "ssd", ZONE: "a"}).api(),
        sched_node("n2").labels({"disk": "hdd", ZONE: "b"}).api(),
        sched_node("n3").labels({"disk": "ssd", ZONE: "b"}).api(),
        sched_node("n4").labels({ZONE: "c"}).api(),
    ]

    def expr(key: str, op: str, *values: str) -> dict[str, Any]:
        return {"key": key, "operator": op, "values": list(values)}

    def affinity(required: Sequence[Mapping[str, Any]] = (), preferred: Sequence[tuple[int, Any]] = (),
                 fields: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        na: dict[str, Any] = {}
        if required or fields:
            term: dict[str, Any] = {}
            if required:
                term["matchExpressions"] = list(required)
            if fields:
                term["matchFields"] = list(fields)
            na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
        if preferred:
            na["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "preference": {"matchExpressions": [e]}} for w, e in preferred]
        return {"nodeAffinity": na}

    pods = [
        sched_pod("both").affinity(affinity([expr("disk", "In", "ssd", "hdd")],
                                      [(20, expr("disk", "In", "ssd")), (60, expr(ZONE, "In", "b"))])).api(),
        sched_pod("selector-and-affinity").affinity(affinity([expr(ZONE, "NotIn",
                                                                   "b")])).node_selector({"disk": "ssd"}).api(),
        sched_pod("by-field").affinity(affinity(fields=[expr("metadata.name", "In", "n2")])).api(),
        sched_pod("nowhere").node_selector({"disk": "nvme"}).api(),
    ]
    res = simulate(tmp_path, capsys, cluster, pods, profile(("NodeAffinity", 2)))
    reason = ("NodeAffinity", "node(s) didn't match Pod's node affinity/selector")
    assert filtered(res["both"]) == {"n4": reason}
    # Preferred: sum of matching weights, n1 20, n2 60, n3 80; normalized 100·s/max: 25, 75, 100.
    assert plugin_scores(res["both"], "NodeAffinity") == {"n1": 25, "n2": 75, "n3": 100}
    assert res["both"]["scores"]["n3"]["total"] == 200
    assert res["both"]["node"] == "n3"
    # nodeSelector AND required affinity: only n1 (ssd, zone a).
    assert res["selector-and-affinity"]["node"] == "n1"
    assert filtered(res["selector-and-affinity"]) == {"n2": reason, "n3": reason, "n4": reason}
    # matchFields metadata.name: PreFilter narrows the candidates to n2.
    assert res["by-field"]["node"] == "n2"
    assert res["nowhere"]["node"] is None
    assert res["nowhere"]["message"] == "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."


# ----- NodePorts ----------------------------------------------------------------------------------


def test_node_ports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def port_pod(name: str, port: int, protocol: str = "TCP") -> PodWrapper:
        return make_pod().name(name).scheduler_name("py-scheduler").host_port(port, protocol=protocol)

    cluster = [sched_node("n1").api(), sched_node("n2").api(), port_pod("existing", 8080).node("n1").api()]
    pods = [port_pod("first", 8080).api(), port_pod("second", 8080).api(), port_pod("udp", 8080, "UDP").api(),
            make_pod().name("other-port").scheduler_name("py-scheduler").host_port(9090).api()]
    res = simulate(tmp_path, capsys, cluster, pods, profile("NodePorts", EQUAL))
    reason = "node(s) didn't have free ports for the requested pod ports"
    assert filtered(res["first"]) == {"n1": ("NodePorts", reason)}
    assert res["first"]["node"] == "n2"
    # Both nodes now hold 8080/TCP on 0.0.0.0.
    assert res["second"]["node"] is None
    assert res["second"]["message"] == f"0/2 nodes are available: 2 {reason}."
    # Another protocol or port does not conflict (EqualPriority ties: n1 by name).
    assert res["udp"]["node"] == "n1" and res["udp"]["filtered"] == {}
    assert res["other-port"]["node"] == "n1"


# ----- NodeUnschedulable --------------------------------------------------------------------------


def test_node_unschedulable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = [sched_node("n-cordoned").unschedulable(True).api(), sched_node("n-open", cpu="1").api()]
    pods = [
        sched_pod("plain").api(),
        sched_pod("tolerant", cpu="2").tolerations([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                              "effect": "NoSchedule"}]).api(),
        sched_pod("big", cpu="2").api(),
    ]
    res = simulate(tmp_path, capsys, cluster, pods, profile("NodeUnschedulable", "NodeResourcesFit"))
    assert filtered(res["plain"]) == {"n-cordoned": ("NodeUnschedulable", "node(s) were unschedulable")}
    assert res["plain"]["node"] == "n-open"
    # Tolerating the unschedulable taint lets a pod onto a cordoned node (n-open is too small for 2 cpus).
    assert res["tolerant"]["node"] == "n-cordoned"
    assert res["big"]["message"] == "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable."


# ----- NodeName -----------------------------------------------------------------------------------


def test_node_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NodeName rejects only nodes other than a non-empty spec.nodeName. A pod that already names its node is
    assigned: the scheduler never runs a cycle for it (no filter verdicts, no node chosen). An empty nodeName
    passes everywhere."""
    cluster = [sched_node("n1", cpu="1").api(), sched_node("n2", cpu="1").api()]
    pods = [sched_pod("assigned", cpu="500m").node("n2").api(), sched_pod("free", cpu="500m").node("").api()]
    res = simulate(tmp_path, capsys, cluster, pods, profile("NodeName", EQUAL))
    assert res["assigned"]["node"] is None and res["assigned"]["filtered"] == {} and res["assigned"]["scores"] == {}
    assert res["free"]["node"] == "n1"
    assert res["free"]["filtered"] == {}
    assert res["free"]["scores"] == {"n1": {"EqualPriority": 1, "total": 1}, "n2": {"EqualPriority": 1, "total": 1}}


# ----- InterPodAffinity ---------------------------------------------------------------------------


def test_inter_pod_affinity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = [
        sched_node("n1").labels({ZONE: "a"}).api(), sched_node("n2").labels({ZONE: "a"}).api(),
        sched_node("n3").labels({ZONE: "b"}).api(), sched_node("n4").labels({ZONE: "b"}).api(),
        sched_pod("db", node_name="n1").labels({"app": "db"}).api(),
        sched_pod("cache", node_name="n3").labels({"app": "cache"}).api(),
        # An existing pod that keeps app=anti pods off its node.
        sched_pod("loner", node_name="n4").labels({"app": "loner"}).affinity({"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "anti"}}, "topologyKey": HOSTNAME}]}}).api(),
    ]

    def term(app: Sequence[str], key: str) -> dict[str, Any]:
        return {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": list(app)}]},
                "topologyKey": key}

    pods = [
        sched_pod("web")
        .labels({"app": "web"})
        .affinity({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(["db"], ZONE)]}})
        .api(),
        sched_pod("pref")
        .labels({"app": "pref"})
        .affinity(
            {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 10, "podAffinityTerm": term(["cache"], ZONE)}
                    ]
                },
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "podAffinityTerm": term(["db"], HOSTNAME)}
                    ]
                },
            }
        )
        .api(),
        sched_pod("anti")
        .labels({"app": "anti"})
        .affinity({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(["db", "anti"], ZONE)]}})
        .api(),
        sched_pod("anti-2")
        .labels({"app": "anti"})
        .affinity({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(["db", "anti"], ZONE)]}})
        .api(),
    ]
    res = simulate(tmp_path, capsys, cluster, pods, profile(("InterPodAffinity", 2)))
    # web: required affinity to app=db by zone: only zone a (db on n1). Unresolvable for zone b.
    affinity_reason = ("InterPodAffinity", "node(s) didn't match pod affinity rules")
    assert filtered(res["web"]) == {"n3": affinity_reason, "n4": affinity_reason}
    assert res["web"]["node"] == "n1"
    # pref: +10 for every node in cache's zone (b), -5 for db's host (n1): n1 -5, n2 0, n3 10, n4 10.
    # Normalized 100·(s - min)/(max - min): n1 0, n2 100·5/15 = 33, n3 100, n4 100.
    # (web, now on n1, has only a required affinity term that pref does not match: it adds nothing.)
    assert plugin_scores(res["pref"], "InterPodAffinity") == {"n1": 0, "n2": 33, "n3": 100, "n4": 100}
    assert res["pref"]["node"] == "n3"
    # anti: own anti-affinity to app in (db, anti) by zone excludes zone a; loner's anti-affinity excludes n4.
    assert filtered(res["anti"]) == {
        "n1": ("InterPodAffinity", "node(s) didn't match pod anti-affinity rules"),
        "n2": ("InterPodAffinity", "node(s) didn't match pod anti-affinity rules"),
        "n4": ("InterPodAffinity", "node(s) didn't satisfy existing pods anti-affinity rules"),
    }
    assert res["anti"]["node"] == "n3"
    # anti-2: zone b now holds an app=anti pod too; the pod's own rule is checked first on every node.
    assert res["anti-2"]["message"] == "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules."


# ----- PodTopologySpread --------------------------------------------------------------------------


def test_pod_topology_spread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    web = {"app": "web"}
    cluster = [
        sched_node("n1").labels({ZONE: "a"}).api(),
        sched_node("n2").labels({ZONE: "a"}).api(),
        sched_node("n3").labels({ZONE: "b"}).api(),
        sched_node("n-nozone").api(),
        sched_pod("w1", node_name="n1").labels(web).api(),
        sched_pod("w2", node_name="n1").labels(web).api(),
        sched_pod("w3", node_name="n2").labels(web).api(),
    ]

    def constraint(key: str, when: str, skew: int = 1) -> dict[str, Any]:
        return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": web}}

    pods = [
        sched_pod("zone-hard").labels(web).spec_field("topologySpreadConstraints",
                                                      [constraint(ZONE, "DoNotSchedule")]).api(),
        sched_pod("host-soft").labels(web).spec_field("topologySpreadConstraints",
                                                      [constraint(HOSTNAME, "ScheduleAnyway")]).api(),
        sched_pod("zone-hard-2").labels(web).spec_field("topologySpreadConstraints",
                                                        [constraint(ZONE, "DoNotSchedule")]).api(),
    ]
    res = simulate(tmp_path, capsys, cluster, pods, profile(("PodTopologySpread", 2)))
    # zone-hard: zone a has 3 matching pods, zone b 0 (min). Zone a: 3 + 1 - 0 = 4 > maxSkew 1.
    # n-nozone lacks the key: UnschedulableAndUnresolvable "(missing required label)".
    skew = "node(s) didn't match pod topology spread constraints"
    assert filtered(res["zone-hard"]) == {
        "n1": ("PodTopologySpread", skew),
        "n2": ("PodTopologySpread", skew),
        "n-nozone": ("PodTopologySpread", skew + " (missing required label)"),
    }
    assert res["zone-hard"]["node"] == "n3"
    # host-soft: counts per host n1 2, n2 1, n3 1, n-nozone 0; weight ln(4 nodes + 2) = 1.7918;
    # raw round(c·w) = 4, 2, 2, 0; normalized 100·(max + min - s)/max = 0, 50, 50, 100.
    assert plugin_scores(res["host-soft"], "PodTopologySpread") == {"n1": 0, "n2": 50, "n3": 50, "n-nozone": 100}
    assert res["host-soft"]["node"] == "n-nozone"
    # zone-hard-2: zone a 3, zone b 1 -> a: 3 + 1 - 1 = 3 > 1 still; b: 1 + 1 - 1 = 1 fits.
    assert res["zone-hard-2"]["node"] == "n3"


# ----- SelectorSpread (seed era) ------------------------------------------------------------------

SIX_NODES_THREE_ZONES = [sched_node(f"n{i}").labels({ZONE: "zone-" + "abc"[(i - 1) // 2]}).api() for i in range(1, 7)]
SELECTOR_SPREAD = profile(("SelectorSpread", 1))


def test_selector_spread_service_spreads_across_zones_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """n1, n2 in zone-a, n3, n4 in zone-b, n5, n6 in zone-c; six pods of one Service.

    Per node with c pods of the group: node = 100·(maxNode - c)/maxNode, zone = 100·(maxZone - z)/maxZone,
    score = int(node/3 + 2·zone/3). Name order alone would fill zone-a first (n1, n2); zone weighting
    sends the second pod to zone-b, the third to zone-c, then round again."""
    web = {"app": "web"}
    cluster = [*SIX_NODES_THREE_ZONES, service("web", web)]
    pods = [sched_pod(f"web-{i}").labels(web).api() for i in range(6)]
    res = simulate(tmp_path, capsys, cluster, pods, SELECTOR_SPREAD)
    assert placements(res) == {"web-0": "n1", "web-1": "n3", "web-2": "n5", "web-3": "n2", "web-4": "n4",
                               "web-5": "n6"}
    # web-1: n1 has 1 pod (node 0, zone 0) -> 0; n2 node 100, zone 0 -> 33; others 100.
    assert plugin_scores(res["web-1"], "SelectorSpread") == {"n1": 0, "n2": 33, "n3": 100, "n4": 100, "n5": 100,
                                                             "n6": 100}
    # web-4: n1, n3, n5, n2 hold one each; zones a 2, b 1, c 1. n4/n6: node 100, zone 100·1/2 = 50 -> 66;
    # n3/n5: node 0, zone 50 -> 33; n1/n2: node 0, zone 0 -> 0.
    assert plugin_scores(res["web-4"], "SelectorSpread") == {"n1": 0, "n2": 0, "n3": 33, "n4": 66, "n5": 33,
                                                             "n6": 66}


def test_selector_spread_replicaset_and_pods_of_other_workloads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The group is the pod's controlling ReplicaSet's selector; pods without that owner still count when they
    match the selector, and pods of other labels never do. A pod with topologySpreadConstraints is skipped."""
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "api", "namespace": "default"},
          "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "api"}},
                   "template": {"metadata": {"labels": {"app": "api"}}, "spec": {"containers": []}}}}
    cluster = [
        *SIX_NODES_THREE_ZONES,
        rs,
        sched_pod("api-old", node_name="n3").labels({"app": "api"}).api(),  # matches the selector: counts
        sched_pod("noise-1", node_name="n5").labels({"app": "noise"}).api(),
        sched_pod("noise-2", node_name="n6").labels({"app": "noise"}).api(),
    ]
    pods = [
        sched_pod("api-0").labels({"app": "api"}).owner_reference("api", "ReplicaSet", uid="uid-api").api(),
        sched_pod("api-1").labels({"app": "api"}).owner_reference("api", "ReplicaSet", uid="uid-api").api(),
        sched_pod("spread-own")
        .labels({"app": "api"})
        .owner_reference("api", "ReplicaSet", uid="uid-api")
        .spec_field(
            "topologySpreadConstraints",
            [
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "api"}},
                }
            ],
        )
        .api(),
    ]
    res = simulate(tmp_path, capsys, cluster, pods, SELECTOR_SPREAD)
    # api-0: zone-b has api-old; n5 and n6 (zone-c, noise does not count) and n1, n2 tie at 100 -> n1.
    assert plugin_scores(res["api-0"], "SelectorSpread") == {"n1": 100, "n2": 100, "n3": 0, "n4": 33, "n5": 100,
                                                             "n6": 100}
    assert res["api-0"]["node"] == "n1"
    # api-1: zones a 1, b 1, c 0 -> zone-c, n5 first by name.
    assert res["api-1"]["node"] == "n5"
    # Explicit constraints: SelectorSpread's PreScore skips the pod, no SelectorSpread score anywhere.
    assert plugin_scores(res["spread-own"], "SelectorSpread") == {}


# ----- ServiceAffinity / ServiceAntiAffinity (seed era) -------------------------------------------


def test_service_affinity_keeps_a_service_in_one_region(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svc = {"app": "svc"}
    cluster = [
        sched_node("n1").labels({REGION: "r1"}).api(),
        sched_node("n2").labels({REGION: "r1"}).api(),
        sched_node("n3").labels({REGION: "r2"}).api(),
        sched_node("n4").labels({REGION: "r2"}).api(),
        service("svc", svc),
        sched_pod("first", node_name="n3").labels(svc).api(),
    ]
    pods = [
        sched_pod("follower").labels(svc).api(),
        sched_pod("pinned").labels(svc).node_selector({REGION: "r1"}).api(),
        sched_pod("no-service").labels({"app": "lonely"}).api(),
    ]
    config = profile("ServiceAffinity", EQUAL, args={"ServiceAffinity": {"affinityLabels": [REGION]}})
    res = simulate(tmp_path, capsys, cluster, pods, config)
    reason = ("ServiceAffinity", "node(s) didn't match service affinity")
    # follower pins no region: the region is back-filled from the node of the service's first pod (n3: r2).
    assert filtered(res["follower"]) == {"n1": reason, "n2": reason}
    assert res["follower"]["node"] == "n3"
    # A nodeSelector value for the label wins over the back-filled one.
    assert filtered(res["pinned"]) == {"n3": reason, "n4": reason}
    assert res["pinned"]["node"] == "n1"
    # No Service selects the pod: nothing to back-fill, every node passes.
    assert res["no-service"]["filtered"] == {} and res["no-service"]["node"] == "n1"


def test_service_anti_affinity_spreads_over_a_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svc = {"app": "svc"}
    cluster = [
        sched_node("n1").labels({ZONE: "a"}).api(),
        sched_node("n2").labels({ZONE: "a"}).api(),
        sched_node("n3").labels({ZONE: "b"}).api(),
        sched_node("n4").api(),
        service("svc", svc),
        sched_pod("s1", node_name="n1").labels(svc).api(),
        sched_pod("s2", node_name="n1").labels(svc).api(),
        sched_pod("s3", node_name="n3").labels(svc).api(),
    ]
    config = profile("ServiceAntiAffinity", args={"ServiceAntiAffinity": {"antiAffinityLabelsPreference": [ZONE]}})
    res = simulate(tmp_path, capsys, cluster, [sched_pod("new").labels(svc).api()], config)
    # N = 3 service pods on scored nodes; zone a holds 2, zone b 1. Score 100·(N - C(zone))/N:
    # n1, n2 -> 33 (n2 is empty but its zone is not), n3 -> 66; n4 has no zone label -> 0.
    assert plugin_scores(res["new"], "ServiceAntiAffinity") == {"n1": 33, "n2": 33, "n3": 66, "n4": 0}
    assert res["new"]["node"] == "n3"


# ----- a seed-era profile -------------------------------------------------------------------------


def test_seed_era_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CheckNodeCondition + PodFitsResources (NodeResourcesFit as a filter only) + LeastRequestedPriority +
    BalancedResourceAllocation, weights 1: the v1.16 default provider's core, with v1.16 non-zero requests
    (100m / 200Mi for a container without requests) in both priorities."""
    config = profile("CheckNodeCondition", "NodeResourcesFit", "LeastRequestedPriority", "BalancedResourceAllocation",
                     score={"disabled": [{"name": "NodeResourcesFit"}]})
    cluster = [
        sched_node("n1").condition("Ready", "True").api(),
        sched_node("n2").condition("Ready", "False").api(),
        sched_node("n3", cpu="2", memory="4Gi").condition("Ready", "True").condition("NetworkUnavailable",
                                                                                     "True").api(),
        sched_node("n4", memory="4Gi").condition("Ready", "True").condition("NetworkUnavailable", "False").api(),
        sched_pod("existing", cpu="1", memory="6Gi", node_name="n1").api(),
    ]
    pods = [sched_pod("sized", cpu="1", memory="1Gi").api(), sched_pod("best-effort").api(),
            sched_pod("too-big", cpu="5").api()]
    res = simulate(tmp_path, capsys, cluster, pods, config)
    assert filtered(res["sized"]) == {"n2": ("CheckNodeCondition", "node(s) were not ready"),
                                      "n3": ("CheckNodeCondition", "node(s) had unavailable network")}
    # sized, n1: cpu 2000/4000 -> (4000-2000)·100/4000 = 50; memory 7/8Gi -> 12 (12.5); least = (50+12)/2 = 31.
    #   balanced: |0.5 - 0.875| = 0.375 -> int(62.5) = 62.  n1 total 93.
    # sized, n4: cpu 1000/4000 -> 75; memory 1/4Gi -> 75; least 75; balanced |0.25 - 0.25| -> 100. n4 total 175.
    assert res["sized"]["scores"] == {
        "n1": {"LeastRequestedPriority": 31, "BalancedResourceAllocation": 62, "total": 93},
        "n4": {"LeastRequestedPriority": 75, "BalancedResourceAllocation": 100, "total": 175},
    }
    assert res["sized"]["node"] == "n4"
    # best-effort counts as 100m / 200Mi.
    # n1: cpu 1100/4000 -> 72 (72.5); memory 6144+200 = 6344 of 8192Mi -> 22 (22.56); least 47;
    #     balanced 1 - |0.275 - 0.7744| = 0.5006 -> 50.  total 97.
    # n4: cpu 1000+100 = 1100/4000 -> 72; memory 1024+200 = 1224 of 4096Mi -> 70 (70.1); least 71;
    #     balanced 1 - |0.275 - 0.2988| = 0.9762 -> 97.  total 168.
    assert res["best-effort"]["scores"] == {
        "n1": {"LeastRequestedPriority": 47, "BalancedResourceAllocation": 50, "total": 97},
        "n4": {"LeastRequestedPriority": 71, "BalancedResourceAllocation": 97, "total": 168},
    }
    assert res["best-effort"]["node"] == "n4"
    # CheckNodeCondition runs first; the two healthy nodes are too small.
    assert res["too-big"]["message"] == ("0/4 nodes are available: 1 node(s) had unavailable network, "
                                         "1 node(s) were not ready, 2 Insufficient cpu.")


# ----- volume plugins -----------------------------------------------------------------------------


def bound_claim(name: str, pv: str, pv_labels: Mapping[str, str] | None = None,
                csi: tuple[str, str] | None = None) -> list[dict[str, Any]]:
    """A PVC bound to a PV (hostPath, or CSI driver/handle)."""
    source: dict[str, Any] = {"hostPath": {"path": f"/data/{pv}"}}
    if csi:
        source = {"csi": {"driver": csi[0], "volumeHandle": csi[1]}}
    pv_obj = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv, "labels": dict(pv_labels or {})},
              "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], **source,
                       "claimRef": {"namespace": "default", "name": name}},
              "status": {"phase": "Bound"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                    "volumeName": pv, "storageClassName": ""},
           "status": {"phase": "Bound"}}
    return [pv_obj, pvc]


def claim(name: str) -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": name}}


def test_volume_restrictions_gce_pd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def pd(read_only: bool) -> list[dict[str, Any]]:
        return [{"name": "data", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": read_only}}]

    cluster = [sched_node("n1").api(), sched_node("n2").api(),
               sched_pod("writer", node_name="n1").spec_field("volumes", pd(False)).api()]
    pods = [sched_pod("second-writer").spec_field("volumes", pd(False)).api(),
            sched_pod("third-writer").spec_field("volumes", pd(False)).api()]
    res = simulate(tmp_path, capsys, cluster, pods, profile("VolumeRestrictions", EQUAL))
    # The same GCE PD mounted read-write elsewhere: that node is out.
    reason = "node(s) had no available disk"
    assert filtered(res["second-writer"]) == {"n1": ("VolumeRestrictions", reason)}
    assert res["second-writer"]["node"] == "n2"
    assert res["third-writer"]["message"] == f"0/2 nodes are available: 2 {reason}."


def test_volume_zone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = [sched_node("n1").labels({ZONE: "a"}).api(), sched_node("n2").labels({ZONE: "b"}).api(),
               sched_node("n3").labels({ZONE: "b"}).api(),
               *bound_claim("data", "pv-b", {ZONE: "b"})]
    res = simulate(tmp_path, capsys, cluster, [sched_pod("user").spec_field("volumes", [claim("data")]).api()],
                   profile("VolumeZone", EQUAL))
    # The bound PV is labelled zone b: zone-a nodes cannot attach it.
    assert filtered(res["user"]) == {"n1": ("VolumeZone", "node(s) had no available volume zone")}
    assert res["user"]["node"] == "n2"


def test_node_volume_limits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    driver = "ebs.csi.aws.com"
    csinode = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n1"},
               "spec": {"drivers": [{"name": driver, "nodeID": "n1", "allocatable": {"count": 1}}]}}
    cluster = [sched_node("n1").api(), sched_node("n2").api(), csinode,
               *bound_claim("one", "pv-1", csi=(driver, "vol-1")), *bound_claim("two", "pv-2", csi=(driver, "vol-2")),
               sched_pod("holder", node_name="n1").spec_field("volumes", [claim("one")]).api()]
    res = simulate(tmp_path, capsys, cluster, [sched_pod("user").spec_field("volumes", [claim("two")]).api()],
                   profile("NodeVolumeLimits", EQUAL))
    # n1 allows one volume of the driver and already has vol-1; n2 has no CSINode (no limit).
    assert filtered(res["user"]) == {"n1": ("NodeVolumeLimits", "node(s) exceed max volume count")}
    assert res["user"]["node"] == "n2"


def test_node_volume_limits_counts_volume_attachments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    driver = "ebs.csi.aws.com"
    csinodes = [{"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": n},
                 "spec": {"drivers": [{"name": driver, "nodeID": n, "allocatable": {"count": 1}}]}}
                for n in ("n1", "n2")]
    attachment = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "va-1"},
                  "spec": {"attacher": driver, "nodeName": "n1", "source": {"persistentVolumeName": "pv-1"}}}
    cluster = [sched_node("n1").api(), sched_node("n2").api(), *csinodes, attachment,
               *bound_claim("one", "pv-1", csi=(driver, "vol-1")), *bound_claim("two", "pv-2", csi=(driver, "vol-2"))]
    res = simulate(tmp_path, capsys, cluster, [sched_pod("user").spec_field("volumes", [claim("two")]).api()],
                   profile("NodeVolumeLimits", EQUAL))
    # No pod uses vol-1, but it is still attached to n1 (e.g. being detached): n1's one slot is taken.
    assert filtered(res["user"]) == {"n1": ("NodeVolumeLimits", "node(s) exceed max volume count")}
    assert res["user"]["node"] == "n2"


# ----- DefaultPreemption (default profile) --------------------------------------------------------


def test_default_preemption_victims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """n1 (2 cpu) runs low-a (priority 10, 1 cpu) and low-b (20, 800m); n2 (2 cpu) runs mid (500, 1500m).

    The preemptor (1000, 1 cpu) fits nowhere. Per node, remove every lower-priority pod, then reprieve them
    from the most important down while the preemptor still fits: n1 keeps low-b (800m + 1 cpu <= 2) and
    loses low-a; n2 loses mid. Between candidates the lowest highest-victim priority wins: n1 (10 < 500)."""
    cluster = [
        sched_node("n1", cpu="2").api(), sched_node("n2", cpu="2").api(),
        sched_pod("low-a", cpu="1", node_name="n1").priority(10).api(), sched_pod("low-b", cpu="800m",
                                                                                  node_name="n1").priority(20).api(),
        sched_pod("mid", cpu="1500m", node_name="n2").priority(500).api(),
    ]
    pods = [
        sched_pod("preemptor", cpu="1").priority(1000).api(),
        sched_pod("equal", cpu="1500m").priority(0).api(),
        sched_pod("polite", cpu="1500m").priority(2000).preemption_policy("Never").api(),
    ]
    res = simulate(tmp_path, capsys, cluster, pods)
    assert res["preemptor"]["victims"] == ["default/low-a"]
    assert res["preemptor"]["node"] == "n1"
    # equal (priority 0): n1 has 200m free, n2 500m; no pod anywhere has a lower priority.
    assert res["equal"]["node"] is None and res["equal"]["victims"] == []
    assert res["equal"]["message"] == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
        "available: 2 No preemption victims found for incoming pod.")
    # preemptionPolicy Never: PostFilter says so and nobody is evicted.
    assert res["polite"]["victims"] == []
    assert res["polite"]["message"] == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: "
        "not eligible due to preemptionPolicy=Never.")


def test_priority_classes_resolve_pods_priorities(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PriorityClasses in the cluster file: pods get their class's value (or the global default's), as the
    API server's Priority admission gives them; a pod naming a missing class is refused with its message."""
    def pclass(name: str, value: int, **extra: Any) -> dict[str, Any]:
        return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value, **extra}

    cluster = [sched_node("n1", cpu="2").api(), pclass("batch", 10, globalDefault=True), pclass("urgent", 1000),
               pclass("urgent-polite", 1000, preemptionPolicy="Never"),
               sched_pod("running", cpu="2", node_name="n1").api()]  # no class: the global default's 10
    pods = [
        sched_pod("polite", cpu="1").priority_class_name("urgent-polite").api(),
        sched_pod("same", cpu="1").api(),
        sched_pod("urgent", cpu="1").priority_class_name("urgent").api(),
        sched_pod("typo", cpu="1").priority_class_name("urgnet").api(),
    ]
    (tmp_path / "cluster.yaml").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": cluster}))
    (tmp_path / "pods.yaml").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))
    code = main(["--log-level", "ERROR", "simulate", "--cluster", str(tmp_path / "cluster.yaml"),
                 "--pods", str(tmp_path / "pods.yaml"), "--tie-break", "name", "--output", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    res = {r["pod"].split("/", 1)[1]: r for r in doc["results"]}
    refusal = 'pods "typo" is forbidden: no PriorityClass with name urgnet was found'
    assert doc["invalid"] == [refusal]
    assert res["typo"]["node"] is None and refusal in res["typo"]["message"]
    # priority 1000 but its class says Never: no preemption.
    assert res["polite"]["message"].endswith("preemption: not eligible due to preemptionPolicy=Never.")
    # the default class's 10, like the running pod: nothing to preempt.
    assert res["same"]["victims"] == [] and res["same"]["node"] is None
    # 1000 > 10: the running pod is evicted.
    assert res["urgent"]["victims"] == ["default/running"] and res["urgent"]["node"] == "n1"
