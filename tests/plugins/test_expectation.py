"""NominatedNodeNameForExpectation (v1.37): PreBindPreFlight verdicts and the nomination write."""

from __future__ import annotations

from typing import Any

from scheduler.framework.expectation import pre_flight_checks, run_pre_flights
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code, Status, skip
from scheduler.model.pod import Pod, pod_from_api
from scheduler.scheduler import Scheduler
from tests.plugins.test_volume_binding import PROV, Env, one
from tests.plugins.volume_objects import pvc
from tests.test_schedule_one import build


class Plugin:
    def __init__(self, name: str, verdict: Status | None) -> None:
        self.name, self.verdict = name, verdict

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self.verdict


class NoPreFlight:
    name = "Legacy"


def test_one_plugin_with_work_is_enough_and_an_error_wins() -> None:
    pod, state = one(), CycleState()
    assert run_pre_flights(pre_flight_checks([Plugin("a", skip()), Plugin("b", None)]), state, pod, "n") is None
    only_skips = run_pre_flights(pre_flight_checks([Plugin("a", skip()), NoPreFlight()]), state, pod, "n")
    assert only_skips is not None and only_skips.code == Code.SKIP
    failing = pre_flight_checks([Plugin("a", None), Plugin("b", Status(Code.ERROR, ["boom"]))])
    err = run_pre_flights(failing, state, pod, "n")
    assert err is not None and err.code == Code.ERROR and "PreBindPreFlight 'b'" in err.message


class Binding(Plugin):
    """A PreBind plugin with a fixed PreBindPreFlight verdict that records its PreBind calls."""

    def __init__(self, name: str, verdict: Status | None, calls: list[str]) -> None:
        super().__init__(name, verdict)
        self.calls = calls

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.calls.append(self.name)
        return None


class LegacyBinding:
    """A PreBind plugin without a PreBindPreFlight."""

    def __init__(self, calls: list[str]) -> None:
        self.name, self.calls = "Legacy", calls

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self.calls.append(self.name)
        return None


def test_prebind_passes_over_the_plugins_whose_preflight_skipped() -> None:
    calls: list[str] = []
    plugins = [Binding("Idle", skip(), calls), Binding("Busy", None, calls), LegacyBinding(calls)]
    fwk = build({"preBind": plugins})
    pod = one()
    assert fwk.run_pre_bind_plugins(CycleState(), pod, "n") is None  # no PreBindPreFlight ran: every plugin
    assert calls == ["Idle", "Busy", "Legacy"]
    calls.clear()
    state = CycleState()
    assert run_pre_flights(pre_flight_checks(fwk.pre_bind_plugins()), state, pod, "n") is None
    assert state.skip_pre_bind_plugins == {"Idle"}
    assert fwk.run_pre_bind_plugins(state, pod, "n") is None
    assert calls == ["Busy", "Legacy"]
    state = CycleState()
    failing = [Binding("Idle", skip(), calls), Binding("Broken", Status(Code.ERROR, ["boom"]), calls)]
    assert run_pre_flights(pre_flight_checks(failing), state, pod, "n") is not None
    assert state.skip_pre_bind_plugins == frozenset()  # an error leaves PreBind as it was


def test_prebind_with_every_plugin_skipped_calls_none_and_still_times_the_point() -> None:
    calls: list[str] = []
    plugins = [Binding("Idle", skip(), calls), Binding("Quiet", skip(), calls)]
    fwk = build({"preBind": plugins})
    observed: list[tuple[str, str]] = []
    fwk._metrics = lambda point, code, seconds: observed.append((point, code))  # the metrics hook, as live
    assert [name for name, _ in fwk.pre_bind_pre_flights()] == ["Idle", "Quiet"]
    assert [name for name, _ in pre_flight_checks([*plugins, NoPreFlight()])] == ["Idle", "Quiet"]
    pod, state = one(), CycleState()
    verdict = run_pre_flights(fwk.pre_bind_pre_flights(), state, pod, "n")
    assert verdict is not None and verdict.code == Code.SKIP
    assert fwk.run_pre_bind_plugins(state, pod, "n") is None
    assert calls == [] and observed == [("PreBind", "Success")]  # the point is recorded as a run without plugins


def reserved(env: Env, pod: Pod, node: str) -> CycleState:
    state, s = env.prefilter(pod)
    if s is None:
        for n in ("node-1", "node-2"):
            env.filter(state, pod, n)
    assert env.pl.reserve(state, pod.with_node(node), node) is None
    return state


def test_volume_binding_has_work_only_with_volumes_to_bind() -> None:
    env = Env([pvc("c", cls=PROV)])
    provisioning = one("c")
    assert env.pl.pre_bind_pre_flight(reserved(env, provisioning, "node-1"), provisioning, "node-1") is None
    no_claims = one()
    s = env.pl.pre_bind_pre_flight(reserved(env, no_claims, "node-1"), no_claims, "node-1")
    assert s is not None and s.code == Code.SKIP


class Writer:
    def __init__(self) -> None:
        self.patches: list[tuple[str, Any]] = []

    def patch_pod_status(self, namespace: str, name: str, patch: Any) -> None:
        self.patches.append((name, patch))


def test_the_scheduler_writes_the_nomination_once() -> None:
    w = Writer()
    s = Scheduler.__new__(Scheduler)  # only the writer is needed
    s.writer = w  # type: ignore[assignment]
    s.nominate_for_expectation(one(), "node-1")
    nominated = one()
    raw = {**nominated.raw, "status": {"nominatedNodeName": "node-1"}}
    s.nominate_for_expectation(pod_from_api(raw), "node-1")
    assert w.patches == [("pod", {"status": {"nominatedNodeName": "node-1"}})]
