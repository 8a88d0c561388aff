"""VolumeBinding's Score (kube-scheduler v1.37 ``volumebinding/{volume_binding,scorer}.go``).

With the StorageCapacityScoring gate (beta and on in v1.37; alpha and off in v1.34) VolumeBinding scores
every node that passed its Filter. Per storage class, the pod's volumes give (requested, capacity):
statically bound PVs sum the claims' requests and the PVs' capacities; if the pod has none, the volumes
to be provisioned sum their requests against the CSIStorageCapacity that admitted them (its ``capacity``,
taken once per class). Each class scores ``shape(requested · 100 / capacity)`` (100 % when over or
without capacity), the node the rounded mean over classes. The default shape {0 %: 10, 100 %: 0} favours
the node with the most free storage. A pod without volumes to bind scores 0 everywhere, but it is still
scored (PreScore only skips with the gate off), so its per-plugin scores list VolumeBinding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Protocol

from scheduler.config.types_pluginargs import MAX_CUSTOM_PRIORITY_SCORE, UtilizationShapePoint
from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.model.quantity import parse as parse_quantity
from scheduler.plugins.helper.gomath import go_div, go_round
from scheduler.plugins.helper.shape_score import build_broken_linear_function

MAX_UTILIZATION = 100

# SetDefaults_VolumeBindingArgs with StorageCapacityScoring on: empty storage scores 10, full 0.
DEFAULT_SHAPE: tuple[UtilizationShapePoint, ...] = (
    UtilizationShapePoint(0, MAX_CUSTOM_PRIORITY_SCORE), UtilizationShapePoint(100, 0))

VolumeCapacityScorer = Callable[[Mapping[str, tuple[int, int]]], int]


class _Binding(Protocol):
    pvc: Any
    pv: Any


class _Provision(Protocol):
    pvc: Any
    node_capacity: Any


def build_scorer(shape: Sequence[UtilizationShapePoint]) -> VolumeCapacityScorer:
    """buildScorerFunction: class -> (requested, capacity) to a 0..100 node score."""
    raw = build_broken_linear_function(
        [(p.utilization, p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for p in shape])

    def class_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(go_div(requested * MAX_UTILIZATION, capacity))

    def score(classes: Mapping[str, tuple[int, int]]) -> int:
        if not classes:
            return 0
        total = sum(class_score(r, c) for r, c in classes.values())
        return go_round(total / len(classes))

    return score


def quantity_value(q: Decimal | None) -> int:
    """resource.Quantity.Value(): the integer value, rounded up."""
    return 0 if q is None else math.ceil(q)


def class_resources(
    static: Iterable[_Binding], provisions: Iterable[_Provision],
    request: Callable[[Any], Decimal | None], pv_capacity: Callable[[Any], Decimal],
    capacity_of: Callable[[Any], Decimal | None],
) -> dict[str, tuple[int, int]]:
    """The (requested, capacity) per storage class that Score rates: static bindings when there are any,
    else the provisions that had a CSIStorageCapacity (a class's capacity is set, not added: two claims
    of one class share the node's capacity)."""
    out: dict[str, tuple[int, int]] = {}
    bindings = list(static)
    if bindings:
        for b in bindings:
            cls = str(((b.pv.get("spec") or {}).get("storageClassName")) or "")
            r, c = out.get(cls, (0, 0))
            out[cls] = (r + quantity_value(request(b.pvc)), c + quantity_value(pv_capacity(b.pv)))
        return out
    for p in provisions:
        if p.node_capacity is None:
            continue
        cls = str(((p.pvc.get("spec") or {}).get("storageClassName")) or "")
        r, _ = out.get(cls, (0, 0))
        out[cls] = (r + quantity_value(request(p.pvc)), quantity_value(capacity_of(p.node_capacity)))
    return out


def volume_capacity_scorer(
    shape: Sequence[UtilizationShapePoint] | None, capacity_scoring: bool
) -> VolumeCapacityScorer | None:
    """The plugin's scorer: the configured shape or the default with the gate on; None with it off, when
    a configured shape is refused as upstream's validation does."""
    if not capacity_scoring:
        if shape is not None:
            raise ValueError("shape: Invalid value: unexpected field `shape`, remove it or turn on the feature "
                             "gate StorageCapacityScoring")
        return None
    return build_scorer(shape if shape is not None else DEFAULT_SHAPE)


def capacity_of(capacity: Mapping[str, Any]) -> Decimal | None:
    """A CSIStorageCapacity's ``capacity`` (not maximumVolumeSize: Score reads that field)."""
    v = capacity.get("capacity")
    if v is None:
        return None
    meta = capacity.get("metadata") or {}
    return parse_quantity(v, f"csistoragecapacity {meta.get('namespace', '')}/{meta.get('name', '')}", "capacity")
