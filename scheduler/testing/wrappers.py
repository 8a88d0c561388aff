"""Fluent builders for the objects plugins read (upstream's pkg/scheduler/testing/wrappers.go, in snake case).

Each wrapper holds the API object as the API server would send it (a JSON-shaped dict). ``obj()`` gives the
project's model object, parsed by the same code that parses watch events (``pod_from_api``,
``node_from_api``, the DRA parsers), so a test sees exactly what the scheduler would; for the kinds the
scheduler keeps as API objects (PVC, PV, StorageClass, PDB, Namespace, ...) ``obj()`` is that dict.
``api()`` always gives the dict (a deep copy), for code that wants the raw object (simulate's files, the
object store).

Builders never share state: every method changes the wrapper it is called on and returns it, and
``obj()``/``api()`` copy, so one wrapper can build several objects that differ in a field.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self

from scheduler.model.dra import (
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    device_class_from_api,
    resource_claim_from_api,
    resource_slice_from_api,
)
from scheduler.model.node import Node, node_from_api
from scheduler.model.pod import Pod, pod_from_api

__all__ = [
    "ContainerWrapper",
    "DeviceClassWrapper",
    "LabelSelectorWrapper",
    "NamespaceWrapper",
    "NodeSelectorWrapper",
    "NodeWrapper",
    "PersistentVolumeClaimWrapper",
    "PersistentVolumeWrapper",
    "PodDisruptionBudgetWrapper",
    "PodWrapper",
    "ResourceClaimWrapper",
    "ResourceSliceWrapper",
    "StorageClassWrapper",
    "make_container",
    "make_device_class",
    "make_label_selector",
    "make_namespace",
    "make_node",
    "make_node_selector",
    "make_pdb",
    "make_pod",
    "make_pv",
    "make_pvc",
    "make_resource_claim",
    "make_resource_slice",
    "make_storage_class",
    "resources",
]

# The image upstream's Req gives its containers (imageutils.GetPauseImageName), so ImageLocality sees the same.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"
# Kubernetes' default container name prefix in upstream's Req/Lim: con0, con1, ...
_CONTAINER_PREFIX = "con"


def resources(mapping: Mapping[str, str | int] | None = None, **named: str | int) -> dict[str, str]:
    """A ResourceList: ``resources({"example.com/gpu": 1}, cpu="500m", ephemeral_storage="1Gi")``. Keyword
    names take ``-`` for ``_`` (``ephemeral_storage`` is ``ephemeral-storage``); numbers become strings."""
    out = {str(k): str(v) for k, v in (mapping or {}).items()}
    out.update({k.replace("_", "-"): str(v) for k, v in named.items()})
    return out


class _Wrapper:
    """An API object under construction."""

    def __init__(self, body: dict[str, Any]) -> None:
        self._obj = body
        self._default_uid = True  # pods, nodes and claims get uid-<name> unless set or no_uid()

    def api(self) -> dict[str, Any]:
        """The API object (a copy): what the API server would send."""
        return copy.deepcopy(self._obj)

    @property
    def _meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = self._obj.setdefault("metadata", {})
        return meta

    @property
    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._obj.setdefault("spec", {})
        return spec

    def name(self, name: str) -> Self:
        self._meta["name"] = name
        return self

    def uid(self, uid: str) -> Self:
        self._meta["uid"] = uid
        return self

    def label(self, key: str, value: str) -> Self:
        self._meta.setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: Mapping[str, str]) -> Self:
        self._meta.setdefault("labels", {}).update(labels)
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._meta.setdefault("annotations", {})[key] = value
        return self

    def annotations(self, annotations: Mapping[str, str]) -> Self:
        self._meta.setdefault("annotations", {}).update(annotations)
        return self

    def resource_version(self, version: str) -> Self:
        self._meta["resourceVersion"] = version
        return self

    def owner_reference(self, name: str, kind: str, api_version: str = "apps/v1", uid: str = "") -> Self:
        """The object's controller (a pod's ReplicaSet or StatefulSet, a claim's Pod, ...)."""
        ref = {"apiVersion": api_version, "kind": kind, "name": name, "controller": True}
        if uid:
            ref["uid"] = uid
        self._meta.setdefault("ownerReferences", []).append(ref)
        return self

    def creation_timestamp(self, at: str) -> Self:
        self._meta["creationTimestamp"] = at
        return self

    def no_uid(self) -> Self:
        """Without metadata.uid, as a user writes the object (the API server, or ``simulate``, assigns one)."""
        self._meta.pop("uid", None)
        self._default_uid = False
        return self

    def terminating(self, at: str = "2026-01-01T00:00:00Z") -> Self:
        """Marked for deletion (metadata.deletionTimestamp)."""
        self._meta["deletionTimestamp"] = at
        return self


class _Namespaced(_Wrapper):
    def namespace(self, namespace: str) -> Self:
        self._meta["namespace"] = namespace
        return self


# ----- selectors -------------------------------------------------------------------------------------


class NodeSelectorWrapper:
    """A v1.NodeSelector; each In/NotIn adds a term (terms are ORed)."""

    def __init__(self) -> None:
        self._terms: list[dict[str, Any]] = []

    def _term(self, key: str, op: str, values: Sequence[str], fields: bool) -> Self:
        req = {"key": key, "operator": op, "values": list(values)}
        self._terms.append({"matchFields" if fields else "matchExpressions": [req]})
        return self

    def in_(self, key: str, values: Sequence[str], *, fields: bool = False) -> Self:
        return self._term(key, "In", values, fields)

    def not_in(self, key: str, values: Sequence[str], *, fields: bool = False) -> Self:
        return self._term(key, "NotIn", values, fields)

    def obj(self) -> dict[str, Any]:
        return {"nodeSelectorTerms": copy.deepcopy(self._terms)}


class LabelSelectorWrapper:
    """A metav1.LabelSelector: matchLabels and matchExpressions (ANDed)."""

    def __init__(self) -> None:
        self._labels: dict[str, str] = {}
        self._exprs: list[dict[str, Any]] = []

    def label(self, key: str, value: str) -> Self:
        self._labels[key] = value
        return self

    def _expr(self, key: str, op: str, values: Sequence[str] | None = None) -> Self:
        e: dict[str, Any] = {"key": key, "operator": op}
        if values is not None:
            e["values"] = list(values)
        self._exprs.append(e)
        return self

    def in_(self, key: str, values: Sequence[str]) -> Self:
        return self._expr(key, "In", values)

    def not_in(self, key: str, values: Sequence[str]) -> Self:
        return self._expr(key, "NotIn", values)

    def exists(self, key: str) -> Self:
        return self._expr(key, "Exists")

    def not_exist(self, key: str) -> Self:
        return self._expr(key, "DoesNotExist")

    def obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self._labels:
            out["matchLabels"] = dict(self._labels)
        if self._exprs:
            out["matchExpressions"] = copy.deepcopy(self._exprs)
        return out


def make_node_selector() -> NodeSelectorWrapper:
    return NodeSelectorWrapper()


def make_label_selector() -> LabelSelectorWrapper:
    return LabelSelectorWrapper()


# ----- containers and pods ------------------------------------------------------------------------------


class ContainerWrapper:
    """A v1.Container."""

    def __init__(self) -> None:
        self._c: dict[str, Any] = {"name": "c", "image": PAUSE_IMAGE}

    def name(self, name: str) -> Self:
        self._c["name"] = name
        return self

    def image(self, image: str) -> Self:
        self._c["image"] = image
        return self

    def req(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        self._c.setdefault("resources", {}).setdefault("requests", {}).update(resources(mapping, **named))
        return self

    def lim(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        self._c.setdefault("resources", {}).setdefault("limits", {}).update(resources(mapping, **named))
        return self

    def res(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        """Requests and limits both these resources (extended resources must have limits equal to requests)."""
        return self.req(mapping, **named).lim(mapping, **named)

    def host_port(self, port: int, ip: str = "", protocol: str = "") -> Self:
        p: dict[str, Any] = {"containerPort": port, "hostPort": port}
        if ip:
            p["hostIP"] = ip
        if protocol:
            p["protocol"] = protocol
        self._c.setdefault("ports", []).append(p)
        return self

    def port(self, port: Mapping[str, Any]) -> Self:
        """A v1.ContainerPort dict, as given."""
        self._c.setdefault("ports", []).append(dict(port))
        return self

    def restart_policy(self, policy: str) -> Self:
        """``Always`` makes an init container a sidecar."""
        self._c["restartPolicy"] = policy
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._c)


def make_container() -> ContainerWrapper:
    return ContainerWrapper()


class PodWrapper(_Namespaced):
    """A v1.Pod. ``obj()`` names a pod without a name ``p``, gives it uid ``uid-<name>`` and namespace
    ``default`` unless set, and one container without requests when none was added (a pod needs one)."""

    def __init__(self) -> None:
        super().__init__({"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {"containers": []}})

    def scheduler_name(self, name: str) -> Self:
        self._spec["schedulerName"] = name
        return self

    def container(self, container: ContainerWrapper | Mapping[str, Any]) -> Self:
        c = container.obj() if isinstance(container, ContainerWrapper) else copy.deepcopy(dict(container))
        self._spec["containers"].append(c)
        return self

    def containers(self, *containers: ContainerWrapper | Mapping[str, Any]) -> Self:
        for c in containers:
            self.container(c)
        return self

    def init_container(self, container: ContainerWrapper | Mapping[str, Any]) -> Self:
        c = container.obj() if isinstance(container, ContainerWrapper) else copy.deepcopy(dict(container))
        self._spec.setdefault("initContainers", []).append(c)
        return self

    def init_containers(self, *containers: ContainerWrapper | Mapping[str, Any]) -> Self:
        for c in containers:
            self.init_container(c)
        return self

    def _add(self, key: str, requests: Mapping[str, str] | None, limits: Mapping[str, str] | None,
             restart_policy: str = "") -> Self:
        if not requests and not limits:
            return self
        existing = self._spec.setdefault(key, [])
        c = make_container().name(f"{_CONTAINER_PREFIX}{len(existing)}")
        if requests:
            c.req(requests)
        if limits:
            c.lim(limits)
        if restart_policy:
            c.restart_policy(restart_policy)
        existing.append(c.obj())
        return self

    def req(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        """Adds a container requesting these resources (``req(cpu="1", memory="1Gi")``), as upstream's Req."""
        return self._add("containers", resources(mapping, **named), None)

    def lim(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        """Adds a container with these limits only."""
        return self._add("containers", None, resources(mapping, **named))

    def res(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        """Adds a container whose requests and limits are both these resources."""
        r = resources(mapping, **named)
        return self._add("containers", r, r)

    def init_req(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        """Adds an init container requesting these resources."""
        return self._add("initContainers", resources(mapping, **named), None)

    def sidecar_req(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        """Adds a sidecar (an init container with restartPolicy Always) requesting these resources."""
        return self._add("initContainers", resources(mapping, **named), None, "Always")

    def pod_level_req(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        """spec.resources.requests (pod-level resources)."""
        self._spec.setdefault("resources", {}).setdefault("requests", {}).update(resources(mapping, **named))
        return self

    def overhead(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        self._spec["overhead"] = resources(mapping, **named)
        return self

    def priority(self, value: int) -> Self:
        self._spec["priority"] = value
        return self

    def pod_group(self, name: str) -> Self:
        """spec.schedulingGroup.podGroupName: a member of the Workload API's PodGroup ``name`` (GenericWorkload)."""
        self._spec["schedulingGroup"] = {"podGroupName": name}
        return self

    def priority_class_name(self, name: str) -> Self:
        self._spec["priorityClassName"] = name
        return self

    def preemption_policy(self, policy: str) -> Self:
        """``Never`` or ``PreemptLowerPriority``."""
        self._spec["preemptionPolicy"] = policy
        return self

    def start_time(self, at: str) -> Self:
        self._obj.setdefault("status", {})["startTime"] = at
        return self

    def termination_grace_period_seconds(self, seconds: int) -> Self:
        self._spec["terminationGracePeriodSeconds"] = seconds
        return self

    def node(self, name: str) -> Self:
        """Bound to this node (spec.nodeName)."""
        self._spec["nodeName"] = name
        return self

    def nominated_node_name(self, name: str) -> Self:
        self._obj.setdefault("status", {})["nominatedNodeName"] = name
        return self

    def phase(self, phase: str) -> Self:
        self._obj.setdefault("status", {})["phase"] = phase
        return self

    def condition(self, type_: str, status: str, reason: str = "") -> Self:
        cond = {"type": type_, "status": status, **({"reason": reason} if reason else {})}
        self._obj.setdefault("status", {}).setdefault("conditions", []).append(cond)
        return self

    def node_selector(self, selector: Mapping[str, str]) -> Self:
        self._spec["nodeSelector"] = dict(selector)
        return self

    def affinity(self, affinity: Mapping[str, Any]) -> Self:
        """spec.affinity as a whole (a v1.Affinity dict)."""
        self._spec["affinity"] = copy.deepcopy(dict(affinity))
        return self

    def _node_affinity_term(self, key: str, op: str, values: Sequence[str]) -> Self:
        na = self._spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        required = na.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []})
        terms = required["nodeSelectorTerms"]
        if not terms:
            terms.append({"matchExpressions": []})
        terms[0].setdefault("matchExpressions", []).append({"key": key, "operator": op, "values": list(values)})
        return self

    def node_affinity_in(self, key: str, values: Sequence[str]) -> Self:
        """A required node affinity requirement ``key In values`` (ANDed with the others)."""
        return self._node_affinity_term(key, "In", values)

    def node_affinity_not_in(self, key: str, values: Sequence[str]) -> Self:
        return self._node_affinity_term(key, "NotIn", values)

    def preferred_node_affinity(self, weight: int, key: str, values: Sequence[str]) -> Self:
        na = self._spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        na.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
            {"weight": weight, "preference": {"matchExpressions": [{"key": key, "operator": "In",
                                                                     "values": list(values)}]}})
        return self

    def _pod_affinity(self, kind: str, topology_key: str, selector: Mapping[str, Any] | None,
                      weight: int | None, namespaces: Sequence[str] | None) -> Self:
        term: dict[str, Any] = {"topologyKey": topology_key}
        if selector is not None:
            term["labelSelector"] = copy.deepcopy(dict(selector))
        if namespaces is not None:
            term["namespaces"] = list(namespaces)
        block = self._spec.setdefault("affinity", {}).setdefault(kind, {})
        if weight is None:
            block.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            block.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term})
        return self

    def pod_affinity(self, topology_key: str, selector: Mapping[str, Any] | None, *, weight: int | None = None,
                     namespaces: Sequence[str] | None = None) -> Self:
        """A pod affinity term: required, or preferred with ``weight``. ``selector`` is a LabelSelector dict
        (``make_label_selector().label("app", "web").obj()``)."""
        return self._pod_affinity("podAffinity", topology_key, selector, weight, namespaces)

    def pod_anti_affinity(self, topology_key: str, selector: Mapping[str, Any] | None, *,
                          weight: int | None = None, namespaces: Sequence[str] | None = None) -> Self:
        return self._pod_affinity("podAntiAffinity", topology_key, selector, weight, namespaces)

    def spread_constraint(self, max_skew: int, topology_key: str, when_unsatisfiable: str = "DoNotSchedule",
                          selector: Mapping[str, Any] | None = None, *, min_domains: int | None = None,
                          node_affinity_policy: str | None = None, node_taints_policy: str | None = None,
                          match_label_keys: Sequence[str] | None = None) -> Self:
        c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when_unsatisfiable}
        if selector is not None:
            c["labelSelector"] = copy.deepcopy(dict(selector))
        if min_domains is not None:
            c["minDomains"] = min_domains
        if node_affinity_policy is not None:
            c["nodeAffinityPolicy"] = node_affinity_policy
        if node_taints_policy is not None:
            c["nodeTaintsPolicy"] = node_taints_policy
        if match_label_keys is not None:
            c["matchLabelKeys"] = list(match_label_keys)
        self._spec.setdefault("topologySpreadConstraints", []).append(c)
        return self

    def toleration(self, key: str, value: str = "", effect: str = "", operator: str = "") -> Self:
        """A toleration; the operator is ``Equal`` with a value, else ``Exists``, unless given."""
        t: dict[str, Any] = {"key": key, "operator": operator or ("Equal" if value else "Exists")}
        if value:
            t["value"] = value
        if effect:
            t["effect"] = effect
        self._spec.setdefault("tolerations", []).append(t)
        return self

    def tolerations(self, tolerations: Iterable[Mapping[str, Any]]) -> Self:
        self._spec.setdefault("tolerations", []).extend(dict(t) for t in tolerations)
        return self

    def host_port(self, port: int, ip: str = "", protocol: str = "") -> Self:
        """Adds a container exposing ``port`` on the host."""
        c = make_container().name(f"{_CONTAINER_PREFIX}{len(self._spec['containers'])}").host_port(port, ip, protocol)
        self._spec["containers"].append(c.obj())
        return self

    def volume(self, volume: Mapping[str, Any]) -> Self:
        """A v1.Volume dict, as given."""
        self._spec.setdefault("volumes", []).append(copy.deepcopy(dict(volume)))
        return self

    def pvc(self, claim: str, read_only: bool = False) -> Self:
        """A volume from a PersistentVolumeClaim (named after the claim)."""
        src: dict[str, Any] = {"claimName": claim}
        if read_only:
            src["readOnly"] = True
        return self.volume({"name": claim, "persistentVolumeClaim": src})

    def scheduling_gates(self, *gates: str) -> Self:
        self._spec["schedulingGates"] = [{"name": g} for g in gates]
        return self

    def resource_claim(self, name: str, claim_name: str = "", template: str = "") -> Self:
        """spec.resourceClaims: a claim by name, or made from a ResourceClaimTemplate."""
        ref: dict[str, Any] = {"name": name}
        if template:
            ref["resourceClaimTemplateName"] = template
        else:
            ref["resourceClaimName"] = claim_name or name
        self._spec.setdefault("resourceClaims", []).append(ref)
        return self

    def resource_claim_status(self, name: str, claim_name: str) -> Self:
        """status.resourceClaimStatuses: the claim generated for a template reference."""
        self._obj.setdefault("status", {}).setdefault("resourceClaimStatuses", []).append(
            {"name": name, "resourceClaimName": claim_name})
        return self

    def spec_field(self, key: str, value: Any) -> Self:
        """Any other spec field, as given (the escape hatch for fields without a method)."""
        self._spec[key] = copy.deepcopy(value)
        return self

    def status_field(self, key: str, value: Any) -> Self:
        """Any other status field, as given (conditions with messages, container statuses, ...)."""
        self._obj.setdefault("status", {})[key] = copy.deepcopy(value)
        return self

    def api(self) -> dict[str, Any]:
        out = super().api()
        meta = out["metadata"]
        meta.setdefault("name", "p")
        meta.setdefault("namespace", "default")
        if self._default_uid:
            meta.setdefault("uid", f"uid-{meta['name']}")
        if not out["spec"]["containers"]:
            out["spec"]["containers"] = [make_container().obj()]
        return out

    def obj(self) -> Pod:
        return pod_from_api(self.api())


def make_pod() -> PodWrapper:
    """``make_pod().name("p").req(cpu="1").obj()``: a pod, as upstream's st.MakePod()."""
    return PodWrapper()


# ----- nodes ------------------------------------------------------------------------------------------------


class NodeWrapper(_Wrapper):
    """A v1.Node. Like upstream's MakeNode, a new node has capacity ``pods: 32`` and nothing else until
    ``capacity`` says; capacity and allocatable are the same. Its uid is ``uid-<name>`` unless set."""

    def __init__(self) -> None:
        super().__init__({"apiVersion": "v1", "kind": "Node", "metadata": {}, "spec": {}, "status": {}})
        self.capacity()

    def capacity(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        """Capacity and allocatable: ``pods`` 32 unless given, plus these resources."""
        res = {"pods": "32", **resources(mapping, **named)}
        self._obj["status"]["capacity"] = dict(res)
        self._obj["status"]["allocatable"] = dict(res)
        return self

    def allocatable(self, mapping: Mapping[str, str | int] | None = None, **named: str | int) -> Self:
        """Allocatable alone (below capacity: reserved for the system)."""
        self._obj["status"]["allocatable"] = resources(mapping, **named)
        return self

    def images(self, images: Mapping[str, int]) -> Self:
        """Image name -> size in bytes."""
        self._obj["status"]["images"] = [{"names": [n], "sizeBytes": s} for n, s in images.items()]
        return self

    def image(self, names: Sequence[str], size: int) -> Self:
        """One image known by several names."""
        self._obj["status"].setdefault("images", []).append({"names": list(names), "sizeBytes": size})
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        t = {"key": key, "effect": effect, **({"value": value} if value else {})}
        self._spec.setdefault("taints", []).append(t)
        return self

    def taints(self, taints: Iterable[Mapping[str, str]]) -> Self:
        self._spec.setdefault("taints", []).extend(dict(t) for t in taints)
        return self

    def unschedulable(self, unschedulable: bool = True) -> Self:
        self._spec["unschedulable"] = unschedulable
        return self

    def condition(self, type_: str, status: str) -> Self:
        """A node condition (``Ready``, ``MemoryPressure``...): ``"True"``, ``"False"`` or ``"Unknown"``."""
        self._obj["status"].setdefault("conditions", []).append({"type": type_, "status": status})
        return self

    def declared_features(self, *features: str) -> Self:
        self._obj["status"]["declaredFeatures"] = list(features)
        return self

    def zone(self, zone: str, region: str = "") -> Self:
        """topology.kubernetes.io/zone (and region) labels."""
        self.label("topology.kubernetes.io/zone", zone)
        if region:
            self.label("topology.kubernetes.io/region", region)
        return self

    def api(self) -> dict[str, Any]:
        out = super().api()
        meta = out["metadata"]
        meta.setdefault("name", "n")
        if self._default_uid:
            meta.setdefault("uid", f"uid-{meta['name']}")
        return out

    def obj(self) -> Node:
        return node_from_api(self.api())


def make_node() -> NodeWrapper:
    """``make_node().name("n1").capacity(cpu="4", memory="8Gi").obj()``: a node, as upstream's st.MakeNode()."""
    return NodeWrapper()


# ----- objects plugins read through the object lister (kept as API dicts) ----------------------------------


class _ApiObject(_Wrapper):
    def obj(self) -> dict[str, Any]:
        """The API object: the form the scheduler's object store keeps for this kind."""
        return self.api()


class PersistentVolumeClaimWrapper(_ApiObject, _Namespaced):
    def __init__(self) -> None:
        super().__init__({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                          "metadata": {"namespace": "default"}, "spec": {"accessModes": ["ReadWriteOnce"]},
                          "status": {"phase": "Pending"}})

    def volume_name(self, name: str) -> Self:
        """Bound to this PV: volumeName, the bind-completed annotation and phase Bound, as the PV controller
        leaves a bound claim."""
        self._spec["volumeName"] = name
        self.annotation("pv.kubernetes.io/bind-completed", "yes")
        self._obj["status"]["phase"] = "Bound"
        return self

    def access_modes(self, *modes: str) -> Self:
        self._spec["accessModes"] = list(modes)
        return self

    def request(self, storage: str) -> Self:
        self._spec["resources"] = {"requests": {"storage": storage}}
        return self

    def storage_class_name(self, name: str) -> Self:
        self._spec["storageClassName"] = name
        return self


class PersistentVolumeWrapper(_ApiObject):
    def __init__(self) -> None:
        super().__init__({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {},
                          "spec": {"accessModes": ["ReadWriteOnce"]}, "status": {"phase": "Available"}})

    def access_modes(self, *modes: str) -> Self:
        self._spec["accessModes"] = list(modes)
        return self

    def capacity(self, storage: str) -> Self:
        self._spec["capacity"] = {"storage": storage}
        return self

    def storage_class_name(self, name: str) -> Self:
        self._spec["storageClassName"] = name
        return self

    def source(self, source: Mapping[str, Any]) -> Self:
        """The volume source, e.g. ``{"csi": {"driver": "d", "volumeHandle": "h"}}``."""
        self._spec.update(copy.deepcopy(dict(source)))
        return self

    def claim_ref(self, namespace: str, name: str, uid: str = "") -> Self:
        """Bound (or pre-bound) to this claim; phase Bound."""
        ref = {"kind": "PersistentVolumeClaim", "namespace": namespace, "name": name, **({"uid": uid} if uid else {})}
        self._spec["claimRef"] = ref
        self._obj["status"]["phase"] = "Bound"
        return self

    def node_affinity_in(self, key: str, values: Sequence[str]) -> Self:
        """spec.nodeAffinity.required: ``key In values`` (ANDed within the one term)."""
        required = self._spec.setdefault("nodeAffinity", {}).setdefault("required", {"nodeSelectorTerms": [{}]})
        required["nodeSelectorTerms"][0].setdefault("matchExpressions", []).append(
            {"key": key, "operator": "In", "values": list(values)})
        return self


class StorageClassWrapper(_ApiObject):
    def __init__(self) -> None:
        super().__init__({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {},
                          "provisioner": "kubernetes.io/no-provisioner"})

    def provisioner(self, name: str) -> Self:
        self._obj["provisioner"] = name
        return self

    def volume_binding_mode(self, mode: str) -> Self:
        """``Immediate`` or ``WaitForFirstConsumer``."""
        self._obj["volumeBindingMode"] = mode
        return self

    def allowed_topology(self, key: str, values: Sequence[str]) -> Self:
        self._obj.setdefault("allowedTopologies", []).append(
            {"matchLabelExpressions": [{"key": key, "values": list(values)}]})
        return self


class PodDisruptionBudgetWrapper(_ApiObject, _Namespaced):
    def __init__(self) -> None:
        super().__init__({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"namespace": "default"}, "spec": {}, "status": {}})

    def min_available(self, value: int | str) -> Self:
        self._spec["minAvailable"] = value
        return self

    def max_unavailable(self, value: int | str) -> Self:
        self._spec["maxUnavailable"] = value
        return self

    def match_label(self, key: str, value: str) -> Self:
        self._spec.setdefault("selector", {}).setdefault("matchLabels", {})[key] = value
        return self

    def disruptions_allowed(self, value: int) -> Self:
        self._obj["status"]["disruptionsAllowed"] = value
        return self


class NamespaceWrapper(_ApiObject):
    def __init__(self) -> None:
        super().__init__({"apiVersion": "v1", "kind": "Namespace", "metadata": {}})


def make_pvc() -> PersistentVolumeClaimWrapper:
    return PersistentVolumeClaimWrapper()


def make_pv() -> PersistentVolumeWrapper:
    return PersistentVolumeWrapper()


def make_storage_class() -> StorageClassWrapper:
    return StorageClassWrapper()


def make_pdb() -> PodDisruptionBudgetWrapper:
    return PodDisruptionBudgetWrapper()


def make_namespace() -> NamespaceWrapper:
    return NamespaceWrapper()


# ----- DRA (resource.k8s.io/v1) -----------------------------------------------------------------------------


class ResourceClaimWrapper(_Namespaced):
    """A ResourceClaim; ``obj()`` is the model's ResourceClaim."""

    def __init__(self) -> None:
        super().__init__({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                          "metadata": {"namespace": "default"}, "spec": {"devices": {"requests": []}}})

    def request(self, device_class: str, name: str = "", count: int = 1, selectors: Sequence[str] = ()) -> Self:
        """An ``exactly`` request for ``count`` devices of a class (named ``req-<n>`` unless given), with
        CEL selectors."""
        reqs = self._spec["devices"]["requests"]
        exactly: dict[str, Any] = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}
        if selectors:
            exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
        reqs.append({"name": name or f"req-{len(reqs)}", "exactly": exactly})
        return self

    def allocation(self, allocation: Mapping[str, Any]) -> Self:
        """status.allocation, as given (an AllocationResult dict)."""
        self._obj.setdefault("status", {})["allocation"] = copy.deepcopy(dict(allocation))
        return self

    def reserved_for_pod(self, name: str, uid: str) -> Self:
        self._obj.setdefault("status", {}).setdefault("reservedFor", []).append(
            {"resource": "pods", "name": name, "uid": uid})
        return self

    def api(self) -> dict[str, Any]:
        out = super().api()
        out["metadata"].setdefault("name", "claim")
        if self._default_uid:
            out["metadata"].setdefault("uid", f"uid-{out['metadata']['name']}")
        return out

    def obj(self) -> ResourceClaim:
        return resource_claim_from_api(self.api())


class DeviceClassWrapper(_Wrapper):
    def __init__(self) -> None:
        super().__init__({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {},
                          "spec": {"selectors": []}})

    def extended_resource_name(self, name: str) -> Self:
        """The extended resource (``example.com/gpu``) that pods may request from this class."""
        self._spec["extendedResourceName"] = name
        return self

    def selector(self, expression: str) -> Self:
        """A CEL selector every device of the class must match."""
        self._spec["selectors"].append({"cel": {"expression": expression}})
        return self

    def obj(self) -> DeviceClass:
        return device_class_from_api(self.api())


class ResourceSliceWrapper(_Wrapper):
    """A ResourceSlice of one driver's pool; ``node`` or ``all_nodes`` says where its devices are."""

    def __init__(self, node_name: str, driver: str) -> None:
        super().__init__({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                          "metadata": {"name": f"{node_name or 'all'}-{driver}"},
                          "spec": {"driver": driver, "pool": {"name": node_name or "all", "generation": 1,
                                                              "resourceSliceCount": 1}, "devices": []}})
        if node_name:
            self._spec["nodeName"] = node_name
        else:
            self._spec["allNodes"] = True

    def pool(self, name: str, generation: int = 1, slice_count: int = 1) -> Self:
        self._spec["pool"] = {"name": name, "generation": generation, "resourceSliceCount": slice_count}
        return self

    def device(self, name: str, attributes: Mapping[str, str | int | bool] | None = None,
               capacity: Mapping[str, str] | None = None) -> Self:
        """A device; attribute values are typed by their Python type (str, int, bool)."""
        d: dict[str, Any] = {"name": name}
        if attributes:
            d["attributes"] = {k: _attribute(v) for k, v in attributes.items()}
        if capacity:
            d["capacity"] = {k: {"value": v} for k, v in capacity.items()}
        self._spec["devices"].append(d)
        return self

    def devices(self, *names: str) -> Self:
        for n in names:
            self.device(n)
        return self

    def obj(self) -> ResourceSlice:
        return resource_slice_from_api(self.api())


def _attribute(v: str | int | bool) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    return {"string": v}


def make_resource_claim() -> ResourceClaimWrapper:
    return ResourceClaimWrapper()


def make_device_class() -> DeviceClassWrapper:
    return DeviceClassWrapper()


def make_resource_slice(node_name: str, driver: str) -> ResourceSliceWrapper:
    """A slice of ``driver``'s devices on ``node_name`` ("" for one whose devices every node reaches)."""
    return ResourceSliceWrapper(node_name, driver)
