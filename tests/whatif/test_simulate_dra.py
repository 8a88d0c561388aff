"""DRA in the what-if commands: ResourceSlices, DeviceClasses, ResourceClaims and ResourceClaimTemplates
in --cluster files; template claims made as the resourceclaim controller makes them; each pod's
allocated devices in table and JSON; capacity's copies each with their own claim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scheduler.app.cli import main
from scheduler.testing import make_pod
from scheduler.whatif.dra_offline import POD_CLAIM_ANNOTATION, generate_name, make_template_claims
from tests.builders import sched_node

DRIVER = "gpu.example.com"


def gpu_slice(node_name: str, *memory: str) -> dict[str, Any]:
    devices = [{"name": f"gpu-{i}", "capacity": {"memory": {"value": m}}} for i, m in enumerate(memory)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node_name}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


GPU_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def template(name: str, count: int = 1, selector: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"metadata": {"labels": {"app": "train"}},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}


def write(tmp_path: Path, name: str, objects: list[dict[str, Any]]) -> str:
    (tmp_path / name).write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return str(tmp_path / name)


def test_generate_name_as_the_controller() -> None:
    assert generate_name("web-0", "gpu") == "web-0-gpu-"
    long_pod, long_claim = "p" * 50, "c" * 30  # 82 characters: both cut in proportion to 57
    assert generate_name(long_pod, long_claim) == "p" * (50 * 57 // 82) + "-" + "c" * (30 * 57 // 82)


def test_template_claim_is_made_for_the_pod() -> None:
    p, claims = make_template_claims(make_pod().name("w").resource_claim("gpu", template="one").api(),
                                     {("default", "one"): template("one")})
    [claim] = claims
    name = claim["metadata"]["name"]
    assert name.startswith("w-gpu-") and len(name) == len("w-gpu-") + 5
    assert p["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": name}]
    assert claim["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "w", "uid": "uid-w",
                                                     "controller": True}]
    assert claim["metadata"]["annotations"] == {POD_CLAIM_ANNOTATION: "gpu"}
    assert claim["metadata"]["labels"] == {"app": "train"}
    assert claim["spec"] == template("one")["spec"]["spec"]
    # the same pod again: the same name (repeatable); a claim already named in the status is not made again
    assert make_template_claims(make_pod().name("w").resource_claim("gpu", template="one").api(),
                                {("default", "one"): template("one")})[1] == claims
    assert make_template_claims(p, {("default", "one"): template("one")}) == (p, [])
    # a missing template: no claim, no status (the pod waits for the controller)
    assert make_template_claims(make_pod().name("w").resource_claim("gpu", template="gone").api(),
                                {}) == (make_pod().name("w").resource_claim("gpu", template="gone").api(), [])


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], cluster: list[dict[str, Any]],
        pods: list[dict[str, Any]], *extra: str) -> tuple[int, str]:
    code = main(["--log-level", "ERROR", "simulate", "--cluster", write(tmp_path, "c.json", cluster),
                 "--pods", write(tmp_path, "p.json", pods), "--tie-break", "name", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return code, out


BIG = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("64Gi")) >= 0'
SHARED = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
          "metadata": {"name": "shared", "namespace": "default"},
          "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}
CLUSTER = [sched_node("n1", "8", "32Gi").api(), sched_node("n2", "8", "32Gi").api(), GPU_CLASS,
           gpu_slice("n1", "40Gi", "40Gi"), gpu_slice("n2", "80Gi"),
           template("one"), template("big", selector=BIG), SHARED]


def test_devices_in_json_and_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = [make_pod().name("large").resource_claim("gpu", template="big").api(),
            make_pod().name("a").resource_claim("gpu",
                                                template="one").api(), make_pod().name("b").resource_claim("gpu",
                                                                                                           template="one").api(),
            make_pod().name("c").resource_claim("gpu",
                                                template="one").api(), make_pod().name("s1").resource_claim("gpu",
                                                                                                            "shared").api()]
    _, out = run(tmp_path, capsys, CLUSTER, pods, "--output", "json")
    res = {r["pod"]: r for r in json.loads(out)["results"]}

    def devices(name: str) -> list[str]:
        return [f"{d['claim']}/{d['request']}: {d['driver']}/{d['pool']}/{d['device']}" for d in res[name]["devices"]]

    # only n2's 80Gi device passes the selector; then n1's two devices in slice order; then none is left
    assert res["default/large"]["node"] == "n2" and devices("default/large") == [f"gpu/gpu: {DRIVER}/n2/gpu-0"]
    assert devices("default/a") == [f"gpu/gpu: {DRIVER}/n1/gpu-0"]
    assert devices("default/b") == [f"gpu/gpu: {DRIVER}/n1/gpu-1"]
    assert res["default/c"]["node"] is None and res["default/c"]["devices"] == []
    assert res["default/c"]["filtered"]["n1"] == {"plugin": "DynamicResources", "reason": "cannot allocate all claims"}
    assert res["default/s1"]["node"] is None
    assert res["default/large"]["devices"][0]["resourceClaim"].startswith("large-gpu-")
    _, table = run(tmp_path, capsys, CLUSTER, pods[:2])
    assert f"    device gpu/gpu: {DRIVER}/n2/gpu-0" in table.splitlines()


def test_capacity_gives_each_copy_its_own_template_claim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--log-level", "ERROR", "capacity", "--cluster", write(tmp_path, "c.json", CLUSTER),
                 "--pod", write(tmp_path, "p.json",
                                [make_pod().name("w").resource_claim("gpu", template="one")
                                 .api()]), "--output", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["nodes"] == {"n1": 2, "n2": 1}


def test_explain_of_a_bound_pod_chooses_its_devices_afresh() -> None:
    """A bound pod is explained as if pending: its controller-made claim is kept (status.resourceClaimStatuses),
    with the allocation that was made for it alone taken back, so node and devices are decided again."""
    from scheduler.whatif.explain import explain, format_explain

    bound = make_pod().name("w").resource_claim("gpu", template="big").api()
    bound["spec"]["nodeName"] = "n2"
    bound["status"] = {"phase": "Running", "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "w-gpu-x"}]}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "w-gpu-x", "namespace": "default", "uid": "claim-uid",
                          "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "w", "uid": "uid-w",
                                               "controller": True}]},
             "spec": template("big", selector=BIG)["spec"]["spec"],
             "status": {"allocation": {"devices": {"results": [
                 {"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]}},
                 "reservedFor": [{"resource": "pods", "name": "w", "uid": "uid-w"}]}}
    cluster = [sched_node("n1", "8", "32Gi").api(), sched_node("n2", "8", "32Gi").api(), GPU_CLASS,
               gpu_slice("n1", "40Gi"), gpu_slice("n2", "80Gi"), claim, bound]
    r = explain(bound, cluster, None)
    assert r["node"] == "n2" and r["boundTo"] == "n2"
    assert r["devices"] == [{"claim": "gpu", "resourceClaim": "w-gpu-x", "request": "gpu", "driver": DRIVER,
                             "pool": "n2", "device": "gpu-0"}]
    assert r["filtered"]["n1"] == {"plugin": "DynamicResources", "reason": "cannot allocate all claims"}
    assert f"Device gpu/gpu: {DRIVER}/n2/gpu-0" in format_explain(r).splitlines()
