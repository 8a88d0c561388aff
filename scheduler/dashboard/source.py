"""What the dashboard reads and runs: the read-only snapshot (kube/snapshot.py, the one `explain`,
`capacity` and `simulate --from-cluster` read), the FailedScheduling events, the scheduler's metrics,
and the engines themselves. No second scheduling path: a pod's decision is `explain`'s answer, the
what-if box `simulate --from-cluster`'s placement (ties broken by node name, as `explain` does, so the
answer is repeatable) and `capacity`'s count.

Every failure becomes a DashboardError whose message is one line for the page; the engines run one
at a time (each builds a whole offline scheduler) and a snapshot is shared by requests within
SNAPSHOT_SECONDS, so several open pages do not multiply the LIST load on the API server.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.dashboard import views
from scheduler.framework.features import Features
from scheduler.kube.client import Requester
from scheduler.kube.snapshot import ClusterReadError, ClusterSnapshot, get_pod, list_objects, read_snapshot

EVENTS = ("events.k8s.io", "v1", "events")
SNAPSHOT_SECONDS = 2.0
WHAT_IF_MAX = 1000  # capacity's copies are placed one by one: bounded so one paste cannot run for minutes
MAX_YAML_BYTES = 256 * 1024
PASTED = "the pasted YAML"


class DashboardError(Exception):
    """A message for the page (bad input, an unknown pod, a lost API server); ``status`` the HTTP code."""

    def __init__(self, message: str, status: int = 502) -> None:
        super().__init__(message)
        self.status = status


@dataclass(slots=True)
class _Scrape:
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]]
    at: float


class Source:
    """The dashboard's reads and engine runs against one cluster (``raw``) and one configuration."""

    def __init__(
        self, raw: Requester, config_path: str | None, scheduler_names: list[str], *,
        metrics_url: str | None = None, metrics_token: str | None = None,
        clock: Callable[[], float] = time.monotonic, features: Features | None = None,
    ) -> None:
        self.raw = raw
        self.features = features or Features()  # GenericWorkload on: members explained with their group
        self.config_path = config_path
        self.scheduler_names = scheduler_names
        self.metrics_url = metrics_url
        self.metrics_token = metrics_token
        self._clock = clock
        self._lock = threading.Lock()  # the snapshot cache
        self._engine = threading.Lock()  # one offline scheduler at a time
        self._snapshot: tuple[float, ClusterSnapshot] | None = None
        self._scrapes: list[_Scrape] = []

    # ----- reads ---------------------------------------------------------------------------------

    def snapshot(self) -> ClusterSnapshot:
        """The cluster as the live scheduler lists it, at most SNAPSHOT_SECONDS old."""
        with self._lock:
            now = self._clock()
            if self._snapshot is not None and now - self._snapshot[0] < SNAPSHOT_SECONDS:
                return self._snapshot[1]
            try:
                snap = read_snapshot(self.raw)
            except ClusterReadError as exc:
                self._snapshot = None
                raise DashboardError(str(exc)) from None
            self._snapshot = (now, snap)
            return snap

    def failed_scheduling_events(self) -> tuple[list[dict[str, Any]] | None, str]:
        """The FailedScheduling events of every namespace, or None and why (a role without `list events`
        still shows the pending pods, without attempts)."""
        try:
            return list_objects(self.raw, "Event", EVENTS, "reason=FailedScheduling"), ""
        except ClusterReadError as exc:
            return None, f"attempts unknown: {exc}"

    def pending(self) -> dict[str, Any]:
        snap = self.snapshot()
        events, note = self.failed_scheduling_events()
        pods = views.pending_pods(snap.pods, events, self.scheduler_names, time.time())
        return {"schedulerNames": self.scheduler_names, "pods": pods, "note": note}

    def nodes(self) -> dict[str, Any]:
        snap = self.snapshot()
        return views.nodes_view(snap.nodes, snap.pods)

    # ----- the engines ---------------------------------------------------------------------------

    def pod(self, namespace: str, name: str) -> dict[str, Any]:
        """explain's answer for one pod, as rows closest first."""
        from scheduler.whatif.explain import explain
        from scheduler.whatif.simulate import SimulationError

        if not namespace or not name:
            raise DashboardError("give the pod's namespace and name", 400)
        try:
            obj = get_pod(self.raw, namespace, name)
        except ClusterReadError as exc:
            raise DashboardError(str(exc), 404 if "not found" in str(exc) else 502) from None
        cluster = self.snapshot().all()
        with self._engine:
            try:
                result = explain(obj, cluster, self.config_path, self.features)
            except SimulationError as exc:
                raise DashboardError(str(exc), 400) from None
        return views.decision(result, self._filter_order(str(result.get("profile") or "")))

    def pod_groups(self) -> dict[str, Any]:
        """The Workload API's pod groups with their members (the PodGroups where the API server serves them)."""
        snap = self.snapshot()
        events, note = self.failed_scheduling_events()
        groups = views.pod_groups(snap.objects, snap.pods, events)
        if groups and not self.features.enable_generic_workload:
            note = (f"{note} " if note else "") + ("a group's page and its members' decisions need --feature-gates "
                                                    "GenericWorkload=true (as the scheduler runs)")
        return {"podGroups": groups, "note": note}

    def pod_group(self, namespace: str, name: str) -> dict[str, Any]:
        """explain's answer for one pod group (explain podgroup/NAME)."""
        from scheduler.whatif.explain_podgroup import explain_pod_group
        from scheduler.whatif.simulate import SimulationError

        if not namespace or not name:
            raise DashboardError("give the pod group's namespace and name", 400)
        cluster = self.snapshot().all()
        with self._engine:
            try:
                return explain_pod_group(namespace, name, cluster, self.config_path, self.features)
            except SimulationError as exc:
                raise DashboardError(str(exc), 400) from None

    def _filter_order(self, scheduler_name: str) -> list[str]:
        """The profile's Filter plugins in run order (how far a rejected node got)."""
        from scheduler.config.load import ConfigError, load

        try:
            cfg = load(self.config_path, [scheduler_name] if scheduler_name else None)
        except ConfigError:  # edited since explain read it: the rows keep their order by name
            return []
        for profile in cfg.profiles:
            if profile.scheduler_name == scheduler_name:
                return [ref.name for ref in profile.plugins.get("filter", [])]
        return []

    def what_if(self, text: str) -> dict[str, Any]:
        """simulate --from-cluster's placement of the pasted pod and capacity's count of its copies."""
        from scheduler.whatif.capacity import capacity
        from scheduler.whatif.simulate import SimulationError, invalid_fields, pods_to_place, run_simulation

        if len(text.encode()) > MAX_YAML_BYTES:
            raise DashboardError(f"the pasted YAML is over {MAX_YAML_BYTES // 1024} KiB", 400)
        if not text.strip():
            raise DashboardError("paste a Pod's YAML first", 400)
        with tempfile.TemporaryDirectory(prefix="py-scheduler-dashboard-") as d:
            path = os.path.join(d, "pod.yaml")
            with open(path, "w") as f:
                f.write(text)
            try:
                pods = pods_to_place(path)  # the YAML's errors first: they need no cluster
                if len(pods) != 1:
                    raise SimulationError(f"{path}: expected exactly one Pod, found {len(pods)} objects")
                cluster = self.snapshot().all()
                with self._engine:
                    placed = run_simulation(None, path, self.config_path, tie_break="name", live=cluster).results[0]
                    count = None
                    if not invalid_fields(pods[0]):
                        count = capacity(pods[0], cluster, self.config_path, max_count=WHAT_IF_MAX, live=True,
                                         source="the live cluster")
            except SimulationError as exc:
                raise DashboardError(str(exc).replace(path, PASTED), 400) from None
        return views.what_if(placed, count)

    # ----- the scheduler's metrics ---------------------------------------------------------------

    def scheduler(self) -> dict[str, Any]:
        """Queue sizes and attempts per second from the metrics endpoint (when given), and the recent
        decisions from the --record-results annotations."""
        out: dict[str, Any] = {"metricsUrl": self.metrics_url, "metrics": None, "metricsError": ""}
        if self.metrics_url:
            try:
                out["metrics"] = self._metrics()
            except DashboardError as exc:
                out["metricsError"] = str(exc)
        else:
            out["metricsError"] = "no metrics URL: start the dashboard with --metrics-url"
        out["decisions"] = views.recent_decisions(self.snapshot().pods)
        return out

    def _metrics(self) -> dict[str, Any]:
        assert self.metrics_url is not None
        request = urllib.request.Request(self.metrics_url)
        if self.metrics_token:
            request.add_header("Authorization", f"Bearer {self.metrics_token}")
        try:
            with urllib.request.urlopen(request, timeout=5) as r:
                text = r.read(16 * 1024 * 1024).decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            raise DashboardError(f"metrics at {self.metrics_url}: HTTP {exc.code} {exc.reason}") from None
        except (OSError, ValueError) as exc:
            raise DashboardError(f"cannot read the metrics at {self.metrics_url}: {exc}") from None
        try:
            samples = views.parse_metrics(text)
        except ValueError:
            raise DashboardError(f"{self.metrics_url} does not answer in the Prometheus text format") from None
        with self._lock:
            now = self._clock()
            earlier = [s for s in self._scrapes if now - s.at >= 1.0]  # a rate over at least a second
            before = earlier[-1] if earlier else None
            if not self._scrapes or now - self._scrapes[-1].at >= 1.0:
                self._scrapes = [*self._scrapes[-1:], _Scrape(samples, now)]
        if before is None:
            return views.scheduler_view(samples, None, 0.0)
        return views.scheduler_view(samples, before.samples, now - before.at)
