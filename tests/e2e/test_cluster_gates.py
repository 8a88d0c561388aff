"""The local control plane's feature gates: which API versions they serve and the flag syntax."""

from __future__ import annotations

import pytest

from e2e.cluster.cluster import WORKLOAD_GATES, parse_gates, served_apis
from e2e.process import gate_flag


def test_generic_workload_serves_scheduling_v1beta1() -> None:
    # kube-apiserver v1.37 stores workloads/podgroups only with both the gate and the version on.
    assert served_apis(WORKLOAD_GATES) == ["scheduling.k8s.io/v1beta1=true"]
    assert served_apis({"GenericWorkload": False}) == []
    assert served_apis({}) == []
    assert served_apis({"GenericWorkload": True, "CompositePodGroup": True}) == [
        "scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true"]


def test_gate_flag_round_trips() -> None:
    gates = {"TopologyAwareWorkloadScheduling": True, "GenericWorkload": True, "SchedulerAsyncPreemption": False}
    flag = gate_flag(gates)
    assert flag == "GenericWorkload=true,SchedulerAsyncPreemption=false,TopologyAwareWorkloadScheduling=true"
    assert parse_gates(flag) == gates
    assert parse_gates(" GenericWorkload=True , ") == {"GenericWorkload": True}


@pytest.mark.parametrize("bad", ["GenericWorkload", "GenericWorkload=yes"])
def test_parse_gates_rejects_malformed(bad: str) -> None:
    with pytest.raises(ValueError, match="bad feature gate"):
        parse_gates(bad)
