"""Hand-made resource.k8s.io/v1 objects (JSON dicts, as the API server sends them) for the DRA tests."""

from __future__ import annotations

from typing import Any

from scheduler.model.dra import (
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    device_class_from_api,
    resource_claim_from_api,
    resource_slice_from_api,
)

DRIVER = "gpu.example.com"


def device(name: str, **fields: Any) -> dict[str, Any]:
    """A device; ``attrs`` is a dict of name -> value (str, bool, int or ("version", text))."""
    attrs = fields.pop("attrs", {})
    out: dict[str, Any] = {"name": name, **fields}
    if attrs:
        out["attributes"] = {k: _attr(v) for k, v in attrs.items()}
    return out


def _attr(v: Any) -> dict[str, Any]:
    if isinstance(v, tuple):
        return {v[0]: v[1]}
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    return {"string": v}


def slice_(name: str, devices: list[dict[str, Any]], node_name: str | None = "node-1", driver: str = DRIVER,
           pool: str = "pool-1", generation: int = 1, count: int = 1, **spec: Any) -> ResourceSlice:
    body: dict[str, Any] = {"driver": driver, "pool": {"name": pool, "generation": generation,
                                                       "resourceSliceCount": count}, "devices": devices, **spec}
    if node_name is not None:
        body["nodeName"] = node_name
    return resource_slice_from_api({"metadata": {"name": name}, "spec": body})


def device_class(name: str = "gpu", selectors: list[str] | None = None, config: list[Any] | None = None) -> DeviceClass:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in (selectors or [])]}
    if config is not None:
        spec["config"] = [{"opaque": {"driver": DRIVER, "parameters": p}} for p in config]
    return device_class_from_api({"metadata": {"name": name}, "spec": spec})


def exactly(device_class_name: str = "gpu", **fields: Any) -> dict[str, Any]:
    selectors = fields.pop("selectors", None)
    out = {"deviceClassName": device_class_name, **fields}
    if selectors:
        out["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return out


def claim(name: str = "claim", requests: list[dict[str, Any]] | None = None, **devices: Any) -> ResourceClaim:
    """A claim; requests default to one ``exactly`` request named ``req`` for one device of class gpu."""
    reqs = requests if requests is not None else [{"name": "req", "exactly": exactly()}]
    return resource_claim_from_api({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                                    "spec": {"devices": {"requests": reqs, **devices}}})
