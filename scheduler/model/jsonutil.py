"""JSON encoding of model data with orjson, which only knows plain dicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def plain(obj: Any) -> Any:
    """orjson's ``default``: read-only mappings (the model keeps some) serialise as objects."""
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")
