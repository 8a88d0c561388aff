"""Errors raised while reading API objects: they always name the object and the field."""

from __future__ import annotations


class InvalidObjectError(ValueError):
    """An API object has a field the scheduler cannot interpret.

    Raised at the edge (parsing); the scheduler turns it into an UnschedulableAndUnresolvable
    status or a clear start-up error, never a crash.
    """

    def __init__(self, obj: str, field: str, message: str) -> None:
        super().__init__(f"{obj}: {field}: {message}")
        self.obj = obj
        self.field = field
        self.message = message
