"""Prometheus metrics with kube-scheduler's names, labels and buckets (pkg/scheduler/metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


def _exp(start: float, factor: float, count: int) -> list[float]:
    return [start * factor**i for i in range(count)]


class Metrics:
    """One instance per process (or per test); all metrics live in its own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result.",
            ["result", "profile"],
            registry=r,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
            ["result", "profile"],
            buckets=_exp(0.001, 2, 15),
            registry=r,
        )
        self.algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds.",
            buckets=_exp(0.001, 2, 15),
            registry=r,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods", "Number of pending pods, by the queue type.", ["queue"], registry=r
        )
        self.incoming_pods = Counter(
            "scheduler_queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=r,
        )
        self.sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the queue.",
            ["attempts"],
            buckets=_exp(0.01, 2, 20),
            registry=r,
        )
        self.pod_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=_exp(1, 2, 5),
            registry=r,
        )
        self.extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=_exp(0.0001, 2, 12),
            registry=r,
        )
        self.cache_size = Gauge(
            "scheduler_cache_size", "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ["type"], registry=r,
        )
        self.unschedulable_pods = Gauge(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name.",
            ["plugin", "profile"],
            registry=r,
        )
        self.goroutines = Gauge(
            "scheduler_goroutines", "Number of running workers split by the work they do such as binding.",
            ["operation"], registry=r,
        )

    def observe_extension_point(self, profile: str, point: str, status: str, seconds: float) -> None:
        self.extension_point_duration.labels(point, status, profile).observe(seconds)
