"""`py-scheduler simulate`: the live scheduler core on an in-memory cluster, with the offline stand-ins
of scheduler.app.offline injected (recording binder and event sink, offline API writer).

Pods are scheduled one at a time in file order; each placed pod is confirmed into the cache before
the next, exactly as the watch would confirm a binding. A pod that preempts gets its victims removed
from the cluster at once (as their deletion would) and one more attempt, which normally lands it on
its nominated node; its result lists the victims.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from scheduler.app.offline import OfflineWriter, RecordingBinder, RecordingEventSink
from scheduler.eventhandlers import ADDED, DELETED, MODIFIED
from scheduler.framework.interface import NodeToStatus
from scheduler.framework.runtime import NodePluginScores
from scheduler.kube.kinds import OBJECT_KINDS
from scheduler.model.pod import Pod, pod_from_api
from scheduler.model.validation import validate
from scheduler.plugins.podgroup import KIND as PODGROUP
from scheduler.plugins.podgroup import group_full_name, group_name
from scheduler.scheduler import Scheduler


class SimulationError(Exception):
    """Bad input: names the file, the object and the field."""


@dataclass(slots=True)
class Outcome:
    """What happened to one pod in one attempt."""

    pod: Pod
    node: str | None
    message: str
    statuses: NodeToStatus | None = None
    scores: dict[str, dict[str, int]] | None = None


@dataclass(slots=True)
class OutcomeRecorder:
    """The scheduler's ScheduleObserver here: every attempt's decision, filter verdicts and per-plugin
    scores, and every preemption as (victim key, preemptor key, node)."""

    outcomes: list[Outcome] = field(default_factory=list)
    preemptions: list[tuple[str, str, str]] = field(default_factory=list)

    def scheduled(self, pod: Pod, node: str, statuses: NodeToStatus, scores: Sequence[NodePluginScores]) -> None:
        per_node = {ns.name: {**{ps.name: ps.normalized for ps in ns.scores}, "total": ns.total_score}
                    for ns in scores}
        self.outcomes.append(Outcome(pod, node, "", statuses, per_node))

    def failed(self, pod: Pod, message: str, statuses: NodeToStatus | None) -> None:
        self.outcomes.append(Outcome(pod, None, message, statuses, None))

    def preempted(self, victim: Pod, preemptor: Pod, node: str) -> None:
        self.preemptions.append((victim.key, preemptor.key, node))


def _load_objects(path: str) -> list[dict[str, Any]]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise SimulationError(f"{path}: {exc.strerror}") from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise SimulationError(f"{path}: invalid YAML: {exc}") from None
    out: list[dict[str, Any]] = []
    for i, d in enumerate(docs):
        if not isinstance(d, dict):
            raise SimulationError(f"{path}: document {i}: expected an object, got {type(d).__name__}")
        if d.get("kind") == "List" or (str(d.get("kind", "")).endswith("List") and "items" in d):
            for j, item in enumerate(d.get("items") or []):
                if not isinstance(item, dict):
                    raise SimulationError(f"{path}: document {i} items[{j}]: expected an object")
                out.append(item)
        else:
            out.append(d)
    for i, o in enumerate(out):
        if not o.get("kind"):
            raise SimulationError(f"{path}: object {i}: missing field kind")
        if not (o.get("metadata") or {}).get("name"):
            raise SimulationError(f"{path}: {o['kind']} #{i}: missing field metadata.name")
    return out


def _ident(o: Mapping[str, Any]) -> str:
    m = o.get("metadata") or {}
    ns = m.get("namespace")
    return f"{o.get('kind')} {ns + '/' if ns else ''}{m.get('name')}"


def _with_defaults(o: dict[str, Any], i: int) -> dict[str, Any]:
    """Fill what the API server would: namespace, uid, creationTimestamp."""
    meta = dict(o.get("metadata") or {})
    if o.get("kind") not in ("Node", "Namespace", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver"):
        meta.setdefault("namespace", "default")
    meta.setdefault("uid", f"sim-{o.get('kind', '').lower()}-{meta.get('namespace', '')}-{meta['name']}")
    meta.setdefault("resourceVersion", str(i + 1))
    meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    return {**o, "metadata": meta}


def _build(
    config_path: str | None, pod_objs: list[dict[str, Any]], seed: int | None, tie_break: Literal["random", "name"],
    policy_path: str | None = None,
) -> tuple[Scheduler, OutcomeRecorder]:
    from scheduler.config.load import ConfigError, build_registry, load
    from scheduler.config.policy import load_policy

    if config_path and policy_path:
        raise SimulationError("--config and --policy-config-file cannot be used together")
    names = sorted({(p.get("spec") or {}).get("schedulerName") or "default-scheduler" for p in pod_objs})
    try:
        cfg = load_policy(policy_path, names or None) if policy_path else load(config_path, names or None)
    except ConfigError as exc:
        raise SimulationError(f"{policy_path or config_path or 'configuration'}: {exc}") from None
    registry = build_registry(cfg)
    rng = random.Random(seed) if seed is not None else random.Random()
    writer, observer = OfflineWriter(), OutcomeRecorder()
    sched = Scheduler(cfg, registry, RecordingBinder(), RecordingEventSink(), None, writer=writer, observer=observer,
                      synchronous_binding=True, rng=rng, tie_break=tie_break)
    writer.connect(sched)
    return sched, observer


@dataclass
class Simulation:
    """Per-pod results in file order, and every object the API server would have rejected (one line per
    invalid field, `default/p: spec.tolerations[0].operator: ...`); invalid objects take no part."""

    results: list[dict[str, Any]]
    invalid: list[str] = field(default_factory=list)


def _invalid_fields(o: Mapping[str, Any]) -> list[str]:
    meta = o.get("metadata") or {}
    name = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
    who = name if o.get("kind") == "Pod" else f"{o.get('kind')} {name}"
    return [f"{who}: {e}" for e in validate(o)]


def run_simulation(
    cluster_path: str, pods_path: str, config_path: str | None = None, *, seed: int | None = None,
    tie_break: Literal["random", "name"] = "random", policy_path: str | None = None,
) -> Simulation:
    cluster = [_with_defaults(o, i) for i, o in enumerate(_load_objects(cluster_path))]
    pods = [_with_defaults(o, i + len(cluster)) for i, o in enumerate(_load_objects(pods_path))]
    for p in pods:
        if p.get("kind") != "Pod":
            raise SimulationError(f"{pods_path}: {_ident(p)}: only Pods can be scheduled")
    sim = Simulation([])
    cluster_errors = [_invalid_fields(o) for o in cluster]
    sim.invalid.extend(e for errs in cluster_errors for e in errs)
    cluster = [o for o, errs in zip(cluster, cluster_errors, strict=True) if not errs]
    sched, observer = _build(config_path, pods, seed, tie_break, policy_path)
    _load_cluster(sched, cluster, cluster_path)
    valid: list[dict[str, Any]] = []
    rejected: dict[int, list[str]] = {}
    for i, p in enumerate(pods):
        errs = _invalid_fields(p)
        if errs:
            rejected[i] = errs
            sim.invalid.extend(errs)
        else:
            valid.append(p)
    placed = iter(_schedule_each(sched, observer, valid))
    for i, p in enumerate(pods):
        if i in rejected:
            sim.results.append(_rejected(p, rejected[i]))
        else:
            sim.results.append(_result(*next(placed)))
    return sim


def _rejected(obj: Mapping[str, Any], errors: list[str]) -> dict[str, Any]:
    pod = pod_from_api(obj)
    return {"pod": pod.key, "node": None, "message": "invalid: " + "; ".join(errors), "filtered": {},
            "scores": {}, "victims": [], "invalid": errors}


def _load_cluster(sched: Scheduler, cluster: list[dict[str, Any]], cluster_path: str) -> None:
    for o in cluster:
        kind = o["kind"]
        if kind == "Node":
            sched.on_node_event(ADDED, o)
        elif kind == "Pod":
            if not (o.get("spec") or {}).get("nodeName"):
                raise SimulationError(f"{cluster_path}: {_ident(o)}: field spec.nodeName: cluster pods must be bound")
            sched.on_pod_event(ADDED, o)
        elif kind in OBJECT_KINDS or kind == PODGROUP:
            sched.on_object_event(kind, ADDED, o)
        else:
            raise SimulationError(f"{cluster_path}: {_ident(o)}: unsupported kind {kind}")


def _attempt(sched: Scheduler, observer: OutcomeRecorder, key: str) -> Outcome | None:
    """Run scheduling cycles until one records an outcome for pod ``key`` (None: nothing left to
    schedule). Other outcomes may come first: the group members a failing pod's PostFilter rejected."""
    before = len(observer.outcomes)
    while sched.schedule_one(timeout=0):
        mine = [o for o in observer.outcomes[before:] if o.pod.key == key]
        if mine:
            return mine[-1]  # a binding failure comes after the decision
    return None


def _schedule_each(
    sched: Scheduler, observer: OutcomeRecorder, pods: list[dict[str, Any]]
) -> Iterator[tuple[Outcome, list[str]]]:
    """One attempt per pod in file order. A pod group's members are all known from the start (as in a
    live cluster); a member held at Permit gets its result once its group is placed or rejected, and
    members still waiting at the end are rejected: a group is placed all or nothing."""
    for obj in pods:
        if group_name(pod_from_api(obj)):
            sched.on_group_pod_event(ADDED, obj)
    results: dict[str, tuple[Outcome, list[str]]] = {}
    waiting: dict[str, dict[str, Any]] = {}  # pod key -> object, held at Permit
    for obj in pods:
        pod = pod_from_api(obj)
        results[pod.key] = _schedule_one(sched, observer, obj, pod, waiting)
        _settle(sched, observer, waiting, results)
    _reject_incomplete_groups(sched, waiting)
    _settle(sched, observer, waiting, results)
    for obj in pods:
        yield results[pod_from_api(obj).key]


def _schedule_one(
    sched: Scheduler, observer: OutcomeRecorder, obj: dict[str, Any], pod: Pod, waiting: dict[str, dict[str, Any]]
) -> tuple[Outcome, list[str]]:
    if pod.scheduler_name not in sched.frameworks:
        return Outcome(pod, None, f"no profile for schedulerName {pod.scheduler_name!r}"), []
    if pod.node_name:
        return Outcome(pod, None, f"spec.nodeName is already set ({pod.node_name}): not scheduled"), []
    sched.on_pod_event(ADDED, obj)
    preempted_before = len(observer.preemptions)
    outcome = _attempt(sched, observer, pod.key)
    if outcome is None:
        msg = _queue_message(sched, pod.key)
        sched.on_pod_event(DELETED, obj)
        return Outcome(pod, None, msg), []
    victims = [v for v, by, _ in observer.preemptions[preempted_before:] if by == pod.key]
    nominated = sched.queue.nominator.nominated_node_name(pod)
    if outcome.node is None and victims and nominated:
        obj = _retry_after_preemption(sched, obj, pod, nominated)
        outcome = _attempt(sched, observer, pod.key) or outcome
    if outcome.node and sched.frameworks[pod.scheduler_name].get_waiting_pod(pod.uid) is not None:
        waiting[pod.key] = obj  # bound (or rejected) together with its group, later
    elif outcome.node:
        bound = {**obj, "spec": {**(obj.get("spec") or {}), "nodeName": outcome.node}}
        sched.on_pod_event(MODIFIED, bound)  # what the watch would deliver: confirms the assumed pod
    else:
        sched.on_pod_event(DELETED, obj)  # one attempt per pod: it must not come back from backoff
    return outcome, victims


def _settle(
    sched: Scheduler, observer: OutcomeRecorder, waiting: dict[str, dict[str, Any]],
    results: dict[str, tuple[Outcome, list[str]]],
) -> None:
    """Members that left Permit: bound ones are confirmed, rejected ones get their failure as result."""
    bound = dict(sched.binder.bindings) if isinstance(sched.binder, RecordingBinder) else {}
    for key, obj in list(waiting.items()):
        pod = pod_from_api(obj)
        if sched.frameworks[pod.scheduler_name].get_waiting_pod(pod.uid) is not None:
            continue
        del waiting[key]
        if key in bound:
            sched.on_pod_event(MODIFIED, {**obj, "spec": {**(obj.get("spec") or {}), "nodeName": bound[key]}})
            continue
        failed = next((o for o in reversed(observer.outcomes) if o.pod.key == key and o.node is None), None)
        results[key] = (failed or Outcome(pod, None, "rejected at Permit"), results[key][1])
        sched.on_pod_event(DELETED, obj)


def _reject_incomplete_groups(sched: Scheduler, waiting: dict[str, dict[str, Any]]) -> None:
    """No more pods: members still waiting for their group are rejected, saying how far it got."""
    for obj in waiting.values():
        pod = pod_from_api(obj)
        fwk = sched.frameworks[pod.scheduler_name]
        wp = fwk.get_waiting_pod(pod.uid)
        if wp is not None:
            held = sum(1 for o in waiting.values() if group_full_name(pod_from_api(o)) == group_full_name(pod))
            wp.reject("Coscheduling", f'PodGroup "{group_full_name(pod)}" was not placed: only {held} of its '
                                      f"members could be placed (all or nothing)")
    sched.run_decided_parked()


def _retry_after_preemption(sched: Scheduler, obj: dict[str, Any], pod: Pod, nominated: str) -> dict[str, Any]:
    """What the live scheduler sees next: the nominatedNodeName status update, then (victims gone) a
    new attempt. Returns the updated object."""
    meta = obj.get("metadata") or {}
    obj = {
        **obj,
        "metadata": {**meta, "resourceVersion": f"{meta.get('resourceVersion', '')}+nominated"},
        "status": {**(obj.get("status") or {}), "nominatedNodeName": nominated},
    }
    sched.on_pod_event(MODIFIED, obj)
    sched.queue.activate([pod])
    return obj


def _queue_message(sched: Scheduler, key: str) -> str:
    """A pod that never reached a cycle (e.g. gated) keeps the PreEnqueue message."""
    sink = sched.recorder
    if isinstance(sink, RecordingEventSink) and key in sink.conditions:
        return sink.conditions[key][1]
    return sched.queue.gating_message(key) or "pod was not scheduled (waiting in the queue)"


def _result(o: Outcome, victims: list[str]) -> dict[str, Any]:
    filtered: dict[str, dict[str, str]] = {}
    if o.statuses is not None:
        for node, st in sorted(o.statuses.statuses.items()):
            if st is not None and st.reasons:
                filtered[node] = {"plugin": st.plugin, "reason": st.message}
    return {
        "pod": o.pod.key,
        "node": o.node,
        "message": o.message,
        "filtered": filtered,
        "scores": o.scores or {},
        "victims": victims,
    }


def format_table(sim: Simulation) -> str:
    """A human-readable view: the invalid objects, then one line per pod with the filter reasons and
    the top scores."""
    lines = [f"invalid {e}" for e in sim.invalid]
    for r in sim.results:
        lines.append(f"{r['pod']:<40} -> {r['node'] or '(unschedulable)'}")
        if r["message"] and not r.get("invalid"):
            lines.append(f"    {r['message']}")
        if r.get("victims"):
            lines.append(f"    preempted {', '.join(r['victims'])}")
        for node, f in r["filtered"].items():
            lines.append(f"    filtered {node}: {f['plugin']}: {f['reason']}")
        top = sorted(r["scores"].items(), key=lambda kv: (-kv[1].get("total", 0), kv[0]))[:5]
        for node, scores in top:
            detail = ", ".join(f"{k}={v}" for k, v in sorted(scores.items()) if k != "total")
            lines.append(f"    score {node}: total={scores.get('total', 0)} ({detail})")
    return "\n".join(lines) + "\n"
