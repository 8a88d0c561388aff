"""GenerationMemo: values by NodeInfo generation per key, with one entry bound and a key bound."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from scheduler.framework.types import NodeInfo
from scheduler.plugins.helper import generation_memo
from scheduler.plugins.helper.generation_memo import GenerationMemo
from tests.builders import make_node
from tests.plugins.util import node_info


def _counting(calls: list[list[str]]) -> Callable[[Sequence[NodeInfo]], list[int]]:
    def compute(nodes: Sequence[NodeInfo]) -> list[int]:
        calls.append([n.name for n in nodes])
        return [len(n.name) for n in nodes]

    return compute


def test_values_computes_only_nodes_without_an_entry_for_their_generation() -> None:
    a, b = node_info(make_node("a")), node_info(make_node("bb"))
    memo: GenerationMemo[int] = GenerationMemo()
    calls: list[list[str]] = []
    assert memo.values("k", [a, b], _counting(calls)) == [1, 2]
    assert memo.values("k", [a, b.clone()], _counting(calls)) == [1, 2]
    b.generation += 1000  # a changed node has a new generation
    assert memo.values("k", [a, b], _counting(calls)) == [1, 2]
    assert calls == [["a", "bb"], ["bb"]]


def test_a_new_key_beyond_max_keys_drops_every_table() -> None:
    memo: GenerationMemo[int] = GenerationMemo(max_keys=2)
    memo.table("x")[1] = 10
    memo.table("y")[1] = 20
    assert memo.table("x") == {1: 10}
    memo.table("z")[1] = 30  # a third key: x and y are dropped
    assert memo.table("x") == {}
    assert memo.table("z") == {1: 30}


def test_a_table_past_the_limit_starts_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generation_memo, "LIMIT", 2)
    memo: GenerationMemo[bool] = GenerationMemo()
    table = memo.table("k")
    table.update({1: True, 2: True})
    assert memo.table("k") is table
    table[3] = True
    assert memo.table("k") == {}


def test_the_bound_grows_with_the_cluster_it_is_told_of(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generation_memo, "LIMIT", 4)
    memo: GenerationMemo[bool] = GenerationMemo()
    table = memo.table("k", nodes=3)  # bound max(4, 2 x 3) = 6
    table.update({g: True for g in range(6)})
    assert memo.table("k") is table  # 6 entries: within the bound, kept
    table[6] = True
    assert memo.table("k") == {}  # 7 > 6: starts afresh
    small = memo.table("k", nodes=1)  # the bound never shrinks below the largest cluster seen
    small.update({g: True for g in range(6)})
    assert memo.table("k") is small
