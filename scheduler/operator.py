"""The kopf layer: watch pods, nodes and the objects plugins read, and hand every event to the Scheduler.

Only ``@kopf.on.event`` handlers are used: they never write kopf's annotations or finalizers onto
pods. Handlers return None (a returned value would make kopf PATCH the object's status). The diff
base storage is a no-op because nothing here needs kopf's diffs (kopf-notes: it costs a deep copy
of every object on every event).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import kopf
import structlog

from scheduler.scheduler import ADDED, Scheduler

log = structlog.get_logger(__name__)

NON_TERMINAL_PODS = "status.phase!=Succeeded,status.phase!=Failed"

# kind -> (group, version, plural) of the objects plugins read; watched in addition to pods and nodes.
OBJECT_KINDS: dict[str, tuple[str, str, str]] = {
    "Service": ("", "v1", "services"),
    "ReplicaSet": ("apps", "v1", "replicasets"),
    "StatefulSet": ("apps", "v1", "statefulsets"),
    "ReplicationController": ("", "v1", "replicationcontrollers"),
    "Namespace": ("", "v1", "namespaces"),
    "PersistentVolume": ("", "v1", "persistentvolumes"),
    "PersistentVolumeClaim": ("", "v1", "persistentvolumeclaims"),
    "StorageClass": ("storage.k8s.io", "v1", "storageclasses"),
    "CSINode": ("storage.k8s.io", "v1", "csinodes"),
    "CSIDriver": ("storage.k8s.io", "v1", "csidrivers"),
    "PodDisruptionBudget": ("policy", "v1", "poddisruptionbudgets"),
}


class NoDiffBase(kopf.DiffBaseStorage):
    """Stores and fetches nothing: the scheduler has no create/update/field handlers."""

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return {}

    def fetch(self, *, body: Any) -> Any:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


def _event_type(event: Any) -> str:
    return str(event.get("type") or ADDED)


def build_registry(
    sched: Scheduler,
    kinds: dict[str, tuple[str, str, str]],
    on_ready: Callable[[], None],
    chunk_size: int = 500,
) -> kopf.OperatorRegistry:
    """A private kopf registry wired to one Scheduler."""
    reg = kopf.OperatorRegistry()

    @kopf.on.startup(registry=reg)
    async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.persistence.diffbase_storage = NoDiffBase()
        settings.watching.field_selectors["v1", "pods"] = NON_TERMINAL_PODS
        settings.watching.chunk_size = chunk_size
        settings.scanning.disabled = True
        settings.peering.standalone = True
        on_ready()

    @kopf.on.login(registry=reg)
    def login(**kwargs: Any) -> Any:
        return kopf.login_via_client(**kwargs)

    @kopf.on.event("", "v1", "pods", registry=reg)
    async def pod_event(event: Any, **_: Any) -> None:
        sched.on_pod_event(_event_type(event), event["object"])

    @kopf.on.event("", "v1", "nodes", registry=reg)
    async def node_event(event: Any, **_: Any) -> None:
        sched.on_node_event(_event_type(event), event["object"])

    for kind, (group, version, plural) in kinds.items():
        def make(k: str) -> Callable[..., Any]:
            async def object_event(event: Any, **_: Any) -> None:
                sched.on_object_event(k, _event_type(event), event["object"])
            return object_event
        kopf.on.event(group, version, plural, registry=reg)(make(kind))
    return reg


def run_operator(
    sched: Scheduler,
    kinds: dict[str, tuple[str, str, str]] | None = None,
    stop_flag: threading.Event | None = None,
    on_ready: Callable[[], None] = lambda: None,
) -> None:
    """Run kopf in this thread's event loop until SIGTERM/SIGINT or `stop_flag`."""
    reg = build_registry(sched, OBJECT_KINDS if kinds is None else kinds, on_ready)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(
        kopf.operator(registry=reg, clusterwide=True, standalone=True, stop_flag=stop_flag)
    )
