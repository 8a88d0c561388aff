"""Loading files: YAML, scheduler names, global fields, seed-era values, legacy and third-party plugins."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from scheduler.config.errors import ConfigError
from scheduler.config.load import build_registry, load, load_dict
from scheduler.config.registry import Registry
from scheduler.config.types import Extender, ExtenderManagedResource
from scheduler.config.types_pluginargs import SelectorSpreadArgs

from . import sample_plugins
from .helpers import doc, full_registry, names, profile, resolve, scores
from .test_defaults import EXPECTED, EXPECTED_WEIGHTS

MOD = sample_plugins.__name__


def write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "sched.yaml"
    f.write_text(textwrap.dedent(text))
    return f


def test_load_without_file_uses_requested_names() -> None:
    cfg = load(None, ["x", "y"], registry=full_registry())
    assert [p.scheduler_name for p in cfg.profiles] == ["x", "y"]


def test_load_full_file(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        """\
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        parallelism: 8
        percentageOfNodesToScore: 40
        podInitialBackoffSeconds: 2
        podMaxBackoffSeconds: 20
        enableProfiling: false
        leaderElection:
          leaderElect: true
          leaseDuration: 1m30s
          renewDeadline: 500ms
          retryPeriod: 250ms
          resourceLock: leases
          resourceNamespace: sched
          resourceName: py-sched-lock
        clientConnection:
          kubeconfig: /etc/kube/config
          qps: 100
          burst: 200
        extenders:
        - urlPrefix: http://127.0.0.1:8888/
          filterVerb: filter
          prioritizeVerb: prioritize
          weight: 2
          httpTimeout: 5s
          managedResources:
          - name: example.com/foo
        profiles:
        - schedulerName: fast
          percentageOfNodesToScore: 10
        """,
    )
    cfg = load(f, registry=full_registry())
    assert cfg.parallelism == 8
    assert cfg.percentage_of_nodes_to_score == 40
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2.0, 20.0)
    le = cfg.leader_election
    assert (le.lease_duration_seconds, le.renew_deadline_seconds, le.retry_period_seconds) == (90.0, 0.5, 0.25)
    assert (le.resource_namespace, le.resource_name) == ("sched", "py-sched-lock")
    cc = cfg.client_connection
    assert (cc.kubeconfig, cc.qps, cc.burst) == ("/etc/kube/config", 100.0, 200)
    assert cfg.extenders == [
        Extender(
            url_prefix="http://127.0.0.1:8888/",
            filter_verb="filter",
            prioritize_verb="prioritize",
            weight=2,
            http_timeout_seconds=5.0,
            managed_resources=[ExtenderManagedResource("example.com/foo")],
        )
    ]
    assert [p.scheduler_name for p in cfg.profiles] == ["fast"]
    assert cfg.profiles[0].percentage_of_nodes_to_score == 10
    assert names(cfg.profiles[0], "filter") == EXPECTED["filter"]


def test_single_unnamed_profile_gets_the_first_requested_name() -> None:
    d = doc(profiles=[{"plugins": {"score": {"disabled": [{"name": "*"}]}}}])
    assert load_dict(d, registry=full_registry()).profiles[0].scheduler_name == "py-scheduler"
    assert load_dict(d, ["mine", "other"], registry=full_registry()).profiles[0].scheduler_name == "mine"


def test_file_without_profiles_gets_one_per_requested_name() -> None:
    cfg = load_dict(doc(parallelism=4), ["a", "b"], registry=full_registry())
    assert [p.scheduler_name for p in cfg.profiles] == ["a", "b"]
    assert cfg.parallelism == 4


def test_seed_era_values() -> None:
    cfg = resolve(
        doc(
            podInitialBackoffSeconds=1,
            podMaxBackoffSeconds=10,
            pyScheduler={"podMaxInUnschedulablePodsSeconds": 60, "assumedPodTTLSeconds": 30},
        )
    )
    assert cfg.pod_max_in_unschedulable_pods_seconds == 60.0
    assert cfg.assumed_pod_ttl_seconds == 30.0
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1.0, 10.0)


def test_legacy_profile_with_weights() -> None:
    d = doc(
        profiles=[
            {
                "schedulerName": "legacy",
                "plugins": {
                    "preScore": {"disabled": [{"name": "*"}], "enabled": [{"name": "SelectorSpread"}]},
                    "score": {
                        "disabled": [{"name": "*"}],
                        "enabled": [
                            {"name": "SelectorSpread", "weight": 1},
                            {"name": "LeastRequestedPriority", "weight": 1},
                            {"name": "BalancedResourceAllocation", "weight": 1},
                            {"name": "NodeAffinity", "weight": 1},
                            {"name": "TaintToleration", "weight": 1},
                            {"name": "ImageLocality", "weight": 1},
                            {"name": "MostRequestedPriority", "weight": 3},
                        ],
                    },
                    "filter": {
                        "enabled": [
                            {"name": "CheckNodeCondition"},
                            {"name": "CheckNodeMemoryPressure"},
                            {"name": "CheckNodeDiskPressure"},
                            {"name": "CheckNodePIDPressure"},
                            {"name": "NoDiskConflict"},
                        ]
                    },
                },
            }
        ]
    )
    p = profile(d)
    assert p.scheduler_name == "legacy"
    assert names(p, "preScore") == ["SelectorSpread"]
    assert scores(p) == [
        ("SelectorSpread", 1),
        ("LeastRequestedPriority", 1),
        ("BalancedResourceAllocation", 1),
        ("NodeAffinity", 1),
        ("TaintToleration", 1),
        ("ImageLocality", 1),
        ("MostRequestedPriority", 3),
    ]
    assert names(p, "filter") == [
        *EXPECTED["filter"],
        "CheckNodeCondition",
        "CheckNodeMemoryPressure",
        "CheckNodeDiskPressure",
        "CheckNodePIDPressure",
        "NoDiskConflict",
    ]
    assert p.plugin_config["SelectorSpread"] == SelectorSpreadArgs()


def test_legacy_plugins_through_multipoint_expand_by_the_static_table() -> None:
    p = profile(
        doc(
            profiles=[
                {
                    "schedulerName": "s",
                    "plugins": {
                        "multiPoint": {
                            "enabled": [
                                {"name": "SelectorSpread", "weight": 2},
                                {"name": "ServiceAffinity"},
                                {"name": "EqualPriority", "weight": 1},
                            ]
                        }
                    },
                }
            ]
        )
    )
    assert names(p, "preScore")[-1] == "SelectorSpread"
    assert scores(p)[-2:] == [("SelectorSpread", 2), ("EqualPriority", 1)]
    assert names(p, "preFilter")[-1] == "ServiceAffinity"
    assert names(p, "filter")[-1] == "ServiceAffinity"
    assert "ServiceAffinity" not in names(p, "score")


def test_multiple_profiles() -> None:
    cfg = resolve(
        doc(
            profiles=[
                {"schedulerName": "default"},
                {
                    "schedulerName": "no-scoring",
                    "plugins": {"preScore": {"disabled": [{"name": "*"}]}, "score": {"disabled": [{"name": "*"}]}},
                    "pluginConfig": [{"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 5}}],
                },
            ]
        )
    )
    a, b = cfg.profiles
    assert (a.scheduler_name, b.scheduler_name) == ("default", "no-scoring")
    assert scores(a) == EXPECTED_WEIGHTS
    assert names(b, "score") == [] and names(b, "preScore") == []
    assert names(b, "filter") == EXPECTED["filter"]
    assert a.plugin_config["DefaultPreemption"].min_candidate_nodes_absolute == 100
    assert b.plugin_config["DefaultPreemption"].min_candidate_nodes_absolute == 5
    assert cfg.profile("no-scoring") is b


def test_third_party_plugin_by_import_path_name() -> None:
    path = f"{MOD}:SampleScorer"
    p = profile(
        doc(
            profiles=[
                {
                    "schedulerName": "s",
                    "plugins": {"multiPoint": {"enabled": [{"name": path, "weight": 4}]}},
                    "pluginConfig": [{"name": path, "args": {"free": "form"}}],
                }
            ]
        )
    )
    assert names(p, "preScore")[-1] == path
    assert scores(p)[-1] == (path, 4)
    assert path not in names(p, "filter")
    assert p.plugin_config[path] == {"free": "form"}


def test_third_party_plugin_by_config_registry() -> None:
    d = doc(
        pyScheduler={"registry": {"SampleFilter": f"{MOD}:SampleFilter", "SampleScorer": f"{MOD}:SampleScorer"}},
        profiles=[
            {
                "schedulerName": "s",
                "plugins": {
                    "filter": {"enabled": [{"name": "SampleFilter"}]},
                    "multiPoint": {"enabled": [{"name": "SampleScorer"}]},
                },
            }
        ],
    )
    cfg = resolve(d)
    p = cfg.profiles[0]
    assert names(p, "filter")[-1] == "SampleFilter"
    assert scores(p)[-1] == ("SampleScorer", 1)
    assert cfg.plugin_registry == {"SampleFilter": f"{MOD}:SampleFilter", "SampleScorer": f"{MOD}:SampleScorer"}
    reg = build_registry(cfg, base=Registry(in_tree={}))
    assert reg.factory("SampleFilter") is sample_plugins.SampleFilter
    assert reg.factory("SampleScorer") is sample_plugins.SampleScorer


def test_third_party_queue_sort_replaces_prioritysort() -> None:
    d = doc(
        pyScheduler={"registry": {"SampleQueueSort": f"{MOD}:SampleQueueSort"}},
        profiles=[
            {
                "schedulerName": "s",
                "plugins": {
                    "queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "SampleQueueSort"}]},
                },
            }
        ],
    )
    assert names(profile(d), "queueSort") == ["SampleQueueSort"]


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        """\
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        profiles:
          - schedulerName: a
           plugins: [
        """,
    )
    with pytest.raises(ConfigError) as ei:
        load(f, registry=full_registry())
    msg = str(ei.value)
    assert f"{f}:5:" in msg
    assert ei.value.source == str(f)


def test_duplicate_yaml_key_is_an_error_with_line(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        """\
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        parallelism: 4
        parallelism: 8
        """,
    )
    with pytest.raises(ConfigError, match=r"sched\.yaml:4:.*duplicate key 'parallelism'"):
        load(f, registry=full_registry())


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=r"nope\.yaml"):
        load(missing)


def test_document_must_be_a_mapping(tmp_path: Path) -> None:
    f = write(tmp_path, "- just\n- a list\n")
    with pytest.raises(ConfigError, match="must be an object"):
        load(f, registry=full_registry())


def test_empty_file_is_rejected_for_missing_apiversion(tmp_path: Path) -> None:
    f = write(tmp_path, "{}\n")
    with pytest.raises(ConfigError) as ei:
        load(f, registry=full_registry())
    assert set(ei.value.paths) == {"apiVersion", "kind"}


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n"])
def test_a_document_with_nothing_in_it_is_refused_not_defaulted(tmp_path: Path, text: str) -> None:
    """kube-scheduler refuses an empty file (no kind); defaults here would drop every configured profile
    when a reload reads a file between its truncation and its write."""
    with pytest.raises(ConfigError) as ei:
        load(write(tmp_path, text), registry=full_registry())
    assert set(ei.value.paths) == {"apiVersion", "kind"}


def test_single_null_profile_is_a_default_profile() -> None:
    cfg = resolve(doc(profiles=[None], pyScheduler=None, leaderElection=None, extenders=None))
    assert cfg.profiles[0].scheduler_name == "py-scheduler"
    assert names(cfg.profiles[0], "filter") == EXPECTED["filter"]


class _Factory:
    """A non-class plugin factory, optionally naming its plugin's extension points."""

    def __init__(self, points: tuple[str, ...] | None = None) -> None:
        if points is not None:
            self.extension_points = points

    def __call__(self, args: Any, handle: Any) -> Any:
        raise AssertionError("not built by the loader")


def test_non_class_factory_in_multipoint_needs_declared_extension_points() -> None:
    d = doc(profiles=[{"schedulerName": "s", "plugins": {"multiPoint": {"enabled": [{"name": "Fn"}]}}}])
    reg = full_registry()
    reg.register("Fn", _Factory())
    with pytest.raises(ConfigError, match="cannot tell which extension points plugin 'Fn' implements"):
        load_dict(d, registry=reg)
    declared = full_registry()
    declared.register("Fn", _Factory(("filter",)))
    p = load_dict(d, registry=declared).profiles[0]
    assert names(p, "filter")[-1] == "Fn"
    assert "Fn" not in names(p, "score")
