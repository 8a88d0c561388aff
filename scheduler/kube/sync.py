"""Initial list (so scheduling starts on a synced cache, like WaitForCacheSync), relist reconciliation
and periodic resync.

kopf relists after a 410 Gone (or a broken stream) by replaying every object, without sending DELETED
for objects that vanished meanwhile. Resyncer notices the replay and, once it has gone quiet,
lists that kind again and delivers the deletions the relist implies, as client-go's informers do
(DeltaFIFO.Replace); the periodic resync does the same for every kind as a backstop. Neither removes an
object the cache heard of after the list began, so a racing event is never undone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import structlog
from kubernetes.client.exceptions import ApiException

from scheduler.cache.objects import object_key
from scheduler.eventhandlers import ADDED, DELETED
from scheduler.kube.client import METADATA_LIST, Requester, list_all
from scheduler.kube.kinds import NON_TERMINAL_PODS, OBJECT_KINDS, collection_path
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
    """Reconciles the cache with LISTs: a kind kopf has relisted (its replay quiet for `quiet` seconds), at
    once; pods and nodes every `period` seconds as a backstop. Each pass delivers DELETED for what the
    cache holds but the API server no longer has."""

    def __init__(self, api: Requester, sched: Scheduler, period: float = 300.0, quiet: float = 0.25,
                 kinds: Mapping[str, tuple[str, str, str]] = OBJECT_KINDS) -> None:
        self.api = api
        self.sched = sched
        self.period = period
        self.quiet = quiet
        self.kinds = kinds
        self._last_listed: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="resync", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def listed(self, kind: str) -> None:
        """kopf delivered an object of `kind` from a (re)list; cheap, called on the watch loop."""
        with self._lock:
            self._last_listed[kind] = time.monotonic()

    def _run(self) -> None:
        next_resync = time.monotonic() + self.period
        while not self._stop.wait(min(self.quiet / 2, self.period)):
            now = time.monotonic()
            with self._lock:
                due = [k for k, t in self._last_listed.items() if now - t >= self.quiet]
                for k in due:
                    del self._last_listed[k]
            if now >= next_resync:
                next_resync = now + self.period
                due += [k for k in ("Pod", "Node") if k not in due]
            for kind in due:
                try:
                    start = time.monotonic()
                    gone = reconcile(self.api, self.sched, kind, self.kinds)
                    log.info("relisted", kind=kind, removed=gone, seconds=round(time.monotonic() - start, 3))
                except Exception as exc:
                    log.warning("resync failed; the next pass retries", kind=kind, error=str(exc))


def _listed(api: Requester, path: str, field_selector: str = "") -> Iterator[dict[str, Any]]:
    """The items of a LIST as metadata only: names and UIDs are all a relist compares, and decoding every
    pod's spec and status to read them is wasted work and a transient peak on the heap."""
    return list_all(api, path, field_selector, accept=METADATA_LIST)


def reconcile(api: Requester, sched: Scheduler, kind: str,
              kinds: Mapping[str, tuple[str, str, str]] = OBJECT_KINDS) -> int:
    """List `kind` and deliver DELETED for what the cache heard of before the list began but the list no
    longer has (client-go's Replace); returns how many.

    The list asks for metadata only (``_listed``)."""
    began = sched.event_clock()
    if kind == "Node":
        names = {n["metadata"]["name"] for n in _listed(api, "/api/v1/nodes")}
        gone: list[Mapping[str, Any]] = [o for _, o in sched.known_nodes_not_in(names, began)]
        for obj in gone:
            sched.on_node_event(DELETED, obj)
    elif kind == "Pod":
        uids = {p["metadata"]["uid"] for p in _listed(api, "/api/v1/pods", NON_TERMINAL_PODS)}
        gone = [o for _, o in sched.known_pods_not_in(uids, began)]
        for obj in gone:
            sched.on_pod_event(DELETED, obj)
    else:
        before = {object_key(o): o for o in sched.objects.list(kind)}
        present = {object_key(o) for o in _listed(api, collection_path(*kinds[kind]))}
        gone = [o for key, o in before.items() if key not in present]
        for obj in gone:
            sched.on_object_event(kind, DELETED, obj)
    for obj in gone:
        log.info("relist: removed an object deleted while the watch was down", kind=kind,
                 name=(obj.get("metadata") or {}).get("name"))
    return len(gone)
