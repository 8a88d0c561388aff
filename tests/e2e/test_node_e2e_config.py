"""The pure parts of e2e-node (e2e/node): flag overrides of the local control plane, the node's
configuration files, the overlay that deploys manifests/ with the local image, and the check helpers.
The node itself runs in `make e2e-node`."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from e2e.cluster.cluster import override_flags
from e2e.node import checks, host
from e2e.node.run import CLUSTER_FLAGS
from scheduler.whatif.simulate import run_simulation


def test_override_flags_replaces_in_place_removes_and_appends() -> None:
    args = ["--a=1", "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition", "--b=2", "positional"]
    out = override_flags(args, {"disable-admission-plugins": "TaintNodesByCondition", "b": None, "c": "3"})
    assert out == ["--a=1", "--disable-admission-plugins=TaintNodesByCondition", "positional", "--c=3"]


def test_cluster_flags_let_pods_reach_the_api_server_and_keep_kwok_off_the_kubelet() -> None:
    apiserver = override_flags(["--bind-address=127.0.0.1", "--endpoint-reconciler-type=none"],
                               CLUSTER_FLAGS["kube-apiserver"])  # fmt: skip
    assert "--bind-address=0.0.0.0" in apiserver and "--endpoint-reconciler-type=lease" in apiserver
    assert f"--advertise-address={host.NODE_IP}" in apiserver
    assert not any("ServiceAccount" in a for a in apiserver)
    kwok = override_flags(["--kubeconfig=k", "--manage-all-nodes=true"], CLUSTER_FLAGS["kwok"])
    assert kwok == ["--kubeconfig=k", "--manage-nodes-with-label-selector=type=kwok"]


def test_kubelet_config_for_a_cgroup_v1_host_without_systemd(tmp_path: Path) -> None:
    cfg = host.kubelet_config(tmp_path / "c.sock", tmp_path / "logs")
    assert cfg["failCgroupV1"] is False and cfg["cgroupDriver"] == "cgroupfs"
    assert cfg["containerRuntimeEndpoint"] == f"unix://{tmp_path / 'c.sock'}"
    assert cfg["address"] == host.NODE_IP and cfg["readOnlyPort"] == 0
    assert cfg["podLogsDir"] == str(tmp_path / "logs")


def test_containerd_and_cni_keep_their_state_under_the_state_dir(tmp_path: Path) -> None:
    toml = host.containerd_config(tmp_path, tmp_path / "run" / "containerd.sock")
    assert f'root = "{tmp_path}/containerd/root"' in toml and f'sandbox_image = "{host.PAUSE_IMAGE}"' in toml
    assert "SystemdCgroup = false" in toml
    cni = json.loads(json.dumps(host.cni_config(tmp_path / "ipam")))
    bridge = cni["plugins"][0]
    assert bridge["bridge"] == host.BRIDGE and bridge["ipMasq"] is False
    assert bridge["ipam"]["ranges"] == [[{"subnet": host.POD_SUBNET}]]
    assert bridge["ipam"]["dataDir"] == str(tmp_path / "ipam")




def test_sample_sums_one_series_by_label() -> None:
    text = (
        "# TYPE scheduler_schedule_attempts counter\n"
        'scheduler_schedule_attempts_total{profile="py-scheduler",result="scheduled"} 200.0\n'
        'scheduler_schedule_attempts_total{profile="py-scheduler",result="error"} 1.0\n'
        "scheduler_schedule_attempts_created 1.7e9\n"
    )
    assert checks.sample(text, "scheduler_schedule_attempts_total") == 201.0
    assert checks.sample(text, "scheduler_schedule_attempts_total", 'result="scheduled"') == 200.0


def test_workload_pods_tolerate_kwok_and_prefer_the_target_only_when_asked() -> None:
    plain, probe = checks.workload_pod("a"), checks.workload_pod("b", prefer_target=True)
    assert plain["spec"]["schedulerName"] == "py-scheduler" and "affinity" not in plain["spec"]
    assert plain["spec"]["tolerations"][0]["key"] == checks.KWOK_TAINT["key"]
    pref = probe["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert pref[0]["preference"]["matchExpressions"][0]["key"] == checks.TARGET_LABEL[0]


def test_reload_scenario_is_decided_by_the_weight_with_wide_margins(tmp_path: Path) -> None:
    """checks.py's arithmetic, recomputed by the scheduler core on the same kwok nodes and pods (300
    workload pods, then the probe), with a 16-core real node beside them: the probe's target loses by
    more than 90 with the default weights and wins by more than 700 with the reloaded NodeAffinity weight;
    no workload pod goes to the real node."""
    real = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": host.NODE_NAME},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}  # fmt: skip
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"kind": "List", "items": [*checks.kwok_nodes(10), real]}))
    pods = [checks.workload_pod(f"w-{i}") for i in range(300)] + [checks.workload_pod("probe", prefer_target=True)]
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    profile: dict[str, object] = {"schedulerName": checks.SCHEDULER_NAME}
    margins = []
    for name, plugins in (("default", None), ("weighted", checks.RELOAD_PLUGINS)):
        config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                  "profiles": [{**profile, **({"plugins": plugins} if plugins else {})}]}  # fmt: skip
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(config))
        results = run_simulation(str(tmp_path / "cluster.yaml"), str(tmp_path / "pods.yaml"),
                                 str(tmp_path / f"{name}.yaml")).results  # fmt: skip
        assert {r["node"] for r in results[:300]} <= {f"kwok-{i}" for i in range(10)}
        totals = {node: sum(s["weighted"] for s in scores.values())
                  for node, scores in results[-1]["score_details"].items()}  # fmt: skip
        target = totals.pop(checks.TARGET_NODE)
        margins.append(target - max(totals.values()))
    assert margins[0] < -90 and margins[1] > 700, margins
