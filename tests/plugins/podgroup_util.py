"""Pod-group objects for the placement plugins' tests: a PodGroup, its members, and a handle whose snapshot holds
the group's state as the cache would (assigned members bound, unscheduled ones waiting)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from scheduler import testing as st
from scheduler.cache.podgroupstate import PodGroupObjects, PodGroupStateData, PodGroupStates
from scheduler.cache.snapshot import Snapshot
from scheduler.config.types import Profile
from scheduler.framework.podgroup import Placement, PodGroupInfo, PodGroupManager
from scheduler.framework.runtime.framework import Framework, FrameworkOptions
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.workload import API_VERSION, KIND_POD_GROUP, PodGroup, parse_pod_group

GROUP = "pg"
NS = "default"


def pod_group(topology_key: str | None = None, min_count: int = 1) -> PodGroup:
    """A gang PodGroup ``default/pg``, constrained to one domain of ``topology_key`` when given."""
    spec: dict[str, object] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology_key is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    return parse_pod_group({"apiVersion": API_VERSION, "kind": KIND_POD_GROUP,
                            "metadata": {"name": GROUP, "namespace": NS, "uid": "pg-uid"}, "spec": spec})


def member(name: str, node: str = "", cpu: str | None = None, memory: str | None = None) -> Pod:
    """A pod of ``default/pg``, bound to ``node`` when given."""
    w = st.make_pod().name(name).uid(name).namespace(NS).spec_field("schedulingGroup", {"podGroupName": GROUP})
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    w.container(st.make_container().image("pause").req(requests) if requests else st.make_container().image("pause"))
    return (w.node(node) if node else w).obj()


def group_handle(nodes: Sequence[Node], members: Sequence[Pod], group: PodGroup | None,
                 others: Sequence[Pod] = (),
                 cache: PodGroupManager | None = None) -> tuple[Framework, PodGroupStateData]:
    """A handle over ``nodes`` (with the bound ``members`` and ``others`` on them) whose snapshot holds the group's
    state: every member added as the cache adds it. ``cache``: what ``Handle.pod_group_manager()`` answers (the
    live cache's states, in a scheduler), else the snapshot."""
    snapshot = st.make_snapshot(nodes, [*members, *others])
    handle = Framework(Profile("default-scheduler", {}), {}, FrameworkOptions(
        scheduler=st.TestActions(), snapshot=snapshot, objects=st.make_object_store(), pod_group_manager=cache))
    states = snapshot.pod_group_states()
    state = states.state((NS, GROUP))
    state.set_pod_group(group)
    for pod in members:
        state.add_pod(pod)
    return handle, state


def group_info(group: PodGroup | None, unscheduled: Sequence[Pod] = ()) -> PodGroupInfo:
    return PodGroupInfo(NS, GROUP, group, list(unscheduled))


def snapshot_of(handle: Framework) -> Snapshot:
    return cast(Snapshot, handle.snapshot())


def placement_of(handle: Framework, name: str, nodes: Sequence[str]) -> Placement:
    """A placement of these nodes, as the snapshot holds them (the objects assume_placement expects)."""
    snapshot = snapshot_of(handle)
    infos = []
    for node in nodes:
        info = snapshot.get(node)
        assert info is not None, node
        infos.append(info)
    return Placement(name, infos)


class EmptyCache:
    """A live cache's PodGroupManager that knows no group: the placement plugins must not read it."""

    def pod_group_states(self) -> PodGroupStates:
        return PodGroupStates()

    def pod_groups(self) -> PodGroupObjects:
        return PodGroupObjects(PodGroupStates())
