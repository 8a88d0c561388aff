"""Go duration strings as used by leaderElection and extender httpTimeout."""

from __future__ import annotations

import pytest

from scheduler.config.duration import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("1h", 3600.0),
        ("1.5h", 5400.0),
        ("2h45m0.5s", 9900.5),
        ("-2s", -2.0),
        ("+3s", 3.0),
        ("0", 0.0),
        ("0s", 0.0),
        ("300us", 0.0003),
        ("1µs", 1e-6),
        ("100ns", 1e-7),
        (".5s", 0.5),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "15", "s", "1x", "1s2", "1 s", "--1s", "1.2.3s"])
def test_parse_duration_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_parse_duration_rejects_non_strings() -> None:
    with pytest.raises(ValueError, match="string"):
        parse_duration(15)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(90.0, "1m30s"), (15.0, "15s"), (0.5, "500ms"), (3600.0, "1h0m0s"), (0, "0s"), (10, "10s"), (1.5, "1.5s"),
     (900, "15m0s")],
)
def test_format_duration_round_trips(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)
