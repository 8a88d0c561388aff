"""simulate's stand-ins (scheduler.whatif.offline): the OfflineWriter answers the core's writes with the
watch events the API server and the controllers would send; without any writer the writes fail."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.config.load import build_registry, load_dict
from scheduler.eventhandlers import ADDED
from scheduler.framework.status import Code
from scheduler.model.apierrors import NotFoundError
from scheduler.model.pod import pod_from_api
from scheduler.plugins.helper.volume_util import ANN_SELECTED_NODE
from scheduler.scheduler import Scheduler
from scheduler.whatif.offline import OfflineWriter, RecordingBinder, RecordingEventSink
from tests.builders import api_node, api_pod


def scheduler(writer: OfflineWriter | None) -> Scheduler:
    cfg = load_dict({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "profiles": [{"schedulerName": "py-scheduler"}]})
    s = Scheduler(cfg, build_registry(cfg), RecordingBinder(), RecordingEventSink(), None, writer=writer,
                  synchronous_binding=True, rng=random.Random(1), tie_break="name")
    if writer is not None:
        writer.connect(s)
    return s


def test_status_patch_merges_conditions_by_type_and_removes_null_fields() -> None:
    w = OfflineWriter()
    s = scheduler(w)
    s.on_node_event(ADDED, api_node("n1"))
    obj = api_pod("v", node_name="n1")
    obj["status"] = {"nominatedNodeName": "n1", "conditions": [{"type": "Ready", "status": "True"}]}
    s.on_pod_event(ADDED, obj)
    w.patch_pod_status("default", "v", {"status": {"nominatedNodeName": None, "conditions": [
        {"type": "DisruptionTarget", "status": "True"}, {"type": "Ready", "status": "False"}]}})
    cached = s.cache.get_pod("uid-v")
    assert cached is not None
    status: dict[str, Any] = cached.raw["status"]
    assert status == {"conditions": [{"type": "Ready", "status": "False"},
                                     {"type": "DisruptionTarget", "status": "True"}]}
    assert cached.resource_version == "2"


def test_deletion_is_delivered_and_unknown_pods_are_not_found() -> None:
    w = OfflineWriter()
    s = scheduler(w)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, api_pod("v", node_name="n1"))
    w.delete_pod("default", "v")
    assert s.cache.pod_count() == 0
    with pytest.raises(NotFoundError) as err:
        w.delete_pod("default", "v")
    assert err.value.status == 404


def test_a_claim_update_is_followed_by_the_provisioner_and_pv_controller() -> None:
    w = OfflineWriter()
    s = scheduler(w)
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "c", "namespace": "default", "uid": "uid-c", "resourceVersion": "1",
                          "annotations": {ANN_SELECTED_NODE: "n1"}},
             "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}}}
    written = w.update_object("PersistentVolumeClaim", claim)
    assert written["metadata"]["resourceVersion"] == "2"
    stored = s.objects.get("PersistentVolumeClaim", "default", "c")
    assert stored is not None and stored["spec"]["volumeName"] == "pvc-uid-c"
    assert s.objects.get("PersistentVolume", "", "pvc-uid-c") is not None


def test_without_a_writer_the_core_writes_fail_with_an_error_status() -> None:
    s = scheduler(None)
    s.on_node_event(ADDED, api_node("n1"))
    s.on_pod_event(ADDED, api_pod("v", node_name="n1"))
    victim, preemptor = pod_from_api(api_pod("v", node_name="n1")), pod_from_api(api_pod("p", priority=9))
    status = s.preempt(victim, preemptor, "n1", "DefaultPreemption")
    assert status is not None and status.code == Code.ERROR and "no API writer" in status.message
    assert s.cache.pod_count() == 1, "nothing was evicted"
    cleared = s.clear_nominated_node(pod_from_api({**api_pod("q"), "status": {"nominatedNodeName": "n1"}}))
    assert cleared is not None and cleared.code == Code.ERROR
