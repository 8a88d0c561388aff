"""The performance goals py-scheduler is held to, checked on a benchmark's runs.

A results table shows ratios; whether a goal is met should not be left to a reader's arithmetic over
rows that came from different runs. Each goal is evaluated only where the runs hold both of its sides
(a `--workload SchedulingBasic --nodes 1000` run checks the 1000-node goals and nothing else), on the
medians the summary uses. The targets are the scheduler's, stated once here:

* SchedulingBasic at 1000 and 5000 nodes: pods/s >= 1.2x kube-scheduler's and >= 0.9x the ceiling
  binder's, CPU per pod <= kube-scheduler's;
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


def _label(size: tuple[str, int, int]) -> str:
    return f"{size[0]} {size[1]}/{size[2]}"


def evaluate(runs: Sequence[Mapping[str, Any]]) -> list[Goal]:
    """Every goal the runs can decide, in a stable order (the runs' sizes, then the cross-size ones)."""
    goals: list[Goal] = []
    sizes = groups(runs)
    for size in sizes:
        workload, nodes, _ = size
        if workload == BASIC and nodes in BASIC_NODES:
            goals += [
                Goal(f"{_label(size)}: py/kube pods/s", _pair(runs, size, "pods_per_second", "kube"), 1.2, True),
                Goal(f"{_label(size)}: py/ceiling pods/s", _pair(runs, size, "pods_per_second", "ceiling"), 0.9, True),
                Goal(f"{_label(size)}: py/kube CPU per pod", _pair(runs, size, "cpu_seconds_per_1000", "kube"), 1.0,
                     False),
            ]  # fmt: skip
        elif workload in SPREAD_WORKLOADS and nodes in SPREAD_NODES:
            ratio_ = _pair(runs, size, "pods_per_second", "kube")
            goals.append(Goal(f"{_label(size)}: py/kube pods/s", ratio_, 1.0, True))
        elif workload.startswith(BASIC + " @"):
            goals.append(Goal(f"{_label(size)}: py/kube p99 latency", _pair(runs, size, "latency_p99_ms", "kube"),
                              1.0, False))  # fmt: skip
        if nodes >= LARGE_NODES and "@" not in workload:
            rss = _pair(runs, size, "peak_rss_mb", "kube")
            goals.append(Goal(f"{_label(size)}: py/kube peak RSS", rss, 1.5, False))
    small, large = ([s for s in sizes if s[0] == BASIC and s[1] == n] for n in BASIC_NODES)
    if small and large:  # the growth is set between exactly these sizes (a 15,000-node run is not it)
        growth = ratio(_median(runs, large[0], "py", "cpu_seconds_per_1000"),
                       _median(runs, small[0], "py", "cpu_seconds_per_1000"))  # fmt: skip
        goals.append(Goal(f"{BASIC}: py CPU per pod, {large[0][1]} over {small[0][1]} nodes", growth, 1.3, False))
    return [g for g in goals if g.value is not None]

