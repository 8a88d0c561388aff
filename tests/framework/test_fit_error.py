"""FitError message format (FailedScheduling) and note truncation."""

from __future__ import annotations

from dataclasses import fields

from scheduler.framework.fit_error import (
    NOTE_LENGTH_LIMIT,
    Diagnosis,
    FitError,
    fit_error_for_node,
    new_default_node_to_status,
    new_diagnosis,
    truncate_message,
)
from scheduler.framework.interface import NodeToStatus
from scheduler.framework.status import Code, Status, unresolvable, unschedulable
from scheduler.testing import make_pod


def test_reasons_are_counted_and_sorted_as_strings() -> None:
    d = Diagnosis()
    for i in range(10):
        d.node_to_status.statuses[f"a{i}"] = unschedulable("Insufficient cpu")
    for i in range(2):
        d.node_to_status.statuses[f"b{i}"] = unresolvable("node(s) were unschedulable")
    # "10 ..." sorts before "2 ..." because whole strings are compared.
    assert str(FitError(make_pod().obj(), 12, d)) == (
        "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) were unschedulable."
    )


def test_a_node_contributes_each_of_its_reasons() -> None:
    d = Diagnosis()
    d.node_to_status.statuses["n1"] = unschedulable("Insufficient cpu", "Insufficient memory")
    d.node_to_status.statuses["n2"] = unschedulable("Insufficient memory")
    assert str(FitError(make_pod().obj(), 2,
                        d)) == "0/2 nodes are available: 1 Insufficient cpu, 2 Insufficient memory."


def test_absent_nodes_get_the_default_status_reasons() -> None:
    d = Diagnosis()
    d.node_to_status.statuses["n1"] = unschedulable("Insufficient cpu")
    d.node_to_status.absent = unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]")
    assert str(FitError(make_pod().obj(), 4, d)) == (
        "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_default_absent_status_adds_nothing() -> None:
    # Nodes not examined (filtering stopped early) have no reason; no trailing list at all.
    assert str(FitError(make_pod().obj(), 3, Diagnosis())) == "0/3 nodes are available:"


def test_prefilter_rejection_form_and_postfilter_suffix() -> None:
    d = Diagnosis(pre_filter_msg="node(s) didn't match pod topology spread constraints")
    d.node_to_status.absent = unschedulable("ignored when PreFilter rejected")
    err = FitError(make_pod().obj(), 5, d)
    assert str(err) == "0/5 nodes are available: node(s) didn't match pod topology spread constraints."
    d.post_filter_msg = "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
    assert str(err) == (
        "0/5 nodes are available: node(s) didn't match pod topology spread constraints. "
        "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
    )


def test_fit_error_for_reserve_or_permit_rejection() -> None:
    s = Status(Code.UNSCHEDULABLE, ["gang not ready"], plugin="Coscheduling")
    err = fit_error_for_node(make_pod().obj(), "n7", s)
    assert err.num_all_nodes == 1
    assert err.diagnosis.unschedulable_plugins == {"Coscheduling"}
    assert str(err) == "0/1 nodes are available: 1 gang not ready."


def test_diagnosis_records_pending_plugins_separately() -> None:
    d = Diagnosis()
    d.add_plugin_status(Status(Code.PENDING, ["wait"], plugin="DRA"))
    d.add_plugin_status(Status(Code.UNSCHEDULABLE, ["x"], plugin="Fit"))
    d.add_plugin_status(Status(Code.UNSCHEDULABLE, ["y"]))  # no plugin: ignored
    assert d.pending_plugins == {"DRA"}
    assert d.unschedulable_plugins == {"DRA", "Fit"}


def test_truncate_message() -> None:
    short = "x" * NOTE_LENGTH_LIMIT
    assert truncate_message(short) == short
    long = "y" * (NOTE_LENGTH_LIMIT + 1)
    cut = truncate_message(long)
    assert len(cut.encode()) == NOTE_LENGTH_LIMIT and cut.endswith("y ...")
    # A multi-byte character split by the byte limit is dropped rather than corrupted.
    wide = "é" * 600  # 1200 bytes
    cut = truncate_message(wide)
    assert cut.endswith(" ...") and len(cut.encode()) <= NOTE_LENGTH_LIMIT
    assert cut == "é" * 510 + " ..."


def test_new_diagnosis_sets_every_field_as_the_constructor_does() -> None:
    """new_diagnosis fills the slots itself (each cycle starts one): every field, fresh containers each time."""
    fast, slow = new_diagnosis(), Diagnosis()
    assert fast == slow
    for f in fields(Diagnosis):
        assert hasattr(fast, f.name)
    again = new_diagnosis()
    assert again.node_to_status is not fast.node_to_status
    assert again.node_to_status.statuses is not fast.node_to_status.statuses
    assert again.node_to_status.absent is not fast.node_to_status.absent
    assert again.node_to_status.absent.reasons is not fast.node_to_status.absent.reasons
    assert again.unschedulable_plugins is not fast.unschedulable_plugins
    assert again.pending_plugins is not fast.pending_plugins
    assert new_default_node_to_status() == NodeToStatus(statuses={}, absent=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
