"""The differential test with pod groups (the Workload API): kube-scheduler v1.37.2 with GenericWorkload and
TopologyAwareWorkloadScheduling on, on the local control plane, against `py-scheduler simulate` with the same
gates on the same objects, group after group.

Each seed builds a random cluster of 3-8 fresh nodes in 1-2 blocks of 1-3 racks (labels `RACK`, `BLOCK`;
a node now and then without them), bound pods of three priorities (PriorityClasses `diff-low`, `diff-mid`,
`diff-high`, or none), then 1-3 PodGroups placed one after the other: basic or gang (`minCount` from 1 to
all members), sometimes a topology constraint on the rack or the block, a priority, a disruption mode, 1-5
members with random requests, the PodGroup created before its pods or (now and then) after them. Sizes are
drawn so that some groups fit, some cannot, and some fit only by preempting lower-priority pods or groups.

For each group in turn: the cluster is read back (nodes, namespaces, PriorityClasses, bound pods, the earlier
PodGroups), kube-scheduler places the group, and `simulate` places the same objects in the same order on what was
read. They must agree, per member: the node, or none and the same FailedScheduling message byte for byte (where
kube's node is one of several equal-score nodes for that member in simulate, any of them will do, as in
e2e/differential.py; kube breaks equal placement scores at random and takes members that reach its queue together
in Go map order, so a group also agrees when simulate gives kube's outcome exactly under one of PLACEMENT_SEEDS
seeds and MEMBER_ORDERS orders of the members); the PodGroup's condition (status, reason, message); and the victims
(or victims alike: victim_identity; equal victims are taken in the order kube's cache lists a node's pods, which
its bindings' timing shuffles, so simulate also tries VICTIM_ORDERS orders of the bound pods). The condition of a
partly placed group races kube's watch: simulate runs with the PodGroup's status write delivered a cycle late, at
once, and with members arriving before it comes back (members_in_burst). A topology-constrained group kube placed
no member of is compared on verdicts, condition status and reason only: its messages come from the first of its
placements, which kube lists in Go map order. Before the next group, members left pending are deleted, so that each
step starts from kube-scheduler's state.

Two more of kube-scheduler's internals are racy and not shown by the API, so they are tried rather than read:
- Where kube preempted, victims of equal importance (priority, kind, size, start time) are reprieved in the order
  kube's cache holds each node's pods, which follows its informer's arrivals, swap-removals and the confirmation
  of assumed pods (victim_ordered). simulate takes a node's pods in its cluster file's order, so the bound pods
  are also tried in VICTIM_ORDERS orders (reversed, then seeded shuffles), each with all the retries above.
- Whether a partly placed group's later cycle sees the PodGroup status its earlier cycle wrote is a race between
  the write's watch event and the retry (kube wrote True once and False once for the same seeds). A group that
  still differs and preempted nothing is withdrawn (its pods and PodGroup deleted, leaving the cluster as it was)
  and kube-scheduler runs it again, up to KUBE_RERUNS more times: the group agrees if simulate gives any of kube's
  outcomes exactly; the output lists kube's earlier outcomes for every group that needed a rerun.

`python -m e2e.differential_workload --scenarios 50` runs a batch on a fresh local control plane with the
gates on (`make differential-workload N=50`); tests/integration/test_differential_workload.py runs a small
seeded batch in `make test`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from e2e.cluster.cluster import WORKLOAD_GATES, build_binaries, node_manifest
from e2e.differential import IMAGE, KUBE, NOBODY, SCENARIO_LABEL, batch_cluster, scenario_namespace
from e2e.kube import delete_if_present, wait_for
from e2e.process import gate_flag, start_kube_scheduler, stop_scheduler
from scheduler.framework.features import Features, parse_feature_gates
from scheduler.whatif.simulate import SimulationError, run_simulation

GROUP, VERSION, PLURAL = "scheduling.k8s.io", "v1beta1", "podgroups"
PODGROUP_API = f"{GROUP}/{VERSION}"
RACK, BLOCK = "diff.py-scheduler.io/rack", "diff.py-scheduler.io/block"
PRIORITIES = {"diff-low": 10, "diff-mid": 100, "diff-high": 1000}
CONDITION = "PodGroupInitiallyScheduled"
PLACEMENT_SEEDS = 8  # simulate's seeds tried before a topology-constrained group's placement counts as different
MEMBER_ORDERS = 12  # orders of a group's members tried before its members' nodes count as different
VICTIM_ORDERS = 4  # orders of the bound pods tried before a preempting group's victims count as different
KUBE_RERUNS = 2  # more runs of kube-scheduler on a group that differs (and preempted nothing)
# How simulate delivers the PodGroup status a cycle wrote: a cycle late, at once, or a cycle late with the group's
# members arriving before it (members_in_burst).
LAGGING, AT_ONCE, IN_BURST = "lagging", "at once", "lagging, members in a burst"
SETTLE = 2.0  # seconds a group's state must stay unchanged to count as kube-scheduler's decision


@dataclass
class GroupSpec:
    """One PodGroup and its members, created in ``order`` ("group-first" or "pods-first")."""

    podgroup: dict[str, Any]
    pods: list[dict[str, Any]]
    pods_first: bool = False

    @property
    def name(self) -> str:
        return str(self.podgroup["metadata"]["name"])

    def objects(self) -> list[dict[str, Any]]:
        """The objects in the order they are created (and listed for simulate)."""
        return [*self.pods, self.podgroup] if self.pods_first else [self.podgroup, *self.pods]


@dataclass
class WorkloadScenario:
    seed: int
    nodes: list[dict[str, Any]]
    bound: list[dict[str, Any]]
    groups: list[GroupSpec]


@dataclass
class GroupVerdict:
    """One group's comparison; ``problems`` is empty when both schedulers agree."""

    seed: int
    group: str
    kube: dict[str, tuple[str | None, str]]  # member -> (node, message)
    py: dict[str, tuple[str | None, str]]
    kube_condition: tuple[str, str, str] | None  # (status, reason, message)
    py_condition: tuple[str, str, str] | None
    kube_victims: list[str]
    py_victims: list[str]
    problems: list[str] = field(default_factory=list)
    alike: dict[str, str] = field(default_factory=dict)  # pod key -> what tells it from other victims
    retry: str = ""  # the simulate run that agreed, where it was not the first
    kube_run: int = 1  # kube-scheduler's run it agreed with (or the last one compared), from 1
    kube_outcomes: list[str] = field(default_factory=list)  # kube's earlier runs' outcomes, where it was rerun

    @property
    def placed(self) -> int:
        return sum(1 for node, _ in self.kube.values() if node)


# ----- random scenarios -----------------------------------------------------------------------------


def priority_classes() -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
             "value": value} for name, value in PRIORITIES.items()]


def _nodes(r: random.Random, seed: int) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    for b in range(r.randint(1, 2)):
        for k in range(r.randint(1, 3)):
            for _ in range(r.randint(1, 3)):
                i = len(nodes)
                labels = {SCENARIO_LABEL: f"s{seed}"}
                if r.random() > 0.08:
                    labels |= {BLOCK: f"b{b}", RACK: f"b{b}-r{k}"}
                nodes.append(node_manifest(f"wl{seed}-{i}", i, zones=0, regions=0, cpu=str(r.choice([2, 4, 8])),
                                           memory=f"{r.choice([4, 8, 16])}Gi", pods=110, labels=labels))
    return nodes[:8]


def _requests(r: random.Random, cpus: tuple[str, ...]) -> dict[str, str]:
    return {"cpu": r.choice(cpus), "memory": r.choice(["256Mi", "1Gi", "2Gi"])}


def _pod(name: str, requests: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"terminationGracePeriodSeconds": 0, **spec,
                     "containers": [{"name": "c", "image": IMAGE, "resources": {"requests": requests}}]}}


def _priority(r: random.Random, high: int = 1) -> dict[str, str]:
    """A PriorityClass (or none); ``high`` weighs diff-high, so that groups outrank bound pods often."""
    name = r.choice([None, *PRIORITIES, *["diff-high"] * (high - 1)])
    return {"priorityClassName": name} if name else {}


def _bound(r: random.Random, i: int, node: str) -> dict[str, Any]:
    return _pod(f"b{i}", _requests(r, ("250m", "500m", "1", "2")),
                {"schedulerName": NOBODY, "nodeName": node, **_priority(r)})


def _group(r: random.Random, seed: int, g: int) -> GroupSpec:
    members = r.randint(1, 5)
    policy = ({"basic": {}} if r.random() < 0.3
              else {"gang": {"minCount": r.choice([members, members, r.randint(1, members)])}})
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if r.random() < 0.4:
        spec["schedulingConstraints"] = {"topology": [{"key": r.choice([RACK, RACK, BLOCK])}]}
    if r.random() < 0.3:
        spec["disruptionMode"] = {r.choice(["single", "all"]): {}}
    priority = _priority(r, high=3)
    spec |= priority
    name = f"g{g}"
    cpus = r.choice([("250m", "500m", "1"), ("1", "2"), ("2", "3", "4")])
    pods = [_pod(f"{name}-{m}", _requests(r, cpus),
                 {"schedulerName": KUBE, "nodeSelector": {SCENARIO_LABEL: f"s{seed}"},
                  "schedulingGroup": {"podGroupName": name}, **priority})
            for m in range(members)]
    podgroup = {"apiVersion": PODGROUP_API, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}
    return GroupSpec(podgroup, pods, pods_first=r.random() < 0.2)


def generate(seed: int) -> WorkloadScenario:
    """The scenario of `seed`: the same objects on every machine."""
    r = random.Random(seed)
    nodes = _nodes(r, seed)
    bound = [_bound(r, i, r.choice(nodes)["metadata"]["name"]) for i in range(r.randint(0, 3 * len(nodes)))]
    return WorkloadScenario(seed, nodes, bound, [_group(r, seed, g) for g in range(r.randint(1, 3))])


# ----- reading kube-scheduler's decision ------------------------------------------------------------


def _items(resp: Any, kind: str, api_version: str = "v1") -> list[dict[str, Any]]:
    """Items of a raw list response, with the kind the list leaves out."""
    return [{"apiVersion": api_version, "kind": kind, **item} for item in json.loads(resp.data)["items"]]


def _condition(podgroup: dict[str, Any] | None) -> tuple[str, str, str] | None:
    for c in ((podgroup or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == CONDITION:
            return c.get("status", ""), c.get("reason", ""), c.get("message", "")
    return None


def _member_state(pod: dict[str, Any]) -> tuple[str | None, str, str | None] | None:
    """(node, PodScheduled=False message, nominated node) once the pod is decided; None while it is not."""
    if pod["spec"].get("nodeName"):
        return pod["spec"]["nodeName"], "", None
    for c in pod.get("status", {}).get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "False" and not c.get("message", "").startswith(
                "running PreBind"):
            return None, c.get("message", ""), pod["status"].get("nominatedNodeName")
    return None


class WorkloadDifferential:
    """kube-scheduler (the Workload API's gates on) serving `kube-diff`, and the scenarios run against it."""

    def __init__(self, kubeconfig: Path, workdir: Path, kube_log: Path | None = None) -> None:
        """``kube_log``: a directory that keeps kube-scheduler's log at --v=5 (its cycles) and simulate's files of
        every group that differs (SEED-GROUP-{cluster,pods}.yaml, as read back), a difference's evidence; by
        default the log (--v=2) goes to ``workdir``."""
        self.workdir = workdir
        self.kube_log = kube_log
        self.api = config.new_client_from_config(config_file=str(kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        sched = client.SchedulingV1Api(self.api)
        for pc in priority_classes():
            try:
                sched.create_priority_class(pc)
            except client.ApiException as exc:
                if exc.status != 409:  # made by an earlier batch on this control plane
                    raise
        self.proc = start_kube_scheduler(build_binaries(build=False), kubeconfig, kube_log or workdir, KUBE,
                                         feature_gates=WORKLOAD_GATES,
                                         **({"log_flags": ("--v=5",)} if kube_log else {}))
        self.features: Features | None = None
        self.features_error = ""
        try:
            self.features = parse_feature_gates(gate_flag(WORKLOAD_GATES))
        except ValueError as exc:  # py-scheduler that does not build the gates yet: every group differs
            self.features_error = str(exc)

    def close(self) -> None:
        stop_scheduler(self.proc)
        self.api.close()

    def _pods(self, ns: str) -> list[dict[str, Any]]:
        return _items(self.core.list_namespaced_pod(ns, _preload_content=False), "Pod")

    def _podgroups(self, ns: str) -> list[dict[str, Any]]:
        items = self.custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["items"]
        return [{"apiVersion": PODGROUP_API, "kind": "PodGroup", **pg} for pg in items]

    def _snapshot(self, ns: str) -> list[dict[str, Any]]:
        """The cluster as the API has it before a group: nodes, namespaces, PriorityClasses, bound pods, the
        earlier PodGroups."""
        nodes = _items(self.core.list_node(_preload_content=False), "Node")
        namespaces = _items(self.core.list_namespace(_preload_content=False), "Namespace")
        classes = _items(client.SchedulingV1Api(self.api).list_priority_class(_preload_content=False),
                         "PriorityClass", "scheduling.k8s.io/v1")
        pods = _items(self.core.list_pod_for_all_namespaces(_preload_content=False), "Pod")
        bound = [p for p in pods if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
                 and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
        return nodes + namespaces + classes + self._podgroups(ns) + bound

    def _create(self, ns: str, g: GroupSpec) -> None:
        for o in g.objects():
            if o["kind"] == "PodGroup":
                self.custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, o)
            else:
                self.core.create_namespaced_pod(ns, o)

    def decision(self, ns: str, g: GroupSpec) -> tuple[dict[str, tuple[str | None, str]], tuple[str, str, str] | None]:
        """Every member's node or message, and the PodGroup's condition, once kube-scheduler has decided
        them all (no member waits on a nomination) and nothing changed for SETTLE seconds."""
        names = {p["metadata"]["name"] for p in g.pods}

        def state() -> tuple[Any, ...] | None:
            pods = {p["metadata"]["name"]: p for p in self._pods(ns) if p["metadata"]["name"] in names}
            members = {n: _member_state(p) for n, p in pods.items()}
            if len(members) < len(names) or any(m is None for m in members.values()):
                return None
            if any(m is not None and m[2] for m in members.values()):
                return None  # preemption under way: the members come back once the victims are gone
            pg = next((p for p in self._podgroups(ns) if p["metadata"]["name"] == g.name), None)
            terminating = [p["metadata"]["name"] for p in self._pods(ns) if p["metadata"].get("deletionTimestamp")]
            if terminating:
                return None
            return tuple(sorted((n, m[0], m[1]) for n, m in members.items() if m is not None)), _condition(pg)

        def settled() -> tuple[Any, ...] | None:
            first = state()
            if first is None:
                return None
            time.sleep(SETTLE)
            return first if state() == first else None

        members, cond = wait_for(settled, 90, interval=0.5, what=f"kube-scheduler's decision on {ns}/{g.name}")
        return {n: (node, msg) for n, node, msg in members}, cond

    def _simulate(
        self, before: list[dict[str, Any]], created: list[dict[str, Any]], tmp: Path, seed: int | None = None,
        lag: bool = True, burst: bool = False,
    ) -> Any:
        cluster, pods = tmp / "cluster.yaml", tmp / "pods.yaml"
        cluster.write_text(yaml.safe_dump_all(before))
        pods.write_text(yaml.safe_dump_all(created))
        return run_simulation(str(cluster), str(pods), seed=seed, tie_break="name", features=self.features,
                              status_watch_lag=lag, members_in_burst=burst)

    def _as_created(self, ns: str, g: GroupSpec) -> list[dict[str, Any]]:
        """The group's objects as the API server stored them, before any scheduler touched them, in creation
        order."""
        pods = {p["metadata"]["name"]: p for p in self._pods(ns)}
        pg = next(p for p in self._podgroups(ns) if p["metadata"]["name"] == g.name)
        out = []
        for o in g.objects():
            if o["kind"] == "PodGroup":
                out.append({**pg, "status": {}})
            else:
                p = pods[o["metadata"]["name"]]
                out.append({**p, "spec": {k: v for k, v in p["spec"].items() if k != "nodeName"}, "status": {}})
        return out

    def _clear_pending(self, ns: str) -> None:
        """Members left pending go before the next group: the next step starts from what kube-scheduler bound."""
        for p in self._pods(ns):
            if not p["spec"].get("nodeName"):
                delete_if_present(lambda p=p: self.core.delete_namespaced_pod(
                    p["metadata"]["name"], ns, grace_period_seconds=0))
        wait_for(lambda: all(p["spec"].get("nodeName") for p in self._pods(ns)) or None, 60,
                 what=f"pending pods of {ns} gone")

    def run(self, sc: WorkloadScenario) -> list[GroupVerdict]:
        verdicts = []
        placed = scenario_namespace(self.core, f"wl-{sc.seed}", sc.nodes, sc.bound)
        with placed as ns, tempfile.TemporaryDirectory(prefix="diff-wl-") as tmp:
            for g in sc.groups:
                before = self._snapshot(ns)
                before_pods = {p["metadata"]["name"] for p in before
                               if p["kind"] == "Pod" and p["metadata"].get("namespace") == ns}
                # simulate's runs of the group, by retry: a rerun of kube-scheduler is compared with the same
                # runs (its objects differ from the first run's in uids and timestamps only).
                sims: dict[tuple[int, int, int, str], Any] = {}
                v = self._kube_run(ns, g, before, before_pods, Path(tmp), sc.seed, sims)
                earlier: list[str] = []
                while v.problems and not v.kube_victims and v.kube_run <= KUBE_RERUNS:
                    earlier.append(outcome_line(v))
                    self._withdraw(ns, g)
                    v = self._kube_run(ns, g, before, before_pods, Path(tmp), sc.seed, sims, run=v.kube_run + 1)
                    v.kube_outcomes = list(earlier)
                verdicts.append(v)
                self._clear_pending(ns)
        return verdicts

    def _kube_run(
        self, ns: str, g: GroupSpec, before: list[dict[str, Any]], before_pods: set[str], tmp: Path, seed: int,
        sims: dict[tuple[int, int, int, str], Any], run: int = 1,
    ) -> GroupVerdict:
        """Create the group, let kube-scheduler decide it, and compare simulate's run on the same objects."""
        self._create(ns, g)
        kube, cond = self.decision(ns, g)
        created = self._as_created(ns, g)
        after = {p["metadata"]["name"] for p in self._pods(ns)}
        victims = sorted(f"{ns}/{n}" for n in before_pods - after)
        v = self._compare(seed, ns, g, before, created, kube, cond, victims, tmp, sims)
        v.kube_run = run
        return v

    def _withdraw(self, ns: str, g: GroupSpec) -> None:
        """Delete the group's pods and its PodGroup, as though they had never been created: with no victims
        taken, the cluster is back where the group started."""
        names = {p["metadata"]["name"] for p in g.pods}
        for n in names:
            delete_if_present(lambda n=n: self.core.delete_namespaced_pod(n, ns, grace_period_seconds=0))
        delete_if_present(lambda: self.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, g.name))
        wait_for(lambda: not ({p["metadata"]["name"] for p in self._pods(ns)} & names
                              or any(p["metadata"]["name"] == g.name for p in self._podgroups(ns))) or None, 60,
                 what=f"{ns}/{g.name} withdrawn")
        time.sleep(SETTLE)  # kube-scheduler's informers see the deletions before the group comes again

    def _compare(
        self, seed: int, ns: str, g: GroupSpec, before: list[dict[str, Any]], created: list[dict[str, Any]],
        kube: dict[str, tuple[str | None, str]], cond: tuple[str, str, str] | None, victims: list[str], tmp: Path,
        sims: dict[tuple[int, int, int, str], Any] | None = None,
    ) -> GroupVerdict:
        """The group's verdict: simulate's first run, then its retries until one gives kube's outcome exactly;
        ``sims`` keeps simulate's runs by (bound pods order, members order, seed, status delivery)."""
        sims = {} if sims is None else sims

        def simulate(bound_order: int, order: int, s: int, delivery: str) -> Any:
            key = (bound_order, order, s, delivery)
            if key not in sims:
                sims[key] = self._simulate(victim_ordered(before, bound_order), reordered(created, order), tmp,
                                           seed=s, lag=delivery != AT_ONCE, burst=delivery == IN_BURST)
            return sims[key]

        alike = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": victim_identity(p)
                 for p in before if p["kind"] == "Pod"}
        v = GroupVerdict(seed, g.name, kube, {}, cond, None, victims, [], alike=alike)
        if self.features is None:
            v.problems.append(f"simulate refuses the gates: {self.features_error}")
            return v
        try:
            self._verdict(v, ns, g, simulate(0, 0, 0, LAGGING))
            if not v.problems:
                return v
            # Where kube-scheduler is arbitrary, simulate is tried the other ways too: equal placement scores
            # are broken at random (simulate: by its seeded rng), and members that reach the queue together
            # (pods released from its pending pools when their PodGroup arrives) are taken in Go map order
            # (simulate: in file order). A group that placed some members retries the rest at once, and whether
            # that retry's snapshot already holds the PodGroup its cycle just wrote is a race between the write's
            # watch event and the retry (kube's reruns of seeds 32, 90 and 118 wrote True once and False once):
            # simulate delivers the write one cycle late, and also at once. Members created together may reach
            # kube's queue one by one, each before the watch brought back what the cycle of the one before wrote
            # (seed 90: kube wrote False over the first cycle's True): simulate also runs the members' cycles as they
            # arrive with that write still on its way (members_in_burst). The group agrees if one of these runs
            # gives kube's outcome exactly.
            # Where kube preempted, equal-importance victims are taken in its cache's order of each node's pods
            # (victim_ordered), so the bound pods are tried in other orders too.
            seeds = range(PLACEMENT_SEEDS) if g.podgroup["spec"].get("schedulingConstraints") else range(1)
            for bound_order in range(VICTIM_ORDERS if victims else 1):
                for delivery in (LAGGING, AT_ONCE, IN_BURST):
                    for order in range(MEMBER_ORDERS):
                        for s in seeds:
                            if bound_order == 0 and order == 0 and s == 0 and delivery == LAGGING:
                                continue
                            w = GroupVerdict(seed, g.name, kube, {}, cond, None, victims, [], alike=alike)
                            self._verdict(w, ns, g, simulate(bound_order, order, s, delivery))
                            if not w.problems:
                                w.retry = (f"bound pods order {bound_order}, members order {order}, seed {s}, "
                                           f"status {delivery}")
                                return w
        except SimulationError as exc:
            v.problems.append(f"simulate refused the files: {exc}")
        if self.kube_log is not None:
            for part, objects in (("cluster", before), ("pods", created)):
                (self.kube_log / f"{seed}-{g.name}-{part}.yaml").write_text(yaml.safe_dump_all(objects))
        return v

    @staticmethod
    def _verdict(v: GroupVerdict, ns: str, g: GroupSpec, sim: Any) -> None:
        v.problems.extend(f"simulate rejected {e}" for e in sim.invalid)
        results = {r["pod"]: r for r in sim.results}
        v.py = {n: (results[f"{ns}/{n}"]["node"], results[f"{ns}/{n}"]["message"]) for n in v.kube
                if f"{ns}/{n}" in results}
        v.py_victims = sorted({vic for r in sim.results for vic in r.get("victims") or []})
        pg = next((x for x in sim.pod_groups if x.get("podGroup") == f"{ns}/{g.name}"), None)
        v.py_condition = _condition({"status": {"conditions": pg["conditions"]}} if pg else None)
        # An unplaced member's message and the condition come from kube's first placement, and kube lists a
        # topology constraint's placements in Go map order: with none placed, only the verdicts are compared.
        placements_random = bool(g.podgroup["spec"].get("schedulingConstraints")) and not any(
            node for node, _ in v.kube.values())
        compare_group(v, {n: results.get(f"{ns}/{n}", {}).get("scores", {}) for n in v.kube},
                      messages=not placements_random)


def reordered(created: list[dict[str, Any]], order: int) -> list[dict[str, Any]]:
    """The group's objects with its pods in the ``order``-th seeded permutation (0: as created); the PodGroup
    keeps its place."""
    if order == 0:
        return created
    pods = [o for o in created if o["kind"] == "Pod"]
    random.Random(order).shuffle(pods)
    it = iter(pods)
    return [next(it) if o["kind"] == "Pod" else o for o in created]


def victim_ordered(before: list[dict[str, Any]], order: int) -> list[dict[str, Any]]:
    """The cluster with its bound pods in the ``order``-th order (0: as read back, i.e. by name; 1: reversed;
    then seeded shuffles); the other objects keep their places. simulate's cache holds a node's pods in file
    order, and pod-group preemption lists the victims node by node in that order, then sorts them by importance
    keeping equal ones in place (upstream's sort.Slice is an insertion sort below 13 elements). kube-scheduler's
    order is its cache's: the order its informer added the pods, reshuffled where a pod was removed (the last
    pod moves into its slot) or an assumed pod confirmed (removed, then appended), which the API does not show."""
    if order == 0:
        return before
    pods = [o for o in before if o["kind"] == "Pod"]
    if order == 1:
        pods.reverse()
    else:
        random.Random(order).shuffle(pods)
    it = iter(pods)
    return [next(it) if o["kind"] == "Pod" else o for o in before]


def victim_identity(pod: dict[str, Any]) -> str:
    """What tells a victim from another: its group, node, priority and requests. Two pods alike in all of these
    that started in the same second (kwok's resolution) are equal candidates, and kube picks between them in
    the order its cache holds them."""
    spec = pod.get("spec") or {}
    return json.dumps([(spec.get("schedulingGroup") or {}).get("podGroupName"), spec.get("nodeName"),
                       spec.get("priority"), [c.get("resources") for c in spec.get("containers") or []],
                       (pod.get("status") or {}).get("startTime")], sort_keys=True)


def compare_group(v: GroupVerdict, py_scores: dict[str, dict[str, dict[str, int]]], messages: bool = True) -> None:
    """Add to `v.problems` every way simulate's placement of the group differs from kube-scheduler's. Members
    are compared in name order, the order the pod-group cycle takes them; once kube took another of several
    equal-score nodes for one member, the later members' situations differ, and only whether each was
    placed is compared for them. ``messages=False``: neither unplaced members' messages nor the condition's
    message is compared."""
    tied = False
    for name in sorted(v.kube):
        (kn, km), (pn, pm) = v.kube[name], v.py.get(name, (None, "(no result)"))
        if kn is None or pn is None:
            if (kn is None) != (pn is None):
                v.problems.append(f"{name}: kube {kn or 'unschedulable'} ({km}); py {pn or 'unschedulable'} ({pm})")
            elif km != pm and not tied and messages:
                v.problems.append(f"{name}: messages differ:\n  kube: {km}\n  py:   {pm}")
            continue
        if kn == pn or tied:
            continue
        totals = {n: s.get("total", 0) for n, s in py_scores.get(name, {}).items()}
        best = {n for n, t in totals.items() if t == max(totals.values())} if totals else set()
        if kn in best:
            tied = True
        else:
            hint = "" if kn in totals else "; py did not score kube's node (another placement?)"
            v.problems.append(f"{name}: kube chose {kn}, py {pn} (py totals {totals}){hint}")
    kc, pc = v.kube_condition, v.py_condition
    if not messages and kc and pc:
        kc, pc = kc[:2], pc[:2]
    if kc != pc:
        v.problems.append(f"PodGroup condition differs:\n  kube: {v.kube_condition}\n  py:   {v.py_condition}")
    if v.kube_victims != v.py_victims and sorted(map(v.alike.get, v.kube_victims)) != sorted(
            map(v.alike.get, v.py_victims)):
        v.problems.append(f"victims differ: kube {v.kube_victims}, py {v.py_victims}")


def outcome_line(v: GroupVerdict) -> str:
    """kube-scheduler's outcome for the group in one line: members' nodes (or messages), condition, victims."""
    members = ", ".join(f"{n}={node or repr(msg)}" for n, (node, msg) in sorted(v.kube.items()))
    return f"[{members}] condition={v.kube_condition} victims={v.kube_victims}"


def report_group(v: GroupVerdict) -> bool:
    """Print one verdict (its problems, the simulate retry that agreed, kube-scheduler's earlier runs where it
    was rerun, indented); True when the schedulers disagree."""
    status = "ok" if not v.problems else "DIFF"
    members = " ".join(f"{n}={node or '-'}" for n, (node, _) in sorted(v.kube.items()))
    cond = v.kube_condition[0] if v.kube_condition else "none"
    print(f"seed {v.seed} {v.group}: {status} placed={v.placed}/{len(v.kube)} condition={cond} "
          f"victims={len(v.kube_victims)} [{members}]", flush=True)
    for p in v.problems:
        print(f"    {p}", flush=True)
    if v.retry:
        print(f"    agreed with simulate's retry: {v.retry}", flush=True)
    for i, o in enumerate(v.kube_outcomes, 1):
        print(f"    kube-scheduler rerun: its run {i} of {v.kube_run} was {o}", flush=True)
    return bool(v.problems)


@contextmanager
def workload_cluster(
    prefix: str = "py-scheduler-diff-wl-", kube_log: Path | None = None,
) -> Iterator[WorkloadDifferential]:
    """A fresh local control plane with the Workload API's gates and kube-scheduler serving KUBE, for a
    batch run from the command line; all of it stopped afterwards."""
    def make(kubeconfig: Path, workdir: Path) -> WorkloadDifferential:
        return WorkloadDifferential(kubeconfig, workdir, kube_log)

    with batch_cluster(prefix, make, feature_gates=WORKLOAD_GATES) as diff:
        yield diff


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m e2e.differential_workload", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", type=int, default=50)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--seeds", help="comma-separated seeds to run instead of --scenarios from --first-seed")
    ap.add_argument("--kube-log", type=Path, help="a directory to keep kube-scheduler's log in, at --v=5")
    args = ap.parse_args(argv)
    seeds = ([int(s) for s in args.seeds.split(",")] if args.seeds
             else list(range(args.first_seed, args.first_seed + args.scenarios)))
    groups = failed_groups = failed = 0
    with workload_cluster(kube_log=args.kube_log) as diff:
        for seed in seeds:
            verdicts = diff.run(generate(seed))
            bad = [report_group(v) for v in verdicts]
            groups += len(verdicts)
            failed_groups += sum(bad)
            failed += any(bad)
    print(f"{len(seeds) - failed}/{len(seeds)} scenarios agree "
          f"({groups - failed_groups}/{groups} groups)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
