"""The performance goals py-scheduler is held to, checked on a benchmark's runs.

A results table shows ratios; whether a goal is met should not be left to a reader's arithmetic over
rows that came from different runs. Each goal is evaluated only where the runs hold both of its sides
(a `--workload SchedulingBasic --nodes 1000` run checks the 1000-node goals and nothing else), on the
medians the summary uses. The targets, the constants below:

* SchedulingBasic at 1000 and 5000 nodes: pods/s >= 1.2x kube-scheduler's and >= 0.9x the ceiling
  binder's (the Go one, ``ceiling-go``, where it ran: the Python one is a single process), CPU per pod
  <= kube-scheduler's;
* the affinity and spreading workloads at 500 and 5000 nodes: pods/s >= kube-scheduler's;
* SchedulingBasic's CPU per pod from 1000 to 5000 nodes grows at most 1.3x;
* peak RSS at 5000 nodes at most 1.5x kube-scheduler's;
* under a paced load (`--rate`): p99 latency <= kube-scheduler's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from e2e.perf.stats import groups, medians, ratio
from e2e.perf.workloads import LARGE_NODES, LARGE_SUITE_WORKLOADS

BASIC = "SchedulingBasic"
BASIC_NODES = (1000, LARGE_NODES)
SPREAD_WORKLOADS = LARGE_SUITE_WORKLOADS
SPREAD_NODES = (500, LARGE_NODES)

GO_CEILING = "ceiling-go"  # e2e/cluster/gobin/cmd/ceiling-binder, preferred over the Python "ceiling"
BASIC_OVER_KUBE = 1.2  # SchedulingBasic pods/s, py over kube (at least)
BASIC_OVER_CEILING = 0.9  # SchedulingBasic pods/s, py over the ceiling binder (at least)
CPU_OVER_KUBE = 1.0  # SchedulingBasic CPU per pod, py over kube (at most)
SPREAD_OVER_KUBE = 1.0  # affinity and spreading pods/s, py over kube (at least)
CPU_GROWTH = 1.3  # SchedulingBasic CPU per pod at 5000 nodes over 1000 (at most)
RSS_OVER_KUBE = 1.5  # peak RSS at 5000 nodes, py over kube (at most)
P99_OVER_KUBE = 1.0  # p99 latency under a paced load, py over kube (at most)


@dataclass(frozen=True, slots=True)
class Goal:
    """One check: ``value`` against ``target``, from below (``at_least``) or from above."""

    name: str
    value: float | None
    target: float
    at_least: bool

    @property
    def met(self) -> bool | None:
        if self.value is None:
            return None
        return self.value >= self.target if self.at_least else self.value <= self.target

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "met": self.met}


def _median(runs: Sequence[Mapping[str, Any]], size: tuple[str, int, int], scheduler: str, key: str) -> float | None:
    value = medians(runs, *size, scheduler)[key]
    return None if value is None else float(value)


def _pair(runs: Sequence[Mapping[str, Any]], size: tuple[str, int, int], key: str, other: str) -> float | None:
    """py's median of ``key`` over ``other``'s; None when either scheduler did not run."""
    return ratio(_median(runs, size, "py", key), _median(runs, size, other, key))


def ceiling_of(runs: Sequence[Mapping[str, Any]], size: tuple[str, int, int]) -> str:
    """The binder the py/ceiling goal is held against at this size: the Go binder where it ran (it scales
    with cores, as the API server does), else the Python one (one process: no ceiling where the control
    plane has cores of its own)."""
    return GO_CEILING if _median(runs, size, GO_CEILING, "pods_per_second") is not None else "ceiling"


def _label(size: tuple[str, int, int]) -> str:
    return f"{size[0]} {size[1]}/{size[2]}"


def evaluate(runs: Sequence[Mapping[str, Any]]) -> list[Goal]:
    """Every goal the runs can decide, in a stable order (the runs' sizes, then the cross-size ones)."""
    goals: list[Goal] = []
    sizes = groups(runs)
    for size in sizes:
        workload, nodes, _ = size
        if workload == BASIC and nodes in BASIC_NODES:
            ceiling = ceiling_of(runs, size)
            goals += [
                Goal(f"{_label(size)}: py/kube pods/s", _pair(runs, size, "pods_per_second", "kube"), BASIC_OVER_KUBE,
                     True),
                Goal(f"{_label(size)}: py/{ceiling} pods/s", _pair(runs, size, "pods_per_second", ceiling),
                     BASIC_OVER_CEILING, True),
                Goal(f"{_label(size)}: py/kube CPU per pod", _pair(runs, size, "cpu_seconds_per_1000", "kube"),
                     CPU_OVER_KUBE, False),
            ]  # fmt: skip
        elif workload in SPREAD_WORKLOADS and nodes in SPREAD_NODES:
            ratio_ = _pair(runs, size, "pods_per_second", "kube")
            goals.append(Goal(f"{_label(size)}: py/kube pods/s", ratio_, SPREAD_OVER_KUBE, True))
        elif workload.startswith(BASIC + " @"):
            goals.append(Goal(f"{_label(size)}: py/kube p99 latency", _pair(runs, size, "latency_p99_ms", "kube"),
                              P99_OVER_KUBE, False))  # fmt: skip
        if nodes >= LARGE_NODES and "@" not in workload:
            rss = _pair(runs, size, "peak_rss_mb", "kube")
            goals.append(Goal(f"{_label(size)}: py/kube peak RSS", rss, RSS_OVER_KUBE, False))
    small, large = ([s for s in sizes if s[0] == BASIC and s[1] == n] for n in BASIC_NODES)
    if small and large:  # the growth is set between exactly these sizes (a 15,000-node run is not it)
        growth = ratio(_median(runs, large[0], "py", "cpu_seconds_per_1000"),
                       _median(runs, small[0], "py", "cpu_seconds_per_1000"))  # fmt: skip
        name = f"{BASIC}: py CPU per pod, {large[0][1]} over {small[0][1]} nodes"
        goals.append(Goal(name, growth, CPU_GROWTH, False))
    return [g for g in goals if g.value is not None]

