"""The binding cycles' worker threads and their in-flight bound, on C-level queues.

Every scheduled pod's binding cycle is handed from the scheduling thread to a worker. Through
concurrent.futures.ThreadPoolExecutor and a threading.BoundedSemaphore that hand-off cost about 23 us of CPU
a pod (a Future and its Condition per call, the pool's locks, the Python-level semaphore on both sides,
the worker setting a result nobody reads); through two queue.SimpleQueue (C code, no Python lock) about
1 us. Upstream starts a goroutine per binding cycle; what matters here is only that the cycles run beside
the scheduling thread and that at most ``slots`` are in flight.
"""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger(__name__)

_Task = tuple[Callable[[Any], object], Any]


class WorkerPool:
    """``workers`` threads (started as work arrives, named ``<name>_<i>`` like ThreadPoolExecutor's) that run
    ``fn(arg)`` in submission order. An exception a task raises is logged, never lost in a Future."""

    def __init__(self, workers: int, name: str) -> None:
        if workers < 1:
            raise ValueError("a worker pool needs at least one worker")
        self._max = workers
        self._name = name
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()  # submit vs shutdown, and thread starts
        self._closed = False

    def submit(self, fn: Callable[[Any], object], arg: Any) -> None:
        """Queue ``fn(arg)``; RuntimeError once the pool is shut down (as ThreadPoolExecutor.submit)."""
        with self._lock:  # a task put after shutdown's sentinels would never run
            if self._closed:
                raise RuntimeError("cannot schedule new work after shutdown")
            self._tasks.put((fn, arg))
            if len(self._threads) < self._max:
                self._start_thread()

    def _start_thread(self) -> None:
        """One more worker (the caller holds the lock)."""
        t = threading.Thread(target=self._work, name=f"{self._name}_{len(self._threads)}", daemon=True)
        self._threads.append(t)
        t.start()

    def _work(self) -> None:
        get = self._tasks.get
        while True:
            task = get()
            if task is None:
                return
            fn, arg = task
            try:
                fn(arg)
            except Exception:
                log.exception("worker task failed", pool=self._name)

    def shutdown(self, wait: bool = True) -> None:
        """Refuse new work; the tasks queued so far still run. ``wait``: until every worker has finished them."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._tasks.put(None)  # after every queued task: each worker takes one and ends
        if wait:
            for t in threads:
                t.join()


class Slots:
    """A counting bound (BoundedSemaphore's acquire/release) on a SimpleQueue of tokens: both sides are one C
    call that releases the GIL only when the acquirer has to wait."""

    def __init__(self, n: int) -> None:
        self._tokens: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(n):
            self._tokens.put(None)
        self.acquire: Callable[[], None] = self._tokens.get
        self.release: Callable[[], None] = functools.partial(self._tokens.put_nowait, None)

    def available(self) -> int:
        return self._tokens.qsize()


class BatchWorker:
    """One thread (``name``, started with the first item) that runs ``fn(items)`` on everything queued since
    its last call, at most ``most`` items at a time: a burst of work costs the thread one wake-up, and the
    items can share one round trip (the binding cycles' Bindings, posted side by side). An exception ``fn``
    raises is logged; the items it held are the caller's to account for inside ``fn``."""

    def __init__(self, name: str, fn: Callable[[list[Any]], object], most: int) -> None:
        if most < 1:
            raise ValueError("a batch holds at least one item")
        self._name = name
        self._fn = fn
        self._most = most
        self._items: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, item: Any) -> None:
        """Queue ``item``; RuntimeError once shut down."""
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new work after shutdown")
            self._items.put(item)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()

    def _work(self) -> None:
        get, get_nowait = self._items.get, self._items.get_nowait
        done = False
        while not done:
            batch = [get()]
            while len(batch) < self._most:
                try:
                    batch.append(get_nowait())
                except queue.Empty:
                    break
            if batch[-1] is _END:
                batch.pop()
                done = True
            if batch:
                try:
                    self._fn(batch)
                except Exception:
                    log.exception("batch worker failed", worker=self._name)

    def shutdown(self, wait: bool = True) -> None:
        """Refuse new work; what was queued still runs. ``wait``: until it has."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            if thread is not None:
                self._items.put(_END)
        if wait and thread is not None:
            thread.join()


_END = object()  # BatchWorker's last item: after it, nothing is queued (submit refuses once closed)
