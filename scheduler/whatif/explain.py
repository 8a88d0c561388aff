"""`py-scheduler explain`: one scheduling cycle of one pod on a read-only snapshot of the live cluster.

The cycle is the live scheduler's own (simulate's offline path), with the shared ResultRecorder as
its observer, so the output is what that code decides: per node the rejecting Filter plugin and its
reason, or each Score plugin's raw, normalized and weighted score and the total; the sampling
(numFeasibleNodesToFind from a fresh start index 0; the live scheduler's index rotates between pods);
the chosen node or the FailedScheduling message; the victims preemption would evict. A bound pod is
explained as if it were pending now: it is left out of the snapshot, so its node looks as it would
without it. Among equal totals the first node by name is reported; a real cycle picks one at random.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from scheduler.eventhandlers import ADDED
from scheduler.framework.features import Features
from scheduler.framework.runtime import Framework
from scheduler.model.pod import pod_from_api
from scheduler.schedule_one import num_feasible_nodes_to_find
from scheduler.whatif.dra_offline import device_line
from scheduler.whatif.explain_podgroup import (
    GATED,
    NO_MEMBERS,
    NO_POD_GROUP,
    SCHEDULED,
    TOO_FEW_MEMBERS,
    UNSCHEDULABLE,
    WAITING_ON_PREEMPTION,
    explain_pod_group,
    member_of,
)
from scheduler.whatif.simulate import (
    Offline,
    SimulationError,
    add_cluster,
    add_devices,
    as_pending,
    attempt,
    build_scheduler,
    queue_message,
    result_dict,
    victims_of,
)

DEFAULT_ROWS = 20


def claims_before(cluster: list[dict[str, Any]], uid: str) -> list[dict[str, Any]]:
    """The cluster with the claims reserved for the pod alone as they were before its scheduling (no
    allocation, no reservation): its devices are chosen afresh, as its node is."""
    out = []
    for o in cluster:
        reserved = ((o.get("status") or {}).get("reservedFor") or []) if o.get("kind") == "ResourceClaim" else []
        if reserved and all(r.get("uid") == uid for r in reserved):
            o = {**o, "status": {}}
        out.append(o)
    return out


def explain(
    pod: dict[str, Any], cluster: list[dict[str, Any]], config_path: str | None, features: Features | None = None,
) -> dict[str, Any]:
    """Run one cycle for ``pod`` on ``cluster`` (a live snapshot) and describe it in simulate's schema
    plus ``profile``, ``boundTo``, ``nominatedNode``, ``scoreSkipped`` (plugins whose PreScore said Skip) and
    ``sampling``. A member of a Workload API pod group, with GenericWorkload on in ``features``, is explained
    with its group (explain_podgroup): its own entry of the group's cycle plus ``podGroup``."""
    features = features or Features()
    group = member_of(pod)
    if group and features.enable_generic_workload:
        return explain_member(pod, cluster, config_path, features)
    out = _explain_pod(pod, cluster, config_path, features)
    if group:
        out["note"] = (f"spec.schedulingGroup names pod group {group}, ignored with GenericWorkload off: explained "
                       f"as a pod of no group (--feature-gates GenericWorkload=true explains the group)")
    return out


def explain_member(
    pod: dict[str, Any], cluster: list[dict[str, Any]], config_path: str | None, features: Features,
) -> dict[str, Any]:
    """A pod group's member: its entry of the group's what-if cycle, and the group's explanation as ``podGroup``."""
    parsed = pod_from_api(pod)
    group = explain_pod_group(parsed.namespace, member_of(pod), cluster, config_path, features)
    mine = next((m for m in group["members"] if m["pod"] == parsed.key), None)
    if mine is None:  # bound while other members are pending: the cycle is theirs
        node = (pod.get("spec") or {}).get("nodeName")
        mine = {"pod": parsed.key, "node": node, "message": "", "filtered": {}, "scores": {}, "score_details": {},
                "victims": [], "boundTo": node, "nominatedNode": None, "gatedBy": None}
    return {**mine, "profile": parsed.scheduler_name, "scoreSkipped": [], "podGroup": group}


def _explain_pod(
    pod: dict[str, Any], cluster: list[dict[str, Any]], config_path: str | None, features: Features,
) -> dict[str, Any]:
    """One cycle of a pod of no group (see explain)."""
    bound_to = (pod.get("spec") or {}).get("nodeName") or None
    target = as_pending(pod) if bound_to else pod
    if bound_to:
        cluster = claims_before(cluster, str((pod.get("metadata") or {}).get("uid") or ""))
    off, fwk = _offline_scheduler(target, cluster, config_path, features)
    sched = off.sched
    sched.cache.update_snapshot(sched.snapshot)
    order = [n.name for n in sched.snapshot.list()]
    percentage = fwk.percentage_of_nodes_to_score
    if percentage is None:
        percentage = sched.algorithm.percentage_of_nodes_to_score
    sampling: dict[str, Any] = {
        "numAllNodes": len(order),
        "numFeasibleNodesToFind": num_feasible_nodes_to_find(percentage, len(order), fwk.has_score_plugins()),
        "startIndex": sched.algorithm.next_start_node_index,
    }
    parsed = pod_from_api(target)
    sched.on_pod_event(ADDED, target)
    outcome = attempt(off, parsed.key)
    if outcome is None:  # it never reached a cycle (scheduling gates)
        out: dict[str, Any] = {"pod": parsed.key, "node": None, "message": queue_message(sched, parsed.key),
                               "filtered": {}, "scores": {}, "score_details": {}, "victims": []}
    else:
        out = result_dict(outcome, victims_of(off, parsed), off.results)
    attempt_result = off.results.result(parsed.uid)
    ran = attempt_result.filter if attempt_result is not None else {}
    if outcome is not None and outcome.statuses is not None and outcome.statuses.absent is not None:
        absent = outcome.statuses.absent  # PreFilter rejected every node, or left these out of its result
        for n in order:
            if n not in ran and n not in out["filtered"]:
                out["filtered"][n] = {"plugin": absent.plugin, "reason": absent.message}
    sampling["evaluated"] = [n for n in order if n in ran]
    sampling["notEvaluated"] = [n for n in order if ran and n not in ran and n not in out["filtered"]]
    out.update({
        "profile": parsed.scheduler_name,
        "scoreSkipped": sorted(p for p, v in (attempt_result.pre_score if attempt_result else {}).items() if not v),
        "boundTo": bound_to,
        "nominatedNode": sched.queue.nominator.nominated_node_name(parsed) if out["victims"] else None,
        "sampling": sampling,
    })
    return add_devices(out, sched, target)


def _offline_scheduler(
    target: dict[str, Any], cluster: list[dict[str, Any]], config_path: str | None, features: Features,
) -> tuple[Offline, Framework]:
    """The offline scheduler with the target's profile, loaded with the cluster minus the target itself."""
    uid = (target.get("metadata") or {}).get("uid")
    off = build_scheduler(config_path, [target], tie_break="name", features=features)
    others = [o for o in cluster if o.get("kind") != "Pod" or (o.get("metadata") or {}).get("uid") != uid]
    add_cluster(off.sched, others, "the live cluster", live=True, pod_groups=off.pod_groups)
    name = (target.get("spec") or {}).get("schedulerName") or "default-scheduler"
    fwk = off.sched.frameworks.get(name)
    if fwk is None:
        raise SimulationError(f"{config_path}: no profile for the pod's schedulerName {name!r}")
    return off, fwk


# ----- the table -------------------------------------------------------------------------------

_GREEN, _RED, _BOLD, _DIM, _RESET = "\x1b[32m", "\x1b[31m", "\x1b[1m", "\x1b[2m", "\x1b[0m"


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color else text


def format_explain(r: dict[str, Any], rows: int = DEFAULT_ROWS, color: bool = False) -> str:
    """For people: the verdict, the sampling, the scored nodes by total (best first, ``rows`` of them)
    with raw / normalized / weighted per plugin, then the filtered nodes grouped by reason. A pod group's answer
    (explain_pod_group) is format_pod_group's; a member's shows its group's first."""
    if "members" in r:
        return format_pod_group(r, color)
    lines = [_paint(f"Pod {r['pod']}", _BOLD, color) + f"  (profile {r['profile']})"]
    if r.get("note"):
        lines.append(f"Note: {r['note']}")
    if isinstance(r.get("podGroup"), dict):
        lines.extend("  " + line for line in format_pod_group(r["podGroup"], color).splitlines())
        lines.append(_paint(f"This member, {r['pod']}:", _BOLD, color))
    if r.get("boundTo"):
        lines.append(f"Bound to {r['boundTo']}; explained as if it were pending now (removed from its node).")
    if r["node"]:
        lines.append("Chosen node: " + _paint(r["node"], _GREEN, color))
    else:
        lines.append(_paint("Unschedulable: ", _RED, color) + r["message"])
    lines.extend(f"Device {device_line(d)}" for d in r.get("devices") or [])
    if r["victims"]:
        lines.append(f"Would preempt on {r.get('nominatedNode') or '?'}: {', '.join(r['victims'])}")
    s = r.get("sampling") or {}  # none for a member: its group's cycle samples per member and placement
    if s:
        lines.append(
            f"Sampling: {s['numAllNodes']} nodes, numFeasibleNodesToFind {s['numFeasibleNodesToFind']}, start index "
            f"{s['startIndex']}; filters ran on {len(s['evaluated'])}"
            + (f", {len(s['notEvaluated'])} not evaluated" if s["notEvaluated"] else "")
        )
    lines.extend(_score_table(r, rows, color))
    if r["score_details"] and r["scoreSkipped"]:
        lines.append(f"Skipped at PreScore (nothing to score for this pod): {', '.join(r['scoreSkipped'])}")
    lines.extend(_filtered_groups(r))
    if s.get("notEvaluated"):
        lines.append(f"Not evaluated (enough feasible nodes found first): {_names(s['notEvaluated'])}")
    return "\n".join(lines) + "\n"


VERDICTS = {
    SCHEDULED: "Would be placed", UNSCHEDULABLE: "Unschedulable", WAITING_ON_PREEMPTION: "Waiting on preemption",
    NO_POD_GROUP: "Waiting for its PodGroup", TOO_FEW_MEMBERS: "Waiting for members", GATED: "Gated",
    NO_MEMBERS: "No members",
}


def _condition_line(c: dict[str, Any]) -> str:
    return (f"{c.get('type')}={c.get('status')} {c.get('reason', '')}"
            + (f": {c['message']}" if c.get("message") else ""))


def _same_condition(a: dict[str, Any], b: dict[str, Any] | None) -> bool:
    """The same verdict (its time and generation aside)."""
    return b is not None and all(a.get(k) == b.get(k) for k in ("type", "status", "reason", "message"))


def format_pod_group(r: dict[str, Any], color: bool = False) -> str:
    """A pod group for people: the verdict, its live condition (its last cycle), what a cycle now would write, the
    placement and victims, then each member's node or message with its nodes' filter reasons."""
    policy = (f"{r['policy']}" + (f", minCount {r['minCount']}" if r["policy"] == "gang" else "")
              if r["exists"] else "no PodGroup object")
    topology = f"; topology {', '.join(r['topologyKeys'])}" if r["topologyKeys"] else ""
    lines = [_paint(f"PodGroup {r['podGroup']}", _BOLD, color) + f"  ({policy}{topology}"
             + (f"; profile {r['profile']})" if r["profile"] else ")")]
    verdict = VERDICTS.get(r["verdict"], r["verdict"])
    code = _GREEN if r["verdict"] == SCHEDULED else _RED
    lines.append(_paint(f"{verdict}: ", code, color) + r["message"])
    live = r["liveCondition"]
    lines.append("Last cycle (live): " + (_condition_line(live) if live else "no PodGroupInitiallyScheduled "
                                                                              "condition (no group cycle has run)"))
    if r["condition"] and not _same_condition(r["condition"], live):
        lines.append("A cycle now would write: " + _condition_line(r["condition"]))
    if r["placement"]:
        lines.append("Placement: " + ", ".join(f"{k}={v}" for k, v in r["placement"].items()))
    if r["victims"]:
        lines.append(f"Would preempt: {', '.join(r['victims'])}")
    if r["members"]:
        lines.append(f"Members ({len(r['members'])}):")
    for m in r["members"]:
        bound = f" (bound to {m['boundTo']}; explained as if pending)" if m.get("boundTo") else ""
        if m["node"]:
            lines.append(f"  {m['pod']} -> " + _paint(m["node"], _GREEN, color) + bound)
            continue
        nominated = f" (nominated to {m['nominatedNode']})" if m.get("nominatedNode") else ""
        lines.append(f"  {m['pod']}{bound}{nominated}: {m['message']}")
        lines.extend("  " + line for line in _filtered_groups(m)[1:])
    return "\n".join(lines) + "\n"


def _score_table(r: dict[str, Any], rows: int, color: bool) -> list[str]:
    details: dict[str, dict[str, dict[str, int]]] = r["score_details"]
    if not details:
        return []
    plugins = sorted({p for plugins in details.values() for p in plugins})
    ranked = sorted(details, key=lambda n: (-r["scores"][n]["total"], n))
    header = ["NODE", "TOTAL", *plugins]
    table = [header]
    for node in ranked[:rows]:
        cells = [f"{d['raw']}/{d['normalized']}/{d['weighted']}" if (d := details[node].get(p)) else "-"
                 for p in plugins]
        table.append([node, str(r["scores"][node]["total"]), *cells])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    out = [f"Scores (each plugin: raw/normalized/weighted), best first, {min(rows, len(ranked))} of {len(ranked)}:"]
    for i, row in enumerate(table):
        text = "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        if i == 0:
            text = _paint(text, _DIM, color)
        elif row[0] == r["node"]:
            text = _paint(text, _GREEN, color)
        out.append("  " + text)
    return out


NAMES_SHOWN = 10  # node names per line of the table (all of them are in the JSON)


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown if len(names) <= NAMES_SHOWN else f"{shown} and {len(names) - NAMES_SHOWN} more"


def _nodes(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def _filtered_groups(r: dict[str, Any]) -> list[str]:
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for node, f in r["filtered"].items():
        groups[(f["plugin"], f["reason"])].append(node)
    if not groups:
        return []
    out = [f"Filtered out ({_nodes(len(r['filtered']))}):"]
    for (plugin, reason), nodes in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        out.append(f"  {plugin or '(no plugin)'}: {reason} ({len(nodes)}): {_names(sorted(nodes))}")
    return out
