"""Shared score helpers: Go integer arithmetic, DefaultNormalizeScore, the broken-linear shape."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.framework.interface import NodeScore
from scheduler.plugins.helper.gomath import go_div, go_round
from scheduler.plugins.helper.normalize_score import default_normalize_score, default_normalize_values
from scheduler.plugins.helper.shape_score import build_broken_linear_function


@pytest.mark.parametrize(
    ("a", "b", "expected"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0), (-500, 30, -16)]
)
def test_go_div_truncates_toward_zero(a: int, b: int, expected: int) -> None:
    assert go_div(a, b) == expected


@pytest.mark.parametrize(
    ("x", "expected"),
    [(42.5, 43), (43.5, 44), (42.49, 42), (-2.5, -3), (0.0, 0), (0.49999999999999994, 0), (-0.49999999999999994, 0),
     (4503599627370497.0, 4503599627370497)],
)
def test_go_round_half_away_from_zero(x: float, expected: int) -> None:
    assert go_round(x) == expected


@pytest.mark.parametrize(
    ("raw", "reverse", "expected"),
    [
        ([0, 5, 10], False, [0, 50, 100]),
        ([1, 3], False, [33, 100]),
        ([0, 5, 10], True, [100, 50, 0]),
        ([1, 3], True, [67, 0]),
        ([0, 0], False, [0, 0]),
        ([0, 0], True, [100, 100]),
        ([-3, 7], False, [-42, 100]),  # Go's division truncates toward zero (floor would give -43)
        ([-3, 7], True, [142, 0]),
    ],
)
def test_default_normalize_score(raw: list[int], reverse: bool, expected: list[int]) -> None:
    scores = [NodeScore(str(i), s) for i, s in enumerate(raw)]
    default_normalize_score(100, reverse, scores)
    assert [s.score for s in scores] == expected
    values = np.array(raw, dtype=np.int64)
    default_normalize_values(100, reverse, values)
    assert values.tolist() == expected


@pytest.mark.parametrize(
    ("p", "expected"),
    [(0, 100), (10, 84), (30, 50), (65, 25), (100, 0)],
)
def test_broken_linear_function(p: int, expected: int) -> None:
    f = build_broken_linear_function([(0, 100), (30, 50), (100, 0)])
    assert f(p) == expected


def test_broken_linear_function_is_flat_outside_points() -> None:
    f = build_broken_linear_function([(20, 30), (80, 70)])
    # before 20 -> 30; after 80 -> 70; at 50: 30 + 40*30/60 = 50
    assert (f(0), f(19), f(50), f(81), f(100)) == (30, 30, 50, 70, 70)
