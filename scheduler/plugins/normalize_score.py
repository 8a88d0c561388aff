"""DefaultNormalizeScore (upstream ``plugins/helper/normalize_score.go``): scale raw scores to 0..100."""

from __future__ import annotations

import numpy as np

from scheduler.framework.interface import NodeScore, ScoreRow


def go_div_row(values: ScoreRow, divisor: int) -> ScoreRow:
    """Go's integer division of every value by ``divisor``: the quotient truncated toward zero."""
    quotient = np.abs(values) // abs(divisor)
    return np.where((values < 0) != (divisor < 0), -quotient, quotient)


def default_normalize_values(max_priority: int, reverse: bool, values: ScoreRow) -> None:
    """helper.DefaultNormalizeScore on the framework's score row: scale [0, max(values)] to
    [0, max_priority], in place. All-zero scores stay 0, or all become max_priority when reversed (no
    node is "worse")."""
    max_count = int(values.max()) if values.size else 0
    if max_count <= 0:
        if reverse:
            values[:] = max_priority
        return
    scaled = go_div_row(values * max_priority, max_count)
    values[:] = max_priority - scaled if reverse else scaled


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """default_normalize_values on a NodeScore list."""
    values = np.fromiter((s.score for s in scores), dtype=np.int64, count=len(scores))
    default_normalize_values(max_priority, reverse, values)
    for s, v in zip(scores, values.tolist(), strict=True):
        s.score = v
