"""NodePorts: host-port conflicts (0.0.0.0 vs specific IPs, protocols), PreFilter skip, hints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import ActionType, EventResource, QueueingHint
from scheduler.model.pod import Pod
from scheduler.plugins.node_ports import ERR_REASON, NodePorts
from tests.builders import container, host_port, make_node, make_pod
from tests.plugins.util import FakeHandle, node_info

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def plugin() -> NodePorts:
    return NodePorts({}, FakeHandle())


def with_ports(*ports: Mapping[str, Any], name: str = "p", node: str = "", nominated: str = "") -> Pod:
    return make_pod(name, [container(ports=list(ports))], node=node, nominated=nominated)


def verdict(want: Sequence[Mapping[str, Any]], used: Sequence[Mapping[str, Any]]) -> Code | None:
    p = plugin()
    state = CycleState()
    pod = with_ports(*want)
    _, s = p.pre_filter(state, pod, [])
    assert s is None
    existing = [with_ports(*used, name="existing", node="n")] if used else []
    s = p.filter(state, pod, node_info(make_node(), existing))
    if s is None:
        return None
    assert s.reasons == [ERR_REASON]
    return s.code


CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], Code | None]] = [
    ("free node", [host_port(8080)], [], None),
    ("same port, default TCP on 0.0.0.0", [host_port(8080)], [host_port(8080)], Code.UNSCHEDULABLE),
    ("explicit TCP equals default", [host_port(8080, protocol="TCP")], [host_port(8080)], Code.UNSCHEDULABLE),
    ("other protocol", [host_port(8080, protocol="UDP")], [host_port(8080)], None),
    ("other port", [host_port(8081)], [host_port(8080)], None),
    ("wildcard wanted vs specific used", [host_port(8080)], [host_port(8080, ip="127.0.0.1")], Code.UNSCHEDULABLE),
    ("specific wanted vs wildcard used", [host_port(8080, ip="10.0.0.1")], [host_port(8080)], Code.UNSCHEDULABLE),
    ("different specific IPs", [host_port(8080, ip="10.0.0.1")], [host_port(8080, ip="127.0.0.1")], None),
    ("same specific IP", [host_port(8080, ip="10.0.0.1")], [host_port(8080, ip="10.0.0.1")], Code.UNSCHEDULABLE),
    ("one of several conflicts", [host_port(80), host_port(443)], [host_port(443)], Code.UNSCHEDULABLE),
]


@pytest.mark.parametrize(("want", "used", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_filter(want: list[dict[str, Any]], used: list[dict[str, Any]], code: Code | None) -> None:
    assert verdict(want, used) == code


def test_container_port_without_host_port_is_not_wanted() -> None:
    pod = make_pod(containers=[container(ports=[{"containerPort": 80}])])
    _, s = plugin().pre_filter(CycleState(), pod, [])
    assert s is not None and s.code == Code.SKIP


def test_filter_without_prefilter_state_is_an_error() -> None:
    s = plugin().filter(CycleState(), with_ports(host_port(1)), node_info(make_node()))
    assert s is not None and s.code == Code.ERROR


def test_events_registered() -> None:
    pod_ev, node_ev = plugin().events_to_register()
    assert (pod_ev.event.resource, pod_ev.event.action) == (EventResource.POD, ActionType.DELETE)
    assert pod_ev.hint is not None
    assert (node_ev.event.resource, node_ev.event.action, node_ev.hint) == (EventResource.NODE, ActionType.ADD, None)


PENDING = with_ports(host_port(8080), name="pending")
HINTS: list[tuple[str, Pod, QueueingHint]] = [
    ("deleted pod was never bound", with_ports(host_port(8080), name="x"), SKIP),
    ("deleted bound pod without host ports", make_pod("x", node="n"), SKIP),
    ("deleted bound pod with another port", with_ports(host_port(9090), name="x", node="n"), SKIP),
    ("deleted bound pod held the port", with_ports(host_port(8080), name="x", node="n"), Q),
    ("deleted nominated pod held the port", with_ports(host_port(8080), name="x", nominated="n"), Q),
    ("deleted pod held the port on a specific IP", with_ports(host_port(8080, ip="10.0.0.9"), name="x", node="n"), Q),
]


@pytest.mark.parametrize(("deleted", "expected"), [c[1:] for c in HINTS], ids=[c[0] for c in HINTS])
def test_pod_deleted_hint(deleted: Pod, expected: QueueingHint) -> None:
    assert plugin().is_schedulable_after_pod_deleted(PENDING, deleted, None) == expected


def test_sidecar_init_container_ports_count_on_both_sides() -> None:
    """util.GetHostPorts includes restartable (sidecar) init containers, not regular init containers."""
    sidecar = container(ports=[host_port(9000)], restart_policy="Always", name="side")
    regular_init = container(ports=[host_port(9001)], name="init")
    pod = make_pod("p", [container()], init_containers=[sidecar])
    p = plugin()
    state = CycleState()
    assert p.pre_filter(state, pod, []) == (None, None)  # not Skip: the sidecar wants a port
    s = p.filter(state, pod, node_info(make_node(), [with_ports(host_port(9000), name="e", node="n")]))
    assert s is not None and s.code == Code.UNSCHEDULABLE
    holder = make_pod("e", [container()], init_containers=[sidecar, regular_init], node="n")
    wants_9000 = with_ports(host_port(9000))
    wants_9001 = with_ports(host_port(9001))
    for want, blocked in ((wants_9000, True), (wants_9001, False)):
        st = CycleState()
        p.pre_filter(st, want, [])
        assert (p.filter(st, want, node_info(make_node(), [holder])) is not None) is blocked
