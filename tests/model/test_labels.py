"""Requirements parsed and matched as apimachinery's labels.NewRequirement / Requirement.Matches."""

from __future__ import annotations

import pytest

from scheduler.model.errors import InvalidObjectError
from scheduler.model.labels import LABEL_OPS, NODE_OPS, parse_int64, parse_label_selector, parse_requirement


def req(key: str, op: str, *values: str) -> dict[str, object]:
    return {"key": key, "operator": op, "values": list(values)}


@pytest.mark.parametrize(
    ("text", "value"),
    [("5", 5), ("+5", 5), ("-5", -5), ("007", 7), ("9223372036854775807", 2**63 - 1),
     ("-9223372036854775808", -(2**63))],
)
def test_parse_int64_accepts_what_strconv_parseint_accepts(text: str, value: int) -> None:
    assert parse_int64(text) == value


@pytest.mark.parametrize("text", ["1_000", " 5", "5 ", "", "+", "\u0665", "0x10", "1e3", "9223372036854775808"])
def test_parse_int64_rejects_what_strconv_parseint_rejects(text: str) -> None:
    assert parse_int64(text) is None


@pytest.mark.parametrize("value", ["1_000", "1e3"])
def test_gt_value_that_parseint_rejects_is_an_error(value: str) -> None:
    with pytest.raises(InvalidObjectError, match="not an integer"):
        parse_requirement(req("k", "Gt", value), "pod p", "f", NODE_OPS)


def test_gt_lt_compare_node_label_values_as_parseint_does() -> None:
    gt = parse_requirement(req("k", "Gt", "5"), "pod p", "f", NODE_OPS)
    lt = parse_requirement(req("k", "Lt", "5"), "pod p", "f", NODE_OPS)
    assert gt.matches({"k": "6"}) and not gt.matches({"k": "5"}) and not gt.matches({})
    assert lt.matches({"k": "4"}) and lt.matches({"k": "-1"})
    # A node label Python's int() would read (underscore, spaces) is not an integer for Go: no match.
    assert not gt.matches({"k": "1_000"})
    assert not lt.matches({"k": " 4"})


@pytest.mark.parametrize(
    ("expr", "field"),
    [
        (req("bad key!", "Exists"), "f.key"),
        (req("a/b/c", "Exists"), "f.key"),
        (req("k", "In", "not a value"), "f.values[0]"),
        (req("k", "In", "-x"), "f.values[0]"),
        (req("k", "In", "x" * 64), "f.values[0]"),
    ],
)
def test_new_requirement_validates_keys_and_values(expr: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidObjectError) as exc:
        parse_requirement(expr, "pod p", "f", LABEL_OPS)
    assert exc.value.field == field


def test_match_labels_are_validated_too() -> None:
    with pytest.raises(InvalidObjectError):
        parse_label_selector({"matchLabels": {"app": "a b"}}, "pod p", "sel")
    with pytest.raises(InvalidObjectError):
        parse_label_selector({"matchLabels": {"-app": "a"}}, "pod p", "sel")
    assert parse_label_selector({"matchLabels": {"example.com/app": "a.b_c-d", "e": ""}}, "pod p", "sel").matches(
        {"example.com/app": "a.b_c-d", "e": ""}
    )
