"""A read-only snapshot of the live cluster for `explain`, `capacity` and `simulate --from-cluster`.

It lists what the live scheduler lists at start-up (kube/sync.py, with the same paginated LIST):
nodes, non-terminal pods and the objects plugins read (OBJECT_KINDS), plus the kinds the live scheduler
watches behind a feature gate (the Workload API's PodGroups) when the API server serves them, which it does
only with the same gate: discovery says so, and a cluster without them reads as before. GET requests only,
so the read-only ClusterRole in manifests/readonly/ is enough. Every failure becomes one ClusterReadError line
that names the cause: the missing permission (verb, resource, API group), the unknown pod, or the
unreachable server.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException

from scheduler.kube.client import RawApi, Requester, list_all, load_api_client, pod_path, served_resources
from scheduler.kube.kinds import NON_TERMINAL_PODS, OBJECT_KINDS, WATCHED_KINDS, WatchedKind, collection_path
from scheduler.model.apierrors import NotFoundError
from scheduler.model.workload import API_VERSION, KIND_POD_GROUP

NODES = ("", "v1", "nodes")
PODS = ("", "v1", "pods")


class ClusterReadError(Exception):
    """The snapshot could not be read; the message is one line for the user."""


@dataclass(slots=True)
class ClusterSnapshot:
    """API objects as listed, each with its ``kind`` set (LIST responses leave it out of the items)."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)

    def all(self) -> list[dict[str, Any]]:
        """Nodes, then the other objects (PodGroups among them), then pods: a group is known before its members."""
        return [*self.nodes, *self.objects, *self.pods]

    def pod_groups(self) -> list[dict[str, Any]]:
        """The Workload API's PodGroups (scheduling.k8s.io/v1beta1; not Coscheduling's), as listed."""
        return [o for o in self.objects if o.get("kind") == KIND_POD_GROUP and o.get("apiVersion") == API_VERSION]


def connect(kubeconfig: str | None) -> RawApi:
    """A RawApi from a kubeconfig (or $KUBECONFIG, ~/.kube/config, the in-cluster config)."""
    try:
        return RawApi(load_api_client(kubeconfig))
    except (ConfigException, OSError, ValueError) as exc:
        raise ClusterReadError(f"cannot load the kubeconfig: {exc}") from None


def _describe(verb: str, group: str, resource: str) -> str:
    return f'{verb} {resource}{"." + group if group else ""}'


@contextmanager
def _reading(raw: Requester, verb: str, group: str, resource: str, not_found: str = "") -> Iterator[None]:
    """API and transport errors of the reads inside become one ClusterReadError line."""
    try:
        yield
    except ApiException as exc:
        if exc.status in (401, 403):
            who = "unauthenticated" if exc.status == 401 else "forbidden"
            raise ClusterReadError(
                f"{who}: this user may not {_describe(verb, group, resource)} (HTTP {exc.status}); "
                f"bind the read-only role in manifests/readonly/"
            ) from None
        if isinstance(exc, NotFoundError) and not_found:
            raise ClusterReadError(not_found) from None
        raise ClusterReadError(f"{_describe(verb, group, resource)}: HTTP {exc.status} {exc.reason}") from None
    except (OSError, urllib3.exceptions.HTTPError, http.client.HTTPException) as exc:
        host = getattr(raw, "host", "the API server")
        raise ClusterReadError(f"cannot reach the API server at {host}: {exc}") from None
    except orjson.JSONDecodeError:
        raise ClusterReadError(f"{_describe(verb, group, resource)}: the server's answer is not JSON") from None


def list_objects(
    raw: Requester, kind: str, gvr: tuple[str, str, str], field_selector: str = ""
) -> list[dict[str, Any]]:
    """Every object of one resource, with kind and apiVersion filled in."""
    group, version, plural = gvr
    api_version = f"{group}/{version}" if group else version
    with _reading(raw, "list", group, plural):
        return [{"apiVersion": api_version, "kind": kind, **item}
                for item in list_all(raw, collection_path(group, version, plural), field_selector)]


def served_gated_kinds(raw: Requester) -> list[WatchedKind]:
    """The feature-gated kinds (kube/kinds.py's ``gate`` rows) the API server serves: it serves each only with
    its gate on, as the live scheduler watches it only then."""
    served = []
    for k in WATCHED_KINDS:
        if k.gate:
            with _reading(raw, "discover", k.group, k.plural):
                if k.plural in served_resources(raw, k.group, k.version):
                    served.append(k)
    return served


def read_snapshot(raw: Requester) -> ClusterSnapshot:
    """Nodes, non-terminal pods, every OBJECT_KINDS kind and the served gated kinds, as the live scheduler's
    initial list sees them."""
    snap = ClusterSnapshot()
    snap.nodes = list_objects(raw, "Node", NODES)
    for kind, gvr in OBJECT_KINDS.items():
        snap.objects.extend(list_objects(raw, kind, gvr))
    for k in served_gated_kinds(raw):
        snap.objects.extend(list_objects(raw, k.api_kind, k.gvr))
    snap.pods = list_objects(raw, "Pod", PODS, NON_TERMINAL_PODS)
    return snap


def get_pod(raw: Requester, namespace: str, name: str) -> dict[str, Any]:
    """One pod; an unknown pod is a ClusterReadError naming it."""
    with _reading(raw, "get", "", "pods", not_found=f'pod "{name}" not found in namespace "{namespace}"'):
        data: dict[str, Any] = orjson.loads(raw.request("GET", pod_path(namespace, name)) or b"{}")
    return {"apiVersion": "v1", "kind": "Pod", **data}
