"""VolumeBinding: PreFilter claim checks and classification, Filter (bound PV node affinity, static
matching for WaitForFirstConsumer claims, provisioning with allowedTopologies and storage capacity),
Reserve/Unreserve through the assume caches, PreBind writes and waiting, hints.
Cases follow upstream's volumebinding/{volume_binding,binder}_test.go."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import QueueingHint
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.helper.volume_util import ANN_SELECTED_NODE
from scheduler.plugins.volume_binding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
from scheduler.plugins.volume_binding.volume_binding import (
    ERR_UNBOUND_IMMEDIATE,
    STATE_KEY,
    StateData,
    VolumeBinding,
)
from scheduler.testing import make_pod
from tests.builders import make_node
from tests.plugins.volume_objects import (
    VolumeHandle,
    capacity,
    claim_vol,
    csi_driver,
    csi_node,
    ephemeral_vol,
    node_affinity,
    pv,
    pvc,
    storage_class,
)

HOST = "kubernetes.io/hostname"
WAIT, IMMEDIATE, PROV = "wait-sc", "immediate-sc", "provision-sc"
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def nodes() -> list[Node]:
    return [make_node("node-1", labels={HOST: "node-1", "zone": "a"}),
            make_node("node-2", labels={HOST: "node-2", "zone": "b"})]


def classes() -> list[dict[str, Any]]:
    return [
        storage_class(WAIT),
        storage_class(IMMEDIATE, mode="Immediate"),
        storage_class(PROV, provisioner="csi.example.com"),
        storage_class("topo-sc", provisioner="csi.example.com", allowed_topologies=[{"zone": ["b"]}]),
        storage_class("unset-sc", mode=None),
    ]


class Env:
    """A plugin over a handle with two nodes, the StorageClasses above and the given objects."""

    def __init__(self, objects: Sequence[Mapping[str, Any]] = (), controller: bool = True,
                 timeout: float = 600) -> None:
        self.handle = VolumeHandle([*classes(), *objects], nodes=nodes(), controller=controller)
        self.pl = VolumeBinding({"bindTimeoutSeconds": timeout}, self.handle)
        self.now = 0.0
        self.sleeps = 0
        self.pl.binder.clock = lambda: self.now
        self.pl.binder.sleep = self._sleep

    def _sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds

    def prefilter(self, pod: Pod) -> tuple[CycleState, Status | None]:
        state = CycleState()
        _, s = self.pl.pre_filter(state, pod, [])
        return state, s

    def filter(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        return self.pl.filter(state, pod, self.handle.snapshot().get(node))

    def verdicts(self, pod: Pod) -> dict[str, list[str] | None]:
        """node → Filter reasons (None when it fits); PreFilter must succeed."""
        state, s = self.prefilter(pod)
        assert s is None, s
        out: dict[str, list[str] | None] = {}
        for n in ("node-1", "node-2"):
            st = self.filter(state, pod, n)
            if st is not None:
                assert st.code == UNRESOLVABLE, st
            out[n] = None if st is None else st.reasons
        return out

    def schedule(self, pod: Pod, node: str) -> tuple[CycleState, Status | None]:
        """PreFilter, Filter on every node, Reserve on `node`, PreBind."""
        state, s = self.prefilter(pod)
        assert s is None or s.code == Code.SKIP, s
        if s is None:
            for n in ("node-1", "node-2"):
                self.filter(state, pod, n)
        assumed = pod.with_node(node)
        assert self.pl.reserve(state, assumed, node) is None
        return state, self.pl.pre_bind(state, assumed, node)


def one(*claims: str, name: str = "pod") -> Pod:
    return make_pod().name(name).spec_field("volumes", [claim_vol(c) for c in claims]).obj()


# --- PreFilter -------------------------------------------------------------------------------------


def test_pod_without_claims_is_skipped_and_later_points_are_no_ops() -> None:
    env = Env()
    pod = make_pod().name("p").volume({"name": "e", "emptyDir": {}}).obj()
    state, s = env.prefilter(pod)
    assert s is not None and s.code == Code.SKIP
    assert isinstance(state.get(STATE_KEY), StateData)
    assert env.pl.reserve(state, pod, "node-1") is None
    assert env.pl.pre_bind(state, pod, "node-1") is None
    env.pl.unreserve(state, pod, "node-1")
    assert env.handle.updates == []


PREFILTER_CASES: list[tuple[str, list[dict[str, Any]], Pod, tuple[Code, list[str]]]] = [
    ("claim missing", [], one("nope"), (UNRESOLVABLE, ['persistentvolumeclaim "nope" not found'])),
    ("ephemeral claim not created yet", [], make_pod().name("pod").volume(ephemeral_vol("data")).obj(),
     (UNRESOLVABLE, ['waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-data"'])),
    ("ephemeral claim of another pod", [pvc("pod-data", cls=WAIT, owner_uid="other")],
     make_pod().name("pod").volume(ephemeral_vol("data")).obj(),
     (UNRESOLVABLE, ["PVC default/pod-data was not created for pod default/pod (pod is not owner)"])),
    ("claim lost", [pvc("c", volume="v", phase="Lost")], one("c"),
     (UNRESOLVABLE, ['persistentvolumeclaim "c" bound to non-existent persistentvolume "v"'])),
    ("claim being deleted", [pvc("c", cls=WAIT, deleting=True)], one("c"),
     (UNRESOLVABLE, ['persistentvolumeclaim "c" is being deleted'])),
    ("unbound immediate claim", [pvc("c", cls=IMMEDIATE)], one("c"), (UNRESOLVABLE, [ERR_UNBOUND_IMMEDIATE])),
    ("unbound claim without class", [pvc("c")], one("c"), (UNRESOLVABLE, [ERR_UNBOUND_IMMEDIATE])),
    ("unbound claim of a missing class binds immediately", [pvc("c", cls="missing")], one("c"),
     (UNRESOLVABLE, [ERR_UNBOUND_IMMEDIATE])),
    ("prebound claim (volumeName, not bind-completed)", [pvc("c", cls=WAIT, volume="v", bound=False)], one("c"),
     (UNRESOLVABLE, [ERR_UNBOUND_IMMEDIATE])),
    ("class without volumeBindingMode", [pvc("c", cls="unset-sc")], one("c"),
     (Code.ERROR, ['VolumeBindingMode not set for StorageClass "unset-sc"'])),
]


@pytest.mark.parametrize(("objs", "pod", "want"), [c[1:] for c in PREFILTER_CASES], ids=[c[0] for c in PREFILTER_CASES])
def test_prefilter_failures(objs: list[dict[str, Any]], pod: Pod, want: tuple[Code, list[str]]) -> None:
    _, s = Env(objs).prefilter(pod)
    assert s is not None and (s.code, s.reasons) == want


def test_owned_ephemeral_claim_goes_through() -> None:
    env = Env([pvc("pod-data", cls=WAIT, owner_uid="uid-pod"), pv("pv-a", cls=WAIT)])
    assert env.verdicts(make_pod().name("pod").volume(ephemeral_vol("data")).obj()) == {"node-1": None, "node-2": None}


# --- Filter: bound claims --------------------------------------------------------------------------


def test_bound_claim_follows_the_pv_node_affinity() -> None:
    env = Env([pv("local", affinity=node_affinity({HOST: ["node-1"]}), claim=("default", "c", "uid-pvc-c"),
                  phase="Bound"), pvc("c", volume="local")])
    assert env.verdicts(one("c")) == {"node-1": None, "node-2": [ERR_REASON_NODE_CONFLICT]}


def test_bound_claim_without_affinity_fits_everywhere_and_missing_pv_is_reported() -> None:
    env = Env([pv("any", phase="Bound"), pvc("c", volume="any"), pvc("gone", volume="no-such-pv")])
    assert env.verdicts(one("c")) == {"node-1": None, "node-2": None}
    assert env.verdicts(one("gone")) == {"node-1": [ERR_REASON_PV_NOT_EXIST], "node-2": [ERR_REASON_PV_NOT_EXIST]}


def test_affinity_terms_are_ored_and_match_fields_are_ignored() -> None:
    aff = node_affinity({HOST: ["node-9"]}, {"zone": ["b"]})
    fields_only = {"required": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["elsewhere"]}]}]}}
    env = Env([pv("a", affinity=aff, phase="Bound"), pvc("c", volume="a"),
               pv("f", affinity=fields_only, phase="Bound"), pvc("d", volume="f"),
               pv("e", affinity={"required": {"nodeSelectorTerms": []}}, phase="Bound"), pvc("x", volume="e")])
    assert env.verdicts(one("c")) == {"node-1": [ERR_REASON_NODE_CONFLICT], "node-2": None}
    # CheckNodeAffinity matches a name-less node: matchFields never reject
    assert env.verdicts(one("d")) == {"node-1": None, "node-2": None}
    # no terms at all: nothing matches
    assert env.verdicts(one("x")) == {"node-1": [ERR_REASON_NODE_CONFLICT], "node-2": [ERR_REASON_NODE_CONFLICT]}


def test_migrated_in_tree_pv_uses_the_csi_topology_key_on_nodes_that_migrated_it() -> None:
    ebs = pv("ebs", labels={"topology.kubernetes.io/zone": "us-east-1a"}, phase="Bound",
             source={"awsElasticBlockStore": {"volumeID": "vol-1"}},
             affinity=node_affinity({"topology.kubernetes.io/zone": ["us-east-1a"]}))
    objs = [ebs, pvc("c", volume="ebs")]
    env = Env(objs)
    env.handle = VolumeHandle([*classes(), *objs,
                               csi_node("node-1", {}, {"storage.alpha.kubernetes.io/migrated-plugins":
                                                       "kubernetes.io/aws-ebs"})],
                              nodes=[make_node("node-1", labels={"topology.kubernetes.io/zone": "us-east-1a"}),
                                     make_node("node-2", labels={"topology.kubernetes.io/zone": "us-east-1a",
                                                                 "topology.ebs.csi.aws.com/zone": "us-east-1a"})])
    env.pl = VolumeBinding({}, env.handle)
    # node-1 migrated the plugin: the affinity now asks for topology.ebs.csi.aws.com/zone, which it lacks
    assert env.verdicts(one("c")) == {"node-1": [ERR_REASON_NODE_CONFLICT], "node-2": None}


# --- Filter: WaitForFirstConsumer, static binding ----------------------------------------------------


def wait_pv(name: str, node: str | None = None, size: str = "1Gi", **kw: Any) -> dict[str, Any]:
    aff = node_affinity({HOST: [node]}) if node else None
    return pv(name, cls=kw.pop("cls", WAIT), capacity=size, affinity=aff, **kw)


def test_wait_for_first_consumer_finds_a_pv_on_its_node() -> None:
    env = Env([pvc("c", cls=WAIT), wait_pv("local-1", "node-1")])
    assert env.verdicts(one("c")) == {"node-1": None, "node-2": [ERR_REASON_BIND_CONFLICT]}


@pytest.mark.parametrize(
    ("volume", "why"),
    [
        (wait_pv("v", "node-1", size="500Mi"), "too small"),
        (wait_pv("v", "node-1", cls="other"), "other class"),
        (wait_pv("v", "node-1", phase="Released"), "not Available"),
        (wait_pv("v", "node-1", modes=["ReadOnlyMany"]), "access modes"),
        (wait_pv("v", "node-1", claim=("default", "someone", "uid-x")), "claimed by another claim"),
        (wait_pv("v", "node-1", claim=("default", "c", "uid-of-a-deleted-c")), "claimed by an earlier claim c"),
        (wait_pv("v", "node-1", deleting=True), "being deleted"),
        (wait_pv("v", "node-1", extra_spec={"volumeMode": "Block"}), "volume mode"),
        (wait_pv("v", "node-1", extra_spec={"volumeAttributesClassName": "gold"}), "attributes class"),
        (wait_pv("v", "node-1", labels={"tier": "slow"}), "selector"),
    ],
)
def test_pv_not_matching(volume: dict[str, Any], why: str) -> None:
    selector = {"selector": {"matchLabels": {"tier": "fast"}}} if why == "selector" else None
    claim = pvc("c", cls=WAIT, extra_spec=selector)
    env = Env([claim, volume])
    assert env.verdicts(one("c"))["node-1"] == [ERR_REASON_BIND_CONFLICT], why


def test_smallest_fitting_pv_is_chosen_and_pvs_are_not_reused_within_a_pod() -> None:
    env = Env([pvc("small", cls=WAIT, request="1Gi"), pvc("big", cls=WAIT, request="5Gi"),
               wait_pv("pv-10g", "node-1", size="10Gi"), wait_pv("pv-5g", "node-1", size="5Gi"),
               wait_pv("pv-2g", "node-1", size="2Gi")])
    pod = one("big", "small")
    state, s = env.prefilter(pod)
    assert s is None
    assert env.filter(state, pod, "node-1") is None
    data = state.get(STATE_KEY)
    bindings = data.pod_volumes_by_node["node-1"].static_bindings
    chosen = {b.pvc["metadata"]["name"]: b.pv["metadata"]["name"] for b in bindings}
    assert chosen == {"small": "pv-2g", "big": "pv-5g"}
    # one PV for two claims on node-2 only → one claim cannot be satisfied
    env2 = Env([pvc("a", cls=WAIT), pvc("b", cls=WAIT), wait_pv("only", "node-2")])
    assert env2.verdicts(one("a", "b"))["node-2"] == [ERR_REASON_BIND_CONFLICT]


def test_pv_prebound_to_the_claim_is_taken_even_if_not_available() -> None:
    env = Env([pvc("c", cls=WAIT), wait_pv("mine", "node-2", phase="Bound", claim=("default", "c", "uid-pvc-c"))])
    assert env.verdicts(one("c")) == {"node-1": [ERR_REASON_BIND_CONFLICT], "node-2": None}


# --- Filter: provisioning ---------------------------------------------------------------------------------


def test_provisioning() -> None:
    env = Env([pvc("c", cls=PROV), pvc("t", cls="topo-sc")])
    assert env.verdicts(one("c")) == {"node-1": None, "node-2": None}
    assert env.verdicts(one("t")) == {"node-1": [ERR_REASON_BIND_CONFLICT], "node-2": None}


def test_claim_already_provisioning_for_another_node() -> None:
    env = Env([pvc("c", cls=PROV, annotations={ANN_SELECTED_NODE: "node-2"})])
    assert env.verdicts(one("c")) == {"node-1": [ERR_REASON_BIND_CONFLICT], "node-2": None}


def test_no_static_pv_and_no_provisioner_is_a_bind_conflict() -> None:
    env = Env([pvc("c", cls=WAIT)])
    assert env.verdicts(one("c")) == {"node-1": [ERR_REASON_BIND_CONFLICT], "node-2": [ERR_REASON_BIND_CONFLICT]}


def test_storage_capacity() -> None:
    objs = [pvc("c", cls=PROV, request="10Gi"), csi_driver("csi.example.com", True),
            capacity("cap-a", PROV, "5Gi", {"zone": "a"}), capacity("cap-b", PROV, "20Gi", {"zone": "b"})]
    assert Env(objs).verdicts(one("c")) == {"node-1": [ERR_REASON_NOT_ENOUGH_SPACE], "node-2": None}
    # maximumVolumeSize wins over capacity
    objs2 = [pvc("c", cls=PROV, request="10Gi"), csi_driver("csi.example.com", True),
             capacity("cap-b", PROV, "20Gi", {"zone": "b"}, max_size="8Gi")]
    assert Env(objs2).verdicts(one("c"))["node-2"] == [ERR_REASON_NOT_ENOUGH_SPACE]
    # no nodeTopology: unavailable everywhere
    objs3 = [pvc("c", cls=PROV, request="1Gi"), csi_driver("csi.example.com", True), capacity("x", PROV, "9Gi", None)]
    assert Env(objs3).verdicts(one("c"))["node-1"] == [ERR_REASON_NOT_ENOUGH_SPACE]
    # a driver that does not track capacity (or no CSIDriver): no check
    objs4 = [pvc("c", cls=PROV, request="10Gi"), csi_driver("csi.example.com", False)]
    assert Env(objs4).verdicts(one("c")) == {"node-1": None, "node-2": None}


def test_reasons_are_listed_in_upstream_order() -> None:
    env = Env([pv("local", affinity=node_affinity({HOST: ["node-1"]}), phase="Bound"), pvc("b", volume="local"),
               pvc("u", cls=WAIT)])
    assert env.verdicts(one("b", "u"))["node-2"] == [ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT]


def test_filter_errors() -> None:
    env = Env([pvc("c", cls=WAIT, extra_spec={"selector": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}}),
               wait_pv("v", "node-1")])
    state, s = env.prefilter(one("c"))
    assert s is None
    st = env.filter(state, one("c"), "node-1")
    assert st is not None and st.code == Code.ERROR
    assert st.reasons[0].startswith("error creating internal label selector for claim: default/c:")
    assert env.handle.stage_errors == ["predicate"]  # scheduler_volume_scheduling_stage_error_total
    env2 = Env([pvc("c", cls=WAIT, annotations={ANN_SELECTED_NODE: "node-1"})])
    state, _ = env2.prefilter(one("c"))
    # selected for node-1 but the class has no provisioner: not provisionable
    assert env2.filter(state, one("c"), "node-1").reasons == [ERR_REASON_BIND_CONFLICT]
    assert env2.handle.stage_errors == []  # a node that does not fit is no error


def test_reserve_error_when_the_pv_vanished_counts_as_assume_stage_error() -> None:
    env = Env([pvc("c", cls=WAIT), wait_pv("local-1", "node-1")])
    pod = one("c")
    state, _ = env.prefilter(pod)
    assert env.filter(state, pod, "node-1") is None
    env.handle.store.delete("PersistentVolume", wait_pv("local-1", "node-1"))
    s = env.pl.reserve(state, pod.with_node("node-1"), "node-1")
    assert s is not None and s.code == Code.ERROR
    assert env.handle.stage_errors == ["assume"]


# --- Reserve / Unreserve / PreBind ------------------------------------------------------------------------


def test_static_binding_end_to_end() -> None:
    env = Env([pvc("c", cls=WAIT), wait_pv("local-1", "node-1")])
    _, s = env.schedule(one("c"), "node-1")
    assert s is None
    assert [k for k, _ in env.handle.updates] == ["PersistentVolume"]
    written = env.handle.updates[0][1]
    assert written["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "c",
                                           "uid": "uid-pvc-c", "apiVersion": "v1", "resourceVersion": "1"}
    assert written["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    claim = env.handle.store.get("PersistentVolumeClaim", "default", "c")
    assert claim["spec"]["volumeName"] == "local-1"
    assert env.sleeps == 0  # complete at the first check


def test_assumed_pv_is_not_offered_to_the_next_pod_until_unreserve() -> None:
    env = Env([pvc("c1", cls=WAIT), pvc("c2", cls=WAIT), wait_pv("only", "node-1")])
    first = one("c1", name="first")
    state, s = env.prefilter(first)
    assert s is None and env.filter(state, first, "node-1") is None
    assert env.pl.reserve(state, first.with_node("node-1"), "node-1") is None
    assert env.pl.binder.pv_cache.assumed_count() == 1
    # the second pod's cycle sees the PV claimed by c1
    assert env.verdicts(one("c2", name="second"))["node-1"] == [ERR_REASON_BIND_CONFLICT]
    env.pl.unreserve(state, first, "node-1")
    assert env.pl.binder.pv_cache.assumed_count() == 0
    assert env.verdicts(one("c2", name="second"))["node-1"] is None


def test_watch_version_newer_than_the_assumption_wins() -> None:
    env = Env([pvc("c1", cls=WAIT), wait_pv("only", "node-1")])
    pod = one("c1")
    state, _ = env.prefilter(pod)
    env.filter(state, pod, "node-1")
    env.pl.reserve(state, pod.with_node("node-1"), "node-1")
    assert env.pl.binder.pv_cache.get("only")["spec"].get("claimRef") is not None
    env.handle.add(wait_pv("only", "node-1", rv="2"))  # e.g. someone else's write arrives
    assert env.pl.binder.pv_cache.get("only")["spec"].get("claimRef") is None
    assert env.pl.binder.pv_cache.assumed_count() == 0


def test_provisioning_end_to_end() -> None:
    env = Env([pvc("c", cls=PROV)])
    _, s = env.schedule(one("c"), "node-2")
    assert s is None
    assert [k for k, _ in env.handle.updates] == ["PersistentVolumeClaim"]
    assert env.handle.updates[0][1]["metadata"]["annotations"][ANN_SELECTED_NODE] == "node-2"
    claim = env.handle.store.get("PersistentVolumeClaim", "default", "c")
    assert claim["spec"]["volumeName"] == "pvc-uid-pvc-c"


def test_assumed_selected_node_steers_other_pods_sharing_the_claim() -> None:
    env = Env([pvc("shared", cls=PROV)])
    first = one("shared", name="first")
    state, _ = env.prefilter(first)
    for n in ("node-1", "node-2"):
        env.filter(state, first, n)
    assert env.pl.reserve(state, first.with_node("node-2"), "node-2") is None
    assert env.verdicts(one("shared", name="second")) == {"node-1": [ERR_REASON_BIND_CONFLICT], "node-2": None}


def test_prebind_times_out_without_a_pv_controller() -> None:
    env = Env([pvc("c", cls=WAIT), wait_pv("local-1", "node-1")], controller=False, timeout=5)
    state, s = env.schedule(one("c"), "node-1")
    assert s is not None and s.code == Code.ERROR
    assert s.reasons == ["binding volumes: context deadline exceeded"]
    assert env.sleeps == 5  # polled once a second
    env.pl.unreserve(state, one("c"), "node-1")
    assert env.pl.binder.pv_cache.assumed_count() == 0


def test_prebind_fails_when_the_pod_is_deleted_or_the_write_fails() -> None:
    env = Env([pvc("c", cls=WAIT), wait_pv("local-1", "node-1")], controller=False)
    env.handle.deleted_pods.add("uid-pod")
    _, s = env.schedule(one("c"), "node-1")
    assert s is not None and s.reasons == ['binding volumes: pod does not exist any more: pods "pod" not found']

    env2 = Env([pvc("c", cls=WAIT), wait_pv("local-1", "node-1")])
    env2.handle.fail_updates = 'persistentvolumes "local-1" is forbidden'
    _, s = env2.schedule(one("c"), "node-1")
    assert s is not None and s.code == Code.ERROR and s.reasons == ['persistentvolumes "local-1" is forbidden']
    assert env2.pl.binder.pv_cache.assumed_count() == 0  # the unwritten assumption was restored
    assert env.handle.stage_errors == env2.handle.stage_errors == ["bind"]


def test_prebind_fails_when_provisioning_is_given_up() -> None:
    env = Env([pvc("c", cls=PROV)], controller=False)
    state, _ = env.prefilter(one("c"))
    env.filter(state, one("c"), "node-1")
    env.pl.reserve(state, one("c").with_node("node-1"), "node-1")
    real_sleep = env.pl.binder.sleep

    def provisioner_gives_up(seconds: float) -> None:
        real_sleep(seconds)
        claim = dict(env.handle.store.get("PersistentVolumeClaim", "default", "c"))
        claim["metadata"] = {**claim["metadata"], "annotations": {"other": "x"}, "resourceVersion": "9"}
        env.handle.add(claim)

    env.pl.binder.sleep = provisioner_gives_up
    s = env.pl.pre_bind(state, one("c").with_node("node-1"), "node-1")
    assert s is not None and s.reasons == ['binding volumes: provisioning failed for PVC "c"']


def test_bound_pod_needs_no_prebind() -> None:
    env = Env([pv("v", phase="Bound"), pvc("c", volume="v")])
    state, s = env.schedule(one("c"), "node-1")
    assert s is None and env.handle.updates == []
    assert state.get(STATE_KEY).all_bound


# --- hints ------------------------------------------------------------------------------------------------


def test_hints() -> None:
    pl = Env().pl
    Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
    pod = make_pod().name("p").volume(claim_vol("c")).volume(ephemeral_vol("e")).volume({"name": "i",
                                                                                         "csi": {"driver": "d"}}).obj()
    assert pl.is_schedulable_after_pvc_change(pod, None, pvc("c")) is Q
    assert pl.is_schedulable_after_pvc_change(pod, None, pvc("p-e")) is Q
    assert pl.is_schedulable_after_pvc_change(pod, None, pvc("x")) is SKIP
    assert pl.is_schedulable_after_pvc_change(pod, None, pvc("c", namespace="o")) is SKIP
    sc = storage_class("s", allowed_topologies=[{"zone": ["a"]}])
    assert pl.is_schedulable_after_storage_class_change(pod, None, sc) is Q
    assert pl.is_schedulable_after_storage_class_change(pod, sc, {**sc, "parameters": {"x": "y"}}) is SKIP
    assert pl.is_schedulable_after_storage_class_change(pod, sc, storage_class("s")) is Q
    assert pl.is_schedulable_after_storage_class_change(pod, storage_class("s"), {**storage_class("s"),
                                                                                   "allowedTopologies": []}) is SKIP
    ann = "storage.alpha.kubernetes.io/migrated-plugins"
    assert pl.is_schedulable_after_csi_node_change(pod, None, csi_node("n", {})) is Q
    assert pl.is_schedulable_after_csi_node_change(pod, csi_node("n", {}), csi_node("n", {"d": 1})) is SKIP
    assert pl.is_schedulable_after_csi_node_change(pod, csi_node("n", {}), csi_node("n", {}, {ann: "x"})) is Q
    assert pl.is_schedulable_after_csi_storage_capacity_change(pod, None, capacity("c", "s", "1Gi", {})) is Q
    small, big = capacity("c", "s", "1Gi", {}), capacity("c", "s", "2Gi", {})
    assert pl.is_schedulable_after_csi_storage_capacity_change(pod, small, big) is Q
    assert pl.is_schedulable_after_csi_storage_capacity_change(pod, big, small) is SKIP
    assert pl.is_schedulable_after_csi_driver_change(pod, csi_driver("d", True), csi_driver("d", False)) is Q
    assert pl.is_schedulable_after_csi_driver_change(pod, csi_driver("d", False), csi_driver("d", True)) is SKIP
    assert pl.is_schedulable_after_csi_driver_change(pod, csi_driver("z", True), csi_driver("z", False)) is SKIP
