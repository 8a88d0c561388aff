"""ClusterEvent.matches follows upstream's MatchClusterEvents."""

from __future__ import annotations

import pytest

from scheduler.framework.types import ActionType, ClusterEvent, EventResource

POD, NODE, UNSCHED, ANY = EventResource.POD, EventResource.NODE, EventResource.UNSCHEDULED_POD, EventResource.WILDCARD


@pytest.mark.parametrize(
    ("registered", "incoming", "match"),
    [
        ((NODE, ActionType.UPDATE), (NODE, ActionType.UPDATE_NODE_LABEL), True),  # more specific incoming
        ((NODE, ActionType.UPDATE_NODE_LABEL), (NODE, ActionType.UPDATE), False),  # generic incoming
        ((POD, ActionType.UPDATE_POD_LABEL), (POD, ActionType.UPDATE_OTHER), False),
        ((POD, ActionType.UPDATE_POD_LABEL), (UNSCHED, ActionType.UPDATE_POD_LABEL), True),  # Pod covers both
        ((NODE, ActionType.ADD), (POD, ActionType.ADD), False),
        ((ANY, ActionType.ALL), (NODE, ActionType.DELETE), True),
        ((NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), (NODE, ActionType.UPDATE_NODE_TAINT), True),
    ],
)
def test_match(registered: tuple[EventResource, ActionType], incoming: tuple[EventResource, ActionType],
               match: bool) -> None:
    assert ClusterEvent(*incoming).matches(ClusterEvent(*registered)) is match
