"""The plugin tests' NodeInfos and a fake Handle over objects built by scheduler.testing (or tests.builders'
shorthands), accounted as the cache accounts them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from scheduler.cache import Snapshot, new_snapshot
from scheduler.framework.features import Features
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo
from scheduler.model.node import Node
from scheduler.model.pod import Pod


def node_info(node: Node, pods: Iterable[Pod] = ()) -> NodeInfo:
    """A NodeInfo holding `node` and `pods`, accounted as the cache does."""
    ni = NodeInfo()
    ni.set_node(node)
    for p in pods:
        ni.add_pod(p)
    return ni


class FakeHandle:
    """A Handle over a fixed snapshot (nodes and bound pods)."""

    def __init__(self, snapshot: Snapshot | None = None) -> None:
        self._snapshot = snapshot or Snapshot()

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def objects(self) -> Any:
        return None

    def nominated_pods_for(self, node_name: str) -> Sequence[Pod]:
        return []

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return None

    def parallelism(self) -> int:
        return 1

    def features(self) -> Features:
        """The default gates (v1.37's), or the ones a test set."""
        return self.gates

    def shared_plugin_state(self, key: str, factory: Callable[[], Any]) -> Any:
        """One object per handle and key, as the scheduler keeps one per scheduler."""
        shared = self.__dict__.setdefault("_shared", {})
        if key not in shared:
            shared[key] = factory()
        return shared[key]

    gates = Features()


def snapshot_handle(nodes: Sequence[Node], pods: Sequence[Pod] = ()) -> FakeHandle:
    """A handle whose snapshot is built by the real cache (image counts, accounting)."""
    return FakeHandle(new_snapshot(nodes, pods))


def new_state() -> CycleState:
    return CycleState()
