"""The Pod view: host ports (util.GetHostPorts) and the affinity flags NodeInfo keeps lists by."""

from __future__ import annotations

from typing import Any

from scheduler.model.pod import HostPort, pod_from_api


def _pod(spec: dict[str, Any]) -> Any:
    return pod_from_api({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": spec})


def test_sidecar_init_containers_hold_host_ports_regular_ones_do_not() -> None:
    pod = _pod({
        "initContainers": [
            {"name": "init", "ports": [{"containerPort": 1, "hostPort": 7001}]},
            {"name": "sidecar", "restartPolicy": "Always",
             "ports": [{"containerPort": 2, "hostPort": 7002, "protocol": "UDP", "hostIP": "10.0.0.1"}]},
        ],
        "containers": [{"name": "app", "ports": [{"containerPort": 3, "hostPort": 7003}, {"containerPort": 4}]}],
    })
    assert pod.host_ports == (HostPort("10.0.0.1", "UDP", 7002), HostPort("0.0.0.0", "TCP", 7003))


def test_empty_pod_affinity_counts_as_having_affinity() -> None:
    """podWithAffinity tests the PodAffinity / PodAntiAffinity pointers: ``{}`` is set."""
    assert _pod({"containers": [], "affinity": {"podAffinity": {}}}).has_affinity
    assert _pod({"containers": [], "affinity": {"podAntiAffinity": {}}}).has_affinity
    assert not _pod({"containers": [], "affinity": {"nodeAffinity": {}}}).has_affinity
    assert not _pod({"containers": [], "affinity": {"podAntiAffinity": {}}}).has_required_anti_affinity
