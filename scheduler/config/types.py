"""The resolved scheduler configuration: what ``config.load`` produces and the rest of the code reads.

Field names follow KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) in snake_case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EXTENSION_POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    # the pod-group scheduling cycle's points (kube-scheduler v1.37): configurable and validated as upstream;
    # only a pod group's cycle runs them, which needs GenericWorkload (beta, off), so nothing calls them here.
    "placementGenerate",
    "placementScore",
    "podGroupPostFilter",
)

# Extension point -> the method that marks it on a plugin class (the framework's protocols name the same
# methods; a plugin class implements a point when it has the method, as upstream's type assertion).
EXTENSION_POINT_METHODS: dict[str, str] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
    "placementGenerate": "generate_placements",
    "placementScore": "score_placement",
    "podGroupPostFilter": "pod_group_post_filter",
}

# The points whose plugins carry a weight (upstream's Score and PlacementScore plugins).
WEIGHTED_POINTS = ("score", "placementScore")

# Upstream framework.MaxNodeScore (k8s.io/kube-scheduler/framework/interface.go): defined here, where both the
# framework and the config's overflow check (Σ weight·MAX_NODE_SCORE ≤ MAX_TOTAL_SCORE) read it, since config imports
# no framework module.
MAX_NODE_SCORE = 100
MAX_TOTAL_SCORE = 2**63 - 1  # upstream MaxTotalScore (math.MaxInt64)


@dataclass(slots=True)
class PluginRef:
    name: str
    weight: int = 0  # score (or placementScore) weight; 0 means 1 when scoring


@dataclass(slots=True)
class Profile:
    scheduler_name: str
    # extension point (one of EXTENSION_POINTS) -> enabled plugins in run order, after merging defaults,
    # multiPoint and the per-point enabled/disabled lists.
    plugins: dict[str, list[PluginRef]]
    # plugin name -> its typed Args (types_pluginargs), defaults applied; for plugins without an args
    # type, the args mapping as given.
    plugin_config: dict[str, Any] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None
    # Run every Filter plugin even after one rejected the node, reporting all reasons (a Policy's
    # alwaysCheckAllPredicates; upstream's runAllFilters). Not settable in a KubeSchedulerConfiguration.
    run_all_filters: bool = False


@dataclass(slots=True)
class LeaderElection:
    leader_elect: bool = True
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    resource_namespace: str = "kube-system"
    resource_name: str = "py-scheduler"


@dataclass(slots=True)
class ClientConnection:
    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100


@dataclass(slots=True)
class ExtenderTLSConfig:
    """``extenders[].tlsConfig`` (upstream ExtenderTLSConfig); the *Data fields are the decoded bytes."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(slots=True)
class ExtenderManagedResource:
    name: str
    ignored_by_scheduler: bool = False


DEFAULT_EXTENDER_TIMEOUT_SECONDS = 5.0  # upstream DefaultExtenderTimeout, used when httpTimeout is 0 or absent


@dataclass(slots=True)
class Extender:
    """One entry of ``extenders:`` (KubeSchedulerConfiguration v1 Extender); an empty verb is not called."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout_seconds: float = DEFAULT_EXTENDER_TIMEOUT_SECONDS
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = field(default_factory=list)
    ignorable: bool = False


@dataclass(slots=True)
class SchedulerConfiguration:
    profiles: list[Profile]
    parallelism: int = 16
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    # Not a v1 field upstream (a deprecated CLI flag there); accepted here as an extension.
    pod_max_in_unschedulable_pods_seconds: float = 300.0
    # Assumed-pod expiry after binding finished; 0 = never (upstream); the seed era used 30 s.
    assumed_pod_ttl_seconds: float = 0.0
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    extenders: list[Extender] = field(default_factory=list)
    # Out-of-tree plugins from the config's ``pyScheduler.registry``: name -> "pkg.module:Class".
    # ``config.load.build_registry(cfg)`` turns them into a plugin Registry.
    plugin_registry: dict[str, str] = field(default_factory=dict)
    # ``pyScheduler.opportunisticBatching``: alike pods reuse the previous pod's filter and score results.
    opportunistic_batching: bool = True

    def profile(self, scheduler_name: str) -> Profile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None
