"""What the scheduler keeps of each object it lists or watches: everything but ``metadata.managedFields``.

kube-scheduler's pod informer drops managedFields for memory (kubernetes PR 119556): nothing in a scheduler
reads them (no Extract, no Update with them) and they are often a third of an object. Every object that
enters the cache passes here once, where it is decoded: the list pages, the pod stream and kopf's watches.
Extenders therefore receive pods and nodes without managedFields too.

The pod stream goes one step further (``loads_trimmed``): it cuts managedFields out of the watch line's bytes
before decoding, so that they are never built as Python objects and freed again (about half of a live pod's
line, and a third of the stream's CPU an event went into decoding and freeing them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

# kube-apiserver writes a Pod as Go's encoder orders its struct: kind, apiVersion, metadata, spec, status, with
# metadata.managedFields the last field of ObjectMeta, in compact JSON.
_MANAGED_KEY = b',"managedFields":['
_METADATA_END = b']},"spec":'


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


def managed_fields_span(line: bytes) -> tuple[int, int] | None:
    """Where a watch line's pod managedFields lie, ``[start, end)`` from the comma before the key to the
    array's closing bracket, or None where the bytes alone cannot prove it (then the line is decoded whole).

    Why the span is exact: a ``"`` byte preceded by ``,`` cannot be escaped, and cannot close a string that is
    followed by a letter, so both marks are structural. The first key is metadata's (no field of a Pod before
    it holds a key of that name with an array value). No ``[`` byte lies between its bracket and the first
    ``]`` byte, so no array opens inside and that ``]`` (structural, as the mark it starts shows) closes
    managedFields; the ``}`` after it closes metadata. Memchr-speed searches only: a 4 KB line takes ~1 us.
    """
    start = line.find(_MANAGED_KEY)
    if start < 0:
        return None
    opened = start + len(_MANAGED_KEY)
    close = line.find(b"]", opened)
    if close < 0 or line.find(b"[", opened, close) >= 0 or not line.startswith(_METADATA_END, close):
        return None
    return start, close + 1


def loads_trimmed(line: bytes) -> Any:
    """A watch event's JSON decoded with its object trimmed (as ``trim``), without decoding the pod's
    managedFields where ``managed_fields_span`` finds them: those bytes are cut out first; any other shape is
    decoded whole and trimmed after."""
    span = managed_fields_span(line)
    if span is not None:
        line = line[:span[0]] + line[span[1]:]
    ev = orjson.loads(line)
    obj = ev.get("object") if isinstance(ev, dict) else None
    if isinstance(obj, dict):
        trim(obj)
    return ev
