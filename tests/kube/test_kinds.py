"""kube/kinds.py's WATCHED_KINDS is the one table of watched kinds: what follows from it must agree with
the rest of the scheduler (the ClusterRoles are checked against it in test_manifests.py)."""

from __future__ import annotations

from scheduler.framework.features import Features
from scheduler.framework.types import EventResource
from scheduler.kube.kinds import (
    OBJECT_KINDS,
    WATCHED_KINDS,
    WORKLOAD_POD_GROUP_KIND,
    gated_kinds,
    watched_kind,
)
from scheduler.kube.podgroups import PODGROUP_KINDS
from scheduler.plugins.helper import podgroup

# EventResources that are no API kind of their own: the pending pod, and the wildcard.
NOT_A_KIND = {EventResource.UNSCHEDULED_POD, EventResource.WILDCARD}


def test_each_watched_kind_names_the_event_resource_its_changes_are_delivered_as() -> None:
    """The event handler finds a kind's EventResource by the kind's name (eventhandlers.on_object_event);
    a kind whose row names another resource would be stored and never requeue anything."""
    for k in WATCHED_KINDS:
        assert EventResource(k.kind) is k.event, k.kind


def test_every_event_resource_of_an_api_kind_is_watched() -> None:
    """A plugin may register for any EventResource: one whose kind is not watched would never fire."""
    assert {k.event for k in WATCHED_KINDS} == set(EventResource) - NOT_A_KIND


def test_kinds_are_unique_and_the_informer_maps_follow_from_the_table() -> None:
    assert len({k.kind for k in WATCHED_KINDS}) == len(WATCHED_KINDS)
    assert set(OBJECT_KINDS) == {k.kind for k in WATCHED_KINDS} - {"Pod", "Node", "PodGroup", WORKLOAD_POD_GROUP_KIND}
    assert all(OBJECT_KINDS[name] == watched_kind(name).gvr for name in OBJECT_KINDS)
    assert PODGROUP_KINDS == {"PodGroup": (podgroup.GROUP, podgroup.VERSION, podgroup.PLURAL)}
    assert watched_kind(podgroup.KIND).crd


def test_the_workload_apis_pod_groups_are_watched_only_with_generic_workload() -> None:
    """Upstream adds the PodGroup informer only with the gate on (the API server serves podgroups only then); the
    Coscheduling CRD's PodGroup keeps its own row and name."""
    assert gated_kinds(Features()) == {}
    assert gated_kinds(Features(enable_generic_workload=True)) == {
        "scheduling.k8s.io/PodGroup": ("scheduling.k8s.io", "v1beta1", "podgroups")}
    assert watched_kind(WORKLOAD_POD_GROUP_KIND).event is EventResource.WORKLOAD_POD_GROUP
    assert watched_kind("PodGroup").gvr == ("scheduling.x-k8s.io", "v1alpha1", "podgroups")

