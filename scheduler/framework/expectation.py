"""NominatedNodeNameForExpectation (kube-scheduler v1.37, beta and on): before a binding that will take a
while, the chosen node goes into ``status.nominatedNodeName`` so that other components (the cluster
autoscaler) know where the pod is about to land.

Upstream asks every PreBind plugin for a PreBindPreFlight first: Success means it has work to do (VolumeBinding
with volumes still to bind, DynamicResources with claims), Skip that it has none; the nomination is written
when one has work or when the pod waits at Permit. A PreBind plugin written for py-scheduler says so with an
optional ``pre_bind_pre_flight(state, pod, node_name) -> Status | None`` (None: work to do); one without it is
taken as having none, as upstream's plugins mostly do. The API server of 1.37 clears the field again at
binding (ClearingNominatedNodeNameAfterBinding).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from scheduler.framework.interface import CycleState
from scheduler.framework.status import CODE_ERROR, CODE_SKIP, CODE_SUCCESS, Status, skip
from scheduler.model.pod import Pod

# A PreBind plugin's name and its bound PreBindPreFlight.
PreFlightCheck = tuple[str, Callable[[CycleState, Pod, str], Status | None]]


def pre_flight_checks(plugins: Iterable[Any]) -> list[PreFlightCheck]:
    """The (name, PreBindPreFlight) of each of ``plugins`` that has one, in order (a framework keeps its own)."""
    return [(pl.name, check) for pl in plugins if (check := getattr(pl, "pre_bind_pre_flight", None)) is not None]


def run_pre_flights(checks: Iterable[PreFlightCheck], state: CycleState, pod: Pod, node_name: str) -> Status | None:
    """RunPreBindPreFlights' verdict: Success (None) when one plugin has work, Skip when none has, the first
    Error otherwise. As upstream, the plugins that returned Skip are recorded in ``state`` (unless one errored):
    PreBind passes them over. (A plugin without a PreBindPreFlight is not among them: its PreBind runs.)"""
    verdict: Status | None = skip()  # the shared, read-only Skip: callers read its code
    skipped: list[str] = []
    for name, check in checks:
        status = check(state, pod, node_name)
        if status is None or status.code == CODE_SUCCESS:
            verdict = None
        elif status.code == CODE_SKIP:
            skipped.append(name)
        else:
            return Status(CODE_ERROR, [f"running PreBindPreFlight {name!r}: {status.message}"])
    state.skip_pre_bind_plugins = frozenset(skipped)
    return verdict
