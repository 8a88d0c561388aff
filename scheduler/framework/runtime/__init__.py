"""The framework runtime (upstream ``pkg/scheduler/framework/runtime``): ``framework`` runs one profile's
plugins and is their Handle, ``instrumented_plugins`` times them in sampled cycles, ``waiting_pods_map``
holds the pods waiting at Permit. The names callers use are re-exported here."""

from scheduler.framework.runtime.framework import (
    MAX_PERMIT_TIMEOUT_SECONDS,
    WILDCARD_EVENT,
    Framework,
    FrameworkOptions,
    MetricsHook,
    NodePluginScores,
    PluginInitError,
    PluginRegistry,
    Plugins,
    RawScores,
    SchedulerActions,
    score_matrix,
)
from scheduler.framework.runtime.instrumented_plugins import TIMED_NODES_PER_CYCLE, PluginMetrics
from scheduler.framework.runtime.waiting_pods_map import WaitingPod, WaitingPodsMap
from scheduler.framework.status import CODE_NAMES, code_name

__all__ = [
    "CODE_NAMES",
    "MAX_PERMIT_TIMEOUT_SECONDS",
    "TIMED_NODES_PER_CYCLE",
    "WILDCARD_EVENT",
    "Framework",
    "FrameworkOptions",
    "MetricsHook",
    "NodePluginScores",
    "PluginInitError",
    "PluginMetrics",
    "PluginRegistry",
    "Plugins",
    "RawScores",
    "SchedulerActions",
    "WaitingPod",
    "WaitingPodsMap",
    "code_name",
    "score_matrix",
]
