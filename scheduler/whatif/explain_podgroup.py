"""`py-scheduler explain` for the Workload API's pod groups (GenericWorkload on): why a group, or one of its
members, is pending, and what a pod-group cycle on the live snapshot would do now.

A group is explained whole, since its members are placed together: the PodGroup as the live scheduler last left
it (its PodGroupInitiallyScheduled condition, the outcome of its last cycle), then one pod-group cycle of the live
scheduler's own code (simulate's offline path) with every pending member. Before any cycle a member can be held at
GangScheduling's PreEnqueue: its PodGroup does not exist yet, or fewer pods than ``minCount`` name it; the answer
is the queue's own message. After the cycle, each member's node or FailedScheduling message with the nodes'
filter reasons, the condition the cycle would write (which placement failed, in upstream's words), and the victims
and nominations when the group would preempt. A group whose members are all bound is explained as if they were all
pending now (taken off their nodes), as `explain` does for a bound pod.
"""

from __future__ import annotations

from typing import Any

from scheduler.eventhandlers import ADDED
from scheduler.framework.features import Features
from scheduler.framework.status import success
from scheduler.model.errors import InvalidObjectError
from scheduler.model.pod import Pod, pod_from_api
from scheduler.model.workload import POD_GROUP_INITIALLY_SCHEDULED, PodGroup, parse_pod_group
from scheduler.whatif.offline import RecordingEventSink
from scheduler.whatif.simulate import (
    Offline,
    Outcome,
    SimulationError,
    add_cluster,
    as_pending,
    build_scheduler,
    queue_message,
    result_dict,
    victims_of,
)
from scheduler.whatif.workload_offline import is_workload_object

# The verdicts, from the first thing that holds the group back.
NO_POD_GROUP = "waitingForPodGroup"
TOO_FEW_MEMBERS = "waitingForMembers"
NO_MEMBERS = "noMembers"
SCHEDULED = "scheduled"
WAITING_ON_PREEMPTION = "waitingOnPreemption"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"


def member_of(pod: dict[str, Any]) -> str:
    """The name of the pod's PodGroup (``spec.schedulingGroup.podGroupName``), "" if none."""
    return str(((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") or "")


def _ns_name(o: dict[str, Any]) -> tuple[str, str]:
    meta = o.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def find_pod_group(cluster: list[dict[str, Any]], namespace: str, name: str) -> dict[str, Any] | None:
    """The Workload API's PodGroup ``namespace/name`` in the snapshot (None: it does not exist)."""
    for o in cluster:
        if is_workload_object(o) and o.get("kind") == "PodGroup" and _ns_name(o) == (namespace, name):
            return o
    return None


def members_of(cluster: list[dict[str, Any]], namespace: str, name: str) -> list[dict[str, Any]]:
    """The pods that name the group, in the snapshot's order."""
    return [o for o in cluster if o.get("kind") == "Pod" and _ns_name(o)[0] == namespace and member_of(o) == name]


def explain_pod_group(
    namespace: str, name: str, cluster: list[dict[str, Any]], config_path: str | None, features: Features,
) -> dict[str, Any]:
    """Explain the group ``namespace/name`` on ``cluster`` (a live snapshot). Keys: ``podGroup``, ``exists``,
    ``policy``, ``minCount``, ``topologyKeys``, ``profile``, ``liveCondition`` (the PodGroupInitiallyScheduled
    condition on the cluster), ``verdict`` and ``message`` (why it is pending, or what a cycle would do),
    ``condition`` (the one that cycle would write), ``members`` (per member simulate's schema plus ``boundTo``,
    ``nominatedNode`` and ``gatedBy``), ``victims`` and ``placement`` (the topology domain the members would share)."""
    if not features.enable_generic_workload:
        raise SimulationError("pod groups need --feature-gates GenericWorkload=true (as the scheduler runs)")
    key = f"{namespace}/{name}"
    pg_obj = find_pod_group(cluster, namespace, name)
    pg = _parsed(pg_obj, key)
    members = members_of(cluster, namespace, name)
    pending = [m for m in members if not (m.get("spec") or {}).get("nodeName")]
    targets = pending or members  # all bound: explained as if all were pending now
    bound_to = {pod_from_api(m).key: (m.get("spec") or {}).get("nodeName") or None for m in targets}
    targets = [as_pending(m) if bound_to[pod_from_api(m).key] else m for m in targets]
    out: dict[str, Any] = {
        "podGroup": key, "exists": pg is not None,
        "policy": pg.policy.kind if pg else None,
        "minCount": (pg.policy.min_count if pg.policy.is_gang else 1) if pg else None,
        "topologyKeys": list(pg.topology_keys) if pg else [],
        "profile": pod_from_api(targets[0]).scheduler_name if targets else None,
        "liveCondition": _condition(pg_obj), "condition": None, "members": [], "victims": [], "placement": {},
    }
    if not targets:
        out.update(verdict=NO_MEMBERS, message="no pod names this PodGroup in spec.schedulingGroup.podGroupName")
        return out
    off = _offline(targets, cluster, config_path, features)
    outcomes = _one_group_cycle(off, targets)
    members_out = [_member(off, t, outcomes.get(pod_from_api(t).key), bound_to) for t in targets]
    out["members"] = members_out
    out["victims"] = sorted({v for m in members_out for v in m["victims"]})
    if off.pod_groups is not None and pg is not None:
        conditions = off.pod_groups.conditions(key)
        out["condition"] = next((c for c in conditions if c.get("type") == POD_GROUP_INITIALLY_SCHEDULED), None)
    out["placement"] = _placement(pg, members_out, cluster)
    out["verdict"], out["message"] = _verdict(pg, key, members, members_out, out["condition"])
    return out


def _parsed(obj: dict[str, Any] | None, key: str) -> PodGroup | None:
    if obj is None:
        return None
    try:
        return parse_pod_group(obj)
    except InvalidObjectError as exc:
        raise SimulationError(f"PodGroup {key}: {exc}") from None


def _condition(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == POD_GROUP_INITIALLY_SCHEDULED:
            return dict(c)
    return None


def _offline(
    targets: list[dict[str, Any]], cluster: list[dict[str, Any]], config_path: str | None, features: Features,
) -> Offline:
    """The offline scheduler with the gates, the cluster minus the targets, then the targets as they arrive."""
    uids = {(t.get("metadata") or {}).get("uid") for t in targets}
    off = build_scheduler(config_path, targets, tie_break="name", features=features)
    others = [o for o in cluster if o.get("kind") != "Pod" or (o.get("metadata") or {}).get("uid") not in uids]
    add_cluster(off.sched, others, "the live cluster", live=True, pod_groups=off.pod_groups)
    for t in targets:
        scheduler_name = pod_from_api(t).scheduler_name
        if scheduler_name not in off.sched.frameworks:
            raise SimulationError(f"{config_path}: no profile for the pod's schedulerName {scheduler_name!r}")
        off.sched.on_pod_event(ADDED, t)
    return off


def _one_group_cycle(off: Offline, targets: list[dict[str, Any]]) -> dict[str, Outcome]:
    """Scheduling cycles until one decides for the members (a group's cycle decides for all of them at once);
    the members' outcomes by pod key. None came: the group never left the queue (PreEnqueue held it)."""
    keys = {pod_from_api(t).key for t in targets}
    before = len(off.outcomes.outcomes)
    while off.sched.schedule_one(timeout=0):
        mine = {o.pod.key: o for o in off.outcomes.outcomes[before:] if o.pod.key in keys}
        if mine:
            return mine
    return {}


def _member(off: Offline, target: dict[str, Any], outcome: Outcome | None,
            bound_to: dict[str, str | None]) -> dict[str, Any]:
    pod = pod_from_api(target)
    gate = ("", "")
    if outcome is None:  # held before any cycle
        gate = pre_enqueue_gate(off, pod)
        r: dict[str, Any] = {"pod": pod.key, "node": None, "message": gate[1] or queue_message(off.sched, pod.key),
                             "filtered": {}, "scores": {}, "score_details": {}, "victims": []}
    else:
        r = result_dict(outcome, victims_of(off, pod), off.results)
    r["gatedBy"] = gate[0] or None
    sink = off.sched.recorder
    nominated = sink.nominated.get(pod.key) if isinstance(sink, RecordingEventSink) else None
    r.update({"boundTo": bound_to.get(pod.key), "nominatedNode": nominated or None})
    return r


def pre_enqueue_gate(off: Offline, pod: Pod) -> tuple[str, str]:
    """The PreEnqueue plugin that holds the pod back and its message (the queue asks the same plugins, against the
    same cache), ("", "") if none does."""
    fwk = off.sched.frameworks[pod.scheduler_name]
    for plugin in fwk.pre_enqueue_plugins():
        status = plugin.pre_enqueue(pod)
        if status is not None and not success(status):
            return plugin.name, status.message
    return "", ""


def _placement(pg: PodGroup | None, members: list[dict[str, Any]], cluster: list[dict[str, Any]]) -> dict[str, str]:
    """The topology domain the placed members share (each topology key's value on their nodes)."""
    if pg is None or not pg.topology_keys:
        return {}
    chosen = {m["node"] for m in members if m["node"]}
    labels = [(n.get("metadata") or {}).get("labels") or {} for n in cluster
              if n.get("kind") == "Node" and (n.get("metadata") or {}).get("name") in chosen]
    if not labels:
        return {}
    return {k: str(labels[0].get(k, "")) for k in pg.topology_keys
            if all(str(lb.get(k, "")) == str(labels[0].get(k, "")) for lb in labels)}


def _verdict(pg: PodGroup | None, key: str, members: list[dict[str, Any]], out: list[dict[str, Any]],
             condition: dict[str, Any] | None) -> tuple[str, str]:
    """The first thing that holds the group back, in words, with upstream's message where there is one."""
    gated = next((m for m in out if m["gatedBy"]), None)
    held = f" ({gated['gatedBy']} at PreEnqueue: {gated['message']})" if gated else ""
    if pg is None:
        return NO_POD_GROUP, f"PodGroup {key} does not exist: its members wait in the queue until it is created{held}"
    if gated is not None:
        if pg.policy.is_gang and len(members) < pg.policy.min_count:
            return TOO_FEW_MEMBERS, (f"{len(members)} pod(s) name this gang and its minCount is "
                                     f"{pg.policy.min_count}: no cycle runs until more members exist{held}")
        return GATED, f"a member is held before any cycle{held}"
    if all(m["node"] for m in out):
        return SCHEDULED, f"a cycle now would place all {len(out)} member(s)"
    if any(m["victims"] or m["nominatedNode"] for m in out):
        return WAITING_ON_PREEMPTION, ("the group would preempt: its members are nominated and wait for the victims "
                                       "to be gone")
    if condition is not None and condition.get("status") == "False":
        return UNSCHEDULABLE, str(condition.get("message") or "")
    return UNSCHEDULABLE, next(m["message"] for m in out if not m["node"])
