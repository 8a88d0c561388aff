"""TopologyPlacementGenerator (kube-scheduler v1.37 ``topologyaware``): a PlacementGenerate plugin, which a
profile may name (kube-scheduler's registry always holds it). Only a pod group's scheduling cycle calls
it, and that cycle needs GenericWorkload (beta, off) and TopologyAwareWorkloadScheduling (alpha, off),
which py-scheduler refuses to turn on; so it is never called here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.interface import Handle
from scheduler.plugins.helper.podgroup_points import PlacementGeneratePoint


class TopologyPlacementGenerator(PlacementGeneratePoint):
    """Configurable at placementGenerate; not callable without the pod-group cycle."""

    name = "TopologyPlacementGenerator"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args, handle  # no configuration
