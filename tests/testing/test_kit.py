"""The public plugin-testing kit (scheduler.testing): builders give what the parsers make of the API objects,
the runners run the real framework and algorithm."""

from __future__ import annotations

from scheduler.framework.status import Code
from scheduler.plugins.node_resources_fit import NodeResourcesFit
from scheduler.plugins.taint_toleration import TaintToleration
from scheduler.testing import (
    PluginRunner,
    make_container,
    make_device_class,
    make_label_selector,
    make_node,
    make_node_selector,
    make_pdb,
    make_pod,
    make_pv,
    make_pvc,
    make_resource_claim,
    make_resource_slice,
    make_snapshot,
    make_storage_class,
    new_handle,
    schedule,
)


def test_a_pod_has_a_name_uid_namespace_and_one_container_by_default() -> None:
    pod = make_pod().obj()
    assert (pod.name, pod.uid, pod.namespace) == ("p", "uid-p", "default")
    assert [c["name"] for c in pod.raw["spec"]["containers"]] == ["c"]
    assert pod.requests.milli_cpu == 0


def test_req_adds_a_container_per_call_as_upstream() -> None:
    pod = make_pod().name("w").namespace("ns").req(cpu="500m", memory="1Gi").req(cpu=1).obj()
    assert [c["name"] for c in pod.raw["spec"]["containers"]] == ["con0", "con1"]
    assert pod.requests.milli_cpu == 1500 and pod.requests.memory == 1 << 30
    assert pod.key == "ns/w"


def test_pod_fields_reach_the_model() -> None:
    pod = (make_pod().name("p").priority(10).node_selector({"disk": "ssd"}).toleration("k", "v", "NoSchedule")
           .label("app", "web").nominated_node_name("n2").scheduling_gates("g").node_affinity_in("zone", ["a"])
           .pod_anti_affinity("kubernetes.io/hostname", make_label_selector().label("app", "web").obj())
           .spread_constraint(1, "zone", selector=make_label_selector().exists("app").obj()).obj())
    assert pod.priority == 10 and pod.labels == {"app": "web"}
    assert pod.nominated_node_name == "n2" and pod.scheduling_gates
    spec = pod.raw["spec"]
    assert spec["nodeSelector"] == {"disk": "ssd"}
    assert spec["tolerations"] == [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]
    assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}
    assert spec["topologySpreadConstraints"][0]["labelSelector"] == {
        "matchExpressions": [{"key": "app", "operator": "Exists"}]}


def test_a_wrapper_builds_independent_objects() -> None:
    w = make_pod().name("a")
    first = w.api()
    first["metadata"]["name"] = "changed"
    assert w.obj().name == "a"
    assert w.label("x", "1").obj().labels == {"x": "1"}


def test_a_node_has_32_pods_of_capacity_until_told_otherwise() -> None:
    node = make_node().name("n1").obj()
    assert node.uid == "uid-n1" and node.allocatable.allowed_pod_number == 32
    node = (make_node().name("n2").capacity(cpu="4", memory="8Gi", pods=110).taint("k", "v").label("l", "1")
            .image(["img:1"], 100).condition("Ready", "True").unschedulable().obj())
    assert node.allocatable.milli_cpu == 4000 and node.allocatable.allowed_pod_number == 110
    assert [(t.key, t.value, t.effect) for t in node.taints] == [("k", "v", "NoSchedule")]
    assert node.labels == {"l": "1"} and node.unschedulable and node.conditions == {"Ready": "True"}


def test_api_objects_of_other_kinds() -> None:
    pvc = make_pvc().name("c").namespace("ns").request("1Gi").storage_class_name("fast").volume_name("v").obj()
    assert pvc["status"]["phase"] == "Bound" and pvc["spec"]["volumeName"] == "v"
    pv = make_pv().name("v").capacity("1Gi").claim_ref("ns", "c").node_affinity_in("zone", ["a"]).obj()
    assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "zone"
    sc = make_storage_class().name("fast").volume_binding_mode("WaitForFirstConsumer").obj()
    assert sc["kind"] == "StorageClass" and sc["volumeBindingMode"] == "WaitForFirstConsumer"
    pdb = make_pdb().name("b").match_label("app", "web").min_available(1).disruptions_allowed(0).obj()
    assert pdb["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert make_node_selector().in_("zone", ["a"]).obj() == {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}


def test_dra_objects_parse() -> None:
    claim = make_resource_claim().name("gpu").request("gpu.example.com", count=2).obj()
    exactly = claim.requests[0].exactly
    assert [r.name for r in claim.requests] == ["req-0"] and exactly is not None and exactly.count == 2
    cls = make_device_class().name("gpu.example.com").selector('device.driver == "d"').obj()
    assert cls.name == "gpu.example.com" and len(cls.selectors) == 1
    rs = make_resource_slice("n1", "d").device("g0", {"model": "a", "mem": 8}).devices("g1").obj()
    assert rs.node_name == "n1" and [d.name for d in rs.devices] == ["g0", "g1"]


def test_the_snapshot_accounts_bound_pods_only() -> None:
    nodes = [make_node().name("n1").capacity(cpu=4).obj(), make_node().name("n2").capacity(cpu=4).obj()]
    pods = [make_pod().name("a").req(cpu=1).node("n1").obj(), make_pod().name("pending").req(cpu=1).obj()]
    snap = make_snapshot(nodes, pods)
    n1 = snap.get("n1")
    assert n1 is not None and n1.requested.milli_cpu == 1000 and len(n1.pods) == 1
    assert sorted(n.name for n in snap.list()) == ["n1", "n2"]


def test_a_hand_made_handle_sees_the_cluster() -> None:
    handle = new_handle([make_node().name("n1").obj()], objects=[make_pvc().name("c").obj()])
    assert [n.name for n in handle.snapshot().list()] == ["n1"]
    assert handle.objects().get("PersistentVolumeClaim", "default", "c") is not None


def test_the_plugin_runner_runs_filter_through_the_framework() -> None:
    nodes = [make_node().name("small").capacity(cpu=1).obj(), make_node().name("big").capacity(cpu=8).obj()]
    runner = PluginRunner(NodeResourcesFit, None, nodes=nodes)
    statuses = runner.filter(make_pod().req(cpu=2).obj())
    small = statuses["small"]
    assert statuses["big"] is None and small is not None
    # More than the node's whole allocatable: no preemption can help (v1.37's unresolvable Insufficient).
    assert small.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and small.reasons == ["Insufficient cpu"]
    assert small.plugin == "NodeResourcesFit"


def test_the_plugin_runner_scores_and_normalizes() -> None:
    nodes = [make_node().name("clean").obj(),
             make_node().name("tainted").taint("k", "v", "PreferNoSchedule").obj()]
    cycle = PluginRunner(TaintToleration, None, nodes=nodes).cycle(make_pod().obj())
    assert cycle.score() == {"clean": 100, "tainted": 0}
    assert cycle.raw_scores() == {"clean": 0, "tainted": 1}


def test_a_default_profile_cycle_picks_the_least_allocated_node() -> None:
    nodes = [make_node().name("busy").capacity(cpu=4, memory="8Gi").obj(),
             make_node().name("idle").capacity(cpu=4, memory="8Gi").obj()]
    bound = [make_pod().name("x").req(cpu=3, memory="6Gi").node("busy").obj()]
    result = schedule(make_pod().req(cpu=1, memory="1Gi").obj(), nodes, bound)
    assert result.node == "idle" and result.status is None
    assert result.scores["idle"] > result.scores["busy"]


def test_a_failed_cycle_reports_the_schedulers_message_and_preemption() -> None:
    nodes = [make_node().name("n1").capacity(cpu=2).obj()]
    victim = make_pod().name("low").priority(0).req(cpu=2).node("n1").obj()
    result = schedule(make_pod().name("high").priority(100).req(cpu=2).obj(), nodes, [victim])
    assert result.node is None and result.status is not None
    assert result.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert result.nominated_node == "n1"
    assert result.actions.preempted == [("default/low", "default/high", "n1")]


def test_a_profile_from_a_configuration_disables_plugins() -> None:
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "lax", "plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}}]}
    nodes = [make_node().name("t").taint("dedicated", "x").obj()]
    strict = schedule(make_pod().obj(), nodes)
    lax = schedule(make_pod().scheduler_name("lax").obj(), nodes, config=cfg)
    assert strict.node is None and "untolerated taint" in strict.message
    assert lax.node == "t"


def test_containers_built_alone() -> None:
    c = make_container().name("web").image("nginx").req(cpu="1").lim(memory="1Gi").host_port(80).obj()
    assert c == {"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}},
                 "ports": [{"containerPort": 80, "hostPort": 80}]}


def test_res_sets_requests_and_limits_and_init_containers_keep_their_order() -> None:
    pod = (make_pod().container(make_container().name("a").res({"example.com/gpu": 1}))
           .init_containers(make_container().name("i0"), make_container().name("i1").restart_policy("Always")).api())
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"example.com/gpu": "1"},
                                                        "limits": {"example.com/gpu": "1"}}
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["i0", "i1"]


def test_metadata_and_status_escape_hatches() -> None:
    node = make_node().name("n1").creation_timestamp("2026-01-01T00:00:00Z").resource_version("3").api()
    meta = node["metadata"]
    assert (meta["creationTimestamp"], meta["resourceVersion"]) == ("2026-01-01T00:00:00Z", "3")
    claim = make_resource_claim().name("c").owner_reference("p", "Pod", "v1", uid="uid-p").obj()
    assert claim.raw["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "controller": True, "uid": "uid-p"}]
    conditions = [{"type": "DisruptionTarget", "status": "True", "message": "why"}]
    assert make_pod().status_field("conditions", conditions).api()["status"]["conditions"] == conditions
    cls = make_device_class().name("gpu").extended_resource_name("example.com/gpu").api()
    assert cls["spec"]["extendedResourceName"] == "example.com/gpu"


def test_no_uid_leaves_the_uid_to_the_api_server() -> None:
    assert "uid" not in make_pod().name("p").no_uid().api()["metadata"]
    assert "uid" not in make_node().name("n").no_uid().api()["metadata"]
    assert make_pod().name("p").api()["metadata"]["uid"] == "uid-p"
