"""A queueing hint's old/new object as a model Pod or Node, written once for every plugin's hints.

The queue hands hints model Pods and Nodes; unit tests (and a few callers) hand the API dicts instead.
Anything else is a programming error: raising lets the queue fall back to queueing the pod, as upstream
does when a hint's type assertion fails.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from scheduler.model.node import Node, node_from_api
from scheduler.model.pod import Pod, pod_from_api

__all__ = ["as_node", "as_pod", "require_node", "require_pod"]

M = TypeVar("M", Pod, Node)


def require_pod(obj: object) -> Pod:
    """``obj`` as a Pod; None or any other type raises TypeError."""
    return _model(obj, Pod, pod_from_api)


def require_node(obj: object) -> Node:
    """``obj`` as a Node; None or any other type raises TypeError."""
    return _model(obj, Node, node_from_api)


def _model(obj: object, cls: type[M], from_api: Callable[[Mapping[str, Any]], M]) -> M:
    if isinstance(obj, cls):
        return obj
    if isinstance(obj, Mapping):
        return from_api(obj)
    raise TypeError(f"expected a {cls.__name__}, got {type(obj).__name__}")


def as_pod(obj: object) -> Pod | None:
    """Like require_pod, but None (an add's old object, a delete's new one) stays None."""
    return None if obj is None else require_pod(obj)


def as_node(obj: object) -> Node | None:
    """Like require_node, but None (an add's old object, a delete's new one) stays None."""
    return None if obj is None else require_node(obj)
