"""DefaultNormalizeScore (upstream ``pkg/scheduler/framework/plugins/helper/normalize_score.go``): scale raw scores to
0..100."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

from scheduler.framework.interface import NodeScore, ScoreRow
from scheduler.plugins.helper.gomath import go_div_row

T = TypeVar("T")
# ndarray.max() without the Python layer it goes through (numpy's _methods._amax): called per plugin per pod.
_maximum = np.maximum.reduce


def default_normalize_values(max_priority: int, reverse: bool, values: ScoreRow) -> None:
    """helper.DefaultNormalizeScore on the framework's score row: scale [0, max(values)] to
    [0, max_priority], in place. All-zero scores stay 0, or all become max_priority when reversed (no
    node is "worse")."""
    max_count = int(_maximum(values)) if values.size else 0
    if max_count <= 0:
        if reverse:
            values.fill(max_priority)  # a method call: no slice object, no broadcast of a scalar
        return
    scaled = go_div_row(values * max_priority, max_count)
    values[:] = max_priority - scaled if reverse else scaled


def on_node_scores(scores: list[NodeScore], normalize: Callable[[ScoreRow], T]) -> T:
    """Run a score-row normalizer (``normalize_values``) on upstream's NodeScore list, in place."""
    values = np.fromiter((s.score for s in scores), dtype=np.int64, count=len(scores))
    result = normalize(values)
    for s, v in zip(scores, values.tolist(), strict=True):
        s.score = v
    return result


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """default_normalize_values on a NodeScore list."""
    on_node_scores(scores, lambda values: default_normalize_values(max_priority, reverse, values))
