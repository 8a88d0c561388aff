"""Go duration strings (``time.ParseDuration``): ``"15s"``, ``"1m30s"``, ``"500ms"``, ``"1.5h"``.

KubeSchedulerConfiguration's leaderElection and extender timeouts are metav1.Duration values, which
are written in Go's syntax; configs written for kube-scheduler must load unchanged here.
"""

from __future__ import annotations

import re

_UNITS: dict[str, float] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # U+00B5 micro sign
    "μs": 1e-6,  # U+03BC Greek mu
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string; raise ValueError (with the text) when Go would reject it.

    As Go: an optional sign, then one or more number+unit pairs; ``"0"`` alone is allowed, a bare
    number otherwise is not (``"15"`` is an error: a unit is required).
    """
    if not isinstance(text, str):
        raise ValueError(f"duration must be a string like '15s', got {text!r}")
    s = text.strip()
    sign = 1.0
    if s[:1] in ("+", "-"):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r} (expected e.g. '15s', '1m30s', '500ms')")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def format_duration(seconds: float) -> str:
    """A compact Go-style rendering (``90.0`` -> ``"1m30s"``), used in messages and round-trips."""
    if seconds == 0:
        return "0s"
    neg = seconds < 0
    rest = abs(seconds)
    out = ""
    h, rest = divmod(rest, 3600)
    m, rest = divmod(rest, 60)
    if h:
        out += f"{int(h)}h"
    if m:
        out += f"{int(m)}m"
    if rest or not out:
        if rest < 1 and not out:
            ms = rest * 1000
            out += f"{ms:g}ms"
        else:
            out += f"{rest:g}s"
    return ("-" if neg else "") + out
