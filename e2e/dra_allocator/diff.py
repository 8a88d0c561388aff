"""Differential test of the DRA allocator: py-scheduler's against upstream's Go library, same inputs.

Each seed builds random cases: ResourceSlices for one node (1-3 pools of two drivers; per-node,
all-nodes, node-selector and per-device node selection slices; incomplete pools, older generations,
duplicate device names, shared counters, taints, binding conditions, devices that allow multiple
allocations with request policies), two DeviceClasses (one with a selector and a configuration)
and 1-2 claims (ExactCount and All requests, ``firstAvailable``, selectors, tolerations, capacity
requests, admin access, ``matchAttribute``/``distinctAttribute`` constraints, claim configuration),
and some devices already allocated, exclusively or shared with consumed capacity. ``main.go``
beside this file runs ``k8s.io/dynamic-resource-allocation@v0.37.2``'s ``structured`` allocator
with kube-scheduler v1.37.2's default features; both must give the same devices per request (and
consumed capacity), the same node selectors and configuration, or the same error text.

With ``--cel`` it compares selector evaluations instead: each of ``CEL_EXPRESSIONS`` against random
devices, the result or the compile/run-time error text (the known differences, listed in
docs/dra.md, show up there by design).

``python -m e2e.dra_allocator.diff --seed 1 --cases 500`` (needs Go; the first run builds the
program into ~/.cache/py-scheduler/, fetching its modules through the Go module proxy).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from kubernetes.utils import parse_quantity

from scheduler.model.dra import device_class_from_api, resource_claim_from_api, resource_slice_from_api
from scheduler.model.node import node_from_api
from scheduler.plugins.helper.dynamicresources.allocator import AllocatedState, AllocationError, Allocator
from scheduler.plugins.helper.dynamicresources.cel import CelCache, CelDevice, CelRuntimeError, compile_selector

HERE = Path(__file__).resolve().parent
BINARY = Path.home() / ".cache" / "py-scheduler" / "dra-allocator-v0.37.2" / "dra-allocator"
SELECTORS = (
    'device.attributes["a.example.com"].model == "x"',
    'device.attributes["numa.example.com"].node == 1',
    'device.capacity["a.example.com"].memory.compareTo(quantity("8Gi")) >= 0',
    'has(device.attributes["a.example.com"].model)',
    'device.driver == "b.example.com"',
    'device.attributes["a.example.com"].model.startsWith("y")',
    'device.attributes["a.example.com"].model == "x" || device.attributes["numa.example.com"].node == 0',
    'device.attributes["a.example.com"].?version.orValue(semver("0.0.1")).isGreaterThan(semver("1.0.0"))',
    'device.attributes["a.example.com"].version.major() >= 2',
    'device.attributes["a.example.com"].model.upperAscii() in ["X", "YZ"]',
    '[1, 2, 3].sum() == device.attributes["numa.example.com"].node + 6',
    'device.capacity["a.example.com"].memory.isLessThan(quantity("10Gi")) && device.allowMultipleAllocations',
    'cel.bind(m, device.attributes["a.example.com"], has(m.model) && m.model.size() > 1)',
    'device.attributes["missing.example.com"].x == 1',
    'device.attributes["a.example.com"].model + 1 == 2',
)
Case = dict[str, Any]


def build() -> Path:
    """The Go program, built when missing or older than its source (``go build``, module proxy as configured)."""
    sources = [HERE / "main.go", HERE / "go.mod", HERE / "go.sum"]
    if not BINARY.exists() or BINARY.stat().st_mtime < max(p.stat().st_mtime for p in sources):
        BINARY.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, CGO_ENABLED="0")
        subprocess.run(["go", "build", "-o", str(BINARY), "."], cwd=HERE, env=env, check=True)
    return BINARY


def _device(rng: random.Random, name: str, partitioned: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name if rng.random() < 0.95 else "dup", "attributes": {}}
    if rng.random() < 0.98:
        d["attributes"]["a.example.com/model"] = {"string": rng.choice(["x", "y", "yz"])}
    if rng.random() < 0.98:
        d["attributes"]["numa.example.com/node"] = {"int": rng.randint(0, 1)}
    if rng.random() < 0.5:
        d["attributes"]["a.example.com/version"] = {"version": rng.choice(["1.0.0", "2.1.0-rc.1", "0.9.9"])}
    if rng.random() < 0.9:
        d["capacity"] = {"a.example.com/memory": {"value": f"{rng.choice([4, 8, 16])}Gi"}}
    if rng.random() < 0.15:
        d["taints"] = [{"key": rng.choice(["t1", "t2"]), "effect": rng.choice(["NoSchedule", "NoExecute", "None"])}]
    if rng.random() < 0.08:
        d["bindingConditions"] = ["ready"]
    if rng.random() < 0.15:
        d["allowMultipleAllocations"] = True
        d["capacity"] = {"a.example.com/memory": {"value": "16Gi", **_policy(rng)}}
        if rng.random() < 0.5:
            d["capacity"]["a.example.com/cores"] = {"value": "4", "requestPolicy": {
                "default": "1", "validRange": {"min": "100m", "step": rng.choice(["100m", "250m", "1"])}}}
    if partitioned:
        d["consumesCounters"] = [{"counterSet": "cs", "counters": {"mem": {"value": f"{rng.choice([2, 4])}Gi"}}}]
    if not d["attributes"]:
        del d["attributes"]
    return d


def _policy(rng: random.Random) -> dict[str, Any]:
    """A request policy for a shared capacity, or none."""
    r = rng.random()
    if r < 0.3:
        return {}
    if r < 0.6:
        return {"requestPolicy": {"default": "1Gi", "validRange": {
            "min": "1Gi", "max": rng.choice(["8Gi", "16Gi"]), "step": rng.choice(["1Gi", "512Mi", "3Gi"])}}}
    if r < 0.8:
        return {"requestPolicy": {"default": "2Gi", "validValues": ["2Gi", "4Gi", "8Gi"]}}
    return {"requestPolicy": {"validRange": {"min": "2Gi"}}}


def _rack_selector(rng: random.Random) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "rack", "operator": "In", "values": [rng.choice(["r1", "r2"])]}]}]}


def _node_selection(rng: random.Random, device: dict[str, Any]) -> None:
    """Per-device node selection (partitionable devices): a node name, all nodes or a selector."""
    r = rng.random()
    if r < 0.4:
        device["nodeName"] = rng.choice(["node-1", "node-2"])
    elif r < 0.7:
        device["allNodes"] = True
    else:
        device["nodeSelector"] = _rack_selector(rng)
    if rng.random() < 0.2:
        device["bindsToNode"] = True


def _slices(rng: random.Random) -> list[dict[str, Any]]:
    slices = []
    for pi in range(rng.randint(1, 3)):
        driver, pool = rng.choice(["a.example.com", "b.example.com"]), f"pool-{pi}"
        n = rng.randint(1, 2)
        count = n if rng.random() < 0.93 else n + 1
        generation = rng.randint(1, 2)
        partitioned = rng.random() < 0.2
        for si in range(n):
            spec: dict[str, Any] = {
                "driver": driver, "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
                "devices": [_device(rng, f"d{pi}{si}{di}", partitioned) for di in range(rng.randint(1, 6))]}
            r = rng.random()
            if r < 0.55:
                spec["nodeName"] = rng.choice(["node-1", "node-1", "node-2"])
            elif r < 0.75:
                spec["allNodes"] = True
            elif r < 0.9:
                spec["nodeSelector"] = _rack_selector(rng)
            else:
                spec["perDeviceNodeSelection"] = True
                for d in spec["devices"]:
                    _node_selection(rng, d)
            if partitioned and si == 0:
                spec["sharedCounters"] = [{"name": "cs", "counters": {"mem": {"value": "8Gi"}}}]
            slices.append({"metadata": {"name": f"s-{driver[0]}-{pi}-{si}-{rng.randint(0, 9)}"}, "spec": spec})
    return slices


def _sub_request(rng: random.Random, name: str) -> dict[str, Any]:
    s: dict[str, Any] = {"name": name, "deviceClassName": rng.choice(["any", "any", "modelx"])
                         if rng.random() < 0.99 else "missing"}
    if rng.random() < 0.15:
        s["allocationMode"] = "All"
    else:
        s["count"] = rng.choice([1, 1, 2, 3])
    if rng.random() < 0.4:
        s["selectors"] = [{"cel": {"expression": rng.choice(SELECTORS)}}]
    if rng.random() < 0.15:
        s["tolerations"] = [{"key": rng.choice(["t1", "t2"]), "operator": "Exists"}]
    if rng.random() < 0.15:
        memory = rng.choice(["2Gi", "4Gi", "8Gi", "3Gi", "1500Mi", "9Gi"])
        s["capacity"] = {"requests": {"a.example.com/memory": memory}}
        if rng.random() < 0.4:
            s["capacity"]["requests"]["a.example.com/cores"] = rng.choice(["250m", "1", "1500m", "3"])
    return s


def _claim(rng: random.Random, name: str) -> dict[str, Any]:
    requests = []
    for ri in range(rng.randint(1, 2)):
        if rng.random() < 0.25:
            requests.append({"name": f"r{ri}", "firstAvailable": [_sub_request(rng, f"s{k}")
                                                                  for k in range(rng.randint(1, 3))]})
            continue
        exact = _sub_request(rng, "")
        exact.pop("name")
        if rng.random() < 0.1:
            exact["adminAccess"] = True
        requests.append({"name": f"r{ri}", "exactly": exact})
    devices: dict[str, Any] = {"requests": requests}
    if rng.random() < 0.3:
        devices["constraints"] = [{rng.choice(["matchAttribute", "distinctAttribute"]):
                                   rng.choice(["numa.example.com/node", "a.example.com/model"])}]
    if rng.random() < 0.3:
        devices["config"] = [{"requests": [requests[0]["name"]],
                              "opaque": {"driver": "a.example.com", "parameters": {"c": 1}}}]
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": {"devices": devices}}


def generate(rng: random.Random) -> Case:
    """One random case (see the module docstring)."""
    slices = _slices(rng)
    classes = [{"metadata": {"name": "any"}, "spec": {}},
               {"metadata": {"name": "modelx"}, "spec": {
                   "selectors": [{"cel": {"expression": SELECTORS[0]}}],
                   "config": [{"opaque": {"driver": "a.example.com", "parameters": {"k": 1}}}]}}]
    devices = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
               for s in slices for d in s["spec"]["devices"]]
    shareable = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
                 for s in slices for d in s["spec"]["devices"] if d.get("allowMultipleAllocations")]
    return {
        "node": {"metadata": {"name": "node-1", "uid": "n1", "labels": {"rack": rng.choice(["r1", "r2"])}},
                 "status": {"allocatable": {"pods": "10"}}},
        "slices": slices, "classes": classes,
        "claims": [_claim(rng, f"c{i}") for i in range(rng.randint(1, 2))],
        "allocated": [list(d) for d in devices if rng.random() < 0.2],
        "shared": [{"device": list(d), "shareID": f"share-{i}",
                    "consumed": {"a.example.com/memory": f"{rng.choice([4, 8])}Gi"}}
                   for i, d in enumerate(shareable) if rng.random() < 0.5],
    }


def api_defaults(claim: dict[str, Any]) -> dict[str, Any]:
    """What the API server's defaulting adds to a claim (the Go library expects defaulted objects)."""
    claim = copy.deepcopy(claim)
    for r in claim["spec"]["devices"]["requests"]:
        for sub in ([r["exactly"]] if "exactly" in r else []) + r.get("firstAvailable", []):
            sub.setdefault("allocationMode", "ExactCount")
            if sub["allocationMode"] == "ExactCount":
                sub.setdefault("count", 1)
            for t in sub.get("tolerations", []):
                t.setdefault("operator", "Equal")
    return claim


Outcome = tuple[Any, str | None, Any]


def ours(case: Case) -> Outcome:
    """(devices per claim, error, (node selector, configs) per claim) from py-scheduler's allocator."""
    state = AllocatedState({(a[0], a[1], a[2]) for a in case["allocated"]})
    for use in case.get("shared", []):
        did = (use["device"][0], use["device"][1], use["device"][2])
        state.shared_device_ids.add((did, use["shareID"]))
        agg = state.aggregated_capacity.setdefault(did, {})
        for name, q in use["consumed"].items():
            agg[name] = agg.get(name, Decimal(0)) + parse_quantity(q)
    allocator = Allocator(state,
                          {c["metadata"]["name"]: device_class_from_api(c) for c in case["classes"]},
                          [resource_slice_from_api(s) for s in case["slices"]], CelCache())
    try:
        results = allocator.allocate(node_from_api(case["node"]), [resource_claim_from_api(c) for c in case["claims"]])
    except AllocationError as exc:
        return None, str(exc), None
    if results is None:
        return None, None, None
    return ([[(r.request, f"{r.driver}/{r.pool}/{r.device}", r.consumed_capacity or None) for r in x.results]
             for x in results], None,
            [(x.node_selector, [(c.source, list(c.requests), c.config.parameters) for c in x.config])
             for x in results])


def theirs(answer: dict[str, Any]) -> Outcome:
    """The same shape from the Go program's answer."""
    if "error" in answer:
        return None, answer["error"], None
    if answer["results"] is None:
        return None, None, None
    results = answer["results"]
    return ([[(r["request"], f'{r["driver"]}/{r["pool"]}/{r["device"]}', _quantities(r.get("consumedCapacity")))
              for r in x["devices"].get("results", [])] for x in results], None,
            [(x.get("nodeSelector"), [(c["source"], c.get("requests") or [], c["opaque"]["parameters"])
                                      for c in x["devices"].get("config", [])]) for x in results])


def _quantities(raw: dict[str, str] | None) -> dict[str, Decimal] | None:
    return {k: Decimal(parse_quantity(v)) for k, v in raw.items()} if raw else None


def run(seed: int, n: int, show: int = 5) -> int:
    """Compare ``n`` cases of ``seed``; print the first differences and a summary; return how many differ."""
    rng = random.Random(seed)
    cases = {str(i): generate(rng) for i in range(n)}
    go_input = {k: dict(v, claims=[api_defaults(c) for c in v["claims"]]) for k, v in cases.items()}
    proc = subprocess.run([str(build())], input=json.dumps(go_input), capture_output=True, text=True, check=True)
    answers = json.loads(proc.stdout)
    differ = 0
    kinds = {"allocated": 0, "unschedulable": 0, "error": 0}
    for k, case in cases.items():
        mine, upstream = ours(case), theirs(answers[k])
        kinds["error" if upstream[1] else "unschedulable" if upstream[0] is None else "allocated"] += 1
        if mine != upstream:
            differ += 1
            if differ <= show:
                print(f"case {k} differs\n  input: {json.dumps(case)}\n  py-scheduler: {mine}\n  upstream: {upstream}")
    print(f"seed {seed}: {n} cases ({kinds}), {differ} differ")
    return differ


CEL_EXPRESSIONS = (
    *SELECTORS,
    'device.driver == 1',
    'device.foo == 1',
    'device.attributes["a.example.com"].model + 1 == 2',
    'device.attributes["a.example.com"].nothing',
    'device.attributes["a.example.com"].version.isGreaterThan(semver("1.0.0-alpha"))',
    'device.attributes["a.example.com"].version == semver("1.0.0")',
    'semver("1.2.3").patch() == 3 && semver("1.2", true).minor() == 2',
    'isSemver("1.0") || isSemver("v1.0.0") || !isSemver("1.0.0")',
    'semver("x.y.z") == semver("1.0.0")',
    'quantity("1.5Gi").isInteger() && quantity("100m").asApproximateFloat() == 0.1',
    'quantity("5") == quantity("5000m") && quantity("1k").add(quantity("24")).asInteger() == 1024',
    'quantity("1e3").compareTo(quantity("1k")) == 0',
    'quantity("abc") == quantity("1")',
    'quantity(" 1") == quantity("1")',
    'quantity("1.5").asInteger() == 1',
    'device.capacity["a.example.com"].memory.sign() == 1',
    '"Hello".lowerAscii() == "hello" && "a-b".replace("-", "") == "ab" && "abc".substring(1) == "bc"',
    '" x ".trim() == "x" && ["a", "b"].join("-") == "a-b" && "abc".charAt(1) == "b"',
    '"abc".lastIndexOf("c") == 2 && "x".upperAscii() == "X"',
    '[1, 2, 3].max() == 3 && [1.5, 0.5].min() == 0.5 && ["b", "a"].isSorted() == false',
    '[1, 2].sum() == 3 && [].sum() == 0',
    '[].min() == 0',
    '"a1b2".find("[0-9]") == "1" && "a1b2".findAll("[0-9]", 1) == ["1"]',
    'sets.contains(["a"], ["a"]) && !sets.intersects([1], [2])',
    'device.attributes["a.example.com"].?model.orValue("none") != "none"',
    'has(device.attributes["a.example.com"].model) ? device.attributes["a.example.com"].model.size() > 0 : false',
    'device.attributes["numa.example.com"].node / 0 == 1',
    'device.attributes["numa.example.com"].node % 0 == 1',
    '[1, 2][5] == 1',
    'int("x") == 1',
    'device.attributes.exists(d, d == "a.example.com")',
    '"a.example.com" in device.attributes',
    'size(device.attributes) >= 0',
    'device.attributes["a.example.com"].model.matches("^[xy]")',
    'timestamp("2024-01-01T00:00:00Z") < timestamp("2025-01-01T00:00:00Z")',
    'duration("1h") > duration("1m")',
    '1 == 1.0',
    'dyn(1) == 1u',
    'device.attributes["a.example.com"].model',
    'ip("10.0.0.1").family() == 4',
    'url("https://x").getHost() == "x"',
    '"%s-%d".format(["a", 1]) == "a-1"',
    '[1, "a"].size() == 2',
)


def cel_cases(rng: random.Random, n: int) -> dict[str, dict[str, Any]]:
    """Each curated expression against random devices (as in the allocator cases)."""
    cases = {}
    for i in range(n):
        dev = _device(rng, f"d{i}", False)
        cases[str(i)] = {"expression": CEL_EXPRESSIONS[i % len(CEL_EXPRESSIONS)], "device": dev,
                         "driver": rng.choice(["a.example.com", "b.example.com"])}
    return cases


def ours_cel(case: dict[str, Any]) -> dict[str, Any]:
    """The same answer shape as the Go program's -cel mode."""
    s = resource_slice_from_api({"metadata": {"name": "s"}, "spec": {"driver": case["driver"], "pool": {"name": "p"},
                                                     "devices": [case["device"]]}})
    compiled = compile_selector(case["expression"])
    if compiled.error is not None:
        return {"compileError": compiled.error}
    d = s.devices[0]
    try:
        return {"matches": compiled.device_matches(CelDevice(case["driver"], d.attributes, d.capacity,
                                                             d.allow_multiple_allocations))}
    except CelRuntimeError as exc:
        return {"runtimeError": str(exc)}


def run_cel(seed: int, n: int) -> int:
    """Compare selector outcomes; print every expression whose outcome differs once."""
    cases = cel_cases(random.Random(seed), n)
    proc = subprocess.run([str(build()), "-cel"], input=json.dumps(cases), capture_output=True, text=True, check=True)
    answers = json.loads(proc.stdout)
    differ, shown = 0, set()
    for k, case in cases.items():
        mine, upstream = ours_cel(case), answers[k]
        if mine != upstream:
            differ += 1
            if case["expression"] not in shown:
                shown.add(case["expression"])
                print(f"{case['expression']}\n  py-scheduler: {mine}\n  upstream: {upstream}")
    print(f"seed {seed}: {n} selector evaluations, {differ} differ ({len(shown)} expressions)")
    return differ


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1, help="first random seed")
    ap.add_argument("--seeds", type=int, default=1, help="how many seeds, from --seed on")
    ap.add_argument("--cases", type=int, default=500, help="cases per seed")
    ap.add_argument("--cel", action="store_true", help="compare selector evaluations instead of allocations")
    args = ap.parse_args()
    one = run_cel if args.cel else run
    differ = sum(one(s, args.cases) for s in range(args.seed, args.seed + args.seeds))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
