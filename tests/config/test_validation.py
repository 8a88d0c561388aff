"""Every validation error names its field (and says what is wrong)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config.errors import ConfigError
from scheduler.config.load import load_dict
from scheduler.config.registry import Registry

from . import sample_plugins
from .helpers import API, doc, full_registry, one_profile

MOD = sample_plugins.__name__
PC = "profiles[0].pluginConfig[0].args"


def pc(plugin: str, args: Any) -> dict[str, Any]:
    return one_profile(None, [{"name": plugin, "args": args}])


def fit(strategy: Any) -> dict[str, Any]:
    return pc("NodeResourcesFit", {"scoringStrategy": strategy})


def pts(args: Any) -> dict[str, Any]:
    return pc("PodTopologySpread", args)


ZONE = "topology.kubernetes.io/zone"

CASES: list[tuple[str, dict[str, Any], str, str]] = [
    # (id, document, field path, message fragment)
    ("old-apiversion", {**doc(), "apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, "apiVersion", "v1beta3"),
    ("kind", {**doc(), "kind": "Policy"}, "kind", "unsupported value 'Policy'"),
    ("unknown-top-level", doc(algorithmSource={}), "algorithmSource", "unknown field"),
    (
        "unknown-profile-field",
        doc(profiles=[{"schedulerName": "a", "plugin": {}}]),
        "profiles[0].plugin",
        "unknown field",
    ),
    (
        "unknown-plugins-key",
        one_profile({"scoring": {}}),
        "profiles[0].plugins.scoring",
        "unknown field",
    ),
    (
        "unknown-pluginset-key",
        one_profile({"score": {"enable": []}}),
        "profiles[0].plugins.score.enable",
        "unknown field",
    ),
    (
        "duplicate-scheduler-name",
        doc(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]),
        "profiles[1].schedulerName",
        "duplicate value 'a'",
    ),
    (
        "missing-scheduler-name-with-two-profiles",
        doc(profiles=[{"schedulerName": "a"}, {}]),
        "profiles[1].schedulerName",
        "required",
    ),
    ("percentage-high", doc(percentageOfNodesToScore=101), "percentageOfNodesToScore", "[0-100]"),
    ("percentage-negative", doc(percentageOfNodesToScore=-1), "percentageOfNodesToScore", "[0-100]"),
    (
        "profile-percentage",
        doc(profiles=[{"schedulerName": "a", "percentageOfNodesToScore": 200}]),
        "profiles[0].percentageOfNodesToScore",
        "[0-100]",
    ),
    ("parallelism-zero", doc(parallelism=0), "parallelism", "greater than zero"),
    ("parallelism-type", doc(parallelism="8"), "parallelism", "must be an integer"),
    ("initial-backoff-zero", doc(podInitialBackoffSeconds=0), "podInitialBackoffSeconds", "greater than 0"),
    (
        "max-below-initial",
        doc(podInitialBackoffSeconds=5, podMaxBackoffSeconds=4),
        "podMaxBackoffSeconds",
        "greater than or equal to podInitialBackoffSeconds",
    ),
    ("backoff-float", doc(podMaxBackoffSeconds=1.5), "podMaxBackoffSeconds", "must be an integer"),
    (
        "queue-sort-differs",
        doc(
            pyScheduler={"registry": {"SampleQueueSort": f"{MOD}:SampleQueueSort"}},
            profiles=[
                {"schedulerName": "a"},
                {
                    "schedulerName": "b",
                    "plugins": {"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "SampleQueueSort"}]}},
                },
            ],
        ),
        "profiles[1].plugins.queueSort",
        "must be the same for all profiles",
    ),
    (
        "queue-sort-args-differ",
        doc(
            profiles=[
                {"schedulerName": "a"},
                {"schedulerName": "b", "pluginConfig": [{"name": "PrioritySort", "args": {"x": 1}}]},
            ]
        ),
        "profiles[1].pluginConfig",
        "queueSort plugin args must be the same",
    ),
    (
        "two-queue-sorts",
        one_profile({"queueSort": {"enabled": [{"name": f"{MOD}:SampleQueueSort"}]}}),
        "profiles[0].plugins.queueSort",
        "only one queue sort plugin required, but got 2",
    ),
    (
        "no-binder",
        one_profile({"bind": {"disabled": [{"name": "*"}]}}),
        "profiles[0].plugins.bind",
        "at least one bind plugin",
    ),
    (
        "enabled-twice",
        one_profile({"filter": {"enabled": [{"name": "NoDiskConflict"}, {"name": "NoDiskConflict"}]}}),
        "profiles[0].plugins.filter.enabled[1].name",
        "already registered",
    ),
    (
        "enabled-twice-multipoint",
        one_profile({"multiPoint": {"enabled": [{"name": "EqualPriority"}, {"name": "EqualPriority"}]}}),
        "profiles[0].plugins.multiPoint.enabled[1].name",
        "already registered",
    ),
    (
        "unknown-plugin",
        one_profile({"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}),
        "profiles[0].plugins.filter.enabled[0].name",
        "'NoSuchPlugin' is not available",
    ),
    (
        "unimportable-path",
        one_profile({"filter": {"enabled": [{"name": "no_such_pkg_xyz.mod:Cls"}]}}),
        "profiles[0].plugins.filter.enabled[0].name",
        "does not exist",
    ),
    (
        "does-not-extend",
        one_profile({"score": {"enabled": [{"name": "NodeName", "weight": 1}]}}),
        "profiles[0].plugins.score.enabled[0].name",
        "does not extend the score extension point",
    ),
    (
        "third-party-does-not-extend",
        one_profile({"filter": {"enabled": [{"name": f"{MOD}:SampleScorer"}]}}),
        "profiles[0].plugins.filter.enabled[0].name",
        "does not extend the filter extension point",
    ),
    (
        "removed-in-v1",
        one_profile({"filter": {"enabled": [{"name": "EBSLimits"}]}}),
        "profiles[0].plugins.filter.enabled[0].name",
        "was invalid in version",
    ),
    (
        "negative-weight",
        one_profile({"score": {"enabled": [{"name": "NodeName"}, {"name": "ImageLocality", "weight": -1}]}}),
        "profiles[0].plugins.score.enabled[1].weight",
        "must not be negative",
    ),
    (
        "weight-type",
        one_profile({"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": "high"}]}}),
        "profiles[0].plugins.multiPoint.enabled[0].weight",
        "must be an integer",
    ),
    (
        "score-overflow",
        one_profile({"score": {"enabled": [{"name": "ImageLocality", "weight": 2**62}]}}),
        "profiles[0].plugins.score",
        "could overflow",
    ),
    (
        "plugin-config-duplicate",
        one_profile(None, [{"name": "NodeAffinity", "args": {}}, {"name": "NodeAffinity", "args": {}}]),
        "profiles[0].pluginConfig[1]",
        "duplicate value 'NodeAffinity'",
    ),
    (
        "args-unknown-key",
        pc("InterPodAffinity", {"hardPodAffinityWeigth": 2}),
        f"{PC}.hardPodAffinityWeigth",
        "unknown field",
    ),
    (
        "args-kind-mismatch",
        pc("InterPodAffinity", {"kind": "NodeAffinityArgs"}),
        f"{PC}.kind",
        "has to match plugin args",
    ),
    ("args-not-object", pc("InterPodAffinity", [1]), PC, "must be an object"),
    (
        "hard-pod-affinity-weight",
        pc("InterPodAffinity", {"hardPodAffinityWeight": 101}),
        f"{PC}.hardPodAffinityWeight",
        "[0, 100]",
    ),
    (
        "ignore-preferred-type",
        pc("InterPodAffinity", {"ignorePreferredTermsOfExistingPods": "yes"}),
        f"{PC}.ignorePreferredTermsOfExistingPods",
        "boolean",
    ),
    ("strategy-type", fit({"type": "Balanced"}), f"{PC}.scoringStrategy.type", "unsupported value 'Balanced'"),
    (
        "strategy-type-missing",
        fit({"resources": [{"name": "cpu", "weight": 1}]}),
        f"{PC}.scoringStrategy.type",
        "unsupported value ''",
    ),
    (
        "resource-weight-high",
        fit({"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 101}]}),
        f"{PC}.scoringStrategy.resources[0].weight",
        "(0, 100]",
    ),
    (
        "resource-weight-negative",
        fit({"type": "MostAllocated", "resources": [{"name": "cpu", "weight": -1}]}),
        f"{PC}.scoringStrategy.resources[0].weight",
        "(0, 100]",
    ),
    (
        "rtcr-missing",
        fit({"type": "RequestedToCapacityRatio"}),
        f"{PC}.scoringStrategy.requestedToCapacityRatio",
        "must be specified",
    ),
    (
        "rtcr-forbidden",
        fit({"type": "LeastAllocated", "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}]}}),
        f"{PC}.scoringStrategy.requestedToCapacityRatio",
        "must be nil",
    ),
    (
        "shape-empty",
        fit({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}),
        f"{PC}.scoringStrategy.requestedToCapacityRatio.shape",
        "at least one point",
    ),
    (
        "shape-order",
        fit(
            {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                },
            }
        ),
        f"{PC}.scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
        "increasing order",
    ),
    (
        "shape-utilization",
        fit(
            {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 1}]},
            }
        ),
        f"{PC}.scoringStrategy.requestedToCapacityRatio.shape[0].utilization",
        "[0, 100]",
    ),
    (
        "shape-score",
        fit(
            {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 11}]},
            }
        ),
        f"{PC}.scoringStrategy.requestedToCapacityRatio.shape[0].score",
        "[0, 10]",
    ),
    (
        "ignored-resource-group-slash",
        pc("NodeResourcesFit", {"ignoredResourceGroups": ["example.com/x"]}),
        f"{PC}.ignoredResourceGroups[0]",
        "can't contain '/'",
    ),
    (
        "ignored-resources-type",
        pc("NodeResourcesFit", {"ignoredResources": "cpu"}),
        f"{PC}.ignoredResources",
        "must be a list",
    ),
    (
        "balanced-weight",
        pc("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 2}]}),
        f"{PC}.resources[0].weight",
        "must be 1",
    ),
    (
        "balanced-duplicate",
        pc("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu"}, {"name": "cpu"}]}),
        f"{PC}.resources[1].name",
        "duplicate",
    ),
    ("pts-defaulting-type", pts({"defaultingType": "Auto"}), f"{PC}.defaultingType", "supported values: List, System"),
    (
        "pts-system-with-constraints",
        pts({"defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}),
        f"{PC}.defaultingType",
        "when .defaultConstraints are not empty",
    ),
    (
        "pts-max-skew",
        pts(
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
            }
        ),
        f"{PC}.defaultConstraints[0].maxSkew",
        "(0, inf)",
    ),
    (
        "pts-when",
        pts(
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Maybe"}],
            }
        ),
        f"{PC}.defaultConstraints[0].whenUnsatisfiable",
        "DoNotSchedule, ScheduleAnyway",
    ),
    (
        "pts-topology-key",
        pts(
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}],
            }
        ),
        f"{PC}.defaultConstraints[0].topologyKey",
        "can not be empty",
    ),
    (
        "pts-selector",
        pts(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}
                ],
            }
        ),
        f"{PC}.defaultConstraints[0].labelSelector",
        "must not define a selector",
    ),
    (
        "pts-duplicate",
        pts(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                ],
            }
        ),
        f"{PC}.defaultConstraints[1]",
        "duplicate",
    ),
    (
        "preemption-both-zero",
        pc("DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}),
        f"{PC}.minCandidateNodesPercentage",
        "cannot be zero",
    ),
    (
        "preemption-percentage",
        pc("DefaultPreemption", {"minCandidateNodesPercentage": 101}),
        f"{PC}.minCandidateNodesPercentage",
        "[0, 100]",
    ),
    (
        "preemption-absolute",
        pc("DefaultPreemption", {"minCandidateNodesAbsolute": -1}),
        f"{PC}.minCandidateNodesAbsolute",
        "[0, inf)",
    ),
    ("volume-binding-timeout", pc("VolumeBinding", {"bindTimeoutSeconds": -1}), f"{PC}.bindTimeoutSeconds", "negative"),
    (
        "volume-binding-shape",
        pc("VolumeBinding", {"shape": [{"utilization": 0, "score": 11}]}),
        f"{PC}.shape[0].score",
        "not in valid range [0, 10]",
    ),
    (
        "node-affinity-operator",
        pc(
            "NodeAffinity",
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Like", "values": ["x"]}]}]
                    }
                }
            },
        ),
        f"{PC}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator",
        "unknown operator",
    ),
    (
        "node-affinity-weight",
        pc(
            "NodeAffinity",
            {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}},
        ),
        f"{PC}.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        "1-100",
    ),
    (
        "service-affinity-labels",
        pc("ServiceAffinity", {"affinityLabels": ["ok", "not ok"]}),
        f"{PC}.affinityLabels[1]",
        "name part",
    ),
    ("service-anti-affinity-unknown", pc("ServiceAntiAffinity", {"label": "zone"}), f"{PC}.label", "unknown field"),
    (
        "leader-duration",
        doc(leaderElection={"leaseDuration": "15"}),
        "leaderElection.leaseDuration",
        "invalid duration '15'",
    ),
    (
        "leader-lease-vs-renew",
        doc(leaderElection={"leaseDuration": "5s", "renewDeadline": "10s"}),
        "leaderElection.leaseDuration",
        "greater than RenewDeadline",
    ),
    ("leader-lock", doc(leaderElection={"resourceLock": "endpoints"}), "leaderElection.resourceLock", '"leases"'),
    (
        "leader-unknown",
        doc(leaderElection={"leaseDurationSeconds": 15}),
        "leaderElection.leaseDurationSeconds",
        "unknown field",
    ),
    ("client-burst", doc(clientConnection={"burst": -1}), "clientConnection.burst", "non-negative"),
    (
        "extender-weight",
        doc(extenders=[{"urlPrefix": "http://x", "prioritizeVerb": "p"}]),
        "extenders[0].weight",
        "positive weight",
    ),
    (
        "extender-binders",
        doc(extenders=[{"urlPrefix": "http://x", "bindVerb": "b"}, {"urlPrefix": "http://y", "bindVerb": "b"}]),
        "extenders",
        "only one extender can implement bind",
    ),
    (
        "extender-resources",
        doc(
            extenders=[
                {"urlPrefix": "http://x", "managedResources": [{"name": "example.com/a"}, {"name": "example.com/a"}]}
            ]
        ),
        "extenders[0].managedResources[1].name",
        "duplicate",
    ),
    (
        "extender-resource-name",
        doc(extenders=[{"urlPrefix": "http://x", "managedResources": [{"name": "cpu"}]}]),
        "extenders[0].managedResources[0].name",
        "extended resource name",
    ),
    (
        "extender-timeout",
        doc(extenders=[{"urlPrefix": "http://x", "httpTimeout": 5}]),
        "extenders[0].httpTimeout",
        "duration",
    ),
    (
        "extender-unknown",
        doc(extenders=[{"urlPrefix": "http://x", "filterverb": "f"}]),
        "extenders[0].filterverb",
        "unknown field",
    ),
    (
        "extender-url",
        doc(extenders=[{"filterVerb": "f"}]),
        "extenders[0].urlPrefix",
        "http:// or https://",
    ),
    (
        "extender-timeout-negative",
        doc(extenders=[{"urlPrefix": "http://x", "httpTimeout": "-1s"}]),
        "extenders[0].httpTimeout",
        "negative",
    ),
    (
        "extender-tls-data",
        doc(extenders=[{"urlPrefix": "https://x", "tlsConfig": {"caData": "not base64!"}}]),
        "extenders[0].tlsConfig.caData",
        "base64",
    ),
    (
        "extender-tls-unknown",
        doc(extenders=[{"urlPrefix": "https://x", "tlsConfig": {"ca": "x"}}]),
        "extenders[0].tlsConfig.ca",
        "unknown field",
    ),
    (
        "extender-ignored-type",
        doc(extenders=[{"urlPrefix": "http://x", "managedResources": [{"name": "ex.com/a", "ignoredByScheduler": 1}]}]),
        "extenders[0].managedResources[0].ignoredByScheduler",
        "boolean",
    ),
    (
        "ext-unknown",
        doc(pyScheduler={"podMaxInUnschedulableSeconds": 5}),
        "pyScheduler.podMaxInUnschedulableSeconds",
        "unknown field",
    ),
    (
        "ext-unschedulable",
        doc(pyScheduler={"podMaxInUnschedulablePodsSeconds": 0}),
        "pyScheduler.podMaxInUnschedulablePodsSeconds",
        "greater than 0",
    ),
    ("ext-ttl", doc(pyScheduler={"assumedPodTTLSeconds": -1}), "pyScheduler.assumedPodTTLSeconds", "negative"),
    (
        "ext-registry-clash",
        doc(pyScheduler={"registry": {"NodeName": f"{MOD}:SampleFilter"}}),
        "pyScheduler.registry.NodeName",
        "already registered",
    ),
    (
        "ext-registry-bad-path",
        doc(pyScheduler={"registry": {"X": "not a path"}}),
        "pyScheduler.registry.X",
        "not an import path",
    ),
    (
        "ext-registry-missing-class",
        doc(pyScheduler={"registry": {"X": f"{MOD}:Missing"}}),
        "pyScheduler.registry.X",
        "has no attribute 'Missing'",
    ),
]


@pytest.mark.parametrize(("document", "path", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validation_error_names_the_field(document: dict[str, Any], path: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as ei:
        load_dict(document, registry=full_registry())
    matching = [e for e in ei.value.errors if e.path == path]
    assert matching, f"no error at {path!r}; got {ei.value.errors}"
    assert any(fragment in e.message for e in matching), matching
    assert f"{path}: " in str(ei.value)


def test_all_errors_are_reported_together() -> None:
    with pytest.raises(ConfigError) as ei:
        load_dict(doc(parallelism=0, percentageOfNodesToScore=500, bogus=1), registry=full_registry())
    assert set(ei.value.paths) == {"parallelism", "percentageOfNodesToScore", "bogus"}


def test_unimplemented_legacy_plugin_is_an_error_not_a_warning() -> None:
    reg = full_registry(missing={"SelectorSpread": "no_such_module_for_tests_xyz:SelectorSpread"})
    with pytest.raises(ConfigError) as ei:
        load_dict(one_profile({"score": {"enabled": [{"name": "SelectorSpread", "weight": 1}]}}), registry=reg)
    assert ei.value.paths == ["profiles[0].plugins.score.enabled[0].name"]
    assert "SelectorSpread" in str(ei.value) and "no_such_module_for_tests_xyz" in str(ei.value)


def test_valid_config_with_explicit_default_names_loads() -> None:
    """A sanity check that the error cases above fail for their stated reason, not for the base document."""
    cfg = load_dict(
        {
            "apiVersion": API,
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s"},
            "extenders": [{"urlPrefix": "http://x", "prioritizeVerb": "p", "weight": 1, "bindVerb": "b"}],
            "profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}],
        },
        registry=full_registry(),
    )
    assert len(cfg.profiles) == 2


def test_real_registry_rejects_unknown_plugins_too() -> None:
    with pytest.raises(ConfigError, match="NoSuchPlugin"):
        load_dict(one_profile({"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}), registry=Registry())
