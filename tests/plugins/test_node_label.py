"""NodeLabel (policy-era CheckNodeLabelPresence / NodeLabelPriority): presence filter, preference score."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.plugins.legacy.node_label import ERR_REASON_PRESENCE_VIOLATED, NodeLabel
from tests.builders import make_node, make_pod
from tests.plugins.util import FakeHandle, node_info


@pytest.mark.parametrize(("labels", "ok"), [
    ({"zone": "a"}, True), ({"zone": "a", "retiring": "2020"}, False), ({}, False), ({"zone": ""}, True)])
def test_filter_requires_present_and_forbids_absent_labels(labels: dict[str, str], ok: bool) -> None:
    pl = NodeLabel({"presentLabels": ["zone"], "absentLabels": ["retiring"]}, FakeHandle())
    status = pl.filter(CycleState(), make_pod(), node_info(make_node(labels=labels)))
    if ok:
        assert status is None
    else:
        assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == [ERR_REASON_PRESENCE_VIOLATED]


def test_score_averages_the_preferences_met() -> None:
    pl = NodeLabel({"presentLabelsPreference": ["ssd", "gpu"], "absentLabelsPreference": ["spot"]}, FakeHandle())
    score = {name: pl.score(CycleState(), make_pod(), node_info(make_node(labels=labels)))[0]
             for name, labels in (("all", {"ssd": "", "gpu": ""}), ("one", {"ssd": "", "spot": ""}),
                                  ("none", {"spot": ""}))}
    assert score == {"all": 100, "one": 33, "none": 0}
    assert NodeLabel({}, FakeHandle()).score(CycleState(), make_pod(), node_info(make_node()))[0] == 0
