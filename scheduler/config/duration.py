"""Go duration strings (``time.ParseDuration``): ``"15s"``, ``"1m30s"``, ``"500ms"``, ``"1.5h"``.

KubeSchedulerConfiguration's leaderElection and extender timeouts are metav1.Duration values, which
are written in Go's syntax; configs written for kube-scheduler must load unchanged here. A leaf module
(it imports nothing of scheduler/), so config and framework both take Go's formatting from here.
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
    """Go's ``time.Duration.String()`` ("10s", "1m30s", "1h0m0s", "1.5s", "500ms"): upstream embeds
    durations in messages this way (Permit's timeout message), and ``parse_duration`` reads it back.
    The one copy of this formatting: the framework imports it from here, a leaf module."""
    ns = round(seconds * 1_000_000_000)
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return f"{sign}{_decimal(ns, 1_000)}µs"
    if ns < 1_000_000_000:
        return f"{sign}{_decimal(ns, 1_000_000)}ms"
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    secs = _decimal(rest, 1_000_000_000)
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"


def _decimal(value: int, unit: int) -> str:
    """``value`` in ``unit``s with Go's shortest decimal fraction (no trailing zeros)."""
    whole, frac = divmod(value, unit)
    if frac == 0:
        return str(whole)
    digits = str(frac).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
