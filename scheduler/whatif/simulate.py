"""`py-scheduler simulate`: the live scheduler core on an in-memory cluster, with the offline stand-ins
of scheduler.whatif.offline injected (recording binder and event sink, offline API writer).

Pods are scheduled one at a time in file order; each placed pod is confirmed into the cache before
the next, exactly as the watch would confirm a binding. A pod that preempts gets its victims removed
from the cluster at once (as their deletion would) and one more attempt, which normally lands it on
its nominated node; its result lists the victims. Preemption runs synchronously (SchedulerAsyncPreemption
off) so that the victims are gone before that attempt.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from scheduler.eventhandlers import ADDED, DELETED, MODIFIED
from scheduler.framework.features import Features
from scheduler.framework.interface import NodeToStatus
from scheduler.framework.results import ResultRecorder
from scheduler.kube.kinds import OBJECT_KINDS
from scheduler.model.pod import Pod, pod_from_api
from scheduler.model.validation import validate
from scheduler.plugins.helper.podgroup import KIND as PODGROUP
from scheduler.plugins.helper.podgroup import group_full_name, group_name
from scheduler.queue.pod_group_queue import group_key_of
from scheduler.scheduler import Scheduler
from scheduler.whatif.dra_offline import (
    TEMPLATE_KIND,
    allocated_devices,
    device_line,
    make_template_claims,
    templates_by_key,
)
from scheduler.whatif.offline import OfflineWriter, RecordingBinder, RecordingEventSink
from scheduler.whatif.priority_admission import KIND as PRIORITY_CLASS
from scheduler.whatif.priority_admission import AdmissionError, PriorityAdmission
from scheduler.whatif.workload_offline import (
    RecordingPodGroupStatusWriter,
    feed,
    gate_refusal,
    is_grouped_pod,
    is_workload_object,
)


class SimulationError(Exception):
    """Bad input: names the file, the object and the field."""


@dataclass(slots=True)
class Outcome:
    """What happened to one pod in one attempt (its per-plugin results: the ResultRecorder's)."""

    pod: Pod
    node: str | None
    message: str
    statuses: NodeToStatus | None = None


@dataclass(slots=True)
class OutcomeRecorder:
    """The scheduler's ScheduleObserver here: every attempt's decision and filter verdicts, and every
    preemption as (victim key, preemptor key, node)."""

    outcomes: list[Outcome] = field(default_factory=list)
    preemptions: list[tuple[str, str, str]] = field(default_factory=list)

    def scheduled(self, pod: Pod, node: str, statuses: NodeToStatus) -> None:
        self.outcomes.append(Outcome(pod, node, "", statuses))

    def bound(self, pod: Pod, node: str) -> None:
        """Bindings are synchronous here; ``scheduled`` already recorded the outcome."""

    def failed(self, pod: Pod, message: str, statuses: NodeToStatus | None) -> None:
        self.outcomes.append(Outcome(pod, None, message, statuses))

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
        raise SimulationError(f"{path}: invalid YAML: {_one_line(exc)}") from None
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


def _one_line(exc: yaml.YAMLError) -> str:
    """PyYAML's error without its multi-line source excerpt: the problem and where."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())


def _ident(o: Mapping[str, Any]) -> str:
    m = o.get("metadata") or {}
    ns = m.get("namespace")
    return f"{o.get('kind')} {ns + '/' if ns else ''}{m.get('name')}"


# Kinds without a namespace (the others default to "default", as kubectl apply does).
CLUSTER_SCOPED = frozenset({"Node", "Namespace", "PersistentVolume", "StorageClass", "CSINode", "CSIDriver",
                            "VolumeAttachment", PRIORITY_CLASS, "ResourceSlice", "DeviceClass", "DeviceTaintRule"})


def _with_defaults(o: dict[str, Any], i: int) -> dict[str, Any]:
    """Fill what the API server would: namespace, uid, creationTimestamp."""
    meta = dict(o.get("metadata") or {})
    if o.get("kind") not in CLUSTER_SCOPED:
        meta.setdefault("namespace", "default")
    meta.setdefault("uid", f"sim-{o.get('kind', '').lower()}-{meta.get('namespace', '')}-{meta['name']}")
    meta.setdefault("resourceVersion", str(i + 1))
    meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    return {**o, "metadata": meta}


@dataclass(slots=True)
class Offline:
    """The offline scheduler and what observes it: outcomes (ScheduleObserver) and every plugin's
    results (the CycleObserver)."""

    sched: Scheduler
    outcomes: OutcomeRecorder
    results: ResultRecorder
    pod_groups: RecordingPodGroupStatusWriter | None = None  # with GenericWorkload on: the PodGroups' status


def build_scheduler(
    config_path: str | None, pod_objs: list[dict[str, Any]], *, seed: int | None = None,
    tie_break: Literal["heap", "name"] = "heap", preemption: bool = True, policy_path: str | None = None,
    features: Features | None = None, status_watch_lag: bool = True,
) -> Offline:
    """The scheduler with the profiles the pods name (from ``config_path``, a Policy at ``policy_path`` or
    the defaults) and the offline stand-ins. ``preemption=False`` drops the PostFilter plugins (capacity
    must not evict what it counts on). ``features``: the gates of ``--feature-gates`` (default v1.37's);
    preemption stays synchronous whatever SchedulerAsyncPreemption says, so that a preemptor's victims are
    gone before its next attempt."""
    from scheduler.config.defaults import set_workload_gates
    from scheduler.config.load import ConfigError, build_registry, load
    from scheduler.config.policy import load_policy

    if config_path and policy_path:
        raise SimulationError("--config and --policy-config-file cannot be used together")
    names = sorted({(p.get("spec") or {}).get("schedulerName") or "default-scheduler" for p in pod_objs
                    if p.get("kind", "Pod") == "Pod"})
    features = dataclasses.replace(features or Features(), enable_async_preemption=False)
    # The workload gates add plugins to the default profile (process-wide, as upstream's DefaultFeatureGate):
    # this run's gates while its configuration loads, v1.37's defaults again afterwards.
    set_workload_gates(features.enable_generic_workload, features.enable_topology_aware_workload_scheduling)
    try:
        cfg = load_policy(policy_path, names or None) if policy_path else load(config_path, names or None)
    except ConfigError as exc:
        raise SimulationError(f"{policy_path or config_path or 'configuration'}: {exc}") from None
    finally:
        set_workload_gates(False, False)
    if not preemption:
        for profile in cfg.profiles:
            profile.plugins["postFilter"] = []
    registry = build_registry(cfg)
    rng = random.Random(seed) if seed is not None else random.Random()
    writer, outcomes, results = OfflineWriter(), OutcomeRecorder(), ResultRecorder()
    pod_groups = RecordingPodGroupStatusWriter(status_watch_lag) if features.enable_generic_workload else None
    sched = Scheduler(cfg, registry, RecordingBinder(), RecordingEventSink(), None, writer=writer, observer=outcomes,
                      cycle_observer=results, synchronous_binding=True, rng=rng, tie_break=tie_break,
                      features=features, pod_group_status_writer=pod_groups)
    writer.connect(sched)
    if pod_groups is not None:
        pod_groups.connect(sched)
    return Offline(sched, outcomes, results, pod_groups)


def load_objects(path: str) -> list[dict[str, Any]]:
    """A YAML file of objects (documents and Lists), with what the API server would fill in."""
    return [_with_defaults(o, i) for i, o in enumerate(_load_objects(path))]


def pods_to_place(path: str, first: int = 0, *, workload: bool = False) -> list[dict[str, Any]]:
    """The pods file's objects: Pods, and with ``workload`` (GenericWorkload on) Workloads and PodGroups too,
    which arrive among the pods in file order."""
    pods = [_with_defaults(o, first + i) for i, o in enumerate(_load_objects(path))]
    for p in pods:
        if is_workload_object(p) and not workload:
            raise SimulationError(f"{path}: {_ident(p)}: {gate_refusal(p)}")
        if p.get("kind") != "Pod" and not is_workload_object(p):
            raise SimulationError(f"{path}: {_ident(p)}: only Pods can be scheduled"
                                  + (" (and the Workload API's Workloads and PodGroups)" if workload else ""))
    return pods


def add_cluster(
    sched: Scheduler, objects: list[dict[str, Any]], source: str, *, live: bool = False,
    pod_groups: RecordingPodGroupStatusWriter | None = None,
) -> None:
    """Feed the cluster's objects to the scheduler as its initial list would. A file's pods must be
    bound. A live snapshot's pending pods use no node's resources and are not placed; those of the
    scheduler's profiles that carry status.nominatedNodeName keep their nomination, as in the live
    scheduler's nominator (filters count them on their node). The Workload API's objects go through
    ``pod_groups`` (GenericWorkload on); without it a file's are refused and a live cluster's ignored."""
    for o in objects:
        kind = o["kind"]
        if is_workload_object(o):
            if pod_groups is not None:
                feed(sched, pod_groups, o)
            elif not live:
                raise SimulationError(f"{source}: {_ident(o)}: {gate_refusal(o)}")
        elif kind == "Node":
            sched.on_node_event(ADDED, o)
        elif kind == "Pod":
            if not (o.get("spec") or {}).get("nodeName"):
                if live:
                    _keep_nomination(sched, o)
                    continue
                raise SimulationError(f"{source}: {_ident(o)}: field spec.nodeName: cluster pods must be bound")
            sched.on_pod_event(ADDED, o)
        elif kind in OBJECT_KINDS or kind == PODGROUP:
            sched.on_object_event(kind, ADDED, o)
        elif kind in (PRIORITY_CLASS, TEMPLATE_KIND):
            continue  # read before the pods are fed: by admission (admitted), by the claims' maker (with_claims)
        else:
            raise SimulationError(f"{source}: {_ident(o)}: unsupported kind {kind}")


def _keep_nomination(sched: Scheduler, obj: dict[str, Any]) -> None:
    pod = pod_from_api(obj)
    if pod.nominated_node_name and sched.responsible_for(pod):
        sched.queue.nominator.add_nominated_pod(pod)


@dataclass
class Simulation:
    """Per-pod results in file order, and every object the API server would have rejected (one line per
    invalid field, `default/p: spec.tolerations[0].operator: ...`); invalid objects take no part."""

    results: list[dict[str, Any]]
    invalid: list[str] = field(default_factory=list)
    pod_groups: list[dict[str, Any]] = field(default_factory=list)  # the Workload API's, with their conditions

    def to_json(self) -> dict[str, Any]:
        """simulate's JSON: ``podGroups`` only when the run had any (GenericWorkload on)."""
        out: dict[str, Any] = {"results": self.results, "invalid": self.invalid}
        if self.pod_groups:
            out["podGroups"] = self.pod_groups
        return out


def admitted(o: dict[str, Any], admission: PriorityAdmission) -> tuple[dict[str, Any], list[str]]:
    """A file's object as the API server would store it (pods through Priority admission), or the
    errors that would refuse it: admission's, else validation's (one line per invalid field)."""
    try:
        if o.get("kind") == "Pod":
            o = admission.admit(o)
        elif is_workload_object(o) and o.get("kind") == "PodGroup":
            o = admission.admit_pod_group(o)
    except AdmissionError as exc:
        return o, [str(exc)]
    return o, invalid_fields(o)


def with_claims(objects: list[dict[str, Any]], templates: Mapping[tuple[str, str], Any]) -> list[dict[str, Any]]:
    """The objects with each pod's template claims made as the resourceclaim controller would (the
    claims follow the objects, the pods carry status.resourceClaimStatuses)."""
    out, claims = [], []
    for o in objects:
        if o.get("kind") == "Pod":
            o, made = make_template_claims(o, templates)
            claims.extend(made)
        out.append(o)
    return out + claims


def add_devices(result: dict[str, Any], sched: Scheduler, pod_obj: Mapping[str, Any]) -> dict[str, Any]:
    """A pod with resource claims gets ``devices``: what its claims were allocated (dra_offline)."""
    if (pod_obj.get("spec") or {}).get("resourceClaims"):
        result["devices"] = allocated_devices(sched.objects, pod_obj)
    return result


def invalid_fields(o: Mapping[str, Any]) -> list[str]:
    """What the API server would reject in this object, one line per field, naming the object."""
    meta = o.get("metadata") or {}
    name = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
    who = name if o.get("kind") == "Pod" else f"{o.get('kind')} {name}"
    return [f"{who}: {e}" for e in validate(o)]


def run_simulation(
    cluster_path: str | None, pods_path: str, config_path: str | None = None, *, seed: int | None = None,
    tie_break: Literal["heap", "name"] = "heap", live: list[dict[str, Any]] | None = None,
    policy_path: str | None = None, features: Features | None = None, status_watch_lag: bool = True,
    members_in_burst: bool = False,
) -> Simulation:
    """Place the pods of ``pods_path`` one by one. The cluster: ``live`` (a snapshot of a live cluster)
    if given, with the objects of ``cluster_path`` on top. Objects of the files the API server would
    reject are reported and left out (a live snapshot passed the API server already). ``members_in_burst``:
    consecutive members of one pod group arrive before the watch brings back what the group's cycles wrote
    (schedule_in_arrival_order)."""
    sim = Simulation([])
    workload = features is not None and features.enable_generic_workload
    objects = load_objects(cluster_path) if cluster_path else []
    admission = PriorityAdmission.from_objects(
        [o for o in objects if not invalid_fields(o)], complete=live is None,
        pod_group_preemption_policy=workload and features is not None and features.enable_pod_group_preemption_policy)
    cluster = []
    for o in objects:
        o, errors = admitted(o, admission)
        sim.invalid.extend(errors)
        if not errors:
            cluster.append(o)
    pods = []
    rejected = {}
    for i, p in enumerate(pods_to_place(pods_path, len(cluster), workload=workload)):
        p, errors = admitted(p, admission)
        pods.append(p)
        if errors:
            rejected[i] = errors
            sim.invalid.extend(errors)
    templates = templates_by_key(cluster)
    cluster = with_claims(cluster, templates)
    accepted = [p for i, p in enumerate(pods) if i not in rejected]
    made = with_claims(accepted, templates)
    valid, claims = made[:len(accepted)], made[len(accepted):]
    off = build_scheduler(config_path, valid, seed=seed, tie_break=tie_break, policy_path=policy_path,
                          features=features, status_watch_lag=status_watch_lag)
    if live is not None:
        add_cluster(off.sched, live, "the live cluster", live=True, pod_groups=off.pod_groups)
    add_cluster(off.sched, cluster + claims, cluster_path or "", pod_groups=off.pod_groups)
    if off.pod_groups is not None and any(is_workload_object(o) or is_grouped_pod(o) for o in valid):
        outcomes = schedule_in_arrival_order(off, off.pod_groups, valid, members_in_burst)
    else:
        outcomes = list(_schedule_each(off, valid))
    valid_pods = [o for o in valid if o.get("kind") == "Pod"]
    placed = iter([add_devices(result_dict(o, victims, off.results), off.sched, obj)
                   for (o, victims), obj in zip(outcomes, valid_pods, strict=True)])
    for i, p in enumerate(pods):
        if i in rejected:
            sim.results.append(_rejected(p, rejected[i]))
        elif p.get("kind") == "Pod":
            sim.results.append(next(placed))
    if off.pod_groups is not None:
        sim.pod_groups = off.pod_groups.summary()
    return sim


def _rejected(obj: Mapping[str, Any], errors: list[str]) -> dict[str, Any]:
    return {"pod": pod_from_api(obj).key, "node": None, "message": "invalid: " + "; ".join(errors),
            "filtered": {}, "scores": {}, "score_details": {}, "victims": [], "invalid": errors}


def attempt(off: Offline, key: str) -> Outcome | None:
    """Run scheduling cycles until one records an outcome for pod ``key`` (None: nothing left to
    schedule). Other outcomes may come first: the group members a failing pod's PostFilter rejected."""
    before = len(off.outcomes.outcomes)
    while cycle(off):
        mine = [o for o in off.outcomes.outcomes[before:] if o.pod.key == key]
        if mine:
            return mine[-1]  # a binding failure comes after the decision
    return None


def cycle(off: Offline, deliver_idle: bool = True) -> bool:
    """One scheduling cycle (False: nothing to schedule); then the watch brings the PodGroup status that the
    cycle before it wrote (RecordingPodGroupStatusWriter's lag), or, idle, all still pending (unless not
    ``deliver_idle``)."""
    ran = off.sched.schedule_one(timeout=0)
    if off.pod_groups is not None:
        if ran:
            off.pod_groups.cycle_done()
        elif deliver_idle and off.pod_groups.deliver_all():
            return cycle(off)  # what the watch brought may have moved a pod
    return ran


def victims_of(off: Offline, pod: Pod, since: int = 0) -> list[str]:
    """The pods ``pod`` preempted (keys), from the ``since``-th preemption on."""
    return [v for v, by, _ in off.outcomes.preemptions[since:] if by == pod.key]


def _schedule_each(off: Offline, pods: list[dict[str, Any]]) -> Iterator[tuple[Outcome, list[str]]]:
    """One attempt per pod in file order. A pod group's members are all known from the start (as in a
    live cluster); a member held at Permit gets its result once its group is placed or rejected, and
    members still waiting at the end are rejected: a group is placed all or nothing."""
    for obj in pods:
        if group_name(pod_from_api(obj)):
            off.sched.on_group_pod_event(ADDED, obj)
    results: dict[str, tuple[Outcome, list[str]]] = {}
    waiting: dict[str, dict[str, Any]] = {}  # pod key -> object, held at Permit
    for obj in pods:
        pod = pod_from_api(obj)
        results[pod.key] = _schedule_one(off, obj, pod, waiting)
        _settle(off, waiting, results)
    _reject_incomplete_groups(off.sched, waiting)
    _settle(off, waiting, results)
    for obj in pods:
        yield results[pod_from_api(obj).key]


def schedule_in_arrival_order(
    off: Offline, pod_groups: RecordingPodGroupStatusWriter, objects: list[dict[str, Any]], burst: bool = False,
) -> list[tuple[Outcome, list[str]]]:
    """GenericWorkload on: the pods file's objects arrive in file order, and after each the scheduler runs
    until nothing is left to schedule (see workload_offline); idle, it gets what the watch still owes it
    (the PodGroup status it wrote), except, with ``burst``, between consecutive members of one group: pods
    created in a burst reach a live scheduler before the watch brings back what the first one's cycle wrote.
    The retries that wait for a backoff (a group after its preemption, or one backing off when a member
    joined) run only after the last object arrived: a file applied to a live cluster is created in
    milliseconds, and the backoff lasts a second or more, so the retry sees every member (differential seed
    21). Pods outside any group get one attempt each, as without the gate; a group's members get the outcome
    of their group's last cycle, or, never tried (no PodGroup yet, too few members), the message the queue
    leaves them. Results for the Pods, in file order."""
    sched = off.sched
    results: dict[str, tuple[Outcome, list[str]]] = {}
    grouped: dict[str, dict[str, Any]] = {}  # pending members: key -> object as last delivered
    final = len(objects) - 1
    for i, obj in enumerate(objects):
        if is_workload_object(obj):
            feed(sched, pod_groups, obj)
        elif is_grouped_pod(obj):
            pod = pod_from_api(obj)
            if pod.scheduler_name not in sched.frameworks or pod.node_name:
                results[pod.key] = _schedule_one(off, obj, pod, {})  # says why it is not scheduled
                continue
            sched.on_pod_event(ADDED, obj)
            grouped[pod.key] = obj
            following = objects[i + 1] if burst and i + 1 < len(objects) else None
            if following is not None and is_grouped_pod(following) and (
                    group_key_of(pod_from_api(following)) == group_key_of(pod)):
                _run_until_idle(off, grouped, results, retry=False, deliver_idle=False)
                continue
        else:
            pod = pod_from_api(obj)
            results[pod.key] = _schedule_one(off, obj, pod, {})
        _run_until_idle(off, grouped, results, retry=i == final)
    for key, obj in grouped.items():
        pod = pod_from_api(obj)
        last = next((o for o in reversed(off.outcomes.outcomes) if o.pod.key == key), None)
        results[key] = (Outcome(pod, None, queue_message(sched, key), last.statuses if last else None),
                        victims_of(off, pod))
    return [results[pod_from_api(o).key] for o in objects if o.get("kind") == "Pod"]


RETRIES_AFTER_PREEMPTION = 3  # extra attempts (after a preemption or a backoff) per object that arrives


def _run_until_idle(
    off: Offline, grouped: dict[str, dict[str, Any]], results: dict[str, tuple[Outcome, list[str]]],
    retry: bool = True, deliver_idle: bool = True,
) -> None:
    """Scheduling cycles until none is left (``deliver_idle``: see cycle): members that were bound are confirmed
    (what the watch would deliver) and leave ``grouped`` with their result. With ``retry``, a group that
    preempted has its members' nomination delivered and is tried again once its victims are gone, as the
    victims' deletion would requeue it after its backoff; a group backing off with members no cycle has seen
    is tried once its backoff would have passed."""
    sched = off.sched
    binder = sched.binder
    retries = 0
    while True:
        bound_before = len(binder.bindings) if isinstance(binder, RecordingBinder) else 0
        ran = cycle(off, deliver_idle)
        if isinstance(binder, RecordingBinder):
            for key, node in binder.bindings[bound_before:]:
                obj = grouped.pop(key, None)
                if obj is None:
                    continue
                pod = pod_from_api(obj)
                sched.on_pod_event(MODIFIED, {**obj, "spec": {**(obj.get("spec") or {}), "nodeName": node}})
                last = next((o for o in reversed(off.outcomes.outcomes) if o.pod.key == key and o.node), None)
                results[key] = (last or Outcome(pod, node, ""), victims_of(off, pod))
        if ran:
            continue
        if not retry:
            return
        waiting = _deliver_nominations(sched, grouped) or _never_tried(off, grouped)
        if not waiting or retries >= RETRIES_AFTER_PREEMPTION:
            return
        retries += 1
        sched.queue.activate(waiting)


def _never_tried(off: Offline, grouped: dict[str, dict[str, Any]]) -> list[Pod]:
    """Pending members no cycle has taken yet. One that joined a group while the group was backing off
    after a failed cycle waits for the backoff to pass: on a live cluster the group is tried again a
    second later, so here it is activated at once."""
    tried = {o.pod.key for o in off.outcomes.outcomes}
    return [pod_from_api(obj) for key, obj in grouped.items() if key not in tried]


def _deliver_nominations(sched: Scheduler, grouped: dict[str, dict[str, Any]]) -> list[Pod]:
    """Pending members whose nominatedNodeName was written since last delivered: the status update as the
    watch would deliver it (the objects in ``grouped`` updated). Returns those pods."""
    sink = sched.recorder
    if not isinstance(sink, RecordingEventSink):
        return []
    out = []
    for key, obj in grouped.items():
        node = sink.nominated.get(key)
        if node and (obj.get("status") or {}).get("nominatedNodeName") != node:
            obj = _retry_after_preemption_object(obj, node)
            grouped[key] = obj
            sched.on_pod_event(MODIFIED, obj)
            out.append(pod_from_api(obj))
    return out


def _schedule_one(
    off: Offline, obj: dict[str, Any], pod: Pod, waiting: dict[str, dict[str, Any]]
) -> tuple[Outcome, list[str]]:
    sched = off.sched
    if pod.scheduler_name not in sched.frameworks:
        return Outcome(pod, None, f"no profile for schedulerName {pod.scheduler_name!r}"), []
    if pod.node_name:
        return Outcome(pod, None, f"spec.nodeName is already set ({pod.node_name}): not scheduled"), []
    sched.on_pod_event(ADDED, obj)
    preempted_before = len(off.outcomes.preemptions)
    outcome = attempt(off, pod.key)
    if outcome is None:
        msg = queue_message(sched, pod.key)
        sched.on_pod_event(DELETED, obj)
        return Outcome(pod, None, msg), []
    victims = victims_of(off, pod, preempted_before)
    nominated = sched.queue.nominator.nominated_node_name(pod)
    if outcome.node is None and victims and nominated:
        obj = _retry_after_preemption(sched, obj, pod, nominated)
        outcome = attempt(off, pod.key) or outcome
    if outcome.node and sched.frameworks[pod.scheduler_name].get_waiting_pod(pod.uid) is not None:
        waiting[pod.key] = obj  # bound (or rejected) together with its group, later
    elif outcome.node:
        bound = {**obj, "spec": {**(obj.get("spec") or {}), "nodeName": outcome.node}}
        sched.on_pod_event(MODIFIED, bound)  # what the watch would deliver: confirms the assumed pod
    else:
        sched.on_pod_event(DELETED, obj)  # one attempt per pod: it must not come back from backoff
    return outcome, victims


def _settle(off: Offline, waiting: dict[str, dict[str, Any]], results: dict[str, tuple[Outcome, list[str]]]) -> None:
    """Members that left Permit: bound ones are confirmed, rejected ones get their failure as result."""
    sched = off.sched
    bound = dict(sched.binder.bindings) if isinstance(sched.binder, RecordingBinder) else {}
    for key, obj in list(waiting.items()):
        pod = pod_from_api(obj)
        if sched.frameworks[pod.scheduler_name].get_waiting_pod(pod.uid) is not None:
            continue
        del waiting[key]
        if key in bound:
            sched.on_pod_event(MODIFIED, {**obj, "spec": {**(obj.get("spec") or {}), "nodeName": bound[key]}})
            continue
        failed = next((o for o in reversed(off.outcomes.outcomes) if o.pod.key == key and o.node is None), None)
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
    obj = _retry_after_preemption_object(obj, nominated)
    sched.on_pod_event(MODIFIED, obj)
    sched.queue.activate([pod])
    return obj


def _retry_after_preemption_object(obj: dict[str, Any], nominated: str) -> dict[str, Any]:
    """The pod after its nominatedNodeName status update."""
    meta = obj.get("metadata") or {}
    return {
        **obj,
        "metadata": {**meta, "resourceVersion": f"{meta.get('resourceVersion', '')}+nominated"},
        "status": {**(obj.get("status") or {}), "nominatedNodeName": nominated},
    }


def as_pending(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as it was before binding: no spec.nodeName, no status beyond its phase and the claims the
    resourceclaim controller made for it (they were there before the scheduler saw it)."""
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    status: dict[str, Any] = {"phase": "Pending"}
    claims = (pod.get("status") or {}).get("resourceClaimStatuses")
    if claims:
        status["resourceClaimStatuses"] = claims
    return {**pod, "spec": spec, "status": status}


def queue_message(sched: Scheduler, key: str) -> str:
    """A pod that never reached a cycle (e.g. gated) keeps the PreEnqueue message."""
    sink = sched.recorder
    if isinstance(sink, RecordingEventSink) and key in sink.conditions:
        return sink.conditions[key][1]
    return sched.queue.gating_message(key) or "pod was not scheduled (waiting in the queue)"


def result_dict(o: Outcome, victims: list[str], recorder: ResultRecorder) -> dict[str, Any]:
    """The JSON schema of simulate (explain adds to it): ``scores`` holds each plugin's normalized score
    and the weighted total; ``score_details`` each plugin's raw, normalized and weighted score."""
    filtered: dict[str, dict[str, str]] = {}
    if o.statuses is not None:
        for node, st in sorted(o.statuses.statuses.items()):
            if st is not None and st.reasons:
                filtered[node] = {"plugin": st.plugin, "reason": st.message}
    attempt_result = recorder.result(o.pod.uid)
    scores: dict[str, dict[str, int]] = {}
    details: dict[str, dict[str, dict[str, int]]] = {}
    if attempt_result is not None:
        details = attempt_result.score_details()
        scores = {node: {**{p: d["normalized"] for p, d in plugins.items()}, "total": attempt_result.total(node)}
                  for node, plugins in details.items()}
    return {
        "pod": o.pod.key,
        "node": o.node,
        "message": o.message,
        "filtered": filtered,
        "scores": scores,
        "score_details": details,
        "victims": victims,
    }


def format_table(sim: Simulation) -> str:
    """A human-readable view: the invalid objects, then one line per pod with the filter reasons and
    the top scores."""
    lines = [f"invalid {e}" for e in sim.invalid]
    for g in sim.pod_groups:
        for c in g["conditions"]:
            lines.append(f"podgroup {g['podGroup']}: {c.get('type')}={c.get('status')} {c.get('reason', '')}"
                         + (f": {c['message']}" if c.get("message") else ""))
    for r in sim.results:
        lines.append(f"{r['pod']:<40} -> {r['node'] or '(unschedulable)'}")
        if r["message"] and not r.get("invalid"):
            lines.append(f"    {r['message']}")
        if r.get("victims"):
            lines.append(f"    preempted {', '.join(r['victims'])}")
        lines.extend(f"    device {device_line(d)}" for d in r.get("devices") or [])
        for node, f in r["filtered"].items():
            lines.append(f"    filtered {node}: {f['plugin']}: {f['reason']}")
        top = sorted(r["scores"].items(), key=lambda kv: (-kv[1].get("total", 0), kv[0]))[:5]
        for node, scores in top:
            detail = ", ".join(f"{k}={v}" for k, v in sorted(scores.items()) if k != "total")
            lines.append(f"    score {node}: total={scores.get('total', 0)} ({detail})")
    return "\n".join(lines) + "\n"


@dataclass
class Comparison:
    """Two configurations' placements of the same pods on the same cluster (``simulate --compare``), in
    file order: per pod each side's node (None: not placed), message and victims, and whether they differ.
    ``invalid``: the objects the API server would reject, which neither side placed."""

    running: str
    candidate: str
    results: list[dict[str, Any]]
    invalid: list[str] = field(default_factory=list)

    @property
    def differing(self) -> int:
        return sum(1 for r in self.results if r["differs"])

    def to_json(self) -> dict[str, Any]:
        return {"running": self.running, "candidate": self.candidate, "results": self.results,
                "invalid": self.invalid, "differing": self.differing}


def run_comparison(
    cluster_path: str | None, pods_path: str, running_config: str | None, candidate_config: str | None, *,
    seed: int | None = None, tie_break: Literal["heap", "name"] = "heap", live: list[dict[str, Any]] | None = None,
    candidate_policy: str | None = None, features: Features | None = None,
) -> Comparison:
    """The pods placed twice, each time from the same cluster (the same ``live`` snapshot, read once, so
    both sides see one state) and in the same order: once under ``running_config`` (None: the default
    profile), once under the candidate (``candidate_config`` or the Policy ``candidate_policy``). Each side
    is a whole `simulate` run, so an earlier pod placed differently changes what later pods meet, as it
    would in the cluster. Same seed on both sides: only the configurations differ."""
    running = run_simulation(cluster_path, pods_path, running_config, seed=seed, tie_break=tie_break, live=live,
                             features=features)
    candidate = run_simulation(cluster_path, pods_path, candidate_config, seed=seed, tie_break=tie_break, live=live,
                               policy_path=candidate_policy, features=features)
    rows = [_compared(a, b) for a, b in zip(running.results, candidate.results, strict=True)]
    default = "(default profile)"
    return Comparison(running_config or default, candidate_config or candidate_policy or default, rows,
                      candidate.invalid)


def _side(result: Mapping[str, Any]) -> dict[str, Any]:
    return {"node": result["node"], "message": result["message"], "victims": result["victims"]}


def _compared(running: Mapping[str, Any], candidate: Mapping[str, Any]) -> dict[str, Any]:
    """One pod's row: a different node or different victims is a different outcome; two failures with
    different messages are not (neither places the pod)."""
    a, b = _side(running), _side(candidate)
    return {"pod": running["pod"], "running": a, "candidate": b,
            "differs": (a["node"], a["victims"]) != (b["node"], b["victims"])}


UNPLACED = "(unschedulable)"


def format_comparison(cmp: Comparison) -> str:
    """One line per pod: its node under each configuration and ``*`` where they differ; a side that did
    not place the pod shows its message below, as does a side that preempts."""
    lines = [f"invalid {e}" for e in cmp.invalid]
    pods = [r["pod"] for r in cmp.results]
    width = max([len("POD"), *map(len, pods)])
    col = max([len("RUNNING"), *(len(r["running"]["node"] or UNPLACED) for r in cmp.results)])
    lines.append(f"{'POD':<{width}}  {'RUNNING':<{col}}  CANDIDATE")
    for r in cmp.results:
        mark = "  *" if r["differs"] else ""
        running, candidate = (r[s]["node"] or UNPLACED for s in ("running", "candidate"))
        lines.append(f"{r['pod']:<{width}}  {running:<{col}}  {candidate}{mark}")
        for side in ("running", "candidate"):
            if r[side]["message"] and not r[side]["node"]:
                lines.append(f"    {side}: {r[side]['message']}")
            if r[side]["victims"]:
                lines.append(f"    {side}: preempts {', '.join(r[side]['victims'])}")
    lines.append(f"{cmp.differing} of {len(cmp.results)} pod(s) placed differently "
                 f"(running: {cmp.running}; candidate: {cmp.candidate}).")
    return "\n".join(lines) + "\n"
