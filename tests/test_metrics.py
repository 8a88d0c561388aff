"""/metrics: what a scrape shows matches the list in docs/observability.md and kube-scheduler v1.37's buckets; sampling,
evaluation counts, attempt logs; a scrape that breaks or races shutdown never hurts the scheduler."""

from __future__ import annotations

import bisect
import random
import re
import socket
import struct
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from structlog.testing import capture_logs

from scheduler.config.defaults import set_workload_gates
from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED, DELETED, MODIFIED
from scheduler.framework.features import Features
from scheduler.metrics import DeferredHistogram, Metrics, TickCounter, exponential_buckets
from scheduler.scheduler import Scheduler
from scheduler.serving.health import HealthServer
from scheduler.whatif.offline import OfflineWriter, RecordingEventSink
from tests.builders import api_node, api_pod
from tests.test_scheduler import Binder, Clock

METRICS_DOC = Path(__file__).resolve().parent.parent / "docs" / "observability.md"

# Histogram buckets in kube-scheduler v1.37.2 pkg/scheduler/metrics/metrics.go (unchanged since v1.34.10).
UPSTREAM_BUCKETS = {
    "scheduler_event_handling_duration_seconds": exponential_buckets(0.0001, 2, 12),
    "scheduler_scheduling_attempt_duration_seconds": exponential_buckets(0.001, 2, 15),
    "scheduler_scheduling_algorithm_duration_seconds": exponential_buckets(0.001, 2, 15),
    "scheduler_preemption_victims": exponential_buckets(1, 2, 7),
    "scheduler_preemption_goroutines_duration_seconds": exponential_buckets(0.01, 2, 20),
    "scheduler_pod_scheduling_sli_duration_seconds": exponential_buckets(0.01, 2, 20),
    "scheduler_pod_scheduling_attempts": exponential_buckets(1, 2, 5),
    "scheduler_framework_extension_point_duration_seconds": exponential_buckets(0.0001, 2, 12),
    "scheduler_plugin_execution_duration_seconds": exponential_buckets(0.00001, 1.5, 20),
    "scheduler_queueing_hint_execution_duration_seconds": exponential_buckets(0.00001, 1.5, 20),
    "scheduler_permit_wait_duration_seconds": exponential_buckets(0.001, 2, 15),
}


class AlwaysSample(random.Random):
    def random(self) -> float:
        return 0.0


class NeverSample(random.Random):
    def random(self) -> float:
        return 0.99


def make(metrics: Metrics, features: Features | None = None) -> tuple[Scheduler, Binder]:
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{"schedulerName": "py-scheduler"}]})
    b, writer = Binder(), OfflineWriter()
    s = Scheduler(cfg, build_registry(cfg), b, RecordingEventSink(), metrics, writer=writer, synchronous_binding=True,
                  rng=random.Random(1), tie_break="name", clock=Clock(), features=features)
    writer.connect(s)
    return s, b


def workload(s: Scheduler) -> None:
    """Three nodes, two pods that fit, one that fits nowhere (so PostFilter and preemption run)."""
    for i in range(3):
        s.on_node_event(ADDED, api_node(f"n{i}", cpu="2"))
    s.on_pod_event(ADDED, api_pod("a"))
    s.on_pod_event(ADDED, api_pod("b"))
    s.on_pod_event(ADDED, api_pod("huge", cpu="64"))
    while s.schedule_one(timeout=0):
        pass
    s.housekeeping()


def documented_metrics() -> dict[str, tuple[str, frozenset[str]]]:
    text = METRICS_DOC.read_text()
    block = text[text.index("<!-- metrics:begin -->"):text.index("<!-- metrics:end -->")]
    out = {}
    for line in block.splitlines():
        m = re.match(r"\| `([a-z_]+)` \| (\w+) \|([a-z_, ]*)\|", line)
        if m:
            labels = frozenset(x.strip() for x in m.group(3).split(",") if x.strip())
            out[m.group(1)] = (m.group(2), labels)
    return out


def parse_scrape(text: str) -> tuple[dict[str, str], dict[str, set[str]], dict[str, set[float]]]:
    """Family -> type, family -> label names seen on samples, histogram -> its `le` bounds."""
    types: dict[str, str] = {}
    labels: dict[str, set[str]] = {}
    bounds: dict[str, set[float]] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            types[name] = kind
            labels.setdefault(name, set())
            continue
        if line.startswith("#") or not line:
            continue
        m = re.match(r"([a-zA-Z_:]+)(?:\{(.*)\})? ", line)
        assert m, line
        sample, raw = m.group(1), m.group(2) or ""
        family = next((f for f in (sample, re.sub(r"_(bucket|sum|count)$", "", sample)) if f in types), None)
        assert family is not None, f"sample {sample} belongs to no declared family"
        pairs = dict(re.findall(r'(\w+)="([^"]*)"', raw))
        if sample.endswith("_bucket"):
            bounds.setdefault(family, set()).add(float(pairs.pop("le")))
        labels[family] |= set(pairs)
    return types, labels, bounds


@pytest.fixture
def served() -> Iterator[tuple[Scheduler, Metrics, HealthServer]]:
    metrics = Metrics(rng=AlwaysSample())
    s, _ = make(metrics)
    health = HealthServer(0, "127.0.0.1", registry=metrics.registry, on_scrape_error=metrics.scrape_errors.inc)
    health.start()
    yield s, metrics, health
    health.stop()


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return str(r.read().decode())


def test_scrape_matches_documented_list(served: tuple[Scheduler, Metrics, HealthServer]) -> None:
    s, metrics, health = served
    workload(s)
    types, seen_labels, _ = parse_scrape(scrape(health.port))
    documented = documented_metrics()
    assert set(types) == set(documented), "docs/observability.md's metric list and the scrape differ"
    for name, (kind, labels) in documented.items():
        assert types[name] == kind, name
        assert seen_labels[name] <= labels, f"{name}: scraped labels {seen_labels[name]} not in the docs {labels}"
    # Label names of series not observed yet come from the registry's declarations.
    for collector, names in list(metrics.registry._collector_to_names.items()):
        family = next(n for n in names if n in documented)
        declared = getattr(collector, "_labelnames", None) or getattr(collector, "labelnames", ())
        assert frozenset(declared) == documented[family][1], family


def test_histogram_buckets_are_upstreams(served: tuple[Scheduler, Metrics, HealthServer]) -> None:
    s, _, health = served
    workload(s)
    s.metrics.permit_wait_duration.labels("Success").observe(0.01)  # type: ignore[union-attr]
    s.metrics.preemption_victims.observe(1)  # type: ignore[union-attr]
    s.metrics.preemption_goroutine_done(True, 0.05)  # type: ignore[union-attr]
    s.metrics.hint_executed("NodeResourcesFit", "NodeAdd", "Queue", 0.0001)  # type: ignore[union-attr]
    _, _, bounds = parse_scrape(scrape(health.port))
    for name, want in UPSTREAM_BUCKETS.items():
        assert name in bounds, f"{name} has no samples to check"
        assert sorted(bounds[name]) == pytest.approx([*want, float("inf")]), name


def test_attempt_results_and_queue_metrics(served: tuple[Scheduler, Metrics, HealthServer]) -> None:
    s, metrics, _ = served
    workload(s)
    assert metrics.schedule_attempts.value(("scheduled", "py-scheduler")) == 2
    assert metrics.schedule_attempts.value(("unschedulable", "py-scheduler")) == 1
    assert metrics.preemption_attempts._value.get() == 1  # DefaultPreemption ran for "huge"
    assert metrics.incoming_pods.value(("active", "UnscheduledPodAdd")) == 3
    assert metrics.pending_pods.labels("unschedulable")._value.get() == 1
    assert metrics.unschedulable_pods.labels("NodeResourcesFit", "py-scheduler")._value.get() == 1
    assert metrics.cache_size.labels("nodes")._value.get() == 3
    metrics.extension_point_duration.fold()
    assert sum(metrics.extension_point_duration._series[("PreEnqueue", "Success", "py-scheduler")][:-1]) >= 3
    metrics.event_handling_duration.fold()
    assert sum(metrics.event_handling_duration._series[("NodeAdd",)][:-1]) == 3


def test_pre_enqueue_samples_land_in_their_status_and_profiles_series() -> None:
    """pre_enqueue_ran keeps each series' list: a second status or profile still gets a series of its own."""
    metrics = Metrics(registry=CollectorRegistry())
    for status, profile, seconds in [("Success", "a", 0.001), ("UnschedulableAndUnresolvable", "a", 0.002),
                                     ("Success", "b", 0.003), ("Success", "a", 0.004)]:
        metrics.pre_enqueue_ran(profile, status, seconds)
    metrics.extension_point_duration.fold()
    series = metrics.extension_point_duration._series
    assert {labels: (int(sum(row[:-1])), round(row[-1], 6)) for labels, row in series.items()} == {
        ("PreEnqueue", "Success", "a"): (2, 0.005),
        ("PreEnqueue", "UnschedulableAndUnresolvable", "a"): (1, 0.002),
        ("PreEnqueue", "Success", "b"): (1, 0.003),
    }


def test_incoming_entities_series_appears_at_its_first_count() -> None:
    """A pod that counts as incoming but not as an entity creates no entities series (no zero-valued sample)."""
    metrics = Metrics(registry=CollectorRegistry())
    metrics.pod_incoming("active", "PodUpdate", entity=False)
    assert metrics.incoming_pods.value(("active", "PodUpdate")) == 1
    assert not any(f.samples for f in metrics.incoming_entities.collect())
    metrics.pod_incoming("active", "PodUpdate")
    metrics.pod_incoming("backoff", "PodUpdate")
    assert metrics.incoming_pods.value(("active", "PodUpdate")) == 2
    assert metrics.incoming_entities.value(("active", "PodUpdate", "pod")) == 1
    assert metrics.incoming_entities.value(("backoff", "PodUpdate", "pod")) == 1


def handled(metrics: Metrics) -> Counter[str]:
    """scheduler_event_handling_duration_seconds sample counts by event label."""
    metrics.event_handling_duration.fold()
    return Counter({labels[0]: int(sum(row[:-1])) for labels, row in metrics.event_handling_duration._series.items()})


def samples_of(metrics: Metrics, event: Callable[[], object]) -> Counter[str]:
    """The event-handling samples one watch event adds."""
    before = handled(metrics)
    event()
    return handled(metrics) - before


def test_node_updates_are_one_sample_per_derived_change_as_upstream() -> None:
    """updateNodeInCache observes once per NodeSchedulingPropertiesChange event, never `NodeUpdate`."""
    metrics = Metrics()
    s, _ = make(metrics)
    s.on_node_event(ADDED, api_node("n0", cpu="2"))
    changed = api_node("n0", cpu="4")
    changed["metadata"] |= {"resourceVersion": "2", "labels": {"disk": "ssd"}}
    assert samples_of(metrics, lambda: s.on_node_event(MODIFIED, changed)) == Counter(
        {"NodeUpdateNodeAllocatable": 1, "NodeUpdateNodeLabel": 1})
    assert samples_of(metrics, lambda: s.on_node_event(MODIFIED, changed)) == Counter()  # resync: same object
    heartbeat = {**changed, "metadata": {**changed["metadata"], "resourceVersion": "3"}}
    assert samples_of(metrics, lambda: s.on_node_event(MODIFIED, heartbeat)) == Counter()  # nothing relevant
    assert samples_of(metrics, lambda: s.on_node_event(DELETED, heartbeat)) == Counter({"NodeDelete": 1})


def test_pod_events_are_labelled_as_upstreams_filtered_handlers_see_them() -> None:
    metrics = Metrics()
    s, _ = make(metrics)
    s.on_node_event(ADDED, api_node("n0", cpu="8"))
    # A pod bound elsewhere, then relabelled: updatePodInCache's own sample plus one per derived event.
    other = api_pod("other", node_name="n0")
    assert samples_of(metrics, lambda: s.on_pod_event(ADDED, other)) == Counter({"AssignedPodAdd": 1})
    relabelled = {**other, "metadata": {**other["metadata"], "resourceVersion": "2", "labels": {"app": "x"}}}
    assert samples_of(metrics, lambda: s.on_pod_event(MODIFIED, relabelled)) == Counter(
        {"AssignedPodUpdate": 1, "AssignedPodUpdatePodLabel": 1})
    status_only = {**relabelled, "metadata": {**relabelled["metadata"], "resourceVersion": "3"}}
    assert samples_of(metrics, lambda: s.on_pod_event(MODIFIED, status_only)) == Counter({"AssignedPodUpdate": 2})
    # Pending pods: an update adds the derived events other than UnscheduledPodUpdate; a resync nothing.
    p = api_pod("p")
    s.on_pod_event(ADDED, p)
    p2 = {**p, "metadata": {**p["metadata"], "resourceVersion": "2", "labels": {"app": "y"}}}
    assert samples_of(metrics, lambda: s.on_pod_event(MODIFIED, p2)) == Counter(
        {"UnscheduledPodUpdate": 1, "UnscheduledPodUpdatePodLabel": 1})
    assert samples_of(metrics, lambda: s.on_pod_event(MODIFIED, p2)) == Counter()
    # Our own bind confirmed by the watch: the queue handler's delete and the cache handler's add,
    # and the queue is told AssignedPodAdd as upstream's addPodToCache does.
    moved: list[str] = []
    move = s.queue.move_all_to_active_or_backoff
    s.queue.move_all_to_active_or_backoff = lambda e, *a: (moved.append(e.label),
                                                           move(e, *a))[1]  # type: ignore[method-assign]
    while s.schedule_one(timeout=0):
        pass
    bound = {**p2, "metadata": {**p2["metadata"], "resourceVersion": "3"}, "spec": {**p2["spec"], "nodeName": "n0"}}
    assert samples_of(metrics, lambda: s.on_pod_event(MODIFIED, bound)) == Counter(
        {"UnscheduledPodDelete": 1, "AssignedPodAdd": 1})
    assert moved == ["AssignedPodAdd"]
    # Pods of other schedulers reach no handler upstream (the informer's filter).
    foreign = api_pod("foreign", scheduler="default-scheduler")
    assert samples_of(metrics, lambda: s.on_pod_event(ADDED, foreign)) == Counter()
    assert samples_of(metrics, lambda: s.on_pod_event(DELETED, foreign)) == Counter()


def test_object_events_carry_upstreams_resource_labels() -> None:
    """ClusterEvent.Label(): `PersistentVolumeClaimUpdate`, `storage.k8s.io/StorageClassAdd`, for the
    handler's sample and for the event the queue records (queue_incoming_pods_total, inflight_events)."""
    metrics = Metrics()
    s, _ = make(metrics)
    moved: list[str] = []
    move = s.queue.move_all_to_active_or_backoff
    s.queue.move_all_to_active_or_backoff = lambda e, *a: (moved.append(e.label),
                                                           move(e, *a))[1]  # type: ignore[method-assign]
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
          "provisioner": "x"}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "c", "namespace": "default", "resourceVersion": "1"}, "spec": {}}

    updated = {**claim, "metadata": {**claim["metadata"], "resourceVersion": "2"}}

    def events() -> None:
        s.on_object_event("StorageClass", ADDED, sc)
        for type_, obj in ((ADDED, claim), (MODIFIED, updated), (DELETED, updated)):
            s.on_object_event("PersistentVolumeClaim", type_, obj)

    labels = ["storage.k8s.io/StorageClassAdd", "PersistentVolumeClaimAdd", "PersistentVolumeClaimUpdate",
              "PersistentVolumeClaimDelete"]
    assert samples_of(metrics, events) == Counter(labels)
    assert moved == labels


def test_volume_stage_errors_reach_the_scrape_through_the_framework_handle() -> None:
    metrics = Metrics()
    s, _ = make(metrics)
    s.frameworks["py-scheduler"].volume_scheduling_stage_failed("assume")
    assert metrics.volume_stage_errors.labels("assume")._value.get() == 1
    assert 'scheduler_volume_scheduling_stage_error_total{operation="assume"} 1.0' in (
        generate_latest(metrics.registry).decode())


def test_plugin_durations_only_in_sampled_cycles() -> None:
    sampled, never = Metrics(rng=AlwaysSample()), Metrics(rng=NeverSample())
    for m in (sampled, never):
        s, _ = make(m)
        workload(s)
    never.plugin_execution_duration.fold()
    assert never.plugin_execution_duration._series == {}
    sampled.plugin_execution_duration.fold()
    points = {(plugin, point) for plugin, point, _ in sampled.plugin_execution_duration._series}
    assert {("NodeResourcesFit", "Filter"), ("NodeResourcesFit", "PreFilter"), ("DefaultBinder", "Bind"),
            ("DefaultPreemption", "PostFilter")} <= points
    # Filter is timed per node (up to TIMED_NODES_PER_CYCLE): 3 pods x 3 nodes for the first filter plugin.
    series = sampled.plugin_execution_duration._series
    filter_calls = sum(sum(row[:-1]) for (pl, pt, _), row in series.items() if pl == "NodeUnschedulable"
                       and pt == "Filter")
    assert filter_calls == 9


def test_plugin_evaluations_are_counted_per_node_without_per_node_calls() -> None:
    m = Metrics(rng=NeverSample())
    s, _ = make(m)
    tainted = api_node("tainted", cpu="2")
    tainted["spec"] = {"taints": [{"key": "k", "effect": "NoSchedule"}]}
    s.on_node_event(ADDED, tainted)
    workload(s)
    total = m.plugin_evaluation_total
    # 3 pods, each filtered on 4 nodes: the plugins up to TaintToleration saw 12; it rejected the tainted
    # node each time, so NodeResourcesFit (after it) saw 9. Plugins whose PreFilter skipped are not run.
    assert total.value(("NodeUnschedulable", "Filter", "py-scheduler")) == 12
    assert total.value(("TaintToleration", "Filter", "py-scheduler")) == 12
    assert total.value(("NodeResourcesFit", "Filter", "py-scheduler")) == 9
    assert total.value(("VolumeRestrictions", "Filter", "py-scheduler")) == 0
    assert total.value(("NodeResourcesFit", "PreFilter", "py-scheduler")) == 3
    assert total.value(("NodeResourcesFit", "Score", "py-scheduler")) == 6  # a and b, 3 feasible nodes each


def test_one_log_line_per_attempt_outcome() -> None:
    s, _ = make(Metrics())
    with capture_logs() as logs:
        workload(s)
        s.clock.now += 400  # type: ignore[attr-defined]
        s.queue.flush_unschedulable_pods_leftover()  # "huge" is retried after 5 minutes, and fails again
        s.schedule_one(timeout=0)
    bound = [e for e in logs if e["event"] == "bound"]
    assert [(e["pod"], e["log_level"]) for e in bound] == [("default/a", "info"), ("default/b", "info")]
    assert all({"node", "profile", "cycle"} <= e.keys() for e in bound)
    failed = [e for e in logs if e["event"] == "unschedulable"]
    assert [(e["log_level"], e["attempts"]) for e in failed] == [("info", 1), ("debug", 2)]
    assert failed[0]["profile"] == "py-scheduler" and "Insufficient cpu" in failed[0]["message"]
    # a, b and huge were queued at one (fake) instant: they leave activeQ in the order they came
    assert failed[0]["cycle"] == 3 and failed[0]["node"] is None


def test_broken_client_and_failing_collector_do_not_stop_serving() -> None:
    metrics = Metrics()

    class Broken:
        broken = True

        def collect(self) -> Iterator[object]:
            if self.broken:
                raise RuntimeError("torn down")
            return iter(())

    registry = CollectorRegistry()
    registry.register(metrics.schedule_attempts)
    registry.register(metrics.scrape_errors)
    broken = Broken()
    registry.register(broken)  # type: ignore[arg-type]
    health = HealthServer(0, "127.0.0.1", registry=registry, on_scrape_error=metrics.scrape_errors.inc)
    health.start()
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            scrape(health.port)
        assert err.value.code == 500 and b"torn down" not in err.value.read()  # no exception text
        broken.broken = False
        for _ in range(20):  # clients that send a request and reset the connection at once
            with socket.create_connection(("127.0.0.1", health.port)) as c:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert "scheduler_schedule_attempts_total" in scrape(health.port)
        assert metrics.scrape_errors._value.get() >= 1
    finally:
        health.stop()


def test_scrapes_during_shutdown_never_crash_the_scheduler(served: tuple[Scheduler, Metrics, HealthServer]) -> None:
    s, _, health = served
    workload(s)
    s.start()
    problems: list[BaseException] = []
    done = threading.Event()

    def scraper() -> None:
        while not done.is_set():
            try:
                scrape(health.port)
            except (urllib.error.URLError, ConnectionError):
                return  # the server is gone: expected once it stops
            except BaseException as exc:
                problems.append(exc)
                return

    threads = [threading.Thread(target=scraper) for _ in range(4)]
    for t in threads:
        t.start()
    s.stop()
    health.stop()
    done.set()
    for t in threads:
        t.join(10)
    assert problems == []


@pytest.mark.parametrize("async_preemption", [True, False])
def test_generic_workload_adds_the_preemption_duration_and_budget_series(async_preemption: bool) -> None:
    """Registered with GenericWorkload (as upstream), observed for a pod's preemption too: one evaluation that
    found nothing, then one that chose two victims whose eviction breaks a budget allowing none."""
    m = Metrics()
    s, _ = make(m, Features(enable_async_preemption=async_preemption, enable_generic_workload=True))
    s.on_node_event(ADDED, api_node("n0", cpu="2"))
    s.on_object_event("PodDisruptionBudget", ADDED, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "low"}}}, "status": {"disruptionsAllowed": 0}})
    for name in ("low-1", "low-2"):
        s.on_pod_event(ADDED, {**(obj := api_pod(name, node_name="n0")),
                               "metadata": {**obj["metadata"], "labels": {"app": "low"}}})
    s.on_pod_event(ADDED, api_pod("peer", cpu="2"))  # priority 0 like the victims: cannot preempt them
    s.on_pod_event(ADDED, api_pod("high", cpu="2", priority=100))
    assert s.schedule_one(timeout=0) and s.schedule_one(timeout=0)
    s.frameworks["py-scheduler"].plugins["DefaultPreemption"].evaluator.executor().shutdown(wait=True)
    sample = m.registry.get_sample_value
    evaluated = {r: sample("scheduler_preemption_evaluation_duration_seconds_count", {"preemptor": "pod", "result": r})
                 for r in ("Success", "Unschedulable")}
    assert evaluated == {"Success": 1, "Unschedulable": 1}
    assert sample("scheduler_preemption_execution_duration_seconds_count",
                  {"preemptor": "pod", "result": "success"}) == 1
    assert sample("scheduler_preemption_pdb_violations_total", {"preemptor": "pod"}) == 2


def test_without_generic_workload_the_preemption_duration_series_are_not_registered() -> None:
    m = Metrics()
    make(m, Features(enable_generic_workload=False))
    names = {f.name for f in m.registry.collect()}
    assert not {"scheduler_preemption_evaluation_duration_seconds", "scheduler_preemption_pdb_violations"} & names


@pytest.mark.parametrize("async_preemption", [True, False])
def test_preemption_counts_the_attempt_and_its_victims(async_preemption: bool) -> None:
    m = Metrics()
    s, _ = make(m, Features(enable_async_preemption=async_preemption))
    s.on_node_event(ADDED, api_node("n0", cpu="2"))
    s.on_pod_event(ADDED, api_pod("low-1", node_name="n0"))
    s.on_pod_event(ADDED, api_pod("low-2", node_name="n0"))
    s.on_pod_event(ADDED, api_pod("high", cpu="2", priority=100))
    assert s.schedule_one(timeout=0)
    s.frameworks["py-scheduler"].plugins["DefaultPreemption"].evaluator.executor().shutdown(wait=True)
    assert s.cache.pod_count() == 0  # both victims were deleted
    assert m.preemption_attempts._value.get() == 1
    samples = {x.name: x.value for f in m.preemption_victims.collect() for x in f.samples}
    assert samples["scheduler_preemption_victims_count"] == 1 and samples["scheduler_preemption_victims_sum"] == 2
    runs = {(x.name, x.labels.get("result")): x.value for f in m.preemption_goroutines_execution.collect()
            for x in f.samples if x.name.endswith("_total")}
    assert runs == ({("scheduler_preemption_goroutines_execution_total", "success"): 1} if async_preemption else {})


def test_a_client_resetting_before_its_request_is_counted_not_printed(capfd: pytest.CaptureFixture[str]) -> None:
    metrics = Metrics()
    health = HealthServer(0, "127.0.0.1", registry=metrics.registry, on_scrape_error=metrics.scrape_errors.inc)
    health.start()
    try:
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", health.port)) as c:
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.sendall(b"GET /metr")  # half a request line, then a reset
        assert "scheduler_pending_pods" in scrape(health.port)
    finally:
        health.stop()
    assert "Traceback" not in capfd.readouterr().err


def test_deferred_histogram_bins_as_a_bucket_search_per_sample() -> None:
    """fold bins queued samples per series at once; the buckets (a value on a bound counts in it, as
    Prometheus' le) and sums equal binning each sample with bisect_left, over several folds."""
    buckets = [0.001, 0.01, 0.1, 1.0]
    h = DeferredHistogram("t_seconds", "test", ["point"], buckets)
    rng = random.Random(5)
    expected: dict[tuple[str, ...], list[float]] = {}
    for _ in range(3):
        for _ in range(500):
            labels = (rng.choice(["Filter", "Score", "Bind"]),)
            value = rng.choice([*buckets, 0.0, 5.0, rng.random() * 2])
            h.record(labels, value)
            row = expected.setdefault(labels, [0.0] * (len(buckets) + 2))
            row[bisect.bisect_left(buckets, value)] += 1
            row[-1] += value
        h.fold()
    got = h._series
    assert got.keys() == expected.keys()
    for labels, row in expected.items():
        assert got[labels][:-1] == row[:-1]
        assert got[labels][-1] == pytest.approx(row[-1])


def test_v137_queue_series_pod_entities_and_the_pod_group_queues() -> None:
    """pending_pods' incomplete/pending series exist at 0 from the start (upstream's queue creates them);
    an incoming pod counts as an entity of type pod unless its hint's strategy named its queue."""
    metrics = Metrics()
    metrics.pod_incoming("active", "UnscheduledPodAdd")
    metrics.pod_incoming("unschedulable", "ScheduleAttemptFailure", entity=False)
    metrics.pod_scheduled("p", 0.01, 2, 1.0, after_flush=True)
    text = generate_latest(metrics.registry).decode()
    assert 'scheduler_pending_pods{queue="incomplete"} 0.0' in text
    assert 'scheduler_pending_pods{queue="pending"} 0.0' in text
    assert 'scheduler_queue_incoming_entities_total{event="UnscheduledPodAdd",queue="active",type="pod"} 1.0' in text
    assert 'ScheduleAttemptFailure",queue="unschedulable",type="pod"' not in text
    assert 'scheduler_queue_incoming_pods_total{event="ScheduleAttemptFailure",queue="unschedulable"} 1.0' in text
    assert "scheduler_pod_scheduled_after_flush_total 1.0" in text


def test_tick_counter_exposes_what_a_prometheus_counter_would_and_loses_no_tick_across_threads() -> None:
    counted, ticked = CollectorRegistry(), CollectorRegistry()
    counter = prometheus_client.Counter("x_total", "Things.", ["kind", "when"], registry=counted)
    ticks = TickCounter("x", "Things.", ["kind", "when"])
    ticked.register(ticks)
    for labels, n in [(("b", "now"), 3), (("a", "later"), 1), (("b", "now"), 2)]:
        tick = ticks.tick(labels)
        for _ in range(n):
            tick()
            counter.labels(*labels).inc()
    assert generate_latest(ticked) == generate_latest(counted)
    assert ticks.value(("b", "now")) == 5 and ticks.value(("c", "never")) == 0

    def count(n: int) -> None:
        tick = ticks.tick(("threads", "now"))
        for _ in range(n):
            tick()

    workers = [threading.Thread(target=count, args=(20_000,)) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert ticks.value(("threads", "now")) == 80_000


def test_sli_duration_counts_every_attempt_count_past_the_cap_under_one_label() -> None:
    metrics = Metrics(CollectorRegistry())
    for attempts in (1, 14, 15, 16, 40):
        metrics.pod_scheduled("py-scheduler", 0.01, attempts, 0.5)
    text = generate_latest(metrics.registry).decode()
    counts = dict(re.findall(r'scheduler_pod_scheduling_sli_duration_seconds_count\{attempts="([^"]+)"\} (\S+)', text))
    assert counts == {"1": "1.0", "14": "1.0", "15+": "3.0"}


def test_a_queued_pod_group_counts_its_members_as_pending_pods_and_itself_as_a_podgroup_entity() -> None:
    """GenericWorkload: a group entering activeQ counts its members in incoming_pods and itself once in the
    podgroup row; scheduler_pending_pods{queue="active"} counts its members, queued_entities the group."""
    set_workload_gates(True, False)
    try:
        metrics = Metrics(CollectorRegistry())
        s, _ = make(metrics, Features(enable_generic_workload=True))
        s.on_pod_group_event(ADDED, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                     "metadata": {"name": "g", "namespace": "default", "uid": "u-g",
                                                  "resourceVersion": "1", "generation": 1},
                                     "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}})
        for name in ("a", "b"):
            pod = api_pod(name)
            pod["spec"]["schedulingGroup"] = {"podGroupName": "g"}
            s.on_pod_event(ADDED, pod)
        s.on_pod_event(ADDED, api_pod("solo"))
        metrics.refresh(s.cache, s.queue)
        text = generate_latest(metrics.registry).decode()
    finally:
        set_workload_gates(False, False)
    assert 'scheduler_pending_pods{queue="active"} 3.0' in text
    assert 'scheduler_queued_entities{queue="active",type="podgroup"} 1.0' in text
    assert 'scheduler_queued_entities{queue="active",type="pod"} 1.0' in text
    assert ('scheduler_queue_incoming_entities_total{event="UnscheduledPodAdd",queue="active",type="podgroup"} 1.0'
            in text)
    # a alone is below minCount: GangScheduling gates the new group (filed as unschedulable), and the handler's
    # UnscheduledPodAdd for a asks GangScheduling's hint, which queues it: PreEnqueue gates it again (unschedulable
    # twice, as upstream). b joins the gated group; its UnscheduledPodAdd moves the group to activeQ with both
    # members; solo is a pod.
    assert 'scheduler_queue_incoming_pods_total{event="UnscheduledPodAdd",queue="unschedulable"} 2.0' in text
    assert 'scheduler_queue_incoming_pods_total{event="UnscheduledPodAdd",queue="active"} 3.0' in text
