"""API writes in child processes (`run --api-writer-processes N`): Bindings and events off the scheduler's GIL.

Why: one CPython process runs one thread at a time. Posting a pod's Binding and writing its Scheduled
event (building JSON, TLS, parsing the answer) cost about as much CPU as scheduling it, all under one GIL
(docs/performance.md). A writer child does that HTTP work on its own core; the
scheduler only frames a short tuple per write and reads the outcome back.

The contract the binding cycle relies on stays exact:
- the scheduler assumes the pod before it sends the Binding (the bind call happens inside the binding
  cycle, as before), and the binding worker that called ``bind`` (or the binding-batch thread, for every
  Binding of its batch, sent before it waits for any) waits for the child's outcome: ok, or an
  error rebuilt as the same exception type the in-process ApiBinder raises (BoundElsewhereError,
  ApiNotFound, ApiConflict, NotLeaderError, ApiError). PostBind or forget+requeue follows as today;
- leadership: the parent's LeaderGatedBinder gates every bind before it is sent; the child gates again on
  the parent's leadership, which the parent sends it whenever it changes (a lost Lease also stops
  retries), and a child whose parent is gone (stdin at EOF: the parent exited) exits at once;
- the child's writes go through its own token bucket with the configured QPS/burst;
- a child that dies (killed -9) is restarted, and the Bindings it had in flight are sent again: one that
  the API server had committed is answered 409, which ApiBinder resolves to success (bound to our node),
  so no pod is lost or bound twice. Events in flight in a dead child are lost, never duplicated (they
  are not sent again).
- a child that hangs without dying (SIGSTOP) fills its pipe, and writes to it then block the binding
  workers and the event calls, as an API server that stops answering blocks the in-process writers' callers
  only for the binding (in-process events are queued and dropped when the queue is full).

Framing, both ways: a 4-byte big-endian length, then an orjson array. Parent to child:
``["b", id, namespace, name, uid, node]`` bind, ``["e", ns, name, uid, rv, type, reason, action, note,
controller, related]`` event (related: ``[ns, name, uid, rv]`` or null), ``["l", 0|1]`` leadership,
``["q"]`` finish and exit. Child to parent: ``["r", id, kind, a, b, c]`` a bind's outcome.
"""

from __future__ import annotations

import contextlib
import functools
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

import orjson
import structlog

from scheduler.edge import BoundElsewhereError, NotLeaderError, RelatedObject
from scheduler.kube.client import ApiError, PodIdentity, api_error, error_of
from scheduler.kube.recorder import ApiEventSink
from scheduler.model.pod import Pod

log = structlog.get_logger(__name__)

_LEN = struct.Struct(">I")
BIND_TIMEOUT = 300.0  # seconds a binding worker waits for its outcome (the child's retries end after 30 s)


def encode(record: Sequence[Any]) -> bytes:
    """One frame: length prefix and the orjson array."""
    body = orjson.dumps(record)
    return _LEN.pack(len(body)) + body


def read_frame(stream: IO[bytes]) -> list[Any] | None:
    """The next frame from a buffered stream; None at end of stream (the other side exited)."""
    head = stream.read(4)
    if len(head) < 4:
        return None
    (size,) = _LEN.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        return None
    record: list[Any] = orjson.loads(body)
    return record


# ---- outcomes: the exception a bind raised, as a record and back ----

def outcome_of(exc: BaseException | None) -> list[Any]:
    """The outcome fields of a bind (kind, a, b, c): what ``raise_outcome`` rebuilds in the parent."""
    if exc is None:
        return ["ok", None, None, None]
    if isinstance(exc, BoundElsewhereError):
        return ["elsewhere", str(exc), exc.node, None]
    if isinstance(exc, NotLeaderError):
        return ["notleader", str(exc), None, None]
    if isinstance(exc, ApiError):
        return ["api", int(exc.status or 0), str(exc.reason or ""), exc.body]
    return ["error", f"{type(exc).__name__}: {exc}", None, None]


def raise_outcome(pod_key: str, kind: str, a: Any, b: Any, c: Any) -> None:
    """Raise what the in-process ApiBinder would have raised (nothing for ok)."""
    if kind == "ok":
        return
    if kind == "elsewhere":
        raise BoundElsewhereError(pod_key, str(b))
    if kind == "notleader":
        raise NotLeaderError(str(a))
    if kind == "api":
        raise api_error(int(a), str(b), c)
    raise RuntimeError(f"binding of {pod_key} failed in the writer process: {a}")


# ---- the parent side ----

@dataclass
class _Pending:
    """A bind sent to a child and not answered yet; kept to be re-sent if the child dies."""

    frame: bytes
    done: threading.Event = field(default_factory=threading.Event)
    outcome: list[Any] | None = None


class WriterProcess:
    """One writer child, started, restarted when it dies, and fed over its stdin.

    ``command``: the child's argv (``scheduler.app.apiwriter.child_command``); ``leading``: the parent's
    leadership, sent to the child when it changes (checked every ``lead_poll`` seconds and at each restart)."""

    def __init__(self, command: Sequence[str], leading: Callable[[], bool] | None = None,
                 lead_poll: float = 0.1, name: str = "api-writer") -> None:
        self.command = list(command)
        self.leading = leading
        self.lead_poll = lead_poll
        self.name = name
        self.restarts = 0
        self.events_dropped = 0
        self._lock = threading.Lock()  # one writer to the pipe at a time; guards _proc, _pending, _next
        self._pending: dict[int, _Pending] = {}
        self._next = 0
        self._closing = threading.Event()
        self._lead_sent: bool | None = None
        self._proc = self._spawn()
        self._reader = threading.Thread(target=self._read_loop, name=f"{name}-reader", daemon=True)
        self._reader.start()
        self._watcher: threading.Thread | None = None
        if leading is not None:
            self._watcher = threading.Thread(target=self._watch_leadership, name=f"{name}-lead", daemon=True)
            self._watcher.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _spawn(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        log.info("API writer process started", pid=proc.pid, restarts=self.restarts)
        self._lead_sent = None
        self._proc = proc
        self._send_leadership_locked()
        return proc

    def _write_locked(self, frame: bytes) -> bool:
        """Write one frame to the current child; False when it is gone (the reader restarts it)."""
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            stdin.write(frame)
            stdin.flush()
            return True
        except (BrokenPipeError, ValueError, OSError):
            return False

    def _send_leadership_locked(self) -> None:
        if self.leading is None:
            return
        now = bool(self.leading())
        if now != self._lead_sent and self._write_locked(encode(["l", int(now)])):
            self._lead_sent = now

    def _watch_leadership(self) -> None:
        while not self._closing.wait(self.lead_poll):
            with self._lock:
                self._send_leadership_locked()

    def bind(self, pod: Pod, node_name: str) -> None:
        """Send the Binding and wait for its outcome; raise what ApiBinder would have raised."""
        self.wait_bind(pod, self.start_bind(pod, node_name))

    def start_bind(self, pod: Pod, node_name: str) -> tuple[int, _Pending]:
        """Send the Binding; ``wait_bind`` waits for its outcome."""
        with self._lock:
            self._next += 1
            ident = self._next
            pending = _Pending(encode(["b", ident, pod.namespace, pod.name, pod.uid, node_name]))
            self._pending[ident] = pending
            self._write_locked(pending.frame)  # a dead child gets it again when restarted
        return ident, pending

    def wait_bind(self, pod: Pod, sent: tuple[int, _Pending]) -> None:
        """Wait for a Binding's outcome; raise what ApiBinder would have raised."""
        ident, pending = sent
        if not pending.done.wait(BIND_TIMEOUT):
            with self._lock:
                self._pending.pop(ident, None)
            raise TimeoutError(f"no outcome for the binding of {pod.key} from the API writer in {BIND_TIMEOUT:g} s")
        assert pending.outcome is not None
        raise_outcome(pod.key, *pending.outcome)

    def send(self, record: Sequence[Any]) -> None:
        """A fire-and-forget record (an event); dropped, and counted, while the child is down."""
        frame = encode(record)
        with self._lock:
            if not self._write_locked(frame):
                self.events_dropped += 1

    def _read_loop(self) -> None:
        while True:
            stdout = self._proc.stdout
            assert stdout is not None
            record = read_frame(stdout)
            if record is not None:
                self._resolve(record)
                continue
            if self._closing.is_set():
                return
            self._restart()

    def _resolve(self, record: list[Any]) -> None:
        _, ident, *outcome = record
        with self._lock:
            pending = self._pending.pop(ident, None)
        if pending is not None:
            pending.outcome = outcome
            pending.done.set()

    def _restart(self) -> None:
        """The child exited unasked: start another and send it the bindings still unanswered."""
        code = self._proc.wait()
        self.restarts += 1
        log.error("API writer process exited; restarting it", pid=self._proc.pid, exit_code=code,
                  restarts=self.restarts, bindings_in_flight=len(self._pending))
        while not self._closing.is_set():
            time.sleep(min(1.0, 0.05 * self.restarts))  # a child that cannot start must not spin
            with self._lock:
                try:
                    self._spawn()
                except OSError as exc:  # out of processes or memory: try again, the bindings wait
                    log.error("could not start an API writer process", error=str(exc))
                    continue
                for ident in sorted(self._pending):
                    self._write_locked(self._pending[ident].frame)
                return

    def close(self, timeout: float = 10.0) -> None:
        """Ask the child to finish what it holds and exit; kill it if it does not in ``timeout`` seconds."""
        self._closing.set()
        with self._lock:
            self._write_locked(encode(["q"]))
            stdin = self._proc.stdin
            if stdin is not None:
                with contextlib.suppress(OSError):
                    stdin.close()
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(5)
        self._reader.join(timeout)


class ProcessBinder:
    """The Binder of `--api-writer-processes N`: each pod's Binding goes to one child (by uid, so a
    re-sent binding and its pod's event stay with one child)."""

    def __init__(self, writers: Sequence[WriterProcess]) -> None:
        self.writers = list(writers)

    def writer_for(self, uid: str) -> WriterProcess:
        return self.writers[hash(uid) % len(self.writers)]

    def bind(self, pod: Pod, node_name: str) -> None:
        self.writer_for(pod.uid).bind(pod, node_name)

    def bind_batch(self, bindings: Sequence[tuple[Pod, str]]) -> list[Exception | None]:
        """Every Binding sent to its child before waiting for any outcome: one waiting thread for the batch
        instead of a binding worker each. The child makes all of a Binding's tries (ApiBinder), so an error
        here is final."""
        writers = [self.writer_for(pod.uid) for pod, _ in bindings]
        sent = [writer.start_bind(pod, node) for writer, (pod, node) in zip(writers, bindings, strict=True)]
        return [error_of(functools.partial(writer.wait_bind, pod, pending))
                for writer, (pod, _), pending in zip(writers, bindings, sent, strict=True)]

    def bind_after(self, pod: Pod, node_name: str, first_error: Exception | None) -> None:
        """The child retried already: its error stands (no error: ``bind``)."""
        if first_error is not None:
            raise first_error
        self.bind(pod, node_name)


class ProcessEventSink:
    """The EventRecorder of `--api-writer-processes N`: events go to a child (which counts repeats as
    ApiEventSink does), PodScheduled conditions stay with ``local`` (their nomination writes must land
    before the pod is retried, in the caller's thread)."""

    def __init__(self, binder: ProcessBinder, local: ApiEventSink) -> None:
        self.binder = binder
        self.local = local

    def event(self, pod: Pod, type_: str, reason: str, action: str, note: str, controller: str,
              related: Pod | RelatedObject | None = None) -> None:
        rel = None if related is None else [related.namespace, related.name, related.uid, related.resource_version]
        if isinstance(related, RelatedObject):  # a PodGroup preempting: its kind travels too
            rel = [related.namespace, related.name, related.uid, related.resource_version, related.kind,
                   related.api_version]
        self.binder.writer_for(pod.uid).send(
            ["e", pod.namespace, pod.name, pod.uid, pod.resource_version, type_, reason, action, note, controller,
             rel])

    def pod_condition(self, pod: Pod, reason: str, message: str, nominated_node: str | None) -> None:
        self.local.pod_condition(pod, reason, message, nominated_node)


# ---- the child side ----

class ChildBinder(Protocol):
    """What posts a Binding in the child: kube.binder.ApiBinder."""

    def bind(self, pod: PodIdentity, node_name: str) -> None: ...


class ChildWriter:
    """The child's loop: binds on a pool of threads (each waits on the API server), events through an
    ApiEventSink, outcomes written back to stdout."""

    def __init__(self, binder: ChildBinder, sink: ApiEventSink, out: IO[bytes], workers: int = 32) -> None:
        self.binder = binder
        self.sink = sink
        self.out = out
        self.leading = True
        self._out_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="bind")

    def serve(self, stream: IO[bytes]) -> bool:
        """Handle frames until ["q"] (True: finish and exit) or end of stream (False: the parent is gone)."""
        while True:
            record = read_frame(stream)
            if record is None:
                return False
            op = record[0]
            if op == "b":
                self._pool.submit(self._bind, record)
            elif op == "e":
                self._event(record)
            elif op == "l":
                self.leading = bool(record[1])
            elif op == "q":
                return True

    def may_write(self) -> bool:
        return self.leading

    def _bind(self, record: list[Any]) -> None:
        _, ident, namespace, name, uid, node = record
        pod = _pod_ref(namespace, name, uid, "")
        error: BaseException | None = None
        try:
            if not self.leading:
                raise NotLeaderError(f"not the leader: binding of {namespace}/{name} to {node} skipped")
            self.binder.bind(pod, node)
        except Exception as exc:  # every outcome goes back; the parent decides
            error = exc
        frame = encode(["r", ident, *outcome_of(error)])
        with self._out_lock:
            self.out.write(frame)
            self.out.flush()

    def _event(self, record: list[Any]) -> None:
        _, ns, name, uid, rv, type_, reason, action, note, controller, rel = record
        related: PodRef | RelatedObject | None = None
        if rel is not None:
            related = _pod_ref(*rel[:4]) if len(rel) == 4 else RelatedObject(*rel)
        self.sink.event(_pod_ref(ns, name, uid, rv), type_, reason, action, note, controller, related)

    def finish(self) -> None:
        self._pool.shutdown(wait=True)


@dataclass(frozen=True, slots=True)
class PodRef:
    """The fields of a pod that a Binding and an event name (kube.client.PodIdentity), all the child has."""

    namespace: str
    name: str
    uid: str
    resource_version: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _pod_ref(namespace: str, name: str, uid: str, resource_version: str) -> PodRef:
    return PodRef(namespace, name, uid, resource_version)
