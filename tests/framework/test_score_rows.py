"""score_rows: plugins' score lists as an int64 matrix, packed as bytes when every value fits one."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.framework.score_rows import score_rows


@pytest.mark.parametrize(
    "columns",
    [
        [[0, 100, 255], [7, 8, 9]],  # every value fits a byte
        [[0, 256, 3], [1, 2, 3]],  # one does not
        [[-1, 0, 1]],  # negative
        [[True, False, 2]],  # bools count as ints, as numpy reads them
        [[np.int64(7), 8, 9]],  # numpy ints in a list
        [(1, 2, 3)],  # not a list: numpy converts it
        [[3 * 10**12, 1, 2]],  # past 32 bits
    ],
)
def test_score_rows_equal_numpys_conversion(columns: list[list[int]]) -> None:
    n = len(columns[0])
    got = score_rows(columns, n)
    assert got.dtype == np.int64
    assert got.tolist() == np.array(columns, dtype=np.int64).tolist()


def test_score_rows_are_writable_and_their_own() -> None:
    """NormalizeScore writes the rows in place: they must not share the packed bytes."""
    columns = [[1, 2], [3, 4]]
    rows = score_rows(columns, 2)
    rows[0, 0] = 99
    assert rows.tolist() == [[99, 2], [3, 4]] and columns == [[1, 2], [3, 4]]


def test_score_rows_without_plugins_or_nodes() -> None:
    assert score_rows([], 5).shape == (0, 5)
    assert score_rows([[], []], 0).shape == (2, 0)
