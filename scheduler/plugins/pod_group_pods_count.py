"""PodGroupPodsCount (kube-scheduler v1.37 ``podgrouppodscount``): a PlacementScore plugin, which a profile
may name with a weight (kube-scheduler's registry always holds it). Only a pod group's scheduling cycle
calls it, and that cycle needs GenericWorkload (beta, off), which py-scheduler refuses to turn on; so it
is never called here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import Handle
from scheduler.plugins.helper.podgroup_points import PlacementScorePoint


class PodGroupPodsCount(PlacementScorePoint):
    """Configurable at placementScore; not callable without the pod-group cycle."""

    name = "PodGroupPodsCount"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args, handle  # no configuration
