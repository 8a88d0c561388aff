"""NodeName filter."""

from __future__ import annotations

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import NODE_ADD, NodeInfo
from scheduler.plugins.node_name import NodeName
from scheduler.testing import make_node, make_pod
from tests.plugins.util import node_info


def plugin() -> NodeName:
    return NodeName({}, None)  # type: ignore[arg-type]


def test_pod_without_node_name_fits_anywhere() -> None:
    assert plugin().filter(CycleState(), make_pod().obj(), node_info(make_node().name("a").obj())) is None


def test_pod_fits_only_its_named_node() -> None:
    assert plugin().filter(CycleState(), make_pod().node("a").obj(), node_info(make_node().name("a").obj())) is None
    s = plugin().filter(CycleState(), make_pod().node("a").obj(), node_info(make_node().name("b").obj()))
    assert s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.message == "node(s) didn't match the requested node name"


def test_node_info_without_node_is_an_error() -> None:
    s = plugin().filter(CycleState(), make_pod().node("a").obj(), NodeInfo())
    assert s is not None and s.code == Code.ERROR


def test_registers_node_add_without_hint() -> None:
    [reg] = plugin().events_to_register()
    assert reg.event == NODE_ADD and reg.hint is None


def test_prefilter_narrows_to_the_named_node_and_never_skips() -> None:
    """v1.37's PreFilter: the named node only; without a name, success (not Skip), so Filter still runs."""
    result, status = plugin().pre_filter(CycleState(), make_pod().node("a").obj(), [])
    assert status is None and result is not None and result.node_names == {"a"}
    assert plugin().pre_filter(CycleState(), make_pod().obj(), []) == (None, None)
