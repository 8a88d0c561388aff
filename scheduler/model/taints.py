"""Taints and tolerations (core/v1 Toleration.ToleratesTaint semantics)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler.model.errors import InvalidObjectError

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
EFFECTS = frozenset({NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE})


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # "Equal" or "Exists"; anything else tolerates nothing
    value: str
    effect: str  # "" matches every effect

    def tolerates(self, taint: Taint) -> bool:
        """Empty effect matches all effects; empty key matches all keys; an unknown operator matches
        nothing (core/v1 Toleration.ToleratesTaint)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator == "Equal":
            return self.value == taint.value
        return False


def parse_taints(raw: object, obj: str) -> tuple[Taint, ...]:
    out = []
    for i, t in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(t, Mapping):
            raise InvalidObjectError(obj, f"spec.taints[{i}]", "must be an object")
        out.append(Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or "")))
    return tuple(out)


def parse_tolerations(raw: object, obj: str) -> tuple[Toleration, ...]:
    out = []
    for i, t in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(t, Mapping):
            raise InvalidObjectError(obj, f"spec.tolerations[{i}]", "must be an object")
        op = t.get("operator") or "Equal"  # empty means Equal
        out.append(Toleration(str(t.get("key") or ""), str(op), str(t.get("value") or ""),
                              str(t.get("effect") or "")))
    return tuple(out)


def tolerated(taint: Taint, tolerations: Sequence[Toleration]) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def first_untolerated(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: frozenset[str]
) -> Taint | None:
    """The first taint with one of `effects` that no toleration tolerates (filter order matters)."""
    for taint in taints:
        if taint.effect in effects and not tolerated(taint, tolerations):
            return taint
    return None
