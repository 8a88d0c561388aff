"""NodeInfo.clone: filled slot by slot, so a field added to NodeInfo must be copied there too."""

from dataclasses import fields

from scheduler.framework.types import ImageStateSummary, NodeInfo
from scheduler.model.node import node_from_api
from scheduler.model.pod import pod_from_api

# Shared with the original on purpose: read-only for clones (the node view, its allocatable, the image summaries
# frozen by the snapshot's clone).
SHARED = {"node", "allocatable", "image_states"}


def _node_info() -> NodeInfo:
    node = node_from_api({"metadata": {"name": "n1", "labels": {"zone": "a"}},
                          "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    info = NodeInfo(node)
    info.allocatable = node.allocatable
    for i, affinity in enumerate([{}, {"podAffinity": {}}, {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]}}]):
        info.add_pod(pod_from_api({
            "metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}"},
            "spec": {"nodeName": "n1", "affinity": affinity, "volumes": [
                {"name": "v", "persistentVolumeClaim": {"claimName": f"c{i}"}}], "containers": [{
                    "name": "c", "resources": {"requests": {"cpu": "1", "example.com/gpu": "1"}},
                    "ports": [{"containerPort": 80 + i, "hostPort": 80 + i}]}]},
        }))
    info.image_states = {"img": ImageStateSummary(10, 1)}
    return info


def test_clone_copies_every_field_and_shares_only_read_only_ones() -> None:
    info = _node_info()
    assert info.pods_with_affinity and info.pods_with_required_anti_affinity and info.used_ports
    assert info.pvc_ref_counts and info.requested.scalar
    clone = info.clone()
    for f in fields(NodeInfo):
        original, copied = getattr(info, f.name), getattr(clone, f.name)
        assert copied == original, f.name
        if f.name in SHARED:
            assert copied is original, f.name
        elif isinstance(original, (dict, list, set)) or hasattr(original, "scalar"):
            assert copied is not original, f.name
    assert clone.name == "n1"
    assert all(clone.used_ports[ip] is not ports for ip, ports in info.used_ports.items())
    assert clone.requested.scalar is not info.requested.scalar


def test_a_mutated_clone_leaves_the_original_as_it_was() -> None:
    info = _node_info()
    before = {f.name: repr(getattr(info, f.name)) for f in fields(NodeInfo)}
    clone = info.clone()
    clone.add_pod(pod_from_api({"metadata": {"name": "q", "namespace": "ns", "uid": "uq"}, "spec": {
        "nodeName": "n1", "affinity": {"podAffinity": {}}, "containers": [{
            "name": "c", "resources": {"requests": {"cpu": "1", "example.com/gpu": "1"}},
            "ports": [{"containerPort": 80, "hostPort": 90}]}]}}))
    clone.remove_pod(next(iter(info.pods.values())))
    assert {f.name: repr(getattr(info, f.name)) for f in fields(NodeInfo)} == before
