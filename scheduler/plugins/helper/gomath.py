"""Go's integer arithmetic: scores must equal kube-scheduler's to the unit, so plugins reproduce Go's
semantics (division truncates toward zero, ``math.Round`` rounds half away from zero) rather than Python's.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt


def go_div(a: int, b: int) -> int:
    """Go's integer division: truncates toward zero (Python's // floors, which differs for negatives).

    The broken-linear shape function divides negative slopes, so this matters for decreasing shapes."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_div_row(values: npt.NDArray[np.int64], divisor: int) -> npt.NDArray[np.int64]:
    """``go_div`` of every value by ``divisor`` (a score row)."""
    quotient = np.abs(values) // abs(divisor)
    return np.where((values < 0) != (divisor < 0), -quotient, quotient)


def go_round(x: float) -> int:
    """Go's math.Round: half away from zero (Python's round() is banker's rounding).

    x - trunc(x) is exact, unlike x + 0.5, which rounds 0.49999999999999994 up to 1.0."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return t
