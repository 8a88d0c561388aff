"""The writer-process protocol (scheduler/kube/writerproc.py) without an API server: framing, every
outcome routed back as the exception the in-process binder raises, leadership, and a child killed -9
restarted with its bindings in flight sent again."""

from __future__ import annotations

import io
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.edge import BatchBinder, BoundElsewhereError, NotLeaderError
from scheduler.kube.client import ApiError, api_error
from scheduler.kube.writerproc import (
    ChildWriter,
    ProcessBinder,
    WriterProcess,
    encode,
    outcome_of,
    raise_outcome,
    read_frame,
)
from scheduler.model.apierrors import ConflictError, NotFoundError
from scheduler.model.pod import Pod
from scheduler.testing import make_pod
from scheduler.whatif.offline import RecordingBinder

FAKE_CHILD = Path(__file__).with_name("writer_fake_child.py")


def test_frames_round_trip_and_end_of_stream() -> None:
    stream = io.BytesIO(encode(["b", 1, "ns", "p", "u", "n1"]) + encode(["q"]) + encode(["e", "x"])[:-2])
    assert read_frame(stream) == ["b", 1, "ns", "p", "u", "n1"]
    assert read_frame(stream) == ["q"]
    assert read_frame(stream) is None  # a frame cut short: the writer died mid-frame
    assert read_frame(io.BytesIO(b"")) is None


@pytest.mark.parametrize(("exc", "expected"), [
    (BoundElsewhereError("ns/p", "n2"), BoundElsewhereError),
    (NotLeaderError("not the leader"), NotLeaderError),
    (api_error(404, "Not Found", "{}"), NotFoundError),
    (api_error(409, "Conflict", "{}"), ConflictError),
    (api_error(500, "Internal", "{}"), ApiError),
    (ConnectionError("reset"), RuntimeError),
])
def test_outcomes_come_back_as_the_binders_exceptions(exc: Exception, expected: type[Exception]) -> None:
    fields = encode(["r", 7, *outcome_of(exc)])  # through the wire format
    _, _, *outcome = read_frame(io.BytesIO(fields)) or []
    with pytest.raises(expected) as raised:
        raise_outcome("ns/p", *outcome)
    if isinstance(exc, BoundElsewhereError):
        assert isinstance(raised.value, BoundElsewhereError) and raised.value.node == "n2"
    if isinstance(exc, ApiError):
        assert isinstance(raised.value, ApiError) and raised.value.status == exc.status


def test_ok_raises_nothing() -> None:
    raise_outcome("ns/p", *outcome_of(None))


class RecordingSink:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str | None]] = []

    def event(self, pod: Pod, type_: str, reason: str, action: str, note: str, controller: str,
              related: Pod | None = None) -> None:
        self.events.append((pod.key, pod.resource_version, reason, related.key if related else None))


def test_child_binds_answers_and_gates_on_leadership() -> None:
    binder, sink, out = RecordingBinder(), RecordingSink(), io.BytesIO()
    child = ChildWriter(binder, sink, out)  # type: ignore[arg-type]
    frames = (encode(["b", 1, "ns", "a", "ua", "n1"])
              + encode(["e", "ns", "a", "ua", "42", "Normal", "Scheduled", "Binding", "ok", "py",
                        ["ns", "b", "ub", "7"]])
              + encode(["l", 0]) + encode(["b", 2, "ns", "c", "uc", "n1"]) + encode(["q"]))
    assert child.serve(io.BytesIO(frames)) is True
    child.finish()
    assert binder.bindings == [("ns/a", "n1")]  # c arrived after leadership was lost
    assert sink.events == [("ns/a", "42", "Scheduled", "ns/b")]
    out.seek(0)
    answers = {r[1]: r[2] for r in iter(lambda: read_frame(out), None)}
    assert answers == {1: "ok", 2: "notleader"}


def test_child_reports_end_of_stream_as_parent_gone() -> None:
    child = ChildWriter(RecordingBinder(), RecordingSink(), io.BytesIO())  # type: ignore[arg-type]
    assert child.serve(io.BytesIO(b"")) is False
    child.finish()


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[WriterProcess]:
    w = WriterProcess([sys.executable, str(FAKE_CHILD), str(tmp_path / "hung")])
    yield w
    w.close()


def test_outcomes_reach_the_binding_worker(writer: WriterProcess) -> None:
    writer.bind(make_pod().name("fine").namespace("ns").obj(), "n1")
    with pytest.raises(BoundElsewhereError):
        writer.bind(make_pod().name("elsewhere").namespace("ns").obj(), "n1")
    with pytest.raises(NotFoundError):
        writer.bind(make_pod().name("gone").namespace("ns").obj(), "n1")
    with pytest.raises(RuntimeError, match="reset by peer"):
        writer.bind(make_pod().name("broken").namespace("ns").obj(), "n1")
    assert writer.restarts == 0


def test_a_batch_is_sent_whole_and_each_outcome_is_final(writer: WriterProcess) -> None:
    """ProcessBinder.bind_batch: every Binding goes out before any outcome is awaited; the child made every
    try, so bind_after raises the error it got."""
    binder = ProcessBinder([writer])
    assert isinstance(binder, BatchBinder)
    pods = [make_pod().name(n).namespace("ns").obj() for n in ("fine", "elsewhere", "gone", "fine")]
    outcomes = binder.bind_batch([(p, "n1") for p in pods])
    assert outcomes[0] is None and outcomes[3] is None
    assert isinstance(outcomes[1], BoundElsewhereError) and isinstance(outcomes[2], NotFoundError)
    with pytest.raises(NotFoundError):
        binder.bind_after(make_pod().name("gone").namespace("ns").obj(), "n1", outcomes[2])
    binder.bind_after(make_pod().name("fine").namespace("ns").obj(), "n1", None)


def test_killed_child_is_restarted_and_binding_in_flight_resent(writer: WriterProcess, tmp_path: Path) -> None:
    marker = tmp_path / "hung"
    first = writer.pid
    result: list[BaseException | None] = []
    hang = make_pod().name("hang").namespace("ns").obj()
    t = threading.Thread(target=lambda: result.append(_bind_outcome(writer, hang)))
    t.start()
    while not marker.exists():  # the first child holds the binding in flight
        time.sleep(0.01)
    os.kill(int(marker.read_text()), signal.SIGKILL)
    t.join(60)
    assert result == [None]  # answered by the restarted child
    assert writer.restarts == 1 and writer.pid != first
    writer.bind(make_pod().name("fine").namespace("ns").obj(), "n1")  # the new child serves later bindings


def test_leadership_reaches_the_child(tmp_path: Path) -> None:
    leading = [True]
    w = WriterProcess([sys.executable, str(FAKE_CHILD), str(tmp_path / "hung")], leading=lambda: leading[0],
                      lead_poll=0.01)
    try:
        w.bind(make_pod().name("fine").namespace("ns").obj(), "n1")
        leading[0] = False
        while w._lead_sent is not False:  # the watcher sends the change
            time.sleep(0.01)
        with pytest.raises(NotLeaderError):
            w.bind(make_pod().name("fine").namespace("ns").obj(), "n1")
    finally:
        w.close()


def _bind_outcome(w: WriterProcess, p: Pod) -> BaseException | None:
    try:
        w.bind(p, "n1")
    except Exception as exc:
        return exc
    return None
