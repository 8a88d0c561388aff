"""allocResourceClaims: claims allocated by the harness, without a pod, before the measured pods come.

Upstream's op (dra.go) lists the claims of a namespace and, one at a time, runs the structured allocator
for the claim on the nodes in random order, writing the first allocation that fits into the claim's
status; each allocation counts as in use for the next claim. Here the allocator is py-scheduler's own
(scheduler/plugins/helper/dynamicresources/allocator.py, checked against upstream's by e2e/dra_allocator),
fed from the API server, with the workload's feature gates. Both schedulers then start from the same
allocated cluster. The node order is seeded, so every run of a workload allocates the same devices.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from scheduler.model.dra import (
    allocation_result_to_api,
    device_class_from_api,
    device_taint_rule_from_api,
    resource_claim_from_api,
    resource_slice_from_api,
)
from scheduler.model.node import node_from_api
from scheduler.plugins.helper.dynamicresources.allocator import AllocatedState, Allocator
from scheduler.plugins.helper.dynamicresources.cel import CelCache
from scheduler.plugins.helper.dynamicresources.pools import DEFAULT_FEATURES, Features, apply_device_taint_rules

RESOURCE = "resource.k8s.io/v1"
SEED = 0
# structured.Features' fields from the feature gates that set them (allocResourceClaimsOp.run).
FEATURE_GATES = {"admin_access": "DRAAdminAccess", "prioritized_list": "DRAPrioritizedList",
                 "partitionable_devices": "DRAPartitionableDevices", "device_taints": "DRADeviceTaints",
                 "consumable_capacity": "DRAConsumableCapacity"}  # fmt: skip


class Api(Protocol):
    """What this needs of the API server (executor.Rest)."""

    def list(self, api_version: str, kind: str, namespace: str | None = None,
             selector: str = "") -> list[dict[str, Any]]: ...  # fmt: skip

    def update(self, obj: Mapping[str, Any], name: str, namespace: str | None = None,
               subresource: str = "") -> None: ...  # fmt: skip


class AllocationFailed(RuntimeError):
    """A claim that fits no node (upstream's test fails the same way)."""


def features(gates: Mapping[str, bool]) -> Features:
    """The allocator's features: a gate the workload sets overrides v1.37.2's default."""
    return replace(DEFAULT_FEATURES, **{f: gates[g] for f, g in FEATURE_GATES.items() if g in gates})


def allocate_claims(api: Api, namespace: str | None, gates: Mapping[str, bool]) -> int:
    """Allocate every unallocated claim of ``namespace`` (all namespaces when None); how many were."""
    claims = api.list(RESOURCE, "ResourceClaim", namespace)
    todo = [c for c in claims if not (c.get("status") or {}).get("allocation")]
    if not todo:
        return 0
    nodes = [node_from_api(n) for n in api.list("v1", "Node")]
    slices = [resource_slice_from_api(s) for s in api.list(RESOURCE, "ResourceSlice")]
    if gates.get("DRADeviceTaintRules"):
        rules = [device_taint_rule_from_api(r) for r in api.list(RESOURCE, "DeviceTaintRule")]
        slices = apply_device_taint_rules(slices, rules)
    classes = {c["metadata"]["name"]: device_class_from_api(c) for c in api.list(RESOURCE, "DeviceClass")}
    in_use = [resource_claim_from_api(c) for c in api.list(RESOURCE, "ResourceClaim")]
    in_use = [c for c in in_use if c.allocation is not None]
    feats, cel, rng = features(gates), CelCache(), random.Random(SEED)
    for i, obj in enumerate(todo):
        claim = resource_claim_from_api(obj)
        allocator = Allocator(AllocatedState.from_claims(in_use), classes, slices, cel, feats)
        rng.shuffle(nodes)
        for node in nodes:
            result = allocator.allocate(node, [claim])
            if result is None:
                continue
            allocation = allocation_result_to_api(result[0])
            api.update({**obj, "status": {**(obj.get("status") or {}), "allocation": allocation}},
                       obj["metadata"]["name"], obj["metadata"]["namespace"], "status")  # fmt: skip
            in_use.append(resource_claim_from_api({**obj, "status": {"allocation": allocation}}))
            break
        else:
            raise AllocationFailed(f"could not allocate claim {i} out of {len(todo)}")
    return len(todo)
