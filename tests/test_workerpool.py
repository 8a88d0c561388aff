"""The binding cycles' worker pool and in-flight slots (scheduler/workerpool.py)."""

from __future__ import annotations

import queue
import threading

import pytest

from scheduler.workerpool import Slots, WorkerPool


def test_every_task_queued_before_shutdown_runs_and_a_failing_one_stops_nothing() -> None:
    pool = WorkerPool(3, "binding")
    done: list[int] = []
    lock = threading.Lock()

    def task(i: int) -> None:
        if i == 5:
            raise RuntimeError("a crashed binding cycle")
        with lock:
            done.append(i)

    for i in range(50):
        pool.submit(task, i)
    pool.shutdown(wait=True)
    assert sorted(done) == [i for i in range(50) if i != 5]


def test_no_more_workers_than_asked_named_as_the_executor_named_them() -> None:
    pool = WorkerPool(2, "binding")
    gate = threading.Event()
    names: set[str] = set()

    def task(_: object) -> None:
        names.add(threading.current_thread().name)
        gate.wait(5)

    for _ in range(6):
        pool.submit(task, None)
    gate.set()
    pool.shutdown(wait=True)
    assert names <= {"binding_0", "binding_1"} and names


def test_submit_after_shutdown_is_refused_as_by_the_executor() -> None:
    pool = WorkerPool(1, "binding")
    pool.shutdown(wait=True)
    with pytest.raises(RuntimeError):
        pool.submit(print, "late")


def test_a_pool_needs_a_worker() -> None:
    with pytest.raises(ValueError):
        WorkerPool(0, "binding")


def test_slots_bound_what_is_in_flight_and_free_on_release() -> None:
    slots = Slots(2)
    slots.acquire()
    slots.acquire()
    assert slots.available() == 0
    with pytest.raises(queue.Empty):
        slots._tokens.get(block=False)  # a third acquire would wait
    slots.release()
    assert slots.available() == 1
    slots.acquire()
    assert slots.available() == 0
