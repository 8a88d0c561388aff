"""PrioritySort.less: priority first, then queue timestamp."""

from __future__ import annotations

import random
from dataclasses import dataclass

from scheduler.model.pod import Pod, pod_from_api
from scheduler.plugins.priority_sort import PrioritySort


@dataclass
class Queued:
    pod: Pod
    timestamp: float


def queued(priority: int | None, timestamp: float) -> Queued:
    spec: dict[str, object] = {"containers": [{"name": "c"}]}
    if priority is not None:
        spec["priority"] = priority
    return Queued(pod_from_api({"metadata": {"name": f"p{priority}-{timestamp}"}, "spec": spec}), timestamp)


def test_higher_priority_first_regardless_of_time() -> None:
    pl = PrioritySort({}, None)  # type: ignore[arg-type]
    high_late, low_early = queued(100, 50.0), queued(10, 1.0)
    assert pl.less(high_late, low_early) is True
    assert pl.less(low_early, high_late) is False


def test_equal_priority_earlier_timestamp_first() -> None:
    pl = PrioritySort({}, None)  # type: ignore[arg-type]
    early, late = queued(5, 1.0), queued(5, 2.0)
    assert pl.less(early, late) is True
    assert pl.less(late, early) is False
    assert pl.less(early, queued(5, 1.0)) is False  # strict ordering


def test_missing_priority_counts_as_zero() -> None:
    pl = PrioritySort({}, None)  # type: ignore[arg-type]
    assert pl.less(queued(1, 9.0), queued(None, 0.0)) is True
    assert pl.name == "PrioritySort" and pl.events_to_register() == []


def test_rank_orders_as_less() -> None:
    """The sort key PrioritySort gives the queue agrees with ``less`` on every pair."""
    rng = random.Random(3)
    plugin = PrioritySort({}, None)  # type: ignore[arg-type]
    infos = [queued(rng.choice([-5, None, 0, 7, 1000]), rng.choice([1.0, 2.0, 2.5, 3.0])) for _ in range(40)]
    for a in infos:
        for b in infos:
            assert plugin.less(a, b) == (plugin.rank(a) < plugin.rank(b))
