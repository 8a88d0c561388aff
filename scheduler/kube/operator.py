"""The kopf layer: watch nodes and the objects plugins read (and pods with ``--pod-watch kopf``), and hand
every event to the Scheduler. kopf stays for these low-volume kinds: it brings watch resumption, relogin
and backoff for a dozen resources in a few lines; the pod stream is kube.podstream's.

Only ``@kopf.on.event`` handlers are used: they never write kopf's annotations or finalizers onto
pods. Handlers return None (a returned value would make kopf PATCH the object's status). The diff
base storage is a no-op because nothing here needs kopf's diffs (kopf's default one deep-copies
every object on every event).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import kopf
import structlog

from scheduler.eventhandlers import ADDED
from scheduler.kube.client import authorization
from scheduler.kube.kinds import NON_TERMINAL_PODS, OBJECT_KINDS
from scheduler.kube.podstream import READ_GRACE_S, WATCH_TIMEOUT_S
from scheduler.kube.transform import trimmed
from scheduler.scheduler import Scheduler

log = structlog.get_logger(__name__)

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


def connection_info(cfg: Any) -> kopf.ConnectionInfo:
    """kopf credentials from the kubernetes client Configuration the rest of the scheduler uses, so
    both log in the same way (kubeconfig path, token, client certificate or in-cluster)."""
    header = authorization(cfg)
    scheme, token = header.split(" ", 1) if header else (None, None)
    return kopf.ConnectionInfo(
        server=cfg.host,
        ca_path=cfg.ssl_ca_cert,
        insecure=not cfg.verify_ssl,
        scheme=scheme,
        token=token,
        certificate_path=cfg.cert_file,
        private_key_path=cfg.key_file,
    )


def register_handlers(
    sched: Scheduler,
    credentials: Any,
    kinds: dict[str, tuple[str, str, str]],
    on_ready: Callable[[], None],
    chunk_size: int = 500,
    watch_pods: bool = True,
    on_listed: Callable[[str], None] = lambda kind: None,
) -> kopf.OperatorRegistry:
    """A private kopf registry wired to one Scheduler. With `watch_pods` False the pod stream is
    read by scheduler.kube.podstream.PodStream instead of kopf. `on_listed(kind)` hears of every object
    kopf replays while (re)listing a kind (events of type None): sync.Resyncer's cue."""
    reg = kopf.OperatorRegistry()

    @kopf.on.startup(registry=reg)
    async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.persistence.diffbase_storage = NoDiffBase()
        settings.watching.field_selectors["v1", "pods"] = NON_TERMINAL_PODS
        settings.watching.chunk_size = chunk_size
        # As the pod stream: short server-side watches, and a client timeout that ends a silent one.
        settings.watching.server_timeout = WATCH_TIMEOUT_S
        settings.watching.client_timeout = WATCH_TIMEOUT_S + READ_GRACE_S
        settings.scanning.disabled = True
        settings.peering.standalone = True
        on_ready()

    @kopf.on.login(registry=reg)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(credentials)

    if watch_pods:

        @kopf.on.event("", "v1", "pods", registry=reg)
        async def pod_event(event: Any, **_: Any) -> None:
            if event.get("type") is None:
                on_listed("Pod")
            sched.on_pod_event(_event_type(event), trimmed(event["object"]))

    @kopf.on.event("", "v1", "nodes", registry=reg)
    async def node_event(event: Any, **_: Any) -> None:
        if event.get("type") is None:
            on_listed("Node")
        sched.on_node_event(_event_type(event), trimmed(event["object"]))

    for kind, (group, version, plural) in kinds.items():
        def make(k: str) -> Callable[..., Any]:
            async def object_event(event: Any, **_: Any) -> None:
                if event.get("type") is None:
                    on_listed(k)
                sched.on_object_event(k, _event_type(event), trimmed(event["object"]))
            return object_event
        kopf.on.event(group, version, plural, registry=reg)(make(kind))
    return reg


def run_operator(
    sched: Scheduler,
    credentials: Any,
    kinds: dict[str, tuple[str, str, str]] | None = None,
    stop_flag: threading.Event | None = None,
    on_ready: Callable[[], None] = lambda: None,
    watch_pods: bool = True,
    on_listed: Callable[[str], None] = lambda kind: None,
) -> None:
    """Run kopf in this thread's event loop until SIGTERM/SIGINT or `stop_flag`."""
    reg = register_handlers(sched, credentials, OBJECT_KINDS if kinds is None else kinds, on_ready,
                            watch_pods=watch_pods, on_listed=on_listed)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    flag = stop_flag if stop_flag is not None else threading.Event()

    async def main() -> None:
        try:
            await kopf.operator(registry=reg, clusterwide=True, standalone=True, stop_flag=flag)
        finally:
            # kopf waits for a threading.Event in an executor thread; when kopf stopped on its own
            # (SIGTERM/SIGINT), release that thread or asyncio.run's executor shutdown never returns.
            flag.set()

    asyncio.run(main())
