"""Taints and tolerations (core/v1 Toleration.ToleratesTaint semantics)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import orjson

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


# Pods made from one template carry the same tolerations (every pod gets the two default NoExecute ones),
# so their parsed tuples are shared: the JSON of the list -> its result. Cleared when it grows past the bound.
_TOLERATIONS_MEMO: dict[bytes, tuple[Toleration, ...]] = {}
_TOLERATIONS_MEMO_MAX = 4096


def parse_tolerations(raw: object, obj: str) -> tuple[Toleration, ...]:
    """spec.tolerations, remembered by their JSON (serializing costs a tenth of parsing); an invalid
    list is not remembered: its error names the pod."""
    if not raw:
        return ()
    try:
        key = orjson.dumps(raw, default=str)
    except orjson.JSONEncodeError:  # not from JSON (a hand-built object): parsed every time
        return _parse_tolerations(raw, obj)
    found = _TOLERATIONS_MEMO.get(key)
    if found is not None:
        return found
    result = _parse_tolerations(raw, obj)
    if len(_TOLERATIONS_MEMO) >= _TOLERATIONS_MEMO_MAX:
        _TOLERATIONS_MEMO.clear()
    _TOLERATIONS_MEMO[key] = result
    return result


def _parse_tolerations(raw: object, obj: str) -> tuple[Toleration, ...]:
    out = []
    for i, t in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(t, Mapping):
            raise InvalidObjectError(obj, f"spec.tolerations[{i}]", "must be an object")
        op = t.get("operator") or "Equal"  # empty means Equal
        out.append(Toleration(str(t.get("key") or ""), str(op), str(t.get("value") or ""),
                              str(t.get("effect") or "")))
    return tuple(out)


def tolerated(taint: Taint, tolerations: Sequence[Toleration]) -> bool:
    """Some toleration tolerates the taint (a plain loop: asked per pod and node, no generator each time)."""
    for t in tolerations:  # noqa: SIM110  (any() builds a generator a call)
        if t.tolerates(taint):
            return True
    return False


def first_untolerated(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: frozenset[str]
) -> Taint | None:
    """The first taint with one of `effects` that no toleration tolerates (filter order matters)."""
    for taint in taints:
        if taint.effect in effects and not tolerated(taint, tolerations):
            return taint
    return None
