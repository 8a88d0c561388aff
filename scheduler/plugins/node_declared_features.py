"""NodeDeclaredFeatures (kube-scheduler v1.37
``pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures.go``; its gate is GA and locked on, so the
plugin is in every default profile, after DefaultBinder).

A node lists in ``status.declaredFeatures`` the features its kubelet supports; a pod that needs one of them
(inferred from its spec, by ``k8s.io/component-helpers/nodedeclaredfeatures``) fits only on nodes declaring
it. Of the features that library knows in v1.37, three are inferred for scheduling:

* RestartAllContainersOnContainerExits: a container or init container with a restartPolicyRules entry whose
  action is RestartAllContainers;
* UserNamespacesHostNetworkSupport: hostNetwork with ``hostUsers: false``;
* VolumeBindMountOptions: a volume mount (container, init or ephemeral container) with bindMountOptions.

The others (in-place resize variants, DRA node operations, WebSockets to the kubelet) never are. A pod that
needs none is skipped at PreFilter; otherwise a node that does not declare them all is
UnschedulableAndUnresolvable: ``node(s) didn't match Pod's required features``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.framework.interface import CycleState, Handle, PreFilterResult
from scheduler.framework.status import Status, error, skip, unresolvable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.helper.hint_objects import require_node, require_pod

NAME = "NodeDeclaredFeatures"
STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't match Pod's required features"
_MEMO_KEY = NAME + ".required"

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"


@dataclass(frozen=True, slots=True)
class _State:
    required: frozenset[str]

    def clone(self) -> _State:
        return self


def required_features(pod: Pod) -> frozenset[str]:
    """InferForPodScheduling: the declared features the pod cannot run without. Remembered in the pod's memo
    (a function of its spec): signing and PreFilter both ask each cycle."""
    required: frozenset[str] | None = pod.memo.get(_MEMO_KEY)
    if required is None:
        required = pod.memo[_MEMO_KEY] = _infer(pod)
    return required


def _infer(pod: Pod) -> frozenset[str]:
    spec = pod.raw.get("spec") or {}
    restart_all = bind_mounts = False
    for kind in ("containers", "initContainers", "ephemeralContainers"):  # plain loops: one pass, no generators
        for c in spec.get(kind) or []:
            if type(c) is not dict and not isinstance(c, Mapping):  # decoded JSON: a dict, no ABC check
                continue
            rules = c.get("restartPolicyRules") if kind != "ephemeralContainers" else None
            if rules and not restart_all:
                restart_all = any(isinstance(r, Mapping) and r.get("action") == "RestartAllContainers" for r in rules)
            mounts = c.get("volumeMounts")
            if mounts and not bind_mounts:
                bind_mounts = any(isinstance(m, Mapping) and m.get("bindMountOptions") for m in mounts)
    out = set()
    if restart_all:
        out.add(RESTART_ALL_CONTAINERS)
    if spec.get("hostNetwork") and spec.get("hostUsers") is False:
        out.add(USER_NAMESPACES_HOST_NETWORK)
    if bind_mounts:
        out.add(VOLUME_BIND_MOUNT_OPTIONS)
    return frozenset(out)


def declared_features(node: Node) -> frozenset[str]:
    return frozenset(str(f) for f in (node.raw.get("status") or {}).get("declaredFeatures") or [])


class NodeDeclaredFeatures:
    """Keeps pods that need a node feature off nodes that do not declare it."""

    name = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        del args, handle  # no configuration

    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable: the verdict depends on the pod's required features and the one node."""
        return tuple(sorted(required_features(pod)))

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = required_features(pod)
        if not required:
            return None, skip()
        state.write(STATE_KEY, _State(required))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error(f'error reading "{STATE_KEY}" from cycle-state: not found')
        node = node_info.node
        if node is None or not s.required <= declared_features(node):
            return unresolvable(ERR_REASON)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or declaring other features; the pod's own update changing what it needs."""
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                self.is_schedulable_after_node_change),
            ClusterEventWithHint(ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE),
                                 self.is_schedulable_after_pod_update),
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        if old is not None and declared_features(require_node(old)) == declared_features(require_node(new)):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_update(self, pod: Pod, old: object, new: object) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.QUEUE
        if required_features(require_pod(old)) == required_features(require_pod(new)):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
