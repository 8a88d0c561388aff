"""`py-scheduler capacity`: how many copies of a pod fit, cluster-capacity's contract on py-scheduler's core.

Copies are placed one by one by the full scheduler (simulate's offline path), each bound before the
next, until the first one that fails: the count, the copies per node and the message that stopped it.
PostFilter (preemption) is turned off: evicting running pods to make room is not spare capacity, so
the stopping message is the FitError's "0/N nodes are available: ..." without a preemption clause.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from scheduler.eventhandlers import ADDED, DELETED, MODIFIED
from scheduler.whatif.dra_offline import make_template_claims, templates_by_key
from scheduler.whatif.simulate import SimulationError, add_cluster, attempt, build_scheduler, queue_message


def copy_of(pod: dict[str, Any], i: int) -> dict[str, Any]:
    """The i-th replica: its own name and uid, never bound, no status."""
    meta = dict(pod.get("metadata") or {})
    name = meta.get("name", "pod")
    meta.update(name=f"{name}-{i}", uid=f"capacity-{meta.get('namespace', 'default')}-{name}-{i}",
                resourceVersion=str(i + 1))
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    return {**pod, "metadata": meta, "spec": spec, "status": {}}


def capacity(
    pod: dict[str, Any], cluster: list[dict[str, Any]], config_path: str | None, *, max_count: int | None = None,
    live: bool = False, source: str = "", progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """``{"count": N, "nodes": {node: n}, "message": why it stopped}``; ``progress`` hears the count."""
    if pod.get("kind") != "Pod":
        raise SimulationError(f"expected a Pod, got {pod.get('kind')}")
    off = build_scheduler(config_path, [pod], preemption=False)
    sched = off.sched
    add_cluster(sched, cluster, source, live=live)
    placed: Counter[str] = Counter()
    templates = templates_by_key(cluster)
    message = f"limit reached: --max {max_count}"
    i = 0
    while max_count is None or i < max_count:
        obj, claims = make_template_claims(copy_of(pod, i), templates)  # each copy its own template claims
        for claim in claims:
            sched.on_object_event("ResourceClaim", ADDED, claim)
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        sched.on_pod_event(ADDED, obj)
        outcome = attempt(off, key)
        if outcome is None or not outcome.node:
            message = outcome.message if outcome else queue_message(sched, key)
            sched.on_pod_event(DELETED, obj)
            break
        sched.on_pod_event(MODIFIED, {**obj, "spec": {**obj["spec"], "nodeName": outcome.node}})
        placed[outcome.node] += 1
        i += 1
        if progress is not None:
            progress(i)
    return {"count": i, "nodes": dict(sorted(placed.items())), "message": message}


def format_capacity(r: dict[str, Any]) -> str:
    lines = [f"{r['count']} pod(s) fit."]
    width = max((len(n) for n in r["nodes"]), default=0)
    ranked = sorted(r["nodes"].items(), key=lambda kv: (-kv[1], kv[0]))
    lines.extend(f"  {node.ljust(width)}  {n}" for node, n in ranked)
    lines.append(f"Stopped: {r['message']}")
    return "\n".join(lines) + "\n"
