"""e2e.soak_core drives the scheduler core through the soak's pod life cycle (its memory figures are a
benchmark's, never asserted here)."""

from __future__ import annotations

from e2e.soak_core import CoreChurn, main


def test_churn_keeps_only_the_live_pods_placed_and_the_queue_empty() -> None:
    churn = CoreChurn(nodes=4)
    churn.run(0, 60, live=10, refresh=7)
    churn.run(60, 40, live=10, refresh=7)
    assert sorted(churn.placed) == list(range(90, 100))
    assert churn.sched.cache.pod_count() == 10
    assert sum(churn.sched.queue.lengths().values()) == 0
    assert set(churn.placed.values()) <= {f"n{i}" for i in range(4)}


def test_the_command_reports_and_passes_a_short_run(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["--pods", "200", "--step", "100", "--nodes", "3", "--live", "20", "--max-growth-mb", "1000"]) == 0
    out = capsys.readouterr().out
    assert "pods=200" in out and "pods left in the queue 0" in out
