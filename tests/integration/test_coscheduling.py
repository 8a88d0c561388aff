"""Gang scheduling (Coscheduling with scheduler-plugins' PodGroup) on the local control plane.

The PodGroup CRD is installed from manifests/ with the API, then a py-scheduler is started with the
Coscheduling profile (it discovers PodGroups at start). Each test works on its own labelled nodes, so
its capacity is exact whatever else runs on the control plane.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, watch

from e2e.cluster.cluster import LocalCluster
from e2e.kube import node_of, pod_manifest, scheduled_condition, unique, wait_for
from e2e.rbac import apply_podgroup_crd
from tests.integration.conftest import SchedulerProc, temporary_nodes

ROOT = Path(__file__).resolve().parents[2]
SCHED = "gang-it"
LABEL = "scheduling.x-k8s.io/pod-group"
GROUP, VERSION, PLURAL = "scheduling.x-k8s.io", "v1alpha1", "podgroups"
BACKOFF_S = 2


@pytest.fixture(scope="module")
def podgroup_crd(cluster: LocalCluster, api: client.ApiClient) -> None:
    """Install manifests/podgroup-crd.yaml as a user would and wait until PodGroups are served."""
    apply_podgroup_crd(cluster.kubeconfig)
    objs = client.CustomObjectsApi(api)
    wait_for(lambda: objs.list_cluster_custom_object(GROUP, VERSION, PLURAL) is not None, 30, what="podgroups served")


@pytest.fixture(scope="module")
def gang_scheduler(
    podgroup_crd: None, core: client.CoreV1Api, workdir: Path, start_py_scheduler: Callable[..., SchedulerProc]
) -> SchedulerProc:
    cfg = workdir / "coscheduling.yaml"
    cfg.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{
            "schedulerName": SCHED,
            "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
            "pluginConfig": [{"name": "Coscheduling",
                              "args": {"permitWaitingTimeSeconds": 30, "podGroupBackoffSeconds": BACKOFF_S}}],
        }],
    }))  # fmt: skip
    proc = start_py_scheduler("--config", str(cfg), name="gang")
    wait_for(lambda: "py-scheduler started" in proc.log_text(), 60, what="gang scheduler started")
    assert "PodGroup CRD (scheduling.x-k8s.io/v1alpha1) not served" not in proc.log_text()
    probe = unique("probe")
    core.create_namespaced_pod("default", pod_manifest(probe, scheduler_name=SCHED, cpu="1m", memory="1Mi"))
    wait_for(lambda: node_of(core, "default", probe), 60, what="probe bound (watch live)")
    core.delete_namespaced_pod(probe, "default", grace_period_seconds=0)
    return proc


@pytest.fixture
def pool(cluster: LocalCluster) -> Iterator[Callable[..., list[str]]]:
    """Factory of labelled nodes for one test: pool(count, cpu) -> node names (all deleted afterwards)."""
    tag = unique("gang")
    stacks: list[Any] = []

    def make(count: int, cpu: str = "2") -> list[str]:
        cm = temporary_nodes(str(cluster.kubeconfig), count, prefix=f"{tag}-{len(stacks)}", cpu=cpu,
                             labels={"gang-pool": tag})
        stacks.append(cm)
        return cm.__enter__()

    make.tag = tag  # type: ignore[attr-defined]
    yield make
    for cm in reversed(stacks):
        cm.__exit__(None, None, None)


def create_group(api: client.ApiClient, ns: str, name: str, min_member: int, **spec: Any) -> dict[str, Any]:
    created: dict[str, Any] = client.CustomObjectsApi(api).create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup", "metadata": {"name": name},
        "spec": {"minMember": min_member, **spec}})  # fmt: skip
    return created


def create_member(core: client.CoreV1Api, ns: str, name: str, group: str, tag: str, cpu: str = "1",
                  node_selector: dict[str, str] | None = None) -> None:
    core.create_namespaced_pod(ns, pod_manifest(
        name, scheduler_name=SCHED, cpu=cpu, memory="64Mi", labels={LABEL: group},
        node_selector=node_selector or {"gang-pool": tag}))  # fmt: skip


def bound(core: client.CoreV1Api, ns: str, group: str) -> dict[str, str | None]:
    pods = core.list_namespaced_pod(ns, label_selector=f"{LABEL}={group}").items
    return {p.metadata.name: p.spec.node_name for p in pods}


def message(core: client.CoreV1Api, ns: str, name: str) -> str:
    c = scheduled_condition(core, ns, name)
    return str(c.message) if c is not None and c.status == "False" else ""


def test_group_that_does_not_fit_binds_nothing_then_all_after_nodes_are_added(
    api: client.ApiClient, core: client.CoreV1Api, ns: str, gang_scheduler: SchedulerProc,
    pool: Callable[..., list[str]],
) -> None:
    tag = pool.tag  # type: ignore[attr-defined]
    pool(3, cpu="2")  # room for 6 of 8
    create_group(api, ns, "g8", 8)
    names = [f"g8-{i}" for i in range(8)]
    for n in names:
        create_member(core, ns, n, "g8", tag)
    wait_for(lambda: all(f'"{ns}/g8"' in message(core, ns, n) for n in names), 60,
             what="every member pending with a message naming the group")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # and none is bound meanwhile
        assert not any(bound(core, ns, "g8").values())
        time.sleep(0.5)
    pool(1, cpu="2")
    added = time.monotonic()
    wait_for(lambda: all(bound(core, ns, "g8").values()), 60, what="all 8 bound")
    # Within the backoff (pod backoff up to 10 s, group backoff 2 s) plus scheduling time.
    assert time.monotonic() - added < 10 + BACKOFF_S + 10


def test_two_competing_groups_end_one_complete_one_pending_never_partial(
    api: client.ApiClient, core: client.CoreV1Api, ns: str, gang_scheduler: SchedulerProc,
    pool: Callable[..., list[str]],
) -> None:
    tag = pool.tag  # type: ignore[attr-defined]
    pool(2, cpu="2")  # 4 cpu: one group of 3 fits, not two
    for g in ("ga", "gb"):
        create_group(api, ns, g, 3)
    for i in range(3):  # interleaved arrival
        for g in ("ga", "gb"):
            create_member(core, ns, f"{g}-{i}", g, tag)

    def counts() -> tuple[int, int]:
        return (sum(1 for v in bound(core, ns, "ga").values() if v),
                sum(1 for v in bound(core, ns, "gb").values() if v))

    wait_for(lambda: 3 in counts(), 60, what="one group complete")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert sorted(counts()) == [0, 3], counts()
        time.sleep(0.5)
    loser = "gb" if counts()[0] == 3 else "ga"
    assert all(f'"{ns}/{loser}"' in message(core, ns, f"{loser}-{i}") for i in range(3))


def test_member_deleted_while_others_wait_rejects_the_rest_until_whole_again(
    api: client.ApiClient, core: client.CoreV1Api, ns: str, gang_scheduler: SchedulerProc,
    pool: Callable[..., list[str]],
) -> None:
    tag = pool.tag  # type: ignore[attr-defined]
    pool(2, cpu="4")
    # minMember 10: 9 members fit and wait at Permit; the 10th cannot be placed, but a group missing
    # only 10 % is not rejected at PostFilter, so the 9 keep waiting (the group timeout is long).
    create_group(api, ns, "gw", 10, scheduleTimeoutSeconds=120)
    for i in range(9):
        create_member(core, ns, f"gw-{i}", "gw", tag, cpu="100m")
    create_member(core, ns, "gw-blocked", "gw", tag, cpu="100m", node_selector={"gang-pool": "nowhere"})
    wait_for(lambda: (gang_scheduler.metric("scheduler_cache_size", 'type="assumed_pods"') or 0) >= 9, 60,
             what="9 members assumed and waiting at Permit")
    assert not any(bound(core, ns, "gw").values())
    core.delete_namespaced_pod("gw-0", ns, grace_period_seconds=0)
    wait_for(lambda: (gang_scheduler.metric("scheduler_cache_size", 'type="assumed_pods"') or 0) == 0, 30,
             what="the waiting members rejected and unreserved")
    wait_for(lambda: all('"' + ns + '/gw"' in message(core, ns, f"gw-{i}") for i in range(1, 9)), 30,
             what="the rejected members requeued with a message naming the group")
    assert not any(bound(core, ns, "gw").values())
    # Whole again: the blocked member replaced by two that fit.
    core.delete_namespaced_pod("gw-blocked", ns, grace_period_seconds=0)
    for i in (9, 10):
        create_member(core, ns, f"gw-{i}", "gw", tag, cpu="100m")
    wait_for(lambda: len(b := bound(core, ns, "gw")) == 10 and all(b.values()), 60, what="all 10 bound")


def test_min_resources_larger_than_the_cluster_is_rejected_at_prefilter(
    api: client.ApiClient, core: client.CoreV1Api, ns: str, gang_scheduler: SchedulerProc,
    pool: Callable[..., list[str]],
) -> None:
    tag = pool.tag  # type: ignore[attr-defined]
    pool(1)
    create_group(api, ns, "huge", 2, minResources={"cpu": "100000"})
    for i in range(2):
        create_member(core, ns, f"huge-{i}", "huge", tag, cpu="100m")
    try:
        msg = wait_for(lambda: "minResources" in (m := message(core, ns, "huge-0")) and m, 60,
                       what="huge-0 rejected for minResources once both members exist")
    except AssertionError as exc:  # seen once in make test, never reproduced: keep what the scheduler did
        mine = [line for line in gang_scheduler.log_text().splitlines() if ns in line or "huge" in line]
        raise AssertionError(f"{exc}\nlast message: {message(core, ns, 'huge-0')!r}\n--- scheduler log lines about "
                             f"{ns} ---\n" + "\n".join(mine[-60:])) from None
    assert f'PodGroup "{ns}/huge" minResources' in msg and "cannot fit in the cluster: missing cpu" in msg, msg
    assert not any(bound(core, ns, "huge").values())


def test_bad_input_gets_a_message_and_blocks_nothing_else(
    api: client.ApiClient, core: client.CoreV1Api, ns: str, gang_scheduler: SchedulerProc,
    pool: Callable[..., list[str]],
) -> None:
    tag = pool.tag  # type: ignore[attr-defined]
    pool(1)
    create_group(api, ns, "zero", 0)
    create_member(core, ns, "zero-0", "zero", tag, cpu="100m")
    create_member(core, ns, "orphan", "missing", tag, cpu="100m")
    core.create_namespaced_pod(ns, pod_manifest("plain", scheduler_name=SCHED, node_selector={"gang-pool": tag}))
    wait_for(lambda: node_of(core, ns, "plain"), 60, what="a pod outside any group bound")
    # The PodGroup can reach the scheduler after its member (another watch): the first rejection may say the
    # group does not exist; the group's arrival requeues the pod with the message about its spec.
    invalid = f'PodGroup "{ns}/zero" is invalid: spec.minMember is 0: it must be at least 1'
    wait_for(lambda: invalid in message(core, ns, "zero-0"), 60, what="zero-0 rejected for its invalid group")
    msg = wait_for(lambda: message(core, ns, "orphan"), 60, what="orphan rejected")
    assert f'names PodGroup "{ns}/missing"' in msg and "does not exist" in msg, msg
    ev = client.EventsV1Api(api).list_namespaced_event(ns, field_selector="regarding.name=zero")
    assert any(e.reason == "InvalidPodGroup" for e in ev.items)


def test_podgroup_status_phases_are_observed_in_order(
    api: client.ApiClient, core: client.CoreV1Api, ns: str, gang_scheduler: SchedulerProc,
    pool: Callable[..., list[str]],
) -> None:
    tag = pool.tag  # type: ignore[attr-defined]
    pool(1)
    objs = client.CustomObjectsApi(api)
    phases: list[str] = []
    w = watch.Watch()
    rv = create_group(api, ns, "life", 2)["metadata"]["resourceVersion"]  # watch from the creation on
    for i in range(2):
        create_member(core, ns, f"life-{i}", "life", tag, cpu="100m")
    wait_for(lambda: all(bound(core, ns, "life").values()), 60, what="both members bound")
    wait_for(lambda: all(core.read_namespaced_pod(f"life-{i}", ns).status.phase == "Running" for i in range(2)),
             60, what="both members running")
    for i in range(2):
        core.patch_namespaced_pod_status(f"life-{i}", ns, {"status": {"phase": "Succeeded"}})
    last: dict[str, Any] = {}
    for ev in w.stream(objs.list_namespaced_custom_object, GROUP, VERSION, ns, PLURAL,
                       resource_version=rv, timeout_seconds=60):
        status = ev["object"].get("status") or {}
        phase = status.get("phase")
        if phase and (not phases or phases[-1] != phase):
            phases.append(phase)
        last = status
        if phase == "Finished":
            w.stop()
    assert phases == ["Pending", "Scheduling", "Scheduled", "Running", "Finished"], phases
    assert (last["scheduled"], last["succeeded"], last["failed"]) == (2, 2, 0)
    assert last.get("scheduleStartTime")

    def reasons() -> set[str]:
        return {e.reason for e in client.EventsV1Api(api).list_namespaced_event(
            ns, field_selector="regarding.name=life").items}

    # Events are posted by the recorder's own thread, after the status write the watch saw.
    wait_for(lambda: {"Scheduling", "Scheduled", "Finished"} <= reasons(), 30, what="the PodGroup's phase events")
