"""BuildBrokenLinearFunction (upstream ``pkg/scheduler/framework/plugins/helper/shape_score.go``):
RequestedToCapacityRatio's shape."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduler.plugins.helper.gomath import go_div


def build_broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """The (utilization, score) points as a function: flat before the first and after the last point,
    integer linear interpolation (Go truncation) in between."""
    points = tuple(shape)

    def f(p: int) -> int:
        for i, (utilization, score) in enumerate(points):
            if p <= utilization:
                if i == 0:
                    return score
                prev_utilization, prev_score = points[i - 1]
                rise = (score - prev_score) * (p - prev_utilization)
                return prev_score + go_div(rise, utilization - prev_utilization)
        return points[-1][1]

    return f
