"""The Workload API's objects as parsed from the API's dicts, and the errors naming the field."""

from __future__ import annotations

import pytest

from scheduler.model.errors import InvalidObjectError
from scheduler.model.pod import pod_from_api
from scheduler.model.workload import DISRUPTION_ALL, DISRUPTION_SINGLE, parse_pod_group, parse_workload
from scheduler.testing import make_pod


def test_pod_group_fields() -> None:
    pg = parse_pod_group({
        "metadata": {"name": "g", "namespace": "ns", "uid": "u", "generation": 3, "resourceVersion": "7"},
        "spec": {"workloadRef": {"workloadName": "w", "templateName": "t"},
                 "schedulingPolicy": {"gang": {"minCount": 4}},
                 "schedulingConstraints": {"topology": [{"key": "rack"}]},
                 "disruptionMode": {"all": {}}, "priorityClassName": "high", "priority": 100,
                 "preemptionPolicy": "Never", "resourceClaims": [{"name": "c", "resourceClaimName": "rc"}]},
        "status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled",
                                   "observedGeneration": 3}]},
    })
    assert (pg.key, pg.uid, pg.generation, pg.resource_version) == ("ns/g", "u", 3, "7")
    assert pg.workload_ref is not None and pg.workload_ref.workload_name == "w"
    assert pg.policy.is_gang and pg.policy.min_count == 4
    assert pg.topology_keys == ("rack",)
    assert pg.disruption_mode == DISRUPTION_ALL
    assert (pg.effective_priority, pg.effective_preemption_policy) == (100, "Never")
    assert pg.resource_claims[0].resource_claim_name == "rc"
    cond = pg.condition("PodGroupInitiallyScheduled")
    assert cond is not None and cond.status == "True"


def test_pod_group_defaults() -> None:
    pg = parse_pod_group({"metadata": {"name": "g"}, "spec": {"schedulingPolicy": {"basic": {}}}})
    assert not pg.policy.is_gang
    assert (pg.namespace, pg.disruption_mode, pg.effective_priority) == ("default", DISRUPTION_SINGLE, 0)
    assert pg.effective_preemption_policy == "PreemptLowerPriority"


@pytest.mark.parametrize(("spec", "field"), [
    ({"schedulingPolicy": {}}, "spec.schedulingPolicy"),
    ({"schedulingPolicy": {"gang": {"minCount": 0}}}, "spec.schedulingPolicy.gang.minCount"),
    ({"schedulingPolicy": {"gang": {"minCount": "2"}}}, "spec.schedulingPolicy.gang.minCount"),
    ({"schedulingPolicy": {"basic": {}}, "schedulingConstraints": {"topology": [{}]}},
     "spec.schedulingConstraints.topology[0].key"),
])
def test_pod_group_errors_name_the_field(spec: dict, field: str) -> None:
    with pytest.raises(InvalidObjectError) as err:
        parse_pod_group({"metadata": {"name": "g", "namespace": "ns"}, "spec": spec})
    assert err.value.field == field and err.value.obj == "PodGroup ns/g"


def test_workload_templates() -> None:
    w = parse_workload({"metadata": {"name": "w"}, "spec": {"podGroupTemplates": [
        {"name": "t", "schedulingPolicy": {"gang": {"minCount": 2}}}]}})
    assert w.pod_group_templates[0].policy.min_count == 2


def test_a_pod_names_its_group() -> None:
    assert make_pod().name("p").pod_group("g").obj().pod_group_name == "g"
    assert pod_from_api({"metadata": {"name": "p"}, "spec": {}}).pod_group_name == ""
