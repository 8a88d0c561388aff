"""kube-scheduler v1.37.2's scheduler feature gates (``pkg/features/kube_features.go``): each gate's default,
stage and lock at 1.37, as ``--feature-gates`` judges them.

These are the gates code under ``pkg/scheduler`` reads. ``--feature-gates`` accepts any of them at the value
py-scheduler runs with (its v1.37 default), a locked gate only at its locked value (upstream's "cannot set
feature gate X to Y, feature is locked to Z"), and the other value only for the gates py-scheduler builds
both ways (``features.GATES``); setting one to behaviour py-scheduler lacks is refused, saying so. A name
outside this table is refused as upstream refuses an unknown one ("unrecognized feature gate: X"): that
includes Kubernetes gates no scheduler code reads, which kube-scheduler accepts and ignores.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GateSpec:
    default: bool
    stage: str  # Alpha, Beta, GA
    locked: bool = False


KUBE_SCHEDULER_GATES: dict[str, GateSpec] = {
    "CompositePodGroup": GateSpec(False, "Alpha"),
    "DRAAdminAccess": GateSpec(True, "GA", locked=True),
    "DRAConsumableCapacity": GateSpec(True, "Beta"),
    "DRADerivedAttributes": GateSpec(False, "Alpha"),
    "DRADeviceBindingConditions": GateSpec(True, "Beta"),
    "DRADeviceCompatibilityGroups": GateSpec(False, "Alpha"),
    "DRADeviceTaintRules": GateSpec(True, "GA"),
    "DRADeviceTaints": GateSpec(True, "GA"),
    "DRAExtendedResource": GateSpec(True, "GA", locked=True),
    "DRAFractionalCapacityRange": GateSpec(True, "Beta"),
    "DRAListTypeAttributes": GateSpec(False, "Alpha"),
    "DRANodeAllocatableResources": GateSpec(False, "Alpha"),
    "DRAOptionalNodeOperations": GateSpec(False, "Alpha"),
    "DRAPartitionableDevices": GateSpec(True, "Beta"),
    "DRAPrioritizedList": GateSpec(True, "GA", locked=True),
    "DRAResourceClaimDeviceStatus": GateSpec(True, "GA", locked=True),
    "DRASchedulerFilterTimeout": GateSpec(True, "Beta"),
    "DRAWorkloadResourceClaims": GateSpec(False, "Beta"),
    "DynamicResourceAllocation": GateSpec(True, "GA", locked=True),
    "GenericWorkload": GateSpec(False, "Beta"),
    "InPlacePodLevelResourcesVerticalScaling": GateSpec(True, "Beta"),
    "InPlacePodVerticalScaling": GateSpec(True, "GA", locked=True),
    "InPlacePodVerticalScalingSchedulerPreemption": GateSpec(False, "Alpha"),
    "InterPodAffinityHostnameFastPath": GateSpec(False, "Alpha"),
    "MatchLabelKeysInPodTopologySpread": GateSpec(True, "Beta"),
    "NodeDeclaredFeatures": GateSpec(True, "GA", locked=True),
    "NodeInclusionPolicyInPodTopologySpread": GateSpec(True, "GA", locked=True),
    "NominatedNodeNameForExpectation": GateSpec(True, "Beta"),
    "OpportunisticBatching": GateSpec(True, "Beta"),
    "PodGroupPreemptionPolicy": GateSpec(False, "Alpha"),
    "PodLevelResources": GateSpec(True, "Beta"),
    "SchedulerAsyncAPICalls": GateSpec(False, "Beta"),
    "SchedulerAsyncPreemption": GateSpec(True, "Beta"),
    "SchedulerPopFromBackoffQ": GateSpec(True, "Beta"),
    "SchedulerPreQueueingHints": GateSpec(False, "Alpha"),
    "StorageCapacityScoring": GateSpec(True, "Beta"),
    "TaintTolerationComparisonOperators": GateSpec(False, "Alpha"),
    "TopologyAwareWorkloadScheduling": GateSpec(False, "Alpha"),
    "VolumeAttributesClass": GateSpec(True, "GA", locked=True),
    "VolumeLimitScaling": GateSpec(True, "Beta"),
}

# component-base's global toggles: every alpha (beta) gate not set by name.
ALL_ALPHA, ALL_BETA = "AllAlpha", "AllBeta"

_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def parse_bool(name: str, value: str) -> bool:
    """strconv.ParseBool, with component-base's error for anything else."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f'invalid value of {name}={value}, err: strconv.ParseBool: parsing "{value}": invalid syntax')
