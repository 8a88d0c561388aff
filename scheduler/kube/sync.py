"""Initial list (so scheduling starts on a synced cache, like WaitForCacheSync) and periodic resync.

kopf relists after a 410 Gone without sending DELETED for objects that vanished meanwhile; the
periodic resync lists again and removes what the cache still holds but the API server no longer
has, unless the cache heard of it after the list began (so a racing event is never undone).
"""

from __future__ import annotations

import threading
import time

import structlog
from kubernetes.client.exceptions import ApiException

from scheduler.eventhandlers import ADDED, DELETED
from scheduler.kube.client import Requester, list_all
from scheduler.kube.kinds import NON_TERMINAL_PODS, collection_path
from scheduler.scheduler import Scheduler

log = structlog.get_logger(__name__)


def initial_sync(
    api: Requester, sched: Scheduler, kinds: dict[str, tuple[str, str, str]], pods: bool = True
) -> None:
    """Load nodes, other objects and (unless a PodStream delivers them) pods before scheduling starts."""
    start = time.monotonic()
    nodes = 0
    for obj in list_all(api, "/api/v1/nodes"):
        sched.on_node_event(ADDED, obj)
        nodes += 1
    for kind, (group, version, plural) in kinds.items():
        try:
            for obj in list_all(api, collection_path(group, version, plural)):
                sched.on_object_event(kind, ADDED, obj)
        except ApiException as exc:
            log.warning("cannot list objects; plugins reading them see none", kind=kind, status=exc.status)
    count = 0
    for obj in list_all(api, "/api/v1/pods", NON_TERMINAL_PODS) if pods else ():
        sched.on_pod_event(ADDED, obj)
        count += 1
    log.info("caches synced", nodes=nodes, pods=count, seconds=round(time.monotonic() - start, 2))


class Resyncer:
    """Every `period` seconds, remove cached pods and nodes that the API server no longer has."""

    def __init__(self, api: Requester, sched: Scheduler, period: float = 300.0) -> None:
        self.api = api
        self.sched = sched
        self.period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="resync", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.resync_once()
            except Exception as exc:
                log.warning("resync failed", error=str(exc))

    def resync_once(self) -> int:
        """One reconciliation pass; returns how many stale objects were removed."""
        began = self.sched.event_clock()
        pods = {p["metadata"]["uid"]: p for p in list_all(self.api, "/api/v1/pods", NON_TERMINAL_PODS)}
        nodes = {n["metadata"]["name"]: n for n in list_all(self.api, "/api/v1/nodes")}
        removed = 0
        for uid, obj in self.sched.known_pods_not_in(set(pods), began):
            self.sched.on_pod_event(DELETED, obj)
            removed += 1
            log.info("resync removed a pod the watch missed", uid=uid)
        for name, obj in self.sched.known_nodes_not_in(set(nodes), began):
            self.sched.on_node_event(DELETED, obj)
            removed += 1
            log.info("resync removed a node the watch missed", node=name)
        return removed
