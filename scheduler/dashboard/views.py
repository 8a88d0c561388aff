"""The JSON the dashboard serves, built from API objects and the engines' answers by pure functions.

Nothing here reads the cluster or runs a scheduler: the server passes in what it read (the snapshot,
the FailedScheduling events, a metrics scrape) and what explain / simulate / capacity answered, so
every page's data can be checked from hand-made objects. Amounts carry a text label next to each
number (the page never relies on colour or on the bar's length alone).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from scheduler.framework.results import PREFIX, RESULT_HISTORY, SELECTED_NODE
from scheduler.model.node import REGION_LABELS, ZONE_LABELS, Node, node_from_api
from scheduler.model.pod import Pod, parse_time, pod_from_api
from scheduler.model.resources import Resource

NO_ZONE = "(no zone label)"
RECENT_DECISIONS = 20
FILTER_RESULT = PREFIX + "filter-result"

# ----- pending pods ------------------------------------------------------------------------------


def _scheduled_condition(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return dict(c)
    return {}


def _event_time(event: Mapping[str, Any]) -> str:
    """When the event last happened: the series' last observation, else its eventTime (RFC 3339 text
    sorts in time order for one writer's clock)."""
    series = event.get("series") or {}
    return str(series.get("lastObservedTime") or event.get("eventTime") or
               (event.get("metadata") or {}).get("creationTimestamp") or "")


def failed_scheduling_by_pod(events: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, int]]:
    """pod uid -> (the latest FailedScheduling note, attempts). A repeated identical failure is one
    Event with a series count, so attempts add up each event's count (1 without a series)."""
    latest: dict[str, tuple[str, str]] = {}
    attempts: Counter[str] = Counter()
    for e in events:
        if e.get("reason") != "FailedScheduling":
            continue
        uid = str((e.get("regarding") or {}).get("uid") or "")
        if not uid:
            continue
        attempts[uid] += int((e.get("series") or {}).get("count") or 1)
        when = _event_time(e)
        if uid not in latest or when >= latest[uid][0]:
            latest[uid] = (when, str(e.get("note") or ""))
    return {uid: (note, attempts[uid]) for uid, (_, note) in latest.items()}


def pending_pods(
    pods: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]] | None, scheduler_names: Sequence[str],
    now: float,
) -> list[dict[str, Any]]:
    """Every pod of ``scheduler_names`` that is not bound, oldest first: its current reason (the last
    FailedScheduling message, else its PodScheduled condition's), age and attempts (None when the
    events could not be read)."""
    failures = failed_scheduling_by_pod(events) if events is not None else {}
    names = set(scheduler_names)
    out: list[dict[str, Any]] = []
    for obj in pods:
        spec = obj.get("spec") or {}
        if spec.get("nodeName") or (spec.get("schedulerName") or "default-scheduler") not in names:
            continue
        pod = pod_from_api(obj)
        if pod.phase in ("Succeeded", "Failed"):
            continue
        cond = _scheduled_condition(obj)
        note, count = failures.get(pod.uid, ("", 0))
        gates = list(pod.scheduling_gates)
        reason = str(cond.get("reason") or ("SchedulingGated" if gates else "Pending"))
        out.append({
            "namespace": pod.namespace,
            "name": pod.name,
            "schedulerName": pod.scheduler_name,
            "ageSeconds": max(0, int(now - pod.creation_timestamp)) if pod.creation_timestamp else None,
            "reason": reason,
            "message": note or str(cond.get("message") or ""),
            "attempts": count if events is not None else None,
            "nominatedNode": pod.nominated_node_name or None,
            "gates": gates,
        })
    out.sort(key=lambda p: (-(p["ageSeconds"] or 0), p["namespace"], p["name"]))
    return out


# ----- one pod's decision ------------------------------------------------------------------------


def decision(result: Mapping[str, Any], filter_order: Sequence[str]) -> dict[str, Any]:
    """Explain's answer as rows, the nodes that came closest first: the chosen node (or the one
    preemption nominates), then the feasible nodes by total score, those the sampling never reached,
    then the filtered ones, those rejected by a later Filter plugin (they passed more) first.
    ``filter_order`` is the profile's Filter plugins in run order."""
    filtered: Mapping[str, Mapping[str, str]] = result.get("filtered") or {}
    details: Mapping[str, Mapping[str, Mapping[str, int]]] = result.get("score_details") or {}
    scores: Mapping[str, Mapping[str, int]] = result.get("scores") or {}
    sampling = result.get("sampling") or {}
    not_evaluated = list(sampling.get("notEvaluated") or [])
    chosen, nominated = result.get("node"), result.get("nominatedNode")
    stage = {p: i for i, p in enumerate(filter_order)}
    plugins = sorted({p for ps in details.values() for p in ps})
    rows: list[dict[str, Any]] = []
    for node in sorted({*filtered, *details, *not_evaluated}):
        row: dict[str, Any] = {"node": node, "plugin": None, "reason": None, "total": None, "scores": {}}
        if node in filtered:
            row.update(verdict="filtered", plugin=filtered[node].get("plugin") or "",
                       reason=filtered[node].get("reason") or "")
        elif node in details:
            row.update(verdict="feasible", total=int((scores.get(node) or {}).get("total", 0)),
                       scores={p: dict(d) for p, d in details[node].items()})
        else:
            row["verdict"] = "not evaluated"
        if node == chosen:
            row["verdict"] = "chosen"
        elif node == nominated and result.get("victims"):
            row["verdict"] = "nominated"
        rows.append(row)

    def closeness(row: dict[str, Any]) -> tuple[int, int, int, str]:
        first = {"chosen": 0, "nominated": 0, "feasible": 1, "not evaluated": 2}.get(row["verdict"], 3)
        return (first, -(row["total"] or 0), -stage.get(row["plugin"] or "", -1), row["node"])

    rows.sort(key=closeness)
    for i, row in enumerate(rows, 1):
        row["rank"] = i
    return {
        "pod": result.get("pod"),
        "profile": result.get("profile"),
        "node": chosen,
        "boundTo": result.get("boundTo"),
        "message": result.get("message") or "",
        "victims": list(result.get("victims") or []),
        "nominatedNode": nominated,
        "plugins": plugins,
        "scoreSkipped": list(result.get("scoreSkipped") or []),
        "sampling": dict(sampling),
        "reasons": reason_counts(filtered),
        "rows": rows,
        "podGroup": _group_summary(result.get("podGroup")),
    }


def _group_summary(group: Any) -> dict[str, Any] | None:
    """A member's group on its decision page: which group, its verdict and why (the rest on the group's page)."""
    if not isinstance(group, Mapping):
        return None
    return {k: group.get(k) for k in ("podGroup", "verdict", "message", "victims", "placement")}


def reason_counts(filtered: Mapping[str, Mapping[str, str]]) -> list[dict[str, Any]]:
    """The filtered nodes grouped by (plugin, reason), most nodes first: the counts kube-scheduler's
    "0/N nodes are available" message gives, one reason per node."""
    groups = Counter((f.get("plugin") or "", f.get("reason") or "") for f in filtered.values())
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))
    return [{"plugin": p, "reason": r, "count": n} for (p, r), n in ranked]


# ----- the Workload API's pod groups --------------------------------------------------------------

POD_GROUP_CONDITION = "PodGroupInitiallyScheduled"


def _group_of(obj: Mapping[str, Any]) -> str:
    return str(((obj.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") or "")


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def pod_groups(
    objects: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]] | None,
) -> list[dict[str, Any]]:
    """Every Workload API PodGroup (scheduling.k8s.io) and every group a pod names that has none, by namespace and
    name: its policy, its PodGroupInitiallyScheduled condition (the last group cycle's outcome) and its members,
    each with its node, or the last FailedScheduling message (else its PodScheduled condition's)."""
    failures = failed_scheduling_by_pod(events) if events is not None else {}
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for o in objects:
        if o.get("kind") != "PodGroup" or not str(o.get("apiVersion", "")).startswith("scheduling.k8s.io/"):
            continue
        spec = o.get("spec") or {}
        policy = spec.get("schedulingPolicy") or {}
        gang = policy.get("gang")
        condition = next((dict(c) for c in (o.get("status") or {}).get("conditions") or []
                          if c.get("type") == POD_GROUP_CONDITION), None)
        topology = (spec.get("schedulingConstraints") or {}).get("topology") or []
        groups[_key(o)] = {
            "exists": True, "policy": "gang" if gang is not None else "basic",
            "minCount": int((gang or {}).get("minCount") or 1),
            "topologyKeys": [str(t.get("key")) for t in topology if isinstance(t, Mapping) and t.get("key")],
            "condition": condition, "members": [],
        }
    for obj in pods:
        name = _group_of(obj)
        if not name:
            continue
        ns = _key(obj)[0]
        group = groups.setdefault((ns, name), {"exists": False, "policy": None, "minCount": None,
                                               "topologyKeys": [], "condition": None, "members": []})
        pod = pod_from_api(obj)
        note = failures.get(pod.uid, ("", 0))[0]
        group["members"].append({"pod": pod.key, "name": pod.name, "node": pod.node_name or None,
                                 "message": "" if pod.node_name else
                                 note or str(_scheduled_condition(obj).get("message") or "")})
    out = []
    for (ns, name), g in sorted(groups.items()):
        g["members"].sort(key=lambda m: m["name"])
        bound = sum(1 for m in g["members"] if m["node"])
        out.append({"podGroup": f"{ns}/{name}", "namespace": ns, "name": name, **g,
                    "bound": bound, "pending": len(g["members"]) - bound})
    return out


# ----- nodes -------------------------------------------------------------------------------------

_GI = 1024 ** 3


def _cpu_text(milli: int) -> str:
    return f"{milli / 1000:g}" if milli % 1000 == 0 or milli >= 10_000 else f"{milli}m"


def _bytes_text(n: int) -> str:
    if n >= _GI:
        return f"{n / _GI:.1f}Gi"
    return f"{n / 1024 ** 2:.0f}Mi" if n >= 1024 ** 2 else str(n)


def _bar(name: str, requested: int, allocatable: int, text: str) -> dict[str, Any]:
    percent = round(100 * requested / allocatable) if allocatable > 0 else None
    return {"name": name, "requested": requested, "allocatable": allocatable, "percent": percent,
            "text": f"{text} ({percent}%)" if percent is not None else text}


def resource_bars(requested: Resource, allocatable: Resource, pod_count: int) -> list[dict[str, Any]]:
    """cpu, memory, ephemeral-storage, pods and every extended resource the node offers: requested
    against allocatable, with the amounts as text."""
    bars = [
        _bar("cpu", requested.milli_cpu, allocatable.milli_cpu,
             f"{_cpu_text(requested.milli_cpu)} of {_cpu_text(allocatable.milli_cpu)} cores"),
        _bar("memory", requested.memory, allocatable.memory,
             f"{_bytes_text(requested.memory)} of {_bytes_text(allocatable.memory)}"),
    ]
    if allocatable.ephemeral_storage:
        bars.append(_bar("ephemeral-storage", requested.ephemeral_storage, allocatable.ephemeral_storage,
                         f"{_bytes_text(requested.ephemeral_storage)} of {_bytes_text(allocatable.ephemeral_storage)}"))
    bars.append(_bar("pods", pod_count, allocatable.allowed_pod_number,
                     f"{pod_count} of {allocatable.allowed_pod_number} pods"))
    for name, amount in sorted(allocatable.scalar.items()):
        used = requested.scalar.get(name, 0)
        bars.append(_bar(name, used, amount, f"{used} of {amount}"))
    return bars


def zone_of(node: Node) -> str:
    """The zone label (region/zone when both are set); nodes without one share a group."""
    zone = next((node.labels[k] for k in ZONE_LABELS if node.labels.get(k)), "")
    region = next((node.labels[k] for k in REGION_LABELS if node.labels.get(k)), "")
    if not zone and not region:
        return NO_ZONE
    return f"{region}/{zone}" if region and zone else zone or region


def nodes_view(nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Nodes grouped by zone (zones and nodes by name): per node the resource bars (requests of the pods
    bound to it, as NodeResourcesFit counts them), taints, conditions, pod count, unschedulable."""
    on_node: dict[str, list[Pod]] = defaultdict(list)
    for obj in pods:
        pod = pod_from_api(obj)
        if pod.node_name and pod.phase not in ("Succeeded", "Failed"):
            on_node[pod.node_name].append(pod)
    zones: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for obj in nodes:
        node = node_from_api(obj)
        requested = Resource()
        for pod in on_node.get(node.name, []):
            requested.add(pod.requests)
        zones[zone_of(node)].append({
            "name": node.name,
            "resources": resource_bars(requested, node.allocatable, len(on_node.get(node.name, []))),
            "pods": len(on_node.get(node.name, [])),
            "taints": [f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in node.taints],
            "conditions": [{"type": k, "status": v} for k, v in sorted(node.conditions.items())],
            "unschedulable": node.unschedulable,
        })
    return {"zones": [{"zone": z, "nodes": sorted(ns, key=lambda n: n["name"])} for z, ns in sorted(zones.items())],
            "nodeCount": sum(len(ns) for ns in zones.values())}


def what_if(placement: Mapping[str, Any], count: Mapping[str, Any] | None) -> dict[str, Any]:
    """The what-if box's answer: simulate's placement of the pasted pod (node or message, the reasons
    by count) and capacity's count of copies (None when the pod does not fit at all)."""
    return {
        "pod": placement.get("pod"),
        "node": placement.get("node"),
        "message": placement.get("message") or "",
        "victims": list(placement.get("victims") or []),
        "reasons": reason_counts(placement.get("filtered") or {}),
        "invalid": list(placement.get("invalid") or []),
        "capacity": dict(count) if count is not None else None,
    }


# ----- the scheduler -----------------------------------------------------------------------------


def parse_metrics(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Prometheus text -> sample name -> sorted labels -> value."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name][tuple(sorted(s.labels.items()))] = s.value
    return dict(out)


def _by_label(samples: Mapping[tuple[tuple[str, str], ...], float], label: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for labels, value in samples.items():
        out[dict(labels).get(label, "")] += value
    return dict(out)


def scheduler_view(
    now: Mapping[str, Mapping[tuple[tuple[str, str], ...], float]],
    before: Mapping[str, Mapping[tuple[tuple[str, str], ...], float]] | None, seconds: float,
) -> dict[str, Any]:
    """Queue sizes (scheduler_pending_pods by queue) and attempts per second by result, from two scrapes
    ``seconds`` apart (no rate from the first scrape alone: None)."""
    attempts = _by_label(now.get("scheduler_schedule_attempts_total", {}), "result")
    rates: dict[str, float | None] = {}
    if before is not None and seconds > 0:
        earlier = _by_label(before.get("scheduler_schedule_attempts_total", {}), "result")
        rates = {r: round(max(0.0, v - earlier.get(r, 0.0)) / seconds, 2) for r, v in attempts.items()}
    else:
        rates = dict.fromkeys(attempts)
    return {
        "queues": {q: int(v) for q, v in sorted(_by_label(now.get("scheduler_pending_pods", {}), "queue").items())},
        "attemptsTotal": {r: int(v) for r, v in sorted(attempts.items())},
        "attemptsPerSecond": dict(sorted(rates.items())),
    }


def recent_decisions(pods: Iterable[Mapping[str, Any]], limit: int = RECENT_DECISIONS) -> list[dict[str, Any]]:
    """The newest decisions `run --record-results` wrote on pods, newest first: the node chosen, or the
    filter verdicts' count of rejecting nodes. Time: the PodScheduled condition's last transition."""
    out = []
    for obj in pods:
        ann = (obj.get("metadata") or {}).get("annotations") or {}
        if SELECTED_NODE not in ann and RESULT_HISTORY not in ann:
            continue
        meta = obj.get("metadata") or {}
        cond = _scheduled_condition(obj)
        when = str(cond.get("lastTransitionTime") or meta.get("creationTimestamp") or "")
        node = ann.get(SELECTED_NODE) or ""
        out.append({
            "pod": f"{meta.get('namespace')}/{meta.get('name')}",
            "node": node or None,
            "outcome": f"bound to {node}" if node else _rejections(ann.get(FILTER_RESULT, "")),
            "time": when,
        })
    out.sort(key=lambda d: (-parse_time(d["time"]), str(d["pod"])))
    return out[:limit]


def _rejections(filter_result: str) -> str:
    """filter-result (node -> plugin -> "passed" or the reason) as "unschedulable: N of M nodes rejected"."""
    import json

    try:
        verdicts = json.loads(filter_result) if filter_result else {}
    except ValueError:
        verdicts = {}
    if not isinstance(verdicts, dict) or not verdicts:
        return "unschedulable"
    rejected = sum(1 for ps in verdicts.values() if isinstance(ps, dict) and any(v != "passed" for v in ps.values()))
    return f"unschedulable: {rejected} of {len(verdicts)} nodes rejected"
