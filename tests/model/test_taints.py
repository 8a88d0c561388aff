"""Toleration.ToleratesTaint semantics (k8s.io/api core/v1 toleration.go)."""

from __future__ import annotations

import pytest

from scheduler.model.errors import InvalidObjectError
from scheduler.model.taints import Taint, parse_tolerations


def test_operator_defaults_and_unknown_operators() -> None:
    taint = Taint("k", "v", "NoSchedule")
    (empty_op,) = parse_tolerations([{"key": "k", "value": "v"}], "pod p")
    assert empty_op.tolerates(taint)
    (unknown,) = parse_tolerations([{"key": "k", "operator": "Foo", "value": "v"}], "pod p")
    assert not unknown.tolerates(taint)
    (exists_all,) = parse_tolerations([{"operator": "Exists"}], "pod p")
    assert exists_all.tolerates(taint)
    (equal_empty_key,) = parse_tolerations([{"operator": "Equal", "value": "v"}], "pod p")
    assert equal_empty_key.tolerates(taint) and not equal_empty_key.tolerates(Taint("k", "w", "NoSchedule"))


def test_tolerations_remembered_by_content_and_invalid_lists_raise_each_time() -> None:
    """The memo shares one parsed tuple between pods with equal lists; a list with a malformed entry is
    never remembered, so each pod's error names that pod."""
    raw = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300}]
    first = parse_tolerations(raw, "pod a")
    assert parse_tolerations([dict(raw[0])], "pod b") is first
    assert parse_tolerations([{**raw[0], "effect": "NoSchedule"}], "pod c")[0].effect == "NoSchedule"
    assert parse_tolerations([], "pod d") == () and parse_tolerations(None, "pod e") == ()
    for name in ("pod f", "pod g"):
        with pytest.raises(InvalidObjectError) as err:
            parse_tolerations([raw[0], "not an object"], name)
        assert name in str(err.value)
