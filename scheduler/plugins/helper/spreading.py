"""Selector-of-workload helpers shared by the spreading plugins (upstream
``pkg/scheduler/framework/plugins/helper/spread.go``).

PodTopologySpread's system default constraints, SelectorSpread and ServiceAntiAffinity all need "the pods
of the same workload as this pod". Upstream deduces that group from the Services selecting the pod and the
pod's controlling ReplicationController / ReplicaSet / StatefulSet; the code lives here once so the three
plugins cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from scheduler.framework.interface import ObjectLister
from scheduler.framework.types import NodeInfo
from scheduler.model.errors import InvalidObjectError
from scheduler.model.labels import LabelSelector, Requirement, parse_label_selector
from scheduler.model.pod import Pod
from scheduler.plugins.helper.generation_memo import GenerationMemo
from scheduler.plugins.helper.hint_objects import as_node, as_pod

__all__ = [
    "as_node",
    "as_pod",
    "controller_ref",
    "count_matching_pods",
    "default_selector",
    "merge_selectors",
    "object_labels",
    "pod_services",
    "selector_from_set",
]

# (group, version, kind) of the controllers whose selector DefaultSelector adds.
_RC = ("", "v1", "ReplicationController")
_RS = ("apps", "v1", "ReplicaSet")
_SS = ("apps", "v1", "StatefulSet")


def object_labels(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    """metadata.labels of an API dict; empty when the object or its labels are missing."""
    if not obj:
        return {}
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return {}
    labels = meta.get("labels")
    return labels if isinstance(labels, Mapping) else {}


def selector_from_set(labels: Mapping[str, str]) -> LabelSelector:
    """labels.Set.AsSelector: one equality requirement per key; an empty set selects everything.

    The set form upstream uses to *build* selectors, whose emptiness callers test explicitly.
    """
    return LabelSelector(tuple(Requirement(k, "In", frozenset({v})) for k, v in sorted(labels.items())))


def merge_selectors(base: LabelSelector, extra: LabelSelector) -> LabelSelector:
    """selector.Add(extra.Requirements()...): a nil (match-nothing) ``extra`` contributes nothing."""
    if extra.nothing or not extra.requirements:
        return base
    if base.nothing:
        return base
    return LabelSelector(base.requirements + extra.requirements)


def _service_selector(svc: Mapping[str, Any]) -> Mapping[str, str] | None:
    """spec.selector, None when absent (a nil selector selects nothing, not everything)."""
    spec = svc.get("spec")
    if not isinstance(spec, Mapping):
        return None
    sel = spec.get("selector")
    return sel if isinstance(sel, Mapping) else None


def pod_services(pod: Pod, objects: ObjectLister) -> list[Mapping[str, Any]]:
    """Services of the pod's namespace whose (non-nil) selector matches the pod (GetPodServices).

    An empty but present selector ``{}`` matches every pod, as labels.Set{}.AsSelector does upstream.
    """
    out = []
    for svc in objects.list("Service", pod.namespace):
        sel = _service_selector(svc)
        if sel is None:
            continue
        if all(pod.labels.get(k) == v for k, v in sel.items()):
            out.append(svc)
    return out


def controller_ref(pod: Pod) -> tuple[str, str, str, str] | None:
    """(group, version, kind, name) of the pod's controller owner reference, None when it has none.

    An apiVersion that does not parse as group/version yields None: upstream then keeps the selector
    built from Services alone.
    """
    meta = pod.raw.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if not isinstance(ref, Mapping) or ref.get("controller") is not True:
            continue
        api_version = str(ref.get("apiVersion") or "")
        parts = api_version.split("/")
        if len(parts) == 1 and parts[0]:
            group, version = "", parts[0]
        elif len(parts) == 2 and parts[0] and parts[1]:
            group, version = parts[0], parts[1]
        else:
            return None
        return group, version, str(ref.get("kind") or ""), str(ref.get("name") or "")
    return None


def _controller_selector(pod: Pod, objects: ObjectLister) -> tuple[Mapping[str, str] | None, LabelSelector | None]:
    """The controlling RC's selector map, or the controlling RS/StatefulSet's parsed selector.

    A controller that is missing, of another kind, or whose selector does not parse adds nothing.
    """
    ref = controller_ref(pod)
    if ref is None:
        return None, None
    group, version, kind, name = ref
    gvk = (group, version, kind)
    if gvk == _RC:
        rc = objects.get("ReplicationController", pod.namespace, name)
        spec = (rc or {}).get("spec") or {}
        sel = spec.get("selector")
        return (sel if isinstance(sel, Mapping) else {}), None
    if gvk in (_RS, _SS):
        obj = objects.get(kind, pod.namespace, name)
        if obj is None:
            return None, None
        spec = obj.get("spec") or {}
        try:
            return None, parse_label_selector(spec.get("selector"), f"{kind} {pod.namespace}/{name}", "spec.selector")
        except InvalidObjectError:
            return None, None
    return None, None


def default_selector(pod: Pod, objects: ObjectLister) -> LabelSelector:
    """helper.DefaultSelector: Services selecting the pod, plus its controller's selector.

    Service selectors are merged as one label set (they all match the pod, so they cannot conflict),
    then the controller's: an RC's map joins the set, an RS/StatefulSet adds its requirements. The
    result may be empty (no requirement), which callers treat as "no workload group".
    """
    label_set: dict[str, str] = {}
    for svc in pod_services(pod, objects):
        label_set.update(_service_selector(svc) or {})
    rc_selector, other = _controller_selector(pod, objects)
    if rc_selector is not None:
        label_set.update(rc_selector)
    selector = selector_from_set(label_set)
    if other is not None:
        selector = merge_selectors(selector, other)
    return selector


def count_matching_pods(pods: Iterable[Pod], selector: LabelSelector, namespace: str) -> int:
    """Pods in ``namespace``, not terminating, matched by ``selector``; an empty selector counts none.

    This is upstream's countPodsMatchSelector / countMatchingPods: spreading only ever counts the
    workload's own live pods, and "no selector" must not turn into "every pod".
    """
    if selector.nothing or not selector.requirements:
        return 0
    count = 0
    for p in pods:
        if p.namespace != namespace or p.deletion_timestamp is not None:
            continue
        if selector.matches(p.labels):
            count += 1
    return count


# Selectors (with namespace) whose counts a spreading plugin keeps at once in its GenerationMemo.
COUNTED_SELECTORS = 256


def matching_pod_counter(
    memo: GenerationMemo[int], selector: LabelSelector, namespace: str, nodes: int
) -> Callable[[NodeInfo], int]:
    """count_matching_pods of a node's pods, remembered by NodeInfo generation in ``memo``: the count
    depends only on that node's pods, so spreading plugins that count every node's pods each cycle
    (PodTopologySpread's PreFilter/PreScore, SelectorSpread) recount only the nodes that changed. Look
    it up once per cycle; ``nodes``: the cluster's node count (it bounds the memo)."""
    table = memo.table((selector, namespace), nodes)

    def count(ni: NodeInfo) -> int:
        n = table.get(ni.generation)
        if n is None:
            n = table[ni.generation] = count_matching_pods(ni.pods.values(), selector, namespace)
        return n

    return count
