"""DefaultNormalizeScore (upstream ``plugins/helper/normalize_score.go``): scale raw scores to 0..100."""

from __future__ import annotations

from scheduler.framework.interface import NodeScore
from scheduler.plugins.gomath import go_div


def default_normalize_values(max_priority: int, reverse: bool, values: list[int]) -> None:
    """helper.DefaultNormalizeScore on plain scores: scale [0, max(values)] to [0, max_priority], in place.

    All-zero scores stay 0, or all become max_priority when reversed (no node is "worse")."""
    max_count = max(values, default=0)
    if max_count <= 0:
        if reverse:
            values[:] = [max_priority] * len(values)
        return
    if reverse:
        values[:] = [max_priority - go_div(max_priority * v, max_count) for v in values]
    else:
        values[:] = [go_div(max_priority * v, max_count) for v in values]


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """default_normalize_values on a NodeScore list."""
    values = [s.score for s in scores]
    default_normalize_values(max_priority, reverse, values)
    for s, v in zip(scores, values, strict=True):
        s.score = v
