"""Go's integer arithmetic: scores must equal kube-scheduler's to the unit, so plugins reproduce Go's
semantics (division truncates toward zero, ``math.Round`` rounds half away from zero) rather than Python's.
"""

from __future__ import annotations

import math


def go_div(a: int, b: int) -> int:
    """Go's integer division: truncates toward zero (Python's // floors, which differs for negatives).

    The broken-linear shape function divides negative slopes, so this matters for decreasing shapes."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_round(x: float) -> int:
    """Go's math.Round: half away from zero (Python's round() is banker's rounding).

    x - trunc(x) is exact, unlike x + 0.5, which rounds 0.49999999999999994 up to 1.0."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return t
