"""The scheduler cache: NodeInfos of all nodes with their bound and assumed pods.

Mirrors upstream's pkg/scheduler/backend/cache/cache.go: the watch thread feeds node and pod events, the scheduling
thread assumes pods and takes incremental snapshots. Differences, all for robustness: events that
upstream treats as fatal ("cache corrupted") or as errors (update of an assumed pod, add of a known
pod) are logged and reconciled; a relist is reconciled with `reconcile_pods` / `reconcile_nodes`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from scheduler.cache.node_tree import NodeTree
from scheduler.cache.podgroupstate import PodGroupObjects, PodGroupStates
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.types import ImageStateSummary, NodeInfo
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.workload import PodGroup

log = structlog.get_logger(__name__)


class CacheError(RuntimeError):
    """A request the cache refuses (double assume, forget of a non-assumed pod): the scheduler
    turns it into an error for the pod's cycle, as upstream returns an error."""


class SnapshotInconsistentError(RuntimeError):
    """The snapshot did not match the node tree; it has been rebuilt, but this cycle should fail
    (upstream returns an error from UpdateSnapshot in this case)."""


@dataclass(slots=True)
class _PodState:
    pod: Pod
    binding_finished: bool = False
    deadline: float | None = None  # monotonic seconds; None = never expires


class Cache:
    """Thread-safe: every public method takes the one re-entrant lock, but for the reads of one entry that a
    lookup answers atomically (is_assumed, get_pod)."""

    def __init__(self, ttl: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        """`ttl` is how long an assumed pod survives after its binding finished without the
        confirming watch event; 0 (upstream's default) means forever."""
        self._lock = threading.RLock()
        self._ttl = ttl
        self._clock = clock
        # Node name -> NodeInfo, least recently changed first: every mutation bumps the NodeInfo's
        # generation and moves it to the end, so generations increase along the dict.
        self._nodes: OrderedDict[str, NodeInfo] = OrderedDict()
        self._tree = NodeTree()
        self._pods: dict[str, _PodState] = {}  # by uid, bound and assumed
        self._assumed: set[str] = set()
        self._images: dict[str, ImageStateSummary] = {}  # image name -> summary shared by NodeInfos
        # GenericWorkload: the pod groups' member states and PodGroup objects (podgroupstate.py); untouched while the
        # gate is off (``generic_workload``), so pods pay nothing for it.
        self.generic_workload = False
        self._pod_groups = PodGroupStates()

    # --- nodes --------------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        """Add a node; a node already known (relist) is updated instead."""
        with self._lock:
            self._set_node(node)

    def update_node(self, old: Node | None, new: Node) -> None:
        """Update a node (an unknown node is added). `old` is not needed: the cached object is used."""
        with self._lock:
            self._set_node(new)

    def remove_node(self, name: str) -> None:
        """The node leaves the tree (and so the next snapshot) now; its NodeInfo stays, with no node,
        while pods are still cached on it, because pod deletions arrive on another watch."""
        with self._lock:
            info = self._nodes.get(name)
            if info is None or info.node is None:
                log.info("remove of a node not in the cache", node=name)
                return
            self._remove_images(info)
            info.remove_node()
            if info.pods:
                self._nodes.move_to_end(name)
            else:
                del self._nodes[name]
            self._tree.remove(name)

    def _set_node(self, node: Node) -> None:
        info = self._nodes.get(node.name)
        if info is None:
            info = self._nodes[node.name] = NodeInfo()
        else:
            self._nodes.move_to_end(node.name)
            self._remove_images(info)
        self._tree.add(node)  # moves it if its zone changed
        self._add_images(node, info)
        info.set_node(node)

    def _add_images(self, node: Node, info: NodeInfo) -> None:
        """Link the node's image names to the shared summaries; each name counts once per node."""
        states: dict[str, ImageStateSummary] = {}
        for image in node.images:
            for name in image.names:
                if name in states:
                    continue
                summary = self._images.get(name)
                if summary is None:
                    summary = self._images[name] = ImageStateSummary(image.size_bytes, 0)
                summary.num_nodes += 1
                states[name] = summary
        info.image_states = states

    def _remove_images(self, info: NodeInfo) -> None:
        for name in info.image_states:
            summary = self._images.get(name)
            if summary is None:
                continue
            summary.num_nodes -= 1
            if summary.num_nodes <= 0:
                del self._images[name]
        info.image_states = {}

    # --- pods (watch events) ------------------------------------------------------------------

    def add_pod(self, pod: Pod) -> None:
        """A bound pod seen by the watch. Confirms an assumed pod (the real object replaces the
        assumed copy, on the node the API says); an already-cached pod is updated (relist)."""
        if pod.node_name:
            self.add_bound_pod(pod)
            return
        with self._lock:
            state = self._pods.get(pod.uid)
            if state is None:
                log.info("add of a pod without a node ignored", pod=pod.key)
            elif pod.uid not in self._assumed:
                self._replace(state, pod)  # a cached pod that lost its node: removed

    def add_bound_pod(self, pod: Pod) -> Pod | None:
        """``add_pod`` of a pod with a node, in one call with what the watch handler asked before it (the cached
        copy and whether it was assumed): returns the bound copy it replaced, None where it added the pod or
        confirmed an assumed one. (For a pod with a node, ``update_pod`` does what ``add_pod`` does.)"""
        with self._lock:
            state = self._pods.get(pod.uid)
            if state is None:
                self._add(pod)
                return None
            if pod.uid in self._assumed:
                self._confirm(state, pod)
                return None
            old = state.pod
            self._replace(state, pod)
            return old

    def update_pod(self, old: Pod | None, new: Pod) -> None:
        """A bound pod changed. Upstream rejects updates of assumed pods and exits on a node change;
        here an assumed pod is confirmed and a node change is logged and followed."""
        with self._lock:
            state = self._pods.get(new.uid)
            if state is None:
                if new.node_name:
                    log.info("update of a pod not in the cache; adding it", pod=new.key)
                    self._add(new)
            elif new.uid in self._assumed:
                if new.node_name:
                    self._confirm(state, new)
            else:
                self._replace(state, new)

    def remove_pod(self, pod: Pod) -> None:
        """A pod was deleted (or left the assigned set). The cached copy is what gets removed."""
        with self._lock:
            state = self._pods.get(pod.uid)
            if state is None:
                log.debug("remove of a pod not in the cache", pod=pod.key)
                return
            if pod.node_name and pod.node_name != state.pod.node_name:
                log.error(
                    "pod removed from a different node than cached; cache was inconsistent",
                    pod=pod.key, cached_node=state.pod.node_name, node=pod.node_name,
                )
            self._remove(state.pod)

    def _confirm(self, state: _PodState, pod: Pod) -> None:
        assumed = state.pod
        if assumed.node_name != pod.node_name:
            log.info("pod was bound to a different node than assumed",
                     pod=pod.key, assumed_node=assumed.node_name, node=pod.node_name)
        self._assumed.discard(pod.uid)
        self._swap(assumed, pod)

    def _replace(self, state: _PodState, pod: Pod) -> None:
        """Swap a cached (non-assumed) pod for its new version, moving it if its node changed."""
        if not pod.node_name:
            log.error("cached pod lost its node; removing it", pod=pod.key, node=state.pod.node_name)
            self._remove(state.pod)
            return
        if pod.node_name != state.pod.node_name:
            log.error("pod updated on a different node than cached; following the update",
                      pod=pod.key, cached_node=state.pod.node_name, node=pod.node_name)
        self._swap(state.pod, pod)

    def _swap(self, cached: Pod, pod: Pod) -> None:
        """_remove(cached) then _add(pod): on the same known node, where the new version holds what the old one
        did (NodeInfo.replace_pod), the node's aggregates are left as they are; its generation moves all the same.
        (A node-less NodeInfo losing its last pod is dropped and made anew by the long way.)"""
        info = self._nodes.get(pod.node_name)
        if cached.node_name != pod.node_name or info is None or info.node is None or not info.replace_pod(pod):
            self._remove(cached)
            self._add(pod)
            return
        self._nodes.move_to_end(pod.node_name)
        del self._pods[pod.uid]  # as _remove then _add: the pod's entry moves last
        self._pods[pod.uid] = _PodState(pod)
        self._assumed.discard(pod.uid)

    def _add(self, pod: Pod, assumed: bool = False) -> None:
        info = self._nodes.get(pod.node_name)
        if info is None:
            info = self._nodes[pod.node_name] = NodeInfo()  # node not (yet) known, as upstream
        else:
            self._nodes.move_to_end(pod.node_name)
        info.add_pod(pod)
        self._pods[pod.uid] = _PodState(pod)
        if assumed:
            self._assumed.add(pod.uid)

    def _remove(self, cached: Pod) -> None:
        """Remove a cached pod from its node; a node-less NodeInfo goes with its last pod."""
        name = cached.node_name
        info = self._nodes.get(name)
        if info is not None and info.remove_pod(cached):
            if info.node is None and not info.pods:
                del self._nodes[name]
            else:
                self._nodes.move_to_end(name)
        self._pods.pop(cached.uid, None)
        self._assumed.discard(cached.uid)

    # --- assume / confirm / forget (scheduling thread) ----------------------------------------

    def assume_pod(self, pod: Pod) -> None:
        """Account `pod` (already placed: node_name set) before the API knows about the binding."""
        if not pod.node_name:
            raise CacheError(f"pod {pod.key}({pod.uid}) has no node, so it can't be assumed")
        with self._lock:
            if pod.uid in self._pods:
                raise CacheError(f"pod {pod.key}({pod.uid}) is in the cache, so can't be assumed")
            self._add(pod, assumed=True)
            if self.generic_workload and pod.pod_group_name:
                self._pod_group_assumed(pod)

    def finish_binding(self, pod: Pod, now: float | None = None) -> None:
        """Binding ended (either way): from now the assumed pod may expire, if a TTL is set."""
        with self._lock:
            state = self._pods.get(pod.uid)
            if state is None or pod.uid not in self._assumed:
                return
            state.binding_finished = True
            if self._ttl > 0:
                state.deadline = (self._clock() if now is None else now) + self._ttl
            else:
                state.deadline = None

    def forget_pod(self, pod: Pod) -> None:
        """Undo assume_pod (reserve/permit/bind failed). Unknown pods are ignored, as upstream."""
        with self._lock:
            state = self._pods.get(pod.uid)
            if state is None:
                return
            if state.pod.node_name != pod.node_name:
                raise CacheError(
                    f"pod {pod.key}({pod.uid}) was assumed on {pod.node_name} but assigned to {state.pod.node_name}"
                )
            if pod.uid not in self._assumed:
                raise CacheError(f"pod {pod.key}({pod.uid}) is not assumed, so it cannot be removed or forgotten")
            self._remove(state.pod)
            if self.generic_workload and pod.pod_group_name:
                st = self._pod_groups.lookup((pod.namespace, pod.pod_group_name))
                if st is not None:
                    st.forget_pod(pod.uid)

    def is_assumed(self, uid: str) -> bool:
        """Without the lock: one set lookup is atomic under the GIL, and answers as it would just before or after
        the writer holding the lock (three times a pod: the cycle and the watch's two events of it)."""
        return uid in self._assumed

    def cleanup_expired_assumed(self, now: float | None = None) -> list[Pod]:
        """Remove assumed pods whose binding finished more than TTL ago; returns them.
        Cost O(assumed pods). Never removes anything when the TTL is 0."""
        with self._lock:
            if self._ttl <= 0 or not self._assumed:
                return []
            t = self._clock() if now is None else now
            expired = []
            for uid in list(self._assumed):
                state = self._pods.get(uid)
                if state is None:
                    self._assumed.discard(uid)
                    continue
                if state.binding_finished and state.deadline is not None and t > state.deadline:
                    log.info("assumed pod expired", pod=state.pod.key, node=state.pod.node_name)
                    expired.append(state.pod)
                    self._remove(state.pod)
            return expired

    # --- pod groups (GenericWorkload; upstream pkg/scheduler/backend/cache/cache.go's *PodGroupMember and *PodGroup)

    def pod_group_member_seen(self, pod: Pod) -> None:
        """A member's add or update event (pending or bound): AddPodGroupMember, or UpdatePodGroupMember against
        the version the state holds."""
        group = pod.pod_group_name
        if not group:
            return
        with self._lock:
            st = self._pod_groups.state((pod.namespace, group))
            held = st.pod(pod.uid)
            if held is not None:
                st.update_pod(held, pod)
            else:
                st.add_pod(pod)

    def remove_pod_group_member(self, namespace: str, group: str, uid: str) -> None:
        """RemovePodGroupMember: the member ``uid`` of ``group`` ("" for none) was deleted."""
        if not group:
            return
        with self._lock:
            key = (namespace, group)
            st = self._pod_groups.lookup(key)
            if st is not None:
                st.delete_pod(uid)
                self._pod_groups.drop_if_empty(key)

    def _pod_group_assumed(self, pod: Pod) -> None:
        st = self._pod_groups.lookup((pod.namespace, pod.pod_group_name))
        if st is None:  # assumed before its add event was seen (upstream records the pod with the state)
            st = self._pod_groups.state((pod.namespace, pod.pod_group_name))
            st.add_pod(pod.with_node(""))
        st.assume_pod(pod)

    def set_pod_group(self, pod_group: PodGroup) -> None:
        """AddPodGroup / UpdatePodGroup."""
        with self._lock:
            self._pod_groups.state((pod_group.namespace, pod_group.name)).set_pod_group(pod_group)

    def remove_pod_group(self, namespace: str, name: str) -> None:
        """RemovePodGroup: the object is gone; the state stays while members remain."""
        with self._lock:
            st = self._pod_groups.lookup((namespace, name))
            if st is not None:
                st.set_pod_group(None)
                self._pod_groups.drop_if_empty((namespace, name))

    def pod_group_states(self) -> PodGroupStates:
        """The live states (PodGroupManager): read on the scheduling thread, as upstream's plugins read the cache."""
        return self._pod_groups

    def pod_groups(self) -> PodGroupObjects:
        return PodGroupObjects(self._pod_groups)

    def _update_pod_group_snapshot(self, snapshot: Snapshot) -> None:
        """updatePodGroupStateSnapshot: drop states gone from the cache, clone those whose generation moved."""
        held = snapshot.pod_group_states_data
        live = self._pod_groups
        for key in [k for k, _ in held.items() if live.lookup(k) is None]:
            held.remove(key)
        for key, st in live.items():
            mine = held.lookup(key)
            if mine is None or mine.generation != st.generation:
                held.put(key, st.clone())

    # --- relist reconciliation ----------------------------------------------------------------

    def reconcile_pods(self, present_uids: set[str]) -> list[Pod]:
        """After a relist: drop cached bound pods the relist no longer has (their DELETED event was
        never delivered). Assumed pods are left to confirm/forget. Returns the removed pods."""
        with self._lock:
            gone = [s.pod for uid, s in self._pods.items() if uid not in present_uids and uid not in self._assumed]
            for pod in gone:
                log.info("pod vanished during relist; removing it", pod=pod.key, node=pod.node_name)
                self._remove(pod)
            return gone

    def reconcile_nodes(self, present_names: set[str]) -> list[str]:
        """After a relist: remove nodes the relist no longer has. Returns their names."""
        with self._lock:
            gone = [name for name, info in self._nodes.items() if info.node is not None and name not in present_names]
            for name in gone:
                log.info("node vanished during relist; removing it", node=name)
                self.remove_node(name)
            return gone

    # --- snapshot -----------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring `snapshot` up to date, cloning only NodeInfos changed since its last update.

        The node list is rebuilt only when node membership may have changed, as upstream does (a zone
        change alone keeps the old list order, as upstream); a node whose pods join or leave the affinity
        lists is put in or taken out in place (upstream rebuilds those lists: same order, O(log n)). Raises
        SnapshotInconsistentError after repairing the snapshot if it disagreed with the node tree.
        """
        with self._lock:
            if self.generic_workload:
                left = snapshot.forget_all_assumed_pods()
                if left:
                    log.error("Found assumed pods in the snapshot that were not forgotten", assumedPodsCount=left)
                self._update_pod_group_snapshot(snapshot)
            since = snapshot.generation
            nodes = self._nodes
            rebuild_all = False
            replaced: list[tuple[str, NodeInfo]] = []
            for name, info in reversed(nodes.items()):
                if info.generation <= since:
                    break
                if info.node is None:
                    continue
                clone = _snapshot_clone(info)
                old = snapshot.put(name, clone)
                if old is None:
                    rebuild_all = True
                    continue
                replaced.append((name, clone))
            if nodes:
                snapshot.generation = next(reversed(nodes.values())).generation
            in_tree = self._tree.num_nodes  # the tree does not change under the lock
            if snapshot.map_size() > in_tree:
                self._drop_deleted(snapshot)
                rebuild_all = True
            if rebuild_all:
                self._rebuild_lists(snapshot)
            else:
                for name, clone in replaced:
                    snapshot.patch(name, clone)
            if snapshot.num_nodes() != in_tree:
                msg = (
                    f"snapshot state is not consistent, length of NodeInfoList={snapshot.num_nodes()} not equal to "
                    f"length of nodes in tree={self._tree.num_nodes}, length of NodeInfoMap={snapshot.map_size()}, "
                    f"length of nodes in cache={len(self._nodes)}, trying to recover"
                )
                log.error(msg)
                self._rebuild_lists(snapshot)
                raise SnapshotInconsistentError(msg)

    def _drop_deleted(self, snapshot: Snapshot) -> None:
        for name in snapshot.node_names():
            if name not in self._tree:
                snapshot.drop(name)

    def _rebuild_lists(self, snapshot: Snapshot) -> None:
        """The snapshot's node list in the tree's order and its affinity sub-lists, from scratch."""
        for name in snapshot.rebuild_list(self._tree.list()):
            log.error("node exists in node tree but not in snapshot", node=name)
        snapshot.rebuild_affinity_lists()

    # --- introspection ------------------------------------------------------------------------

    def get_pod(self, uid: str) -> Pod | None:
        """The cached (bound or assumed) pod with this uid. Without the lock: one dict lookup is atomic under the
        GIL, and a pod's entry is replaced, never changed (five times a pod, mostly from the watch's events)."""
        state = self._pods.get(uid)
        return state.pod if state is not None else None

    def get_node(self, name: str) -> Node | None:
        """The cached Node object (None if unknown or removed): the `old` of the next node event."""
        with self._lock:
            info = self._nodes.get(name)
            return info.node if info is not None else None

    def get_node_info(self, name: str) -> NodeInfo | None:
        """A clone of the node's NodeInfo (tests and debugging; not for the scheduling cycle)."""
        with self._lock:
            info = self._nodes.get(name)
            return info.clone() if info is not None else None

    def dump(self) -> dict[str, list[str]]:
        """Node name -> sorted "ns/name" of its cached pods, assumed ones included (debugging only)."""
        with self._lock:
            return {name: sorted(p.key for p in info.pods.values()) for name, info in self._nodes.items()}

    def pod_count(self) -> int:
        """Cached pods, assumed included (scheduler_cache_size{type="pods"})."""
        with self._lock:
            return len(self._pods)

    def node_count(self) -> int:
        """NodeInfos, including removed nodes that still hold pods (scheduler_cache_size{type="nodes"})."""
        with self._lock:
            return len(self._nodes)

    def assumed_count(self) -> int:
        with self._lock:
            return len(self._assumed)

    def image_state(self, name: str) -> ImageStateSummary | None:
        with self._lock:
            return self._images.get(name)


def new_snapshot(nodes: Sequence[Node], pods: Sequence[Pod]) -> Snapshot:
    """A fresh snapshot of these nodes and bound pods, built exactly as the live cache builds one (same
    zone order, image counts, accounting): upstream's NewSnapshot, for tests and offline tools. Pods
    without a node, or on a node not in `nodes`, are not visible, as in the cache."""
    return new_cache_and_snapshot(nodes, pods)[1]


def new_cache_and_snapshot(nodes: Sequence[Node], pods: Sequence[Pod]) -> tuple[Cache, Snapshot]:
    """``new_snapshot`` and the cache behind it, for callers that go on changing the cluster."""
    cache = Cache()
    for node in nodes:
        cache.add_node(node)
    for pod in pods:
        if pod.node_name:
            cache.add_pod(pod)
    snap = Snapshot()
    cache.update_snapshot(snap)
    return cache, snap


def _snapshot_clone(info: NodeInfo) -> NodeInfo:
    """NodeInfo.clone with image summaries frozen: upstream's NodeInfo.Snapshot copies NumNodes at
    clone time, so an unchanged node keeps the count it had when last cloned."""
    clone = info.clone()
    states = info.image_states
    # A node without images (most, under kwok) gets a fresh empty map without a comprehension's frame.
    clone.image_states = {name: ImageStateSummary(s.size, s.num_nodes) for name, s in states.items()} if states else {}
    return clone
