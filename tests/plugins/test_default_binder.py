"""DefaultBinder: binds through the handle and passes its verdict on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code, Status, error
from scheduler.model.pod import Pod
from scheduler.plugins.default_binder import DefaultBinder
from scheduler.testing import make_pod


class RecordingHandle:
    def __init__(self, result: Status | None = None) -> None:
        self.result = result
        self.calls: list[tuple[str, str]] = []

    def snapshot(self) -> Any:
        return None

    def objects(self) -> Any:
        return None

    def nominated_pods_for(self, node_name: str) -> Sequence[Pod]:
        return []

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        self.calls.append((pod.key, node_name))
        return self.result

    def parallelism(self) -> int:
        return 1


def test_bind_calls_the_handle() -> None:
    handle = RecordingHandle()
    assert DefaultBinder({}, handle).bind(CycleState(), make_pod().name("web").namespace("shop").uid("u1").obj(),
                                          "node-3") is None
    assert handle.calls == [("shop/web", "node-3")]


def test_bind_failure_is_returned() -> None:
    handle = RecordingHandle(error('pods "web" is being deleted'))
    s = DefaultBinder({}, handle).bind(CycleState(), make_pod().name("web").namespace("shop").uid("u1").obj(), "node-3")
    assert s is not None and s.code == Code.ERROR and "being deleted" in s.message
