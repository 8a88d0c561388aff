"""--feature-gates as kube-scheduler v1.37 judges it: scheduler gates at their v1.37 defaults and locks."""

from __future__ import annotations

import pytest

from scheduler.framework.feature_gates import KUBE_SCHEDULER_GATES
from scheduler.framework.features import GATES, Features, parse_feature_gates


def test_defaults_are_v1_37s() -> None:
    f = Features()
    assert f.enable_async_preemption is KUBE_SCHEDULER_GATES["SchedulerAsyncPreemption"].default
    assert f.enable_storage_capacity_scoring is KUBE_SCHEDULER_GATES["StorageCapacityScoring"].default
    assert set(GATES) <= set(KUBE_SCHEDULER_GATES)


@pytest.mark.parametrize(("spec", "want"), [
    ("StorageCapacityScoring=false", Features(enable_storage_capacity_scoring=False)),
    ("StorageCapacityScoring=0,SchedulerAsyncPreemption=F", Features(False, False)),
    # every scheduler gate at the value py-scheduler runs with is accepted (a no-op)
    ("NodeDeclaredFeatures=true,GenericWorkload=false,OpportunisticBatching=true,AllAlpha=false", Features()),
], ids=["implemented gate off", "ParseBool spellings", "defaults and locked values"])
def test_accepted(spec: str, want: Features) -> None:
    assert parse_feature_gates(spec) == want


@pytest.mark.parametrize(("spec", "message"), [
    ("NodeDeclaredFeatures=false", "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true"),
    ("DynamicResourceAllocation=false", "feature is locked to true"),
    ("DRAWorkloadResourceClaims=true", "py-scheduler does not implement DRAWorkloadResourceClaims=true"),
    ("OpportunisticBatching=false", "py-scheduler does not implement OpportunisticBatching=false"),
    ("AllAlpha=true", "py-scheduler does not implement AllAlpha=true"),
    ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
    ("StorageCapacityScoring=maybe", 'invalid value of StorageCapacityScoring=maybe, err: strconv.ParseBool'),
], ids=["locked", "locked DRA", "not built (beta off)", "not built (beta on)", "AllAlpha", "unknown", "bad bool"])
def test_refused(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_feature_gates(spec)


def test_every_locked_gate_is_ga() -> None:
    assert all(g.stage == "GA" for g in KUBE_SCHEDULER_GATES.values() if g.locked)
