"""The scheduler cache's pod-group states (upstream ``pkg/scheduler/backend/cache/podgroupstate.go``, GenericWorkload
on, no composite groups): per PodGroup, its member pods known to the cache, split into unscheduled, assumed and
assigned, and the PodGroup object. The cache keeps one per group; each cycle's snapshot holds clones of those that
changed (by generation), and the pod-group cycle assumes and forgets members on the snapshot's clone only.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Set

from scheduler.model.pod import Pod
from scheduler.model.workload import PodGroup

_generation = itertools.count(1)


class PodGroupStateData:
    """podGroupStateData; implements framework.podgroup.PodGroupState. Pods are keyed by uid."""

    __slots__ = ("_all", "_assigned", "_assumed", "_unscheduled", "generation", "pod_group")

    def __init__(self) -> None:
        self._all: dict[str, Pod] = {}
        self._unscheduled: set[str] = set()
        self._assumed: dict[str, Pod] = {}
        self._assigned: set[str] = set()
        self.pod_group: PodGroup | None = None
        self.generation = next(_generation)

    # ----- changes (the cache's pod and PodGroup events; the snapshot's assume/forget)

    def add_pod(self, pod: Pod) -> None:
        """A bound pod is assigned (whatever it was before: an external binding of a queued member), else
        unscheduled."""
        self.generation = next(_generation)
        uid = pod.uid
        self._all[uid] = pod
        if pod.node_name:
            self._assigned.add(uid)
            self._unscheduled.discard(uid)
            self._assumed.pop(uid, None)
        else:
            self._unscheduled.add(uid)

    def update_pod(self, old: Pod, new: Pod) -> None:
        self.generation = next(_generation)
        uid = new.uid
        self._all[uid] = new
        if not old.node_name and new.node_name:
            self._assigned.add(uid)
            self._unscheduled.discard(uid)
            self._assumed.pop(uid, None)

    def delete_pod(self, uid: str) -> None:
        self.generation = next(_generation)
        self._all.pop(uid, None)
        self._unscheduled.discard(uid)
        self._assumed.pop(uid, None)
        self._assigned.discard(uid)

    def assume_pod(self, pod: Pod) -> None:
        """A member assumed on a node; ignored when the cache no longer knows the pod (deleted meanwhile)."""
        stored = self._all.get(pod.uid)
        if stored is None:
            return
        self.generation = next(_generation)
        if stored.node_name:
            self._assigned.add(pod.uid)
        else:
            self._assumed[pod.uid] = pod
        self._unscheduled.discard(pod.uid)

    def forget_pod(self, uid: str) -> None:
        """Back from assumed to unscheduled (or assigned, if it was bound meanwhile)."""
        pod = self._all.get(uid)
        if pod is None:
            return
        self.generation = next(_generation)
        self._assumed.pop(uid, None)
        if pod.node_name:
            self._assigned.add(uid)
        else:
            self._unscheduled.add(uid)

    def set_pod_group(self, pod_group: PodGroup | None) -> None:
        self.generation = next(_generation)
        self.pod_group = pod_group

    def empty(self) -> bool:
        return not self._all and self.pod_group is None

    def clone(self) -> PodGroupStateData:
        """Sets and maps copied; the Pod and PodGroup objects shared (read-only)."""
        c = PodGroupStateData.__new__(PodGroupStateData)
        c._all = dict(self._all)
        c._unscheduled = set(self._unscheduled)
        c._assumed = dict(self._assumed)
        c._assigned = set(self._assigned)
        c.pod_group = self.pod_group
        c.generation = self.generation
        return c

    def pod(self, uid: str) -> Pod | None:
        return self._all.get(uid)

    # ----- PodGroupState

    def all_pods(self) -> Set[str]:
        return frozenset(self._all)

    def all_pods_count(self) -> int:
        return len(self._all)

    def unscheduled_pods(self) -> Mapping[str, Pod]:
        """Pod name -> pod (the shape PodActivator.Activate takes), as upstream's UnscheduledPods. Plugins read the
        cache's states on the scheduling thread while the watch changes them (under the cache's lock): the
        containers are copied first, each copy one C call (atomic under the GIL)."""
        pods = dict(self._all)
        return {pods[uid].name: pods[uid] for uid in list(self._unscheduled) if uid in pods}

    def assumed_pods(self) -> Set[str]:
        return frozenset(self._assumed)

    def assigned_pods(self) -> Set[str]:
        return frozenset(self._assigned)

    def scheduled_pods(self) -> list[Pod]:
        pods = dict(self._all)
        return [pods[uid] for uid in list(self._assigned) if uid in pods] + list(self._assumed.values())

    def scheduled_pods_count(self) -> int:
        return len(self._assumed) + len(self._assigned)


GroupKey = tuple[str, str]  # (namespace, PodGroup name)


class PodGroupNotFoundError(LookupError):
    """A lister's miss, with upstream's message (it reaches users inside validatePodGroup's and the
    algorithm's errors)."""


class PodGroupStates:
    """The cache's states by group, and the listers of one snapshot's (same class; the snapshot holds clones)."""

    __slots__ = ("_states",)

    def __init__(self) -> None:
        self._states: dict[GroupKey, PodGroupStateData] = {}

    def state(self, key: GroupKey) -> PodGroupStateData:
        """The group's state, created empty on first use (a member or the object arriving)."""
        st = self._states.get(key)
        if st is None:
            st = self._states[key] = PodGroupStateData()
        return st

    def drop_if_empty(self, key: GroupKey) -> None:
        st = self._states.get(key)
        if st is not None and st.empty():
            del self._states[key]

    def items(self) -> list[tuple[GroupKey, PodGroupStateData]]:
        return list(self._states.items())

    def lookup(self, key: GroupKey) -> PodGroupStateData | None:
        return self._states.get(key)

    def put(self, key: GroupKey, st: PodGroupStateData) -> None:
        self._states[key] = st

    def remove(self, key: GroupKey) -> None:
        self._states.pop(key, None)

    def keys(self) -> Set[GroupKey]:
        return self._states.keys()

    # ----- PodGroupStateLister / PodGroupLister (framework.podgroup)

    def get(self, namespace: str, name: str) -> PodGroupStateData:
        st = self._states.get((namespace, name))
        if st is None:
            raise PodGroupNotFoundError(f"pod group state not found for pod group {namespace}/{name}")
        return st


class PodGroupObjects:
    """PodGroupLister over a snapshot's states: the PodGroup objects."""

    __slots__ = ("_states",)

    def __init__(self, states: PodGroupStates) -> None:
        self._states = states

    def get(self, namespace: str, name: str) -> PodGroup:
        st = self._states.lookup((namespace, name))
        if st is None:
            raise PodGroupNotFoundError(f"pod group state not found for pod group podgroup/{namespace}/{name}")
        if st.pod_group is None:
            raise PodGroupNotFoundError(f"pod group object not found for pod group podgroup/{namespace}/{name}")
        return st.pod_group
