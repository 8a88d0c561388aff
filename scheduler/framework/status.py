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


# Code's members under module names, for the checks a cycle makes dozens of times: on Python 3.11 a member read
# through the class (``Code.SKIP``) takes the metaclass's __getattr__ hook, about ten times a global's cost.
CODE_SUCCESS = Code.SUCCESS
CODE_ERROR = Code.ERROR
CODE_UNSCHEDULABLE = Code.UNSCHEDULABLE
CODE_UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
CODE_WAIT = Code.WAIT
CODE_SKIP = Code.SKIP
CODE_PENDING = Code.PENDING
_REJECTED = (CODE_UNSCHEDULABLE, CODE_UNRESOLVABLE, CODE_PENDING)


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
        return self.code in _REJECTED



StatusOrNone = Status | None


def success(s: Status | None) -> bool:
    return s is None or s.code == CODE_SUCCESS


def unschedulable(*reasons: str) -> Status:
    return Status(CODE_UNSCHEDULABLE, list(reasons))


def unresolvable(*reasons: str) -> Status:
    return Status(CODE_UNRESOLVABLE, list(reasons))


def error(exc: BaseException | str) -> Status:
    if isinstance(exc, str):
        return Status(CODE_ERROR, [exc], error=RuntimeError(exc))
    return Status(CODE_ERROR, [str(exc)], error=exc)


class _NoReasons(list[str]):
    """The shared Skip status' reasons: empty for good (equal to [], but appending to it raises)."""

    def _read_only(self, *args: object) -> None:
        raise TypeError("the shared Skip status is read-only: build Status(Code.SKIP, reasons) instead")

    append = extend = insert = remove = pop = clear = sort = reverse = _read_only  # type: ignore[assignment]
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only  # type: ignore[assignment]


_SKIP = Status(CODE_SKIP, _NoReasons())


def skip() -> Status:
    """The Skip status: one shared instance, read-only (a dozen plugins skip each cycle, and a Status costs
    a Python __init__). The framework only reads a Skip's code; nothing may set its fields."""
    return _SKIP


def code_of(s: Status | None) -> Code:
    return CODE_SUCCESS if s is None else s.code


# Upstream Code.String(): the status label of the scheduler's metrics.
CODE_NAMES: dict[Code, str] = {
    CODE_SUCCESS: "Success",
    CODE_ERROR: "Error",
    CODE_UNSCHEDULABLE: "Unschedulable",
    CODE_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    CODE_WAIT: "Wait",
    CODE_SKIP: "Skip",
    CODE_PENDING: "Pending",
}
SUCCESS_NAME = CODE_NAMES[CODE_SUCCESS]  # the label of most observations (read inline by the framework)


def code_name(status: Status | None) -> str:
    """Upstream Code.String() of a status (None is Success): the metrics label value."""
    return SUCCESS_NAME if status is None else CODE_NAMES[status.code]
