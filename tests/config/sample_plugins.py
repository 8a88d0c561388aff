"""Third-party plugin classes used by the config tests (referenced by import path, as users would)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class SampleScorer:
    """Implements preScore and score: MultiPoint must expand it to exactly those two points."""

    name = "SampleScorer"

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        unknown = sorted(set(args) - {"note"})
        if unknown:  # as an out-of-tree plugin checks its args: a ValueError naming the field
            raise ValueError(f"SampleScorer args: unknown field(s) {unknown}")
        self.args = args

    def pre_score(self, state: Any, pod: Any, nodes: Any) -> None:
        return None

    def score(self, state: Any, pod: Any, node_info: Any) -> tuple[int, None]:
        return 0, None

    def score_extensions(self) -> None:
        return None


class SampleFilter:
    """Implements filter only."""

    name = "SampleFilter"

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        self.args = args

    def filter(self, state: Any, pod: Any, node_info: Any) -> None:
        return None


class SampleQueueSort:
    """A queue-sort plugin (``less``)."""

    name = "SampleQueueSort"

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        self.args = args

    def less(self, a: Any, b: Any) -> bool:
        return False


NOT_A_CLASS = 42
