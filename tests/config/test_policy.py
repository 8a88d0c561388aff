"""The seed-era Policy: translation to a profile (upstream's v1.21 legacy registry), validation naming
the field, and the seed article's example decided through `simulate --policy-config-file`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.app.cli import load_configuration, parser
from scheduler.config.errors import ConfigError
from scheduler.config.policy import load_policy_text
from scheduler.config.types import Profile
from scheduler.config.types_pluginargs import NodeLabelArgs, ResourceSpec, UtilizationShapePoint
from scheduler.testing import make_container, make_pod
from scheduler.whatif.simulate import run_simulation
from tests.builders import sched_node, sched_pod


def policy(**fields: Any) -> str:
    return json.dumps({"kind": "Policy", "apiVersion": "v1", **fields})


def names(profile: Profile, point: str) -> list[str]:
    return [r.name for r in profile.plugins.get(point, [])]


def weights(profile: Profile) -> dict[str, int]:
    return {r.name: r.weight for r in profile.plugins["score"]}


def test_predicates_and_priorities_map_to_plugins_in_upstream_order() -> None:
    cfg = load_policy_text(policy(
        predicates=[{"name": "MatchInterPodAffinity"}, {"name": "PodFitsResources"}, {"name": "HostName"},
                    {"name": "PodFitsPorts"}],
        priorities=[{"name": "LeastRequestedPriority", "weight": 1}, {"name": "NodeAffinityPriority", "weight": 3},
                    {"name": "EqualPriority", "weight": 5}],
    ), "policy.json")
    [p] = cfg.profiles
    assert p.scheduler_name == "py-scheduler"
    # predicateOrdering: CheckNodeUnschedulable (mandatory), HostName, PodFitsHostPorts, PodFitsResources,
    # PodToleratesNodeTaints (mandatory), MatchInterPodAffinity.
    assert names(p, "filter") == ["NodeUnschedulable", "NodeName", "NodePorts", "NodeResourcesFit",
                                  "TaintToleration", "InterPodAffinity"]
    assert names(p, "preFilter") == ["NodePorts", "NodeResourcesFit", "InterPodAffinity"]
    assert weights(p) == {"LeastRequestedPriority": 1, "NodeAffinity": 3}  # EqualPriority skipped
    assert names(p, "preScore") == ["NodeAffinity"]
    assert names(p, "queueSort") == ["PrioritySort"] and names(p, "bind") == ["DefaultBinder"]
    assert names(p, "postFilter") == ["DefaultPreemption"] and names(p, "preEnqueue") == ["SchedulingGates"]
    assert not p.run_all_filters


def test_omitted_lists_take_upstream_defaults() -> None:
    [p] = load_policy_text(policy(), "p").profiles
    assert weights(p) == {"SelectorSpread": 1, "InterPodAffinity": 1, "LeastRequestedPriority": 1,
                          "BalancedResourceAllocation": 1, "NodePreferAvoidPods": 10000, "NodeAffinity": 1,
                          "TaintToleration": 1, "ImageLocality": 1, "PodTopologySpread": 2}
    assert names(p, "filter") == ["NodeUnschedulable", "NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity",
                                  "VolumeRestrictions", "TaintToleration", "NodeVolumeLimits", "VolumeBinding",
                                  "VolumeZone", "PodTopologySpread", "InterPodAffinity"]
    [empty] = load_policy_text(policy(predicates=[], priorities=[]), "p").profiles
    assert names(empty, "filter") == ["NodeUnschedulable", "TaintToleration"] and "score" not in {
        pt for pt, refs in empty.plugins.items() if refs}


def test_custom_arguments_weights_and_globals() -> None:
    cfg = load_policy_text(yaml.safe_dump({
        "kind": "Policy", "apiVersion": "v1",
        "predicates": [
            {"name": "zone", "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}}},
            {"name": "retiring", "argument": {"labelsPresence": {"labels": ["retiring"], "presence": False}}},
            {"name": "svc", "argument": {"serviceAffinity": {"labels": ["rack"]}}}],
        "priorities": [
            {"name": "ssd", "weight": 2, "argument": {"labelPreference": {"label": "ssd", "presence": True}}},
            {"name": "spot", "weight": 2, "argument": {"labelPreference": {"label": "spot", "presence": False}}},
                       {"name": "rtcr", "weight": 3, "argument": {"requestedToCapacityRatioArguments": {
                           "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                           "resources": [{"name": "cpu", "weight": 1}]}}}],
        "hardPodAffinitySymmetricWeight": 7,
        "alwaysCheckAllPredicates": True,
        "extenders": [{"URLPrefix": "http://127.0.0.1:1/x", "FilterVerb": "f", "enableHttps": True,
                       "httpTimeout": 1500000000}],
    }), "policy.yaml")
    [p] = cfg.profiles
    assert p.plugin_config["NodeLabel"] == NodeLabelArgs(("zone",), ("retiring",), ("ssd",), ("spot",))
    assert p.plugin_config["ServiceAffinity"].affinity_labels == ("rack",)
    # Two label preferences of weight 2: one NodeLabel score plugin of weight 2 x 2.
    assert weights(p) == {"NodeLabel": 4, "NodeResourcesFit": 3}
    strategy = p.plugin_config["NodeResourcesFit"].scoring_strategy
    assert strategy.type == "RequestedToCapacityRatio"
    assert strategy.requested_to_capacity_ratio.shape[1] == UtilizationShapePoint(100, 10)
    assert strategy.resources == (ResourceSpec("cpu", 1),)
    assert p.run_all_filters
    [ext] = cfg.extenders
    assert (ext.url_prefix, ext.filter_verb, ext.enable_https, ext.http_timeout_seconds) == (
        "http://127.0.0.1:1/x", "f", True, 1.5)
    assert "InterPodAffinity" not in p.plugin_config  # hardPodAffinityWeight only matters when it scores
    [q] = load_policy_text(policy(priorities=[{"name": "InterPodAffinityPriority", "weight": 1}],
                                  hardPodAffinitySymmetricWeight=7), "p").profiles
    assert q.plugin_config["InterPodAffinity"].hard_pod_affinity_weight == 7


@pytest.mark.parametrize(("doc", "path", "words"), [
    (policy(predicates=[{"name": "PodFitsResources"}, {"name": "NoSuchPredicate"}]), "predicates[1].name",
     "predicate type not found"),
    (policy(priorities=[{"name": "LeastRequestedPriority", "weight": 0}]), "priorities[0].weight", "positive weight"),
    (policy(priorities=[{"name": "LeastRequestedPriority", "weight": "1"}]), "priorities[0].weight", "integer"),
    (policy(priorities=[{"name": "NodeLabelPriority", "weight": 1}]), "priorities[0].name", "priority type not found"),
    (policy(priorities=[{"name": "a", "weight": 1, "argument": {"labelPreference": {"label": "x"}}},
                        {"name": "b", "weight": 2, "argument": {"labelPreference": {"label": "y"}}}]),
     "priorities[1].weight", "different weight"),
    (policy(hardPodAffinitySymmetricWeight=101), "hardPodAffinitySymmetricWeight", "[0-100]"),
    (policy(predicates=[{"name": "x", "argument": {"labelsPresence": {"labels": ["bad key!"]}}}]),
     "predicates[0].argument.labelsPresence.labels[0]", "invalid value"),
    (json.dumps({"kind": "Policy", "apiVersion": "v2"}), "apiVersion", "must be 'v1'"),
    (policy(predicate=[]), "predicate", "unknown field"),
    (policy(extenders=[{"urlPrefix": "http://x", "prioritizeVerb": "p"}]), "extenders[0].weight", "positive weight"),
])
def test_invalid_policies_are_rejected_naming_the_field(doc: str, path: str, words: str) -> None:
    with pytest.raises(ConfigError) as ei:
        load_policy_text(doc, "policy.json")
    assert path in ei.value.paths, ei.value
    assert any(words in e.message for e in ei.value.errors if e.path == path), ei.value


def test_policy_and_config_together_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(policy())
    (tmp_path / "c.yaml").write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    args = parser().parse_args(["run", "--config", str(tmp_path / "c.yaml"),
                                "--policy-config-file", str(tmp_path / "p.json")])
    with pytest.raises(ConfigError, match="--config and --policy-config-file cannot be used together"):
        load_configuration(args)


# ----- the seed article (Predicates Policies / Priorities Policies, v1.16) through simulate ------------------

SEED_POLICY = {
    "kind": "Policy", "apiVersion": "v1",
    "predicates": [{"name": n} for n in ("NoDiskConflict", "NoVolumeZoneConflict", "PodFitsResources",
                                         "PodFitsHostPorts", "HostName", "MatchNodeSelector", "MaxEBSVolumeCount",
                                         "MaxGCEPDVolumeCount")],
    "priorities": [{"name": "LeastRequestedPriority", "weight": 1},
                   {"name": "BalancedResourceAllocation", "weight": 1}],
}


DATA_DISK = {"name": "data", "gcePersistentDisk": {"pdName": "data"}}
CLUSTER = [
    sched_node("n1", "4", "8Gi").api(), sched_node("n2", "4", "8Gi").api(),
    sched_node("n3", "2", "4Gi").label("disk", "ssd").api(),
    make_pod().name("busy").scheduler_name("py-scheduler").container(make_container().req(cpu="3", memory="1Gi")
                                                                      .host_port(8080)).node("n1").api(),
    sched_pod("disk-user", "1", "4Gi", node_name="n2").volume(DATA_DISK).api(),
]
PODS = [sched_pod("web", "1", "1Gi").api(), sched_pod("db", "1", "1Gi").volume(DATA_DISK).api(),
        make_pod().name("proxy").scheduler_name("py-scheduler").node_selector({"disk": "ssd"})
        .container(make_container().req(cpu="500m", memory="512Mi").host_port(8080)).api(),
        sched_pod("big", "4", "1Gi").api()]


def simulate_policy(tmp_path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(CLUSTER))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(PODS))
    (tmp_path / "policy.json").write_text(json.dumps(doc))
    results = run_simulation(str(tmp_path / "cluster.yaml"), str(tmp_path / "pods.yaml"), tie_break="name",
                             policy_path=str(tmp_path / "policy.json")).results
    return {r["pod"].split("/")[1]: r for r in results}


def test_seed_policy_gives_the_seed_articles_decisions(tmp_path: Path) -> None:
    res = simulate_policy(tmp_path, SEED_POLICY)
    # web (1 cpu, 1Gi), by the article's formulas (0..10): least = (cpu (cap-req)*10/cap + mem ...) / 2,
    # balanced = 10 - |cpuFraction - memFraction| * 10 (0 once a fraction reaches 1):
    #   n1: cpu 4/4 -> 0, mem 2/8 -> 7, least 3; cpu fraction 1 -> balanced 0; total 3
    #   n2: cpu 2/4 -> 5, mem 5/8 -> 3, least 4; |0.5 - 0.625| -> 8; total 12
    #   n3: cpu 1/2 -> 5, mem 1/4 -> 7, least 6; |0.5 - 0.25| -> 7; total 13  => n3
    # The same formulas on 0..100 (v1.17+, the legacy plugins) rank them alike:
    assert res["web"]["scores"] == {
        "n1": {"LeastRequestedPriority": 37, "BalancedResourceAllocation": 0, "total": 37},
        "n2": {"LeastRequestedPriority": 43, "BalancedResourceAllocation": 87, "total": 130},
        "n3": {"LeastRequestedPriority": 62, "BalancedResourceAllocation": 75, "total": 137},
    }
    assert res["web"]["node"] == "n3"
    # db mounts GCE PD "data" read-write, already used on n2: NoDiskConflict.
    #   n1: least 3, balanced 0 -> 3; n3 (web there): cpu 2/2 -> 0, mem 2/4 -> 5, least 2, balanced 0 -> 2 => n1
    assert res["db"]["filtered"] == {"n2": {"plugin": "VolumeRestrictions", "reason": "node(s) had no available disk"}}
    assert res["db"]["node"] == "n1"
    # proxy wants host port 8080 (taken on n1) and disk=ssd (only n3 has it): n3 is the only fit.
    assert res["proxy"]["filtered"] == {
        "n1": {"plugin": "NodePorts", "reason": "node(s) didn't have free ports for the requested pod ports"},
        "n2": {"plugin": "NodeAffinity", "reason": "node(s) didn't match Pod's node affinity/selector"}}
    assert res["proxy"]["node"] == "n3"
    # big (4 cpu) fits nowhere any more.
    assert res["big"]["node"] is None
    assert res["big"]["message"].startswith("0/3 nodes are available: 3 Insufficient cpu.")


def test_always_check_all_predicates_reports_every_reason(tmp_path: Path) -> None:
    res = simulate_policy(tmp_path, {**SEED_POLICY, "alwaysCheckAllPredicates": True})
    # n1 also lacks disk=ssd and is out of cpu by then (busy 3 + db 1): all three predicates are reported.
    assert res["proxy"]["filtered"]["n1"] == {
        "plugin": "NodePorts", "reason": "node(s) didn't have free ports for the requested pod ports, "
                                         "node(s) didn't match Pod's node affinity/selector, Insufficient cpu"}
    assert res["proxy"]["node"] == "n3"
