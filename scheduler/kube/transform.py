"""What the scheduler keeps of each object it lists or watches: everything but ``metadata.managedFields``.

kube-scheduler's pod informer drops managedFields for memory (kubernetes PR 119556): nothing in a scheduler
reads them (no Extract, no Update with them) and they are often a third of an object. Every object that
enters the cache passes here once, where it is decoded: the list pages, the pod stream and kopf's watches.
Extenders therefore receive pods and nodes without managedFields too.

The pod stream goes one step further (``loads_trimmed``): it cuts managedFields out of the watch line's bytes
before decoding, so that they are never built as Python objects and freed again (about half of a live pod's
line, and a third of the stream's CPU an event went into decoding and freeing them). Its ``PodLineDecoder``
also decodes each distinct spec once: a pod's later events repeat its spec's bytes, and a workload's pods share
a few (one template, one per node once bound), so the spec is looked up by its bytes and the event shares the
dict decoded before. Objects the pod stream delivers are therefore read-only, as every consumer treats them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

# kube-apiserver writes a Pod as Go's encoder orders its struct: kind, apiVersion, metadata, spec, status, with
# metadata.managedFields the last field of ObjectMeta, in compact JSON.
_MANAGED_KEY = b',"managedFields":['
_METADATA_END = b']},"spec":'
_SPEC_END = b'},"status":{'


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
    return _decoded(line if span is None else line[:span[0]] + line[span[1]:])


def _decoded(line: bytes) -> Any:
    """A watch event decoded, its object trimmed."""
    ev = orjson.loads(line)
    obj = ev.get("object") if isinstance(ev, dict) else None
    if isinstance(obj, dict):
        trim(obj)
    return ev


class PodLineDecoder:
    """``loads_trimmed`` for one pod stream, with each distinct spec decoded once and shared.

    Where ``managed_fields_span`` finds managedFields, the pod's spec starts right after them (``]},"spec":``
    closes metadata). Its end is taken to be the first ``},"status":{`` after it: that mark is structural (a
    ``"`` after ``,`` cannot be escaped, and cannot close a string followed by a letter), but it could belong to
    a field inside the spec. So the bytes up to it are trusted only once they decoded alone, as one complete JSON
    value (a span cut at an inner brace leaves the spec's own brace open, and fails): such bytes equal to
    another line's spec at the same place are that line's whole spec, as a JSON value ends where its bytes
    say. The rest of the line is decoded with ``null`` in the spec's place, then given the remembered dict.
    Any other shape is decoded as ``loads_trimmed`` does. ``capacity`` distinct specs are kept, all dropped when
    full (one per template and per node of a workload: a miss costs one decode, as without the memo, and one
    comparison with the spec kept before it, ``_remember``).
    """

    __slots__ = ("_capacity", "_last", "_specs")

    def __init__(self, capacity: int = 4096) -> None:
        self._specs: dict[bytes, dict[str, Any]] = {}
        self._capacity = capacity
        self._last: dict[str, Any] = {}  # the spec remembered last

    def __len__(self) -> int:
        """How many specs are remembered."""
        return len(self._specs)

    def _remember(self, key: bytes, spec: dict[str, Any]) -> None:
        """Keep a new spec, its lists and objects replaced by the equal ones of the spec kept before it: a pod's
        bound spec is its template's plus nodeName, so the views built from both (the assumed copy's, the
        watch's) compare as the same objects, and the pods of a workload hold one copy of their containers."""
        last = self._last
        for name, value in spec.items():
            if type(value) is dict or type(value) is list:
                held = last.get(name)
                if type(held) is type(value) and held == value:
                    spec[name] = held  # an existing key: the dict does not resize while iterated
        if len(self._specs) >= self._capacity:
            self._specs.clear()
        self._specs[key] = self._last = spec

    def loads(self, line: bytes) -> Any:
        span = managed_fields_span(line)
        if span is None:
            return loads_trimmed(line)
        start, end = span
        at = end - 1 + len(_METADATA_END)  # the spec's opening brace
        stop = line.find(_SPEC_END, at) + 1  # just past the spec's closing brace, if the first mark is its own
        if stop <= 0 or not line.startswith(b"{", at):
            return _decoded(line[:start] + line[end:])
        key = line[at:stop]
        spec = self._specs.get(key)
        if spec is None:
            try:
                spec = orjson.loads(key)
            except orjson.JSONDecodeError:  # the mark lies inside the spec: no complete value before it
                return _decoded(line[:start] + line[end:])
            self._remember(key, spec)
        ev = orjson.loads(b"".join((line[:start], line[end:at], b"null", line[stop:])))
        obj = ev.get("object") if type(ev) is dict else None
        if type(obj) is not dict or obj.get("spec", 0) is not None:  # not a watch event of a pod after all
            return _decoded(line[:start] + line[end:])
        obj["spec"] = spec
        trim(obj)
        return ev
