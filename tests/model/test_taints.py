"""Toleration.ToleratesTaint semantics (k8s.io/api core/v1 toleration.go)."""

from __future__ import annotations

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
