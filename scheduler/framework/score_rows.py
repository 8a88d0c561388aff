"""Score plugins' lists of Python ints as numpy rows.

Filling an int64 array from a list makes numpy discover and convert each element: a batch's first cycles
or an unbatched cycle convert hundreds of nodes' scores for every plugin. Raw scores are mostly small
non-negative ints (0-100), and ``bytes(list)`` packs those in C at a fraction of that cost; a list with any
other value takes numpy's conversion.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduler.framework.interface import ScoreMatrix


def score_rows(columns: Sequence[Sequence[int]], n: int) -> ScoreMatrix:
    """The int64 matrix with ``columns[i]`` (each ``n`` long) as row i."""
    if all(type(values) is list for values in columns):
        try:
            packed = b"".join(map(bytes, columns))
        except (ValueError, TypeError):  # a value outside 0-255 (or not an int): numpy converts it
            pass
        else:
            return np.frombuffer(packed, dtype=np.uint8).reshape(len(columns), n).astype(np.int64)
    matrix = np.empty((len(columns), n), dtype=np.int64)
    for i, values in enumerate(columns):
        matrix[i] = values
    return matrix
