"""The API side of the DRA workloads: DeviceClass, ResourceSlices and claims through the API server.

Everything goes through the generic CustomObjectsApi (it speaks to built-in groups too), so the bench does
not depend on the client library knowing resource.k8s.io/v1.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from e2e.perf.workloads import (
    INIT_NAMESPACE,
    MEASURE_NAMESPACE,
    Dra,
    claim_allocation,
    device_class,
    resource_claim,
    resource_claim_template,
    resource_slice,
    shared_claims,
)

GROUP, VERSION = "resource.k8s.io", "v1"
WORKERS = 16


def _parallel(fn: Callable[[Any], None], items: Iterable[Any]) -> None:
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        list(pool.map(fn, items))


def plan_allocations(nodes: Sequence[str], devices: int, claims: int, seed: int = 0) -> list[tuple[int, int]]:
    """(node index, device index) for each of ``claims`` claims allocated without a pod: a random node with a
    free device, as upstream's allocResourceClaims picks, and its lowest free device. Seeded: every run of a
    size starts from the same cluster."""
    if claims > len(nodes) * devices:
        raise ValueError(f"{claims} claims do not fit {len(nodes)} nodes x {devices} devices")
    rng = random.Random(seed)
    used = [0] * len(nodes)
    free = list(range(len(nodes)))
    out = []
    for _ in range(claims):
        pick = rng.randrange(len(free))
        node = free[pick]
        out.append((node, used[node]))
        used[node] += 1
        if used[node] == devices:
            free[pick] = free[-1]
            free.pop()
    return out


def setup(api_client: Any, dra: Dra, nodes: Sequence[str]) -> None:
    """Once per size: the class, one slice per node, the claim template, and the claims allocated at set-up."""
    from kubernetes import client

    objs: Any = client.CustomObjectsApi(api_client)
    objs.create_cluster_custom_object(GROUP, VERSION, "deviceclasses", device_class())
    _parallel(lambda i: objs.create_cluster_custom_object(GROUP, VERSION, "resourceslices",
                                                          resource_slice(i, nodes[i], dra.devices)),
              range(len(nodes)))  # fmt: skip
    if dra.controllers:  # the template workload: claims made from the template by KCM
        objs.create_namespaced_custom_object(GROUP, VERSION, MEASURE_NAMESPACE, "resourceclaimtemplates",
                                             resource_claim_template(MEASURE_NAMESPACE))  # fmt: skip
    plan = plan_allocations(nodes, dra.devices, dra.allocated_claims(len(nodes)))

    def allocate(k: int) -> None:
        node, device = plan[k]
        claim = resource_claim(k, INIT_NAMESPACE)
        objs.create_namespaced_custom_object(GROUP, VERSION, INIT_NAMESPACE, "resourceclaims", claim)
        status = {"status": {"allocation": claim_allocation(nodes[node], f"resourceslice-{node}",
                                                            f"basic-device-{device}")}}  # fmt: skip
        objs.patch_namespaced_custom_object_status(GROUP, VERSION, INIT_NAMESPACE, "resourceclaims",
                                                   claim["metadata"]["name"], status)  # fmt: skip

    _parallel(allocate, range(len(plan)))


def create_run_claims(api_client: Any, dra: Dra, init_pods: int, pods: int) -> None:
    """Before each run of a shared-claim workload: the init pods' and the measured pods' claims, fresh."""
    from kubernetes import client

    if not dra.shared_claims:
        return
    objs: Any = client.CustomObjectsApi(api_client)
    todo = [(INIT_NAMESPACE, i) for i in range(shared_claims(init_pods))]
    todo += [(MEASURE_NAMESPACE, i) for i in range(shared_claims(pods))]
    _parallel(lambda t: objs.create_namespaced_custom_object(GROUP, VERSION, t[0], "resourceclaims",
                                                             resource_claim(t[1], t[0])), todo)  # fmt: skip


def _claims(objs: Any, namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = objs.list_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims",
                                                                     _request_timeout=120)["items"]  # fmt: skip
    return items


def allocated_claims(api_client: Any, namespace: str = MEASURE_NAMESPACE) -> tuple[int, int]:
    """(claims with an allocation and a consumer, all claims) in ``namespace``: after a run, the proof that
    the scheduler allocated what it bound."""
    from kubernetes import client

    items = _claims(client.CustomObjectsApi(api_client), namespace)
    done = sum(1 for c in items if (c.get("status") or {}).get("allocation") and c["status"].get("reservedFor"))
    return done, len(items)


def delete_run_claims(api_client: Any, dra: Dra, timeout: float = 300.0) -> None:
    """After a run (its pods gone): delete the claims the run allocated, dropping the scheduler's
    delete-protection finalizer (no controller deallocates the shared claims here), and wait until they are
    gone, so the next run starts with the set-up's free devices."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    objs: Any = client.CustomObjectsApi(api_client)
    namespaces = (INIT_NAMESPACE, MEASURE_NAMESPACE) if dra.shared_claims else (MEASURE_NAMESPACE,)

    def drop(ns_name: tuple[str, str]) -> None:
        ns, name = ns_name
        with contextlib.suppress(ApiException):  # 404: the resourceclaim controller was first
            objs.patch_namespaced_custom_object(GROUP, VERSION, ns, "resourceclaims", name,
                                                {"metadata": {"finalizers": None}})  # fmt: skip
            objs.delete_namespaced_custom_object(GROUP, VERSION, ns, "resourceclaims", name, grace_period_seconds=0)

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [(ns, c["metadata"]["name"]) for ns in namespaces for c in _claims(objs, ns)]
        if not left:
            return
        _parallel(drop, left)
        time.sleep(0.5)
    raise RuntimeError(f"claims of the previous run were not deleted in {timeout:.0f} s")
