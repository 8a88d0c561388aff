"""The per-cycle, read-only view of the cluster's nodes (upstream pkg/scheduler/backend/cache/snapshot.go).

A Snapshot is owned by the scheduling thread and refreshed in place by `Cache.update_snapshot` at
the start of every cycle; only NodeInfos that changed since the previous refresh are replaced (by
fresh clones), so a cycle costs O(changed nodes). Plugins read it through the SharedLister methods.
"""

from __future__ import annotations

import builtins
from bisect import bisect_left
from collections.abc import Sequence, Set

from scheduler.cache.podgroupstate import GroupKey, PodGroupObjects, PodGroupStateData, PodGroupStates
from scheduler.framework.podgroup import Placement
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod

# A mutation session: the journal (added or not, the pod as placed, its node) and the pod-group states at its start.
_Session = tuple[builtins.list[tuple[bool, Pod, NodeInfo]], dict[GroupKey, PodGroupStateData]]


class Snapshot:
    """Node name -> cloned NodeInfo plus the zone-interleaved node list and the affinity sub-lists.

    The `_pos` maps give each NodeInfo's index in its list so a changed node's clone can replace the
    old one in O(1) without rebuilding the lists.
    """

    __slots__ = (
        "_affinity",
        "_affinity_at",
        "_anti_affinity",
        "_anti_affinity_at",
        "_assumed",
        "_changed",
        "_epoch",
        "_infos",
        "_list",
        "_mutations",
        "_placement",
        "_placement_names",
        "_pod_group_objects",
        "_pos",
        "_pvc_users",
        "generation",
        "pod_group_states_data",
    )

    def __init__(self) -> None:
        self._infos: dict[str, NodeInfo] = {}
        self._list: list[NodeInfo] = []
        self._pos: dict[str, int] = {}
        # The affinity sub-lists and, in step, their entries' positions in the node list (sorted).
        self._affinity: list[NodeInfo] = []
        self._affinity_at: list[int] = []
        self._anti_affinity: list[NodeInfo] = []
        self._anti_affinity_at: list[int] = []
        self._pvc_users: dict[str, int] = {}  # "ns/claim" -> number of snapshot nodes whose pods use it
        self.generation = 0  # highest NodeInfo generation already copied in
        # Positions in the node list whose NodeInfo was replaced, in order, since the list was last rebuilt
        # (epoch): opportunistic batching re-evaluates just those.
        self._epoch = 0
        self._changed: builtins.list[int] = []
        # GenericWorkload: clones of the cache's pod-group states (Cache.update_snapshot), the pods the pod-group
        # cycle assumed here (LIFO, by uid: the pod as assumed), and the placement it evaluates (None: all nodes).
        self.pod_group_states_data = PodGroupStates()
        self._pod_group_objects = PodGroupObjects(self.pod_group_states_data)
        self._assumed: dict[str, Pod] = {}
        self._placement: Placement | None = None
        self._placement_names: frozenset[str] = frozenset()
        # A mutation session (PodGroupPostFilter's what-if): the pods added (True) or removed (False), in order, and
        # the pod-group states as they were at its start; None outside one.
        self._mutations: _Session | None = None

    # --- SharedLister -------------------------------------------------------------------------

    def list(self) -> Sequence[NodeInfo]:
        """Nodes in zone-interleaved order. The caller must not mutate the returned list."""
        return self._list

    def get(self, name: str) -> NodeInfo | None:
        return self._infos.get(name)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return self._affinity

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return self._anti_affinity

    def num_nodes(self) -> int:
        return len(self._list)

    def position(self, name: str) -> int | None:
        """The node's index in ``list()``, None if it is not there."""
        return self._pos.get(name)

    def change_mark(self) -> tuple[int, int, int]:
        """Where the change log stands now, for ``changed_since``."""
        return id(self), self._epoch, len(self._changed)

    def changed_since(self, mark: tuple[int, int, int]) -> builtins.list[int] | None:
        """Positions in ``list()`` whose NodeInfo was replaced since ``mark``; None when the list was rebuilt
        (positions moved, nodes came or went) or the mark is another snapshot's."""
        snapshot, epoch, length = mark
        if snapshot != id(self) or epoch != self._epoch:
            return None
        return builtins.list(dict.fromkeys(self._changed[length:]))

    def _log_change(self, name: str) -> None:
        if len(self._changed) > 2 * len(self._list) + 1000:  # bounded: old marks then rebuild from scratch
            self._epoch += 1
            self._changed = []
        self._changed.append(self._pos[name])

    # --- PodGroupManager (framework.podgroup) ------------------------------------------------------

    def pod_group_states(self) -> PodGroupStates:
        return self.pod_group_states_data

    def pod_groups(self) -> PodGroupObjects:
        return self._pod_group_objects

    # --- the pod-group cycle's assume and forget (upstream Snapshot.AssumePod / ForgetPod) ----------

    def _group_state(self, pod: Pod) -> PodGroupStateData | None:
        """The snapshot's state of the pod's group, None for a pod in no group or a group with no state."""
        group = pod.pod_group_name
        return self.pod_group_states_data.lookup((pod.namespace, group)) if group else None

    def assume_pod(self, pod: Pod) -> None:
        """Put an assumed member (``pod.node_name`` set) on its node in this snapshot only (the cache's copy does
        not change), the affinity lists and claim counts in step; its group's state counts it as assumed. Undone
        by ``forget_pod``, last assumed first."""
        info = self._infos.get(pod.node_name)
        if info is None:
            raise KeyError(f"node {pod.node_name!r} not found in the snapshot")
        self._mutate(info, pod, add=True)
        self._assumed[pod.uid] = pod
        if (st := self._group_state(pod)) is not None:
            st.assume_pod(pod)

    def forget_pod(self, pod: Pod) -> None:
        """Undo ``assume_pod`` of this pod (by uid)."""
        assumed = self._assumed.pop(pod.uid, None)
        if assumed is None:
            raise KeyError(f"pod {pod.key} was not assumed in the snapshot")
        info = self._infos.get(assumed.node_name)
        if info is not None:
            self._mutate(info, assumed, add=False)
        if (st := self._group_state(assumed)) is not None:
            st.forget_pod(assumed.uid)

    def forget_all_assumed_pods(self) -> int:
        """Forget what a cycle left assumed (a bug upstream logs); returns how many."""
        left = builtins.list(self._assumed.values())
        for pod in reversed(left):
            self.forget_pod(pod)
        return len(left)

    def _mutate(self, info: NodeInfo, pod: Pod, add: bool) -> None:
        """The node's generation moves (upstream keeps it): plugins here remember per-node results by it."""
        if info.pvc_ref_counts:
            self._count_pvcs(info, -1)
        if add:
            info.add_pod(pod)
        else:
            info.remove_pod(pod)
        if info.pvc_ref_counts:
            self._count_pvcs(info, 1)
        if info.name in self._pos:
            self.patch(info.name, info)

    # --- the mutation session (upstream Snapshot.StartMutations / EndMutations / AddPod / RemovePod) --------

    def start_mutations(self) -> None:
        """Begin changes that ``end_mutations`` undoes (a journal, where upstream copies the whole snapshot)."""
        if self._mutations is not None:
            raise RuntimeError("cannot stack mutations")
        self._mutations = ([], {k: st.clone() for k, st in self.pod_group_states_data.items()})

    def end_mutations(self) -> None:
        """Undo every add_pod / remove_pod of the session, last first, and restore the pod-group states."""
        if self._mutations is None:
            raise RuntimeError("no mutation session started")
        journal, states = self._mutations
        self._mutations = None
        for added, pod, info in reversed(journal):
            self._mutate(info, pod, add=not added)
        held = self.pod_group_states_data
        for key in [k for k, _ in held.items() if k not in states]:
            held.remove(key)
        for key, st in states.items():
            held.put(key, st)

    def add_pod(self, pod: Pod, node_name: str) -> None:
        """Put ``pod`` on ``node_name`` for the session (its group's state counts it)."""
        if self._mutations is None:
            raise RuntimeError("AddPod() called outside of mutation session")
        info = self._infos.get(node_name)
        if info is None:
            raise KeyError(f'node "{node_name}" not found in the snapshot')
        placed = pod if pod.node_name == node_name else pod.with_node(node_name)
        self._mutate(info, placed, add=True)
        self._mutations[0].append((True, placed, info))
        if (st := self._group_state(placed)) is not None:
            st.add_pod(placed)

    def remove_pod(self, pod: Pod, node_name: str) -> None:
        """Take ``pod`` (by uid) off ``node_name`` for the session (a preemption victim; its group forgets it)."""
        if self._mutations is None:
            raise RuntimeError("RemovePod() called outside of mutation session")
        info = self._infos.get(node_name)
        if info is None:
            raise KeyError(f'node "{node_name}" not found in the snapshot')
        held = info.pods.get(pod.uid)
        if held is None:
            raise KeyError(f"pod {pod.key} not found on node {node_name}")
        self._mutate(info, held, add=False)
        self._mutations[0].append((False, held, info))
        if (st := self._group_state(held)) is not None:
            st.delete_pod(held.uid)

    # --- placements (upstream Snapshot.GetPlacement, AssumePlacement, ForgetPlacement, ...InPlacement) ---

    def get_placement(self) -> Placement | None:
        return self._placement

    def assume_placement(self, placement: Placement | None) -> None:
        """Limit the candidates to the placement's nodes (the snapshot's own NodeInfos). One holding every node
        is no limit; raises ValueError, with no placement set, for a node not in the snapshot or another object."""
        if placement is None or len(placement.nodes) == len(self._list):
            self.forget_placement()
            return
        names = set()
        for info in placement.nodes:
            held = self._infos.get(info.name)
            if held is None:
                self.forget_placement()
                raise ValueError(f"node {info.name} in placement is not present in snapshot")
            if held is not info:
                self.forget_placement()
                raise ValueError(f"node {info.name} in placement is not the same instance as in the snapshot")
            names.add(info.name)
        self._placement = placement
        self._placement_names = frozenset(names)

    def forget_placement(self) -> None:
        self._placement = None
        self._placement_names = frozenset()

    def list_nodes_in_placement(self) -> Sequence[NodeInfo]:
        """The placement's nodes, or every node (``list()``) when none is assumed."""
        return self._list if self._placement is None else self._placement.nodes

    def num_nodes_in_placement(self) -> int:
        return len(self._list) if self._placement is None else len(self._placement.nodes)

    def get_node_in_placement(self, name: str) -> NodeInfo | None:
        if self._placement is not None and name not in self._placement_names:
            return None
        return self._infos.get(name)

    # --- volumes ------------------------------------------------------------------------------

    @property
    def used_pvc_set(self) -> Set[str]:
        """"ns/claim" keys used by at least one pod on a node of this snapshot (a live view)."""
        return self._pvc_users.keys()

    def is_pvc_used_by_pods(self, key: str) -> bool:
        return key in self._pvc_users

    # --- building (called by Cache.update_snapshot under the cache lock) ------------------------

    def node_names(self) -> builtins.list[str]:
        """Names in the node map (including nodes the cache has since removed)."""
        return builtins.list(self._infos)

    def map_size(self) -> int:
        """Entries in the node map; more than the tree's node count means deleted nodes linger."""
        return len(self._infos)

    def put(self, name: str, info: NodeInfo) -> NodeInfo | None:
        """Replace (or insert) a node's NodeInfo in the map; return the previous one. The lists are
        brought up to date by `patch` or `rebuild_list`."""
        old = self._infos.get(name)
        self._infos[name] = info
        if old is not None and old.pvc_ref_counts:  # most nodes' pods use no claim: no call
            self._count_pvcs(old, -1)
        if info.pvc_ref_counts:
            self._count_pvcs(info, 1)
        return old

    def drop(self, name: str) -> None:
        """Remove a deleted node from the map (the lists follow with `rebuild_list`)."""
        self._count_pvcs(self._infos.pop(name, None), -1)

    def _count_pvcs(self, info: NodeInfo | None, delta: int) -> None:
        if info is None:
            return
        users = self._pvc_users
        for key in info.pvc_ref_counts:
            n = users.get(key, 0) + delta
            if n > 0:
                users[key] = n
            else:
                users.pop(key, None)

    def patch(self, name: str, info: NodeInfo) -> None:
        """Put a replaced NodeInfo at its position in the node list; it joins, stays in or leaves each
        affinity sub-list by what its pods now have (O(log n) and a memmove, not a rebuild)."""
        pos = self._pos[name]
        self._list[pos] = info
        self._log_change(name)
        # Each sub-list is looked at only where the node may be in it (it is, or was: it is not empty).
        if info.pods_with_affinity or self._affinity_at:
            _place(self._affinity, self._affinity_at, pos, info, bool(info.pods_with_affinity))
        if info.pods_with_required_anti_affinity or self._anti_affinity_at:
            _place(self._anti_affinity, self._anti_affinity_at, pos, info,
                   bool(info.pods_with_required_anti_affinity))

    def rebuild_list(self, names: Sequence[str]) -> builtins.list[str]:
        """Rebuild the node list in the given (tree) order; returns names missing from the map."""
        missing: builtins.list[str] = []
        self._list = []
        self._pos = {}
        self._epoch += 1
        self._changed = []
        for name in names:
            info = self._infos.get(name)
            if info is None:
                missing.append(name)
                continue
            self._pos[name] = len(self._list)
            self._list.append(info)
        return missing

    def rebuild_affinity_lists(self) -> None:
        """Affinity sub-lists in node-list order, as upstream rebuilds them from nodeInfoList."""
        self._affinity, self._affinity_at = [], []
        self._anti_affinity, self._anti_affinity_at = [], []
        for pos, info in enumerate(self._list):
            if info.pods_with_affinity:
                self._affinity_at.append(pos)
                self._affinity.append(info)
            if info.pods_with_required_anti_affinity:
                self._anti_affinity_at.append(pos)
                self._anti_affinity.append(info)


def _place(infos: list[NodeInfo], at: list[int], pos: int, info: NodeInfo, member: bool) -> None:
    """Keep ``infos`` (node-list order, positions in ``at``) holding ``info`` at ``pos`` iff ``member``."""
    i = bisect_left(at, pos)
    present = i < len(at) and at[i] == pos
    if member and present:
        infos[i] = info
    elif member:
        at.insert(i, pos)
        infos.insert(i, info)
    elif present:
        del at[i]
        del infos[i]
