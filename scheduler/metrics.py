"""Prometheus metrics with kube-scheduler v1.37's names, types, labels and buckets (pkg/scheduler/metrics),
plus py-scheduler's own under ``py_scheduler_``.

The hot path stays cheap: per-node and per-plugin samples (plugin durations in the 10 % of cycles that
are sampled, as upstream's pluginMetricsSamplePercent; queueing hint durations; plugin evaluation
counts) are appended to a deque and folded into their metric families when Prometheus scrapes, as
upstream's MetricAsyncRecorder flushes them off the scheduling goroutine. Gauges that mirror queue
and cache sizes are refreshed by the scheduler's once-a-second housekeeping.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from scheduler.framework.runtime import Framework

# Go's client exports no *_created series; neither do we (process-wide prometheus_client setting).
disable_created_metrics()

# Upstream pkg/scheduler/schedule_one.go: plugin execution durations are recorded for 10 % of scheduling cycles.
PLUGIN_METRICS_SAMPLE_PERCENT = 10

# Label values (upstream pkg/scheduler/metrics/metrics.go / pkg/scheduler/metrics/profile_metrics.go).
SCHEDULED, UNSCHEDULABLE, ERROR = "scheduled", "unschedulable", "error"
BINDING = "binding"  # scheduler_goroutines{operation}
POD = "pod"  # the entity type of scheduler_queued_entities / scheduler_queue_incoming_entities_total
POD_GROUP_TYPE = "podgroup"  # the other entity type (GenericWorkload)
POD_GROUP_MEMBER_QUEUES = ("incomplete", "pending")  # scheduler_pending_pods' queues of pod-group members
SLI_ATTEMPTS_CAP = 15  # attempts label "15+" from there on (upstream getAttemptsLabel)


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Prometheus ExponentialBuckets: ``count`` upper bounds from ``start``, each ``factor`` times the last."""
    return [start * factor**i for i in range(count)]


class DeferredHistogram(Collector):
    """A histogram whose observations are queued (one list or deque append) and binned at scrape time.

    For samples taken where even a prometheus_client observe (a lock and a linear bucket scan) would
    show in a benchmark. ``record`` appends to its series' own list, so folding bins each series' values
    at once with no Python step per sample; ``sink`` appends (labels, value) pairs to a deque, grouped
    when folded. List and deque appends are atomic, so any thread may record."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self.bounds = list(buckets)
        self._bounds = np.asarray(self.bounds, dtype=np.float64)
        self._pending: deque[tuple[tuple[str, ...], float]] = deque()
        self._queued: dict[tuple[str, ...], list[float]] = {}  # labels -> values not yet binned (record)
        self._series: dict[tuple[str, ...], list[float]] = {}  # labels -> per-bucket counts + [sum]
        self._lock = threading.Lock()  # folding is done by one scraper at a time

    def record(self, labelvalues: tuple[str, ...], value: float) -> None:
        self.values_of(labelvalues).append(value)

    def values_of(self, labelvalues: tuple[str, ...]) -> list[float]:
        """The list a series' observations are appended to (``record`` without the lookup, for a caller
        that keeps it): folding takes what is in it."""
        queued = self._queued.get(labelvalues)
        if queued is None:
            queued = self._queued.setdefault(labelvalues, [])
        return queued

    def sink(self) -> Callable[[tuple[Any, float]], None]:
        """append((labelvalues, value)) to a deque (per-node timings, whose labels vary by verdict)."""
        return self._pending.append

    def fold(self) -> None:
        """Bin every queued observation (scrape time, or a test): each series' values binned at once (numpy),
        instead of a bucket search and two additions per sample."""
        with self._lock:
            pending = self._pending
            popleft = pending.popleft
            grouped: dict[tuple[str, ...], list[float]] = {}
            for _ in range(len(pending)):  # only what is queued now: other threads may append meanwhile
                labels, value = popleft()
                values = grouped.get(labels)
                if values is None:
                    grouped[labels] = [value]
                else:
                    values.append(value)
            for labels, queued in list(self._queued.items()):
                taken = len(queued)  # appended meanwhile: left for the next fold
                if taken:
                    grouped.setdefault(labels, []).extend(queued[:taken])
                    del queued[:taken]
            n, bounds = len(self.bounds), self._bounds
            for labels, values in grouped.items():
                row = self._series.get(labels)
                if row is None:
                    row = self._series[labels] = [0.0] * (n + 2)
                # searchsorted(side="left") is bisect_left: index n is the +Inf bucket. The values as an array by
                # fromiter (half the cost of searchsorted's own conversion of a list), no numpy Python layer.
                at = bounds.searchsorted(np.fromiter(values, dtype=np.float64, count=len(values)), side="left")
                counts = np.bincount(at, minlength=n + 1)
                per_bucket = counts.tolist()
                for i in counts.nonzero()[0].tolist():
                    row[i] += per_bucket[i]
                row[n + 1] += sum(values)

    def describe(self) -> Iterator[HistogramMetricFamily]:
        yield HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        self.fold()
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        n = len(self.bounds)
        for labels, row in sorted(self._series.items()):
            cumulative, running = [], 0.0
            for i, bound in enumerate([*self.bounds, float("inf")]):
                running += row[i]
                cumulative.append((_bound(bound), running))
            family.add_metric(list(labels), cumulative, row[n + 1])
        yield family


class DeferredCounter(Collector):
    """A counter written by one thread (the scheduling thread) with plain dict arithmetic, no lock;
    a scrape reads a copy (one C-level step under the GIL).

    ``group`` gives a cell that adds one amount to several series at once: the writer adds to the cell
    alone (a cycle counts the same plugin lists over and over), and reads expand the cells."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        self.name = name  # without the _total suffix, as prometheus_client's families want it
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self._totals: dict[tuple[str, ...], float] = {}
        self._cells: list[list[Any]] = []  # [series labels, amount added to each]

    def add(self, labelvalues: tuple[str, ...], amount: float) -> None:
        totals = self._totals
        totals[labelvalues] = totals.get(labelvalues, 0.0) + amount

    def group(self, series: Iterable[tuple[str, ...]]) -> list[Any]:
        """A cell [series, amount]: ``cell[1] += n`` counts n for every labels in ``series``."""
        cell: list[Any] = [tuple(series), 0.0]
        self._cells.append(cell)
        return cell

    def _merged(self) -> dict[tuple[str, ...], float]:
        totals = self._totals.copy()
        for series, amount in list(self._cells):
            if amount:
                for labelvalues in series:
                    totals[labelvalues] = totals.get(labelvalues, 0.0) + amount
        return totals

    def value(self, labelvalues: tuple[str, ...]) -> float:
        return self._merged().get(labelvalues, 0.0)

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, total in sorted(self._merged().items()):
            family.add_metric(list(labels), total)
        yield family


class TickCounter(Collector):
    """A counter of ones that any thread counts without a lock: each series is an ``itertools.count``, whose
    ``__next__`` is one C call holding the GIL (prometheus_client's Counter.inc takes a lock in two Python
    calls; three such counts a pod). A scrape reads each series' count from its repr. Series appear when
    first asked for, in that order, as the Counter's children do."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        self.name = name  # without the _total suffix, as prometheus_client's families want it
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self._series: dict[tuple[str, ...], itertools.count[int]] = {}
        self._lock = threading.Lock()  # a series is created once, by whichever thread comes first

    def tick(self, labelvalues: tuple[str, ...]) -> Callable[[], int]:
        """The series' increment: each call counts one (keep it: the lookup is the costly part)."""
        series = self._series.get(labelvalues)
        if series is None:
            with self._lock:
                series = self._series.setdefault(labelvalues, itertools.count())
        return series.__next__

    def value(self, labelvalues: tuple[str, ...]) -> int:
        series = self._series.get(labelvalues)
        return 0 if series is None else _count_of(series)

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, series in list(self._series.items()):
            family.add_metric(list(labels), float(_count_of(series)))
        yield family


def _count_of(series: itertools.count[int]) -> int:
    """How many times ``next`` was called on a count started at 0: its next value, as its repr shows it."""
    return int(repr(series)[len("count("):-1])


def _bound(b: float) -> str:
    return "+Inf" if b == float("inf") else repr(float(b))


class ProfileMetrics:
    """What the framework runtime of one profile records (the runtime's PluginMetrics hook)."""

    def __init__(self, metrics: Metrics, profile: str) -> None:
        self._m = metrics
        self.profile = profile
        # (point, plugin names) -> their counter cell: a cycle counts the same few lists over and over
        self._evaluation_cells: dict[tuple[str, tuple[str, ...]], list[Any]] = {}
        self._extension_points: dict[str, dict[str, list[float]]] = {}  # point -> status -> the series' values

    def extension_point(self, point: str, status: str, seconds: float) -> None:
        self.extension_point_values(point, status).append(seconds)

    def extension_point_values(self, point: str, status: str) -> list[float]:
        """The list ``extension_point`` appends (point, status)'s durations to: a caller that records the same
        series every cycle keeps it (the framework, for each extension point's successes)."""
        by_status = self._extension_points.get(point)
        if by_status is None:
            by_status = self._extension_points.setdefault(point, {})
        values = by_status.get(status)
        if values is None:
            values = by_status[status] = self._m.extension_point_duration.values_of((point, status, self.profile))
        return values

    def plugin_duration_values(self, plugin: str, point: str, status: str) -> list[float]:
        return self._m.plugin_execution_duration.values_of((plugin, point, status))

    def duration_sink(self) -> Callable[[tuple[tuple[str, str, str], float]], None]:
        return self._m.plugin_execution_duration.sink()

    def plugin_evaluations(self, plugins: Iterable[str], point: str, count: int) -> None:
        if count:  # PreFilter/Filter/PreScore/Score run on the scheduling thread only
            self.evaluation_cell(plugins if isinstance(plugins, tuple) else tuple(plugins), point)[1] += count

    def evaluation_cell(self, plugins: tuple[str, ...], point: str) -> list[Any]:
        cell = self._evaluation_cells.get((point, plugins))
        if cell is None:
            cell = self._evaluation_cells[(point, plugins)] = self._m.plugin_evaluation_total.group(
                [(name, point, self.profile) for name in plugins])
        return cell

    def permit_wait(self, status: str, seconds: float) -> None:
        self._m.permit_wait_duration.labels(status).observe(seconds)

    def volume_scheduling_stage_failed(self, operation: str) -> None:
        self._m.volume_stage_errors.labels(operation).inc()


class Metrics:
    """One instance per process (or per test); all metrics live in its own registry."""

    def __init__(self, registry: CollectorRegistry | None = None, rng: random.Random | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self._rng = rng or random.Random()
        r = self.registry
        self.schedule_attempts = TickCounter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
        )
        r.register(self.schedule_attempts)  # here, as the Counter it replaced: the exposition keeps its order
        self.event_handling_duration = DeferredHistogram(
            "scheduler_event_handling_duration_seconds", "Event handling latency in seconds.",
            ["event"], exponential_buckets(0.0001, 2, 12),
        )
        self.attempt_duration = DeferredHistogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"], exponential_buckets(0.001, 2, 15),
        )
        self.algorithm_duration = DeferredHistogram(
            "scheduler_scheduling_algorithm_duration_seconds", "Scheduling algorithm latency in seconds",
            [], exponential_buckets(0.001, 2, 15),
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims for preemption initiated by a single pod",
            buckets=exponential_buckets(1, 2, 7), registry=r,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total", "Total preemption attempts in the cluster till now", registry=r,
        )
        self.preemption_goroutines_duration = Histogram(
            "scheduler_preemption_goroutines_duration_seconds",
            "Duration in seconds for running goroutines for the preemption.",
            ["result"], buckets=exponential_buckets(0.01, 2, 20), registry=r,
        )
        self.preemption_goroutines_execution = Counter(
            "scheduler_preemption_goroutines_execution_total", "Number of preemption goroutines executed.",
            ["result"], registry=r,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulableEntities that "
            "the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that "
            "the scheduler never attempted to schedule because they are gated; 'incomplete' means number of pods "
            "in incompletePodGroupPods; 'pending' means number of pods in pendingPodGroupPods.",
            ["queue"], registry=r,
        )
        # Upstream's queue creates these two series with the queue (pods of Workload API pod groups: 0 while
        # GenericWorkload is off; refresh sets them when it is on).
        for queue in POD_GROUP_MEMBER_QUEUES:
            self.pending_pods.labels(queue).set(0)
        self.queued_entities = Gauge(
            "scheduler_queued_entities",
            "Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' stands for individual pods that are "
            "not members of any podgroup) by the queue type. 'active' means number of entities in activeQ; "
            "'backoff' means number of entities in backoffQ; 'unschedulable' means number of entities in "
            "unschedulableEntities that the scheduler attempted to schedule and failed; 'gated' is the number of "
            "unschedulable entities that the scheduler never attempted to schedule because they are gated.",
            ["queue", "type"], registry=r,
        )
        self.scheduled_after_flush = Counter(
            "scheduler_pod_scheduled_after_flush",
            "Number of pods that were successfully scheduled after being flushed from unschedulableEntities due "
            "to timeout. This metric helps detect potential queueing hint misconfigurations or event handling "
            "issues.", registry=r,
        )
        self.config_reloads = Counter(
            "py_scheduler_config_reloads",
            "Configuration reloads without restart, by result (success: swapped in; refused: the running one stays).",
            ["result"], registry=r,
        )
        self.inflight_events = Gauge(
            "scheduler_inflight_events", "Number of events currently tracked in the scheduling queue.",
            ["event"], registry=r,
        )
        self.goroutines = Gauge(
            "scheduler_goroutines", "Number of running goroutines split by the work they do such as binding.",
            ["operation"], registry=r,
        )
        self.sli_duration = DeferredHistogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and "
            "might involve multiple scheduling attempts.",
            ["attempts"], exponential_buckets(0.01, 2, 20),
        )
        self.pod_attempts = DeferredHistogram(
            "scheduler_pod_scheduling_attempts", "Number of attempts to successfully schedule a pod.",
            [], exponential_buckets(1, 2, 5),
        )
        self.extension_point_duration = DeferredHistogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"], exponential_buckets(0.0001, 2, 12),
        )
        self.plugin_execution_duration = DeferredHistogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"], exponential_buckets(0.00001, 1.5, 20),
        )
        self.queueing_hint_duration = DeferredHistogram(
            "scheduler_queueing_hint_execution_duration_seconds",
            "Duration for running a queueing hint function of a plugin.",
            ["plugin", "event", "hint"], exponential_buckets(0.00001, 1.5, 20),
        )
        self.incoming_pods = TickCounter(
            "scheduler_queue_incoming_pods", "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
        )
        r.register(self.incoming_pods)
        self.incoming_entities = TickCounter(
            "scheduler_queue_incoming_entities",
            "Number of scheduling entities added to scheduling queues by event, queue type, and entity type. Entity "
            "types are either 'pod' (for individual pods that are not members of any podgroup) or 'podgroup'.",
            ["queue", "event", "type"],
        )
        r.register(self.incoming_entities)
        self.permit_wait_duration = Histogram(
            "scheduler_permit_wait_duration_seconds", "Duration of waiting on permit.",
            ["result"], buckets=exponential_buckets(0.001, 2, 15), registry=r,
        )
        self.volume_stage_errors = Counter(
            "scheduler_volume_scheduling_stage_error_total", "Volume scheduling stage error count",
            ["operation"], registry=r,
        )
        self.cache_size = Gauge(
            "scheduler_cache_size", "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ["type"], registry=r,
        )
        self.unschedulable_pods = Gauge(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for "
            "all plugins that caused it to not schedule and so this metric have meaning only when broken down "
            "by plugin.",
            ["plugin", "profile"], registry=r,
        )
        self.plugin_evaluation_total = DeferredCounter(
            "scheduler_plugin_evaluation",
            "Number of attempts to schedule pods by each plugin and the extension point (available only in "
            "PreFilter, Filter, PreScore, and Score).",
            ["plugin", "extension_point", "profile"],
        )
        collectors: tuple[Collector, ...] = (
            self.event_handling_duration, self.attempt_duration, self.algorithm_duration, self.sli_duration,
            self.pod_attempts, self.extension_point_duration, self.plugin_execution_duration,
                  self.queueing_hint_duration, self.plugin_evaluation_total)
        for c in collectors:
            r.register(c)
        self._deferred = [c for c in collectors if isinstance(c, DeferredHistogram)]
        self.scrape_errors = Counter(
            "py_scheduler_metrics_scrape_errors_total",
            "Scrapes of /metrics that failed (e.g. the client went away mid-response).", registry=r,
        )
        # (queue, event) -> the incoming pods' tick and the incoming entities' (None until first counted)
        self._incoming: dict[tuple[str, str], list[Any]] = {}
        self._pre_enqueue: dict[tuple[str, str], list[float]] = {}  # (status, profile) -> the series' values
        self._entity_queues: set[str] = set()  # queued_entities series created (upstream: at the first change)
        # Per pod series, their counter's tick and their histograms' queued lists kept (values_of): no lookup call.
        self._attempts: dict[tuple[str, str], tuple[Callable[[], int], Callable[[float], None]]] = {}
        self._algorithm_values = self.algorithm_duration.values_of(())
        self._attempts_values = self.pod_attempts.values_of(())
        self._sli_values: dict[int, list[float]] = {}  # by attempts, capped as the label is
        self._bindings = self.goroutines.labels(BINDING)
        self._gauge_series: dict[int, set[tuple[str, ...]]] = {}
        self._victims = 0
        self._event_values: dict[str, list[float]] = {}  # event label -> its series' queued values

    # ----- wiring -------------------------------------------------------------------------------

    def profile(self, name: str) -> ProfileMetrics:
        return ProfileMetrics(self, name)

    def sample_plugin_metrics(self) -> bool:
        """Whether this scheduling cycle records per-plugin durations (upstream: rand.Intn(100) < 10)."""
        return self._rng.random() * 100 < PLUGIN_METRICS_SAMPLE_PERCENT

    def event_handled(self, labels: tuple[str, ...], seconds: float) -> None:
        """One scheduler_event_handling_duration_seconds sample per label of a watch event's handling
        (the scheduler's handlers return the labels upstream's handlers would record, e.g. one per
        derived change of a node update)."""
        lists = self._event_values
        for label in labels:
            values = lists.get(label)
            if values is None:
                values = lists[label] = self.event_handling_duration.values_of((label,))
            values.append(seconds)

    # ----- recording ----------------------------------------------------------------------------

    def pod_incoming(self, queue: str, event: str, entity: bool = True) -> None:
        """The queue's callback: one pod of no pod group entered ``queue`` because of ``event``; ``entity``: it
        counts in scheduler_queue_incoming_entities_total too, as an entity of type pod (groups: group_incoming)."""
        ticks = self._incoming.get((queue, event))  # both series' ticks under one key: one lookup a pod
        if ticks is None:
            ticks = self._incoming[(queue, event)] = [self.incoming_pods.tick((queue, event)), None]
        ticks[0]()
        if entity:
            counted = ticks[1]
            if counted is None:  # the entities' series appears at its first count, as before
                counted = ticks[1] = self.incoming_entities.tick((queue, event, POD))
            counted()

    def group_incoming(self, queue: str, event: str, members: int, entity: bool) -> None:
        """The queue's callback for a pod group (GenericWorkload): its ``members`` pods entered ``queue`` because
        of ``event``; ``entity``: the group counts in scheduler_queue_incoming_entities_total as a podgroup."""
        tick = self.incoming_pods.tick((queue, event))
        for _ in range(members):
            tick()
        if entity:
            self.incoming_entities.tick((queue, event, POD_GROUP_TYPE))()

    def pre_enqueue_ran(self, profile: str, status: str, seconds: float) -> None:
        """The queue's PreEnqueue callback (upstream times it in runPreEnqueuePlugins), every added pod: the
        series' list kept by (status, profile), as pod_incoming keeps its counts."""
        values = self._pre_enqueue.get((status, profile))
        if values is None:
            values = self._pre_enqueue[(status, profile)] = self.extension_point_duration.values_of(
                ("PreEnqueue", status, profile))
        values.append(seconds)

    def hint_executed(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        self.queueing_hint_duration.record((plugin, event, hint), seconds)

    # ----- pod groups (registered only with GenericWorkload / TopologyAwareWorkloadScheduling on, as upstream)

    def enable_pod_groups(self, topology: bool) -> None:
        """Register the pod-group series (podgroup_*), and with ``topology`` the placement series."""
        if hasattr(self, "podgroup_attempts"):
            return
        r = self.registry
        self.podgroup_attempts = Counter(
            "scheduler_podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could not be "
            "scheduled, while 'error' means an internal scheduler problem.", ["result", "profile"], registry=r)
        self.podgroup_attempt_duration = Histogram(
            "scheduler_podgroup_scheduling_attempt_duration_seconds", "Pod group scheduling attempt latency in seconds",
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.podgroup_algorithm_duration = Histogram(
            "scheduler_podgroup_scheduling_algorithm_duration_seconds", "Pod group scheduling algorithm latency in "
            "seconds", buckets=exponential_buckets(0.001, 2, 15), registry=r)
        if topology:
            self.generated_placements_total = Counter(
                "scheduler_generated_placements_total",
                "Number of candidate placements generated when scheduling pod groups.", ["profile"], registry=r)
            self.placement_evaluations = Counter(
                "scheduler_placement_evaluations_total",
                "Number of candidate placements evaluated when scheduling pod groups, by result. 'feasible' means the "
                "pod group fit into the placement, while 'infeasible' means it did not.", ["result", "profile"],
                registry=r)
            self.placement_evaluation_duration = Histogram(
                "scheduler_placement_evaluation_duration_seconds",
                "Latency in seconds of evaluating a single candidate placement when scheduling pod groups, by result. "
                "'feasible' means the pod group fit into the placement, while 'infeasible' means it did not.",
                ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15), registry=r)

    def enable_workload_preemption(self) -> None:
        """Register workload-aware preemption's series (GenericWorkload on, as upstream)."""
        if hasattr(self, "workload_preemption_attempts"):
            return
        r = self.registry
        self.workload_preemption_attempts = Counter(
            "scheduler_workload_preemption_attempts_total",
            "Total preemption attempts initiated by workload (including pod groups) in the cluster till now.",
            ["result"], registry=r)
        self.workload_preemption_victims = Histogram(
            "scheduler_workload_preemption_victims", "Number of pod preemption victims caused by workload preemption.",
            buckets=exponential_buckets(1, 2, 11), registry=r)
        self.preemption_workload_disruptions = Histogram(
            "scheduler_preemption_workload_disruptions",
            "Number of workload preemption units being preempted. A single preemption unit can be all pods in a pod "
            "group (in case of DisruptionMode=all), or a single pod (in case of DisruptionMode=single).",
            ["preemptor"], buckets=exponential_buckets(1, 2, 11), registry=r)
        self.preemption_evaluation_duration = Histogram(
            "scheduler_preemption_evaluation_duration_seconds",
            "Duration in seconds for identifying the target preemption victims.",
            ["preemptor", "result"], buckets=exponential_buckets(0.001, 2, 16), registry=r)
        self.preemption_execution_duration = Histogram(
            "scheduler_preemption_execution_duration_seconds",
            "Duration in seconds for preempting the target preemption victims. With async preemption enabled, "
            "preemption execution does not block the scheduling of other pods.",
            ["preemptor", "result"], buckets=exponential_buckets(0.001, 2, 16), registry=r)
        self.preemption_pdb_violations = Counter(
            "scheduler_preemption_pdb_violations_total",
            "Total number of pod disruption budget violations caused by preemption.", ["preemptor"], registry=r)

    def preemption_evaluated(self, preemptor: str, result: str, seconds: float) -> None:
        """Victims were looked for (``preemptor`` pod or podgroup, ``result`` the status code's name)."""
        if hasattr(self, "preemption_evaluation_duration"):
            self.preemption_evaluation_duration.labels(preemptor, result).observe(seconds)

    def preemption_executed(self, preemptor: str, ok: bool, seconds: float) -> None:
        """A candidate's victims were evicted (all, or not: an API call failed)."""
        if hasattr(self, "preemption_execution_duration"):
            self.preemption_execution_duration.labels(preemptor, "success" if ok else "error").observe(seconds)

    def pdb_violations_caused(self, preemptor: str, count: int) -> None:
        if hasattr(self, "preemption_pdb_violations") and count > 0:
            self.preemption_pdb_violations.labels(preemptor).inc(count)

    def workload_preemption_attempted(self, result: str) -> None:
        """A PodGroupPostFilter of DefaultPreemption ended with ``result`` (the status code's name)."""
        if hasattr(self, "workload_preemption_attempts"):
            self.workload_preemption_attempts.labels(result).inc()

    def workload_victims_selected(self, victims: int, disruptions: int) -> None:
        """A pod group's preemption is evicting ``victims`` pods in ``disruptions`` units of pod groups."""
        if hasattr(self, "workload_preemption_victims"):
            self.workload_preemption_victims.observe(victims)
            if disruptions > 0:
                self.preemption_workload_disruptions.labels("podgroup").observe(disruptions)

    def pod_group_attempt(self, profile: str, result: str, seconds: float) -> None:
        """result: scheduled, unschedulable, waiting_on_preemption or error."""
        if hasattr(self, "podgroup_attempts"):
            self.podgroup_attempts.labels(result, profile).inc()
            self.podgroup_attempt_duration.labels(result, profile).observe(seconds)

    def pod_group_algorithm_done(self, seconds: float) -> None:
        if hasattr(self, "podgroup_algorithm_duration"):
            self.podgroup_algorithm_duration.observe(seconds)

    def generated_placements(self, profile: str, count: int) -> None:
        if hasattr(self, "generated_placements_total"):
            self.generated_placements_total.labels(profile).inc(count)

    def placement_evaluated(self, profile: str, feasible: bool, seconds: float) -> None:
        if hasattr(self, "placement_evaluations"):
            result = "feasible" if feasible else "infeasible"
            self.placement_evaluations.labels(result, profile).inc()
            self.placement_evaluation_duration.labels(result, profile).observe(seconds)

    def algorithm_done(self, seconds: float) -> None:
        self._algorithm_values.append(seconds)

    def attempt_failed(self, profile: str, unschedulable: bool, seconds: float) -> None:
        self._attempt(UNSCHEDULABLE if unschedulable else ERROR, profile, seconds)

    def pod_scheduled(self, profile: str, seconds: float, attempts: int, since_first_attempt: float | None,
                      after_flush: bool = False) -> None:
        """``after_flush``: the unschedulable flush had moved the pod since its last failed attempt."""
        self._attempt(SCHEDULED, profile, seconds)
        if after_flush:
            self.scheduled_after_flush.inc()
        self._attempts_values.append(attempts)
        if since_first_attempt is not None:
            capped = min(attempts, SLI_ATTEMPTS_CAP)  # as the label: one list for every count past the cap
            values = self._sli_values.get(capped)
            if values is None:
                label = str(capped) if capped < SLI_ATTEMPTS_CAP else f"{SLI_ATTEMPTS_CAP}+"
                values = self._sli_values[capped] = self.sli_duration.values_of((label,))
            values.append(since_first_attempt)

    def _attempt(self, result: str, profile: str, seconds: float) -> None:
        series = self._attempts.get((result, profile))
        if series is None:
            series = self._attempts[(result, profile)] = (self.schedule_attempts.tick((result, profile)),
                                                          self.attempt_duration.values_of((result, profile)).append)
        tick, record = series
        tick()
        record(seconds)

    def victims_selected(self, count: int) -> None:
        """Preemption chose a candidate with ``count`` victims (scheduling thread; the evictions may
        run later on a worker)."""
        self._victims = count

    def preemption_goroutine_done(self, ok: bool, seconds: float) -> None:
        """An asynchronous preemption's API calls ended (a worker thread; upstream's goroutine)."""
        result = "success" if ok else "error"
        self.preemption_goroutines_duration.labels(result).observe(seconds)
        self.preemption_goroutines_execution.labels(result).inc()

    def preemption_ran(self, fwk: Framework) -> None:
        """PostFilter ran for an unschedulable pod: DefaultPreemption counts an attempt; the victims
        evicted for it are observed when there were any (upstream: in prepareCandidate)."""
        if "DefaultPreemption" in fwk.list_plugins().get("postFilter", ()):
            self.preemption_attempts.inc()
        if self._victims:
            self.preemption_victims.observe(self._victims)
        self._victims = 0

    def binding_started(self, count: int = 1) -> None:
        """``count`` binding cycles began (a batch's at once: one locked update instead of one a pod)."""
        self._bindings.inc(count)

    def binding_finished(self, count: int = 1) -> None:
        self._bindings.dec(count)

    def refresh(self, cache: Any, queue: Any) -> None:
        """Gauges that mirror the cache and the queue, and the queued samples binned so they never pile
        up when nobody scrapes (housekeeping, once a second)."""
        for deferred in self._deferred:
            deferred.fold()
        self.cache_size.labels("nodes").set(cache.node_count())
        self.cache_size.labels("pods").set(cache.pod_count())
        self.cache_size.labels("assumed_pods").set(cache.assumed_count())
        grouped = queue.pod_group_members_by_state() if getattr(queue, "generic_workload", False) else {}
        for queue_name, n in queue.lengths().items():
            self.pending_pods.labels(queue_name).set(n + grouped.get(queue_name, 0))
            # Pods of no group are entities of type pod; upstream's series appears with its queue's first pod.
            if n or queue_name in self._entity_queues:
                self._entity_queues.add(queue_name)
                self.queued_entities.labels(queue_name, POD).set(n)
        if getattr(queue, "generic_workload", False):
            self._refresh_pod_groups(queue)
        self._set_all(self.inflight_events, {(e,): n for e, n in queue.in_flight_counts().items()})
        self._set_all(self.unschedulable_pods, queue.unschedulable_by_plugin())

    def _refresh_pod_groups(self, queue: Any) -> None:
        """GenericWorkload: the members waiting for their PodGroup or for their group's cycle to end, and the
        queued groups (a gated group counts as gated, as upstream's unschedulableEntities)."""
        for queue_name, n in zip(POD_GROUP_MEMBER_QUEUES, queue.pod_group_member_counts(), strict=True):
            self.pending_pods.labels(queue_name).set(n)
        for queue_name, n in queue.pod_group_entities().items():
            key = f"{POD_GROUP_TYPE}/{queue_name}"
            if n or key in self._entity_queues:
                self._entity_queues.add(key)
                self.queued_entities.labels(queue_name, POD_GROUP_TYPE).set(n)

    def _set_all(self, gauge: Gauge, values: dict[tuple[str, ...], int]) -> None:
        """Set every series of ``gauge``; series seen before but absent now go to 0 (upstream decrements)."""
        seen = self._gauge_series.setdefault(id(gauge), set())
        for labels in seen - values.keys():
            gauge.labels(*labels).set(0)
        for labels, n in values.items():
            gauge.labels(*labels).set(n)
        seen |= values.keys()
