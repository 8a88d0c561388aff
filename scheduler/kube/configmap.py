"""Reading one ConfigMap: the Policy of ``--policy-configmap`` and the configuration of
``--config-configmap``. A GET of that single object, so the RBAC needed is ``get`` on that one name."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import orjson
from kubernetes.client import ApiException

from scheduler.kube.client import Requester


class ConfigMapError(Exception):
    """The ConfigMap or its key cannot be read; the message names namespace, name and key."""


def read_config_map_key(api: Requester, namespace: str, name: str, key: str) -> tuple[str, str]:
    """The value under ``key`` and the object's resourceVersion."""
    try:
        cm = orjson.loads(api.request("GET", f"/api/v1/namespaces/{quote(namespace)}/configmaps/{quote(name)}"))
    except ApiException as exc:
        raise ConfigMapError(f"cannot read ConfigMap {namespace}/{name}: {exc.status} {exc.reason}") from None
    data = cm.get("data") or {}
    if key not in data:
        raise ConfigMapError(f'ConfigMap {namespace}/{name} has no key "{key}"')
    return str(data[key]), str((cm.get("metadata") or {}).get("resourceVersion") or "")


def config_map_reader(api: Requester, namespace: str, name: str, key: str) -> Callable[[], tuple[str, str]]:
    """A reader of one key, versioned by the ConfigMap's resourceVersion (for the reloader)."""
    return lambda: read_config_map_key(api, namespace, name, key)
