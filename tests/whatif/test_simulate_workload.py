"""`simulate` with the Workload API (GenericWorkload): --feature-gates, PodGroups and grouped pods in its files,
PodGroup priority admission and the offline PodGroup status writer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from scheduler.app.cli import main
from scheduler.framework.features import Features
from scheduler.scheduler import Scheduler
from scheduler.whatif.priority_admission import AdmissionError, PriorityAdmission, PriorityClass
from scheduler.whatif.simulate import SimulationError, format_table, run_simulation
from scheduler.whatif.workload_offline import RecordingPodGroupStatusWriter, is_grouped_pod, is_workload_object
from tests.builders import sched_node, sched_pod

GATES = Features(enable_generic_workload=True)


def podgroup(name: str, min_count: int | None = None, **spec: Any) -> dict[str, Any]:
    policy = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"schedulingPolicy": policy, **spec}}


def member(name: str, group: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    pod = sched_pod(name, cpu=cpu, scheduler="default-scheduler").api()
    pod["spec"] |= {"schedulingGroup": {"podGroupName": group}, **spec}
    return pod


def files(tmp_path: Path, cluster: list[dict[str, Any]], pods: list[dict[str, Any]]) -> tuple[str, str]:
    for name, docs in (("cluster", cluster), ("pods", pods)):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump_all(docs))
    return str(tmp_path / "cluster.yaml"), str(tmp_path / "pods.yaml")


def test_the_workload_apis_objects_are_told_from_coschedulings() -> None:
    assert is_workload_object(podgroup("g"))
    assert is_workload_object({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload"})
    assert not is_workload_object({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup"})
    assert is_grouped_pod(member("m", "g"))
    assert not is_grouped_pod(sched_pod("p").api())


@pytest.mark.parametrize("where", ["cluster", "pods"])
def test_a_podgroup_needs_the_gate(tmp_path: Path, where: str) -> None:
    cluster, pods = [sched_node("n1").api()], [member("m0", "g")]
    (cluster if where == "cluster" else pods).append(podgroup("g", 1))
    with pytest.raises(SimulationError, match=r"PodGroup default/g: .*needs --feature-gates GenericWorkload=true"):
        run_simulation(*files(tmp_path, cluster, pods))


def test_other_kinds_in_the_pods_file_are_still_refused_with_the_gate(tmp_path: Path) -> None:
    with pytest.raises(SimulationError, match=r"only Pods can be scheduled \(and the Workload API's"):
        run_simulation(*files(tmp_path, [sched_node("n1").api()], [sched_node("n2").api()]), features=GATES)


def test_simulate_takes_feature_gates_as_run_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster, pods = files(tmp_path, [sched_node("n1").api()], [sched_pod("p", cpu="1",
                                                                          scheduler="default-scheduler").api()])
    args = ["simulate", "--cluster", cluster, "--pods", pods, "--output", "json"]
    assert main([*args, "--feature-gates", "StorageCapacityScoring=false"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"][0]["node"] == "n1" and "podGroups" not in out
    with pytest.raises(SystemExit) as exc:
        main([*args, "--feature-gates", "NoSuchGate=true"])
    assert exc.value.code == 2
    assert "unrecognized feature gate: NoSuchGate" in capsys.readouterr().err


def test_a_podgroup_gets_its_priority_from_its_class() -> None:
    admission = PriorityAdmission([PriorityClass("high", 1000, "PreemptLowerPriority", False)])
    admitted = admission.admit_pod_group(podgroup("g", 2, priorityClassName="high"))
    assert admitted["spec"]["priority"] == 1000
    assert admission.admit_pod_group(podgroup("g"))["spec"]["priority"] == 0
    with pytest.raises(AdmissionError, match=r'podgroups\.scheduling\.k8s\.io "g" is forbidden: no PriorityClass'):
        admission.admit_pod_group(podgroup("g", priorityClassName="none"))
    with pytest.raises(AdmissionError, match=r"priority set in the pod group \(5\) must match the priority computed"):
        admission.admit_pod_group(podgroup("g", priorityClassName="high", priority=5))


def test_with_pod_group_preemption_policy_a_podgroup_gets_its_class_preemption_policy() -> None:
    classes = [PriorityClass("never", 10, "Never", False)]
    off = PriorityAdmission(classes).admit_pod_group(podgroup("g", priorityClassName="never"))
    assert "preemptionPolicy" not in off["spec"]
    admission = PriorityAdmission(classes, pod_group_preemption_policy=True)
    assert admission.admit_pod_group(podgroup("g", priorityClassName="never"))["spec"]["preemptionPolicy"] == "Never"
    assert admission.admit_pod_group(podgroup("g"))["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    with pytest.raises(AdmissionError, match=r"the string value of PreemptionPolicy \(PreemptLowerPriority\) must "
                       r"not be provided in pod group spec; priority admission controller computed Never"):
        admission.admit_pod_group(podgroup("g", priorityClassName="never", preemptionPolicy="PreemptLowerPriority"))


def test_the_offline_status_writer_merges_conditions_by_type() -> None:
    writer = RecordingPodGroupStatusWriter()
    writer.seen(podgroup("g", 2))
    failed = {"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
    writer.patch_pod_group_status("default", "g", {"status": {"conditions": [failed]}})
    writer.patch_pod_group_status("default", "g", {"status": {"conditions": [
        {**failed, "status": "True", "reason": "Scheduled", "message": ""}]}})
    assert writer.summary() == [{"podGroup": "default/g", "conditions": [
        {"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled", "message": ""}]}]
    with pytest.raises(LookupError, match=r'podgroups\.scheduling\.k8s\.io "other" not found'):
        writer.patch_pod_group_status("default", "other", {"status": {}})


def place(tmp_path: Path, cluster: list[dict[str, Any]], pods: list[dict[str, Any]],
          features: Features = GATES, status_watch_lag: bool = True) -> Any:
    return run_simulation(*files(tmp_path, cluster, pods), tie_break="name", features=features,
                          status_watch_lag=status_watch_lag)


def two_nodes() -> list[dict[str, Any]]:
    return [sched_node("n1", "2").api(), sched_node("n2", "2").api()]


def test_a_gang_that_fits_is_placed_whole_and_its_podgroup_says_so(tmp_path: Path) -> None:
    sim = place(tmp_path, two_nodes(), [podgroup("g", 3), *(member(f"g-{i}", "g") for i in range(3))])
    assert sorted(r["node"] for r in sim.results) == ["n1", "n1", "n2"]
    (group,) = sim.pod_groups
    assert group["podGroup"] == "default/g"
    assert [(c["type"], c["status"], c["reason"]) for c in group["conditions"]] == [
        ("PodGroupInitiallyScheduled", "True", "Scheduled")]
    assert sim.to_json()["podGroups"] == sim.pod_groups


def test_a_gang_that_does_not_fit_places_no_member(tmp_path: Path) -> None:
    sim = place(tmp_path, two_nodes(), [podgroup("g", 5), *(member(f"g-{i}", "g") for i in range(5))])
    assert [r["node"] for r in sim.results] == [None] * 5
    (cond,) = sim.pod_groups[0]["conditions"]
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert "minCount (5) cannot be satisfied" in cond["message"]
    assert all(r["message"] for r in sim.results)
    assert "podgroup default/g: PodGroupInitiallyScheduled=False Unschedulable: " in format_table(sim)


def test_members_listed_before_their_podgroup_wait_for_it(tmp_path: Path) -> None:
    sim = place(tmp_path, two_nodes(), [*(member(f"g-{i}", "g") for i in range(3)), podgroup("g", 3)])
    assert sorted(r["node"] for r in sim.results) == ["n1", "n1", "n2"]


def test_members_whose_podgroup_never_arrives_stay_pending(tmp_path: Path) -> None:
    sim = place(tmp_path, two_nodes(), [member(f"g-{i}", "g") for i in range(2)])
    assert [r["node"] for r in sim.results] == [None, None]
    assert all(r["message"] for r in sim.results)
    assert sim.pod_groups == []


def two_full_nodes() -> list[dict[str, Any]]:
    """Two nodes, each full with a 2-cpu pod of no priority, and the PriorityClass "high"."""
    low = [sched_pod(f"low-{i}", cpu="2", node_name=f"n{i + 1}", scheduler="default-scheduler").api()
           for i in range(2)]
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
            "value": 1000}
    return [*two_nodes(), high, *low]


def high_gang(members: int) -> list[dict[str, Any]]:
    """A gang of minCount 2 with class "high" and ``members`` 2-cpu members, the PodGroup first."""
    return [podgroup("g", 2, priorityClassName="high"),
            *(member(f"g-{i}", "g", cpu="2", priorityClassName="high") for i in range(members))]


def test_a_higher_priority_gang_preempts_and_lists_its_victims(tmp_path: Path) -> None:
    sim = place(tmp_path, two_full_nodes(), high_gang(2))
    assert sorted(r["node"] for r in sim.results) == ["n1", "n2"]
    assert sorted(v for r in sim.results for v in r["victims"]) == ["default/low-0", "default/low-1"]


class _Watching:
    """Stands in for the scheduler: what the offline watch delivered, in order."""

    def __init__(self) -> None:
        self.delivered: list[str] = []

    def on_pod_group_event(self, type_: str, obj: dict[str, Any]) -> None:
        self.delivered.append(obj["status"]["conditions"][0]["status"])


def test_the_offline_watch_delivers_a_status_write_only_after_the_next_cycle() -> None:
    writer, watching = RecordingPodGroupStatusWriter(), _Watching()
    writer.connect(cast(Scheduler, watching))
    writer.seen(podgroup("g", 2))
    failed = {"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
    writer.patch_pod_group_status("default", "g", {"status": {"conditions": [failed]}})
    assert watching.delivered == []  # not inside the writer's call
    writer.cycle_done()  # the cycle that wrote it returns
    assert watching.delivered == []  # the next cycle (the requeued rest of the group) still sees the stale copy
    writer.patch_pod_group_status("default", "g", {"status": {"conditions": [{**failed, "status": "True"}]}})
    writer.cycle_done()
    assert watching.delivered == ["False"]
    assert writer.deliver_all() is True  # idle: the watch catches up
    assert watching.delivered == ["False", "True"]
    assert writer.deliver_all() is False


def test_without_the_watch_lag_a_status_write_is_delivered_at_once() -> None:
    # The other side of the race the differential retries: kube's retry ran after the watch brought the write.
    writer, watching = RecordingPodGroupStatusWriter(watch_lag=False), _Watching()
    writer.connect(cast(Scheduler, watching))
    writer.seen(podgroup("g", 2))
    done = {"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled", "message": ""}
    writer.patch_pod_group_status("default", "g", {"status": {"conditions": [done]}})
    assert watching.delivered == ["True"]
    writer.cycle_done()
    assert writer.deliver_all() is False and watching.delivered == ["True"]


def test_a_partly_placed_group_keeps_its_true_when_the_retry_saw_it(tmp_path: Path) -> None:
    sim = place(tmp_path, two_nodes(), [*(member(f"g-{i}", "g", cpu="2") for i in range(3)), podgroup("g", 2)],
                status_watch_lag=False)
    assert sorted(str(r["node"]) for r in sim.results) == ["None", "n1", "n2"]
    (cond,) = sim.pod_groups[0]["conditions"]
    assert (cond["status"], cond["reason"]) == ("True", "Scheduled")


def test_a_group_partly_placed_ends_unschedulable_as_its_retry_saw_no_condition_yet(tmp_path: Path) -> None:
    # One cycle for the three members: two fit, the third does not; the retry of the third runs before the True
    # of the first cycle is delivered, so its patch carries the whole False condition (kube's usual outcome,
    # differential seed 90).
    sim = place(tmp_path, two_nodes(), [*(member(f"g-{i}", "g", cpu="2") for i in range(3)), podgroup("g", 2)])
    assert sorted(str(r["node"]) for r in sim.results) == ["None", "n1", "n2"]
    (cond,) = sim.pod_groups[0]["conditions"]
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")


@pytest.mark.parametrize("burst", [False, True])
def test_members_in_burst_run_before_the_watch_brings_the_groups_status_back(tmp_path: Path, burst: bool) -> None:
    """A basic group whose first member fits and second does not. Arriving one by one with the scheduler idle in
    between, the second member's cycle sees the True the first wrote and keeps it; in a burst its cycle runs first,
    on the PodGroup without it, and writes False (kube-scheduler does either, as its watch races the next pod)."""
    cluster, pods = files(tmp_path, [sched_node("n1", cpu="2").api()],
                          [podgroup("g"), member("m0", "g", cpu="2"), member("m1", "g", cpu="2")])
    sim = run_simulation(cluster, pods, features=GATES, members_in_burst=burst)
    assert [r["node"] for r in sim.results] == ["n1", None]
    condition = next(g for g in sim.pod_groups if g["podGroup"] == "default/g")["conditions"][0]
    expected = ("False", "Unschedulable") if burst else ("True", "Scheduled")
    assert (condition["status"], condition["reason"]) == expected


def test_a_group_retried_after_its_preemption_sees_the_members_that_arrived_meanwhile(tmp_path: Path) -> None:
    # Two members make the gang's minCount: its first cycle preempts low-0 and low-1 and the group backs off. The
    # file's third member arrives before that backoff passes (a live cluster creates a file in milliseconds), so
    # the retry places the three members in one cycle: the third does not fit, and the cycle that retries it
    # alone patches its PostFilter message over the stale False (differential seed 21).
    sim = place(tmp_path, two_full_nodes(), high_gang(3))
    assert [r["node"] for r in sim.results] == ["n1", "n2", None]
    (cond,) = sim.pod_groups[0]["conditions"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True", "Scheduled", "pod group is unschedulable, pod group preemption: No preemption victims found for "
        "incoming preemptor")
