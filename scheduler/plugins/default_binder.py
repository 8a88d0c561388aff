"""DefaultBinder: the default Bind plugin (``pkg/scheduler/framework/plugins/defaultbinder/default_binder.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import CycleState, Handle
from scheduler.framework.status import Status
from scheduler.framework.types import ClusterEventWithHint
from scheduler.model.pod import Pod
from scheduler.plugins.names import DEFAULT_BINDER


class DefaultBinder:
    """Binds through the handle (POST pods/<name>/binding live, a recorder in `simulate`), so the
    plugin itself never talks to the API server."""

    name = DEFAULT_BINDER

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args
        self._handle = handle

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self._handle.bind(pod, node_name)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Binding never rejects a pod as unschedulable."""
        return []
