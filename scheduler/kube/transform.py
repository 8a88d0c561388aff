"""What the scheduler keeps of each object it lists or watches: everything but ``metadata.managedFields``.

kube-scheduler's pod informer drops managedFields for memory (kubernetes PR 119556): nothing in a scheduler
reads them (no Extract, no Update with them) and they are often a third of an object. Every object that
enters the cache passes here once, where it is decoded: the list pages, the pod stream and kopf's watches.
Extenders therefore receive pods and nodes without managedFields too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def trim(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop ``metadata.managedFields`` from a freshly decoded object, in place (it is ours alone)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def trimmed(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object without ``metadata.managedFields``, copying only what changes (for bodies another
    library owns, such as kopf's)."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
