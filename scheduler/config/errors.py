"""ConfigError: what a bad KubeSchedulerConfiguration produces, always naming the field.

Validation collects every problem it finds (as upstream's aggregated field errors do) so an operator
fixes a config file in one pass rather than one error per restart.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem: a field path such as ``profiles[0].plugins.score.enabled[1].weight`` and a message."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ConfigError(ValueError):
    """The scheduler configuration is invalid. ``errors`` lists each field problem; ``source`` the file."""

    def __init__(self, errors: list[FieldError], source: str = "") -> None:
        self.errors = list(errors)
        self.source = source
        body = "; ".join(str(e) for e in self.errors)
        prefix = f"invalid scheduler configuration {source}" if source else "invalid scheduler configuration"
        super().__init__(f"{prefix}: {body}")

    @property
    def paths(self) -> list[str]:
        return [e.path for e in self.errors]


class ErrorList:
    """Accumulates FieldErrors while a config is parsed; ``raise_if_any`` ends the pass."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def add(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path, message))

    def __len__(self) -> int:
        return len(self.errors)

    def raise_if_any(self, source: str = "") -> None:
        if self.errors:
            raise ConfigError(self.errors, source)
