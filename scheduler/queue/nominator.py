"""Nominator: pods nominated (by preemption or status.nominatedNodeName) to run on a node.

Filtering consults these pods so a preemptor's freed space is not given away to someone else.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from scheduler.model.pod import Pod


def _never_bound(pod: Pod) -> bool:
    return False


class Nominator:
    """node name → nominated pods (in nomination order) and pod uid → node name. Thread-safe."""

    __slots__ = ("_by_node", "_is_bound", "_lock", "_node_of")

    def __init__(self, is_bound: Callable[[Pod], bool] = _never_bound) -> None:
        # Upstream asks the pod lister whether the pod is gone or already bound; the caller wires that in.
        self._is_bound = is_bound
        self._lock = threading.Lock()
        self._by_node: dict[str, dict[str, Pod]] = {}
        self._node_of: dict[str, str] = {}

    def add_nominated_pod(self, pod: Pod, node_name: str | None = None) -> None:
        """Nominate ``pod`` to ``node_name``, replacing an earlier nomination.

        ``node_name=None`` takes the pod's own status.nominatedNodeName (upstream mode Noop);
        a string overrides it (mode Override, PostFilter); an empty result only clears.
        """
        with self._lock:
            self._add_unlocked(pod, node_name)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        if pod.uid not in self._node_of:  # not nominated, as nearly every pod: no lock (a dict lookup is atomic)
            return
        with self._lock:
            self._delete_unlocked(pod.uid)

    def update_nominated_pod(self, old: Pod, new: Pod) -> None:
        """Swap the stored object; keep an in-memory nomination that the API object has not caught up with.

        An update without nominatedNodeName can arrive right after PostFilter nominated the pod in
        memory; only when neither object carries one is the existing nomination kept.
        """
        with self._lock:
            node_name: str | None = None
            if not old.nominated_node_name and not new.nominated_node_name:
                node_name = self._node_of.get(old.uid)
            self._delete_unlocked(old.uid)
            self._add_unlocked(new, node_name)

    def nodes_with_nominated_pods(self) -> set[str]:
        """Names of nodes that have nominated pods: taken once per cycle so the filter loop skips the
        per-node lookup (and the two-pass logic) for all other nodes."""
        if not self._by_node:  # nothing nominated, as most cycles: no lock, no comprehension (a dict read is atomic)
            return set()
        with self._lock:
            return {n for n, pods in self._by_node.items() if pods}

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        with self._lock:
            return list(self._by_node.get(node_name, {}).values())

    def nominated_node_name(self, pod: Pod) -> str | None:
        """Where the scheduler currently considers ``pod`` nominated, if anywhere."""
        with self._lock:
            return self._node_of.get(pod.uid)

    def _add_unlocked(self, pod: Pod, node_name: str | None) -> None:
        self._delete_unlocked(pod.uid)
        target = pod.nominated_node_name if node_name is None else node_name
        if not target or self._is_bound(pod):
            return
        self._node_of[pod.uid] = target
        self._by_node.setdefault(target, {})[pod.uid] = pod

    def _delete_unlocked(self, uid: str) -> None:
        node_name = self._node_of.pop(uid, None)
        if node_name is None:
            return
        pods = self._by_node.get(node_name)
        if pods is None:
            return
        pods.pop(uid, None)
        if not pods:
            del self._by_node[node_name]
