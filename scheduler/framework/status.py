"""Status codes and Status, as kube-scheduler's framework defines them.

Plugins return ``None`` for Success (upstream's nil status): the filter loop runs once per plugin
per node, so the common case allocates nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


@dataclass(slots=True)
class Status:
    code: Code
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""
    error: BaseException | None = None

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending: the pod cannot go there now."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)



StatusOrNone = Status | None


def success(s: Status | None) -> bool:
    return s is None or s.code == Code.SUCCESS


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, list(reasons))


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, list(reasons))


def error(exc: BaseException | str) -> Status:
    if isinstance(exc, str):
        return Status(Code.ERROR, [exc], error=RuntimeError(exc))
    return Status(Code.ERROR, [str(exc)], error=exc)


def skip() -> Status:
    return Status(Code.SKIP)


def code_of(s: Status | None) -> Code:
    return Code.SUCCESS if s is None else s.code


# Upstream Code.String(): the status label of the scheduler's metrics.
CODE_NAMES: dict[Code, str] = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}
_SUCCESS_NAME = CODE_NAMES[Code.SUCCESS]


def code_name(status: Status | None) -> str:
    """Upstream Code.String() of a status (None is Success): the metrics label value."""
    return _SUCCESS_NAME if status is None else CODE_NAMES[status.code]
