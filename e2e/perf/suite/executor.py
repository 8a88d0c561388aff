"""Run one upstream workload's ops against a live control plane, as scheduler_perf's WorkloadExecutor does.

The scheduler under test runs as a separate process (``e2e.perf.schedulers``); this only creates, deletes
and waits. Every Pod it creates (createPods, createPodSets, churn, createAny) gets ``spec.schedulerName``
of the scheduler under test. Namespaces are upstream's: ``namespace-<op index>`` unless an op names one.
Measurements are upstream's collectMetrics windows: a createPods op with ``collectMetrics`` (its namespace,
from before its first pod is created until all are scheduled), or start/stopCollectingMetrics (their
namespaces and label selector). ``probe`` samples the scheduler's CPU at the edges of each window.
"""

from __future__ import annotations

import copy
import json
import random
import string
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e.perf.kubeio import Conn, create_pods
from e2e.perf.suite import config
from e2e.perf.suite.gotemplate import Template
from e2e.perf.suite.tracker import PodTracker

# makeBasePod and makeBaseNode (util.go, runners.go): what an op without a template creates.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"
WAIT_TIMEOUT = 600.0  # upstream's waitUntilPodsScheduledInNamespace: 10 minutes
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
VOLUME_WORKERS = 30  # CreatePodWithPersistentVolume's parallelism
PODGROUP_CACHE_TIMEOUT = 10.0  # runCreatePodGroupsOp's wait for its informer


def base_pod() -> dict[str, Any]:
    req = {"cpu": "100m", "memory": "500Mi"}
    container = {"name": "pause", "image": PAUSE_IMAGE, "ports": [{"containerPort": 80}],
                 "resources": {"limits": dict(req), "requests": dict(req)}}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "pod-"},
            "spec": {"containers": [container]}}


def csi_node(name: str, drivers: Mapping[str, Any], migrated: str) -> dict[str, Any]:
    """The CSINode NodeAllocatableStrategy creates for a node (runners.go createCSINode)."""
    spec = {"drivers": [{"name": d, "allocatable": a, "nodeID": name} for d, a in drivers.items()]}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": name, "annotations": {MIGRATED_PLUGINS: migrated}}, "spec": spec}  # fmt: skip


def volume_pair(pvc_template: Mapping[str, Any], pv_template: Mapping[str, Any], ns: str,
                i: int) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """The i-th claim and volume of CreatePodWithPersistentVolume (bindVolume: bound to each other, with
    the statuses to write after creating): ``pvc-<i>``, and ``<ns>-vol-<i>`` from getCustomVolumeFactory
    (an EBS volume's ID ``vol-<i>``, a CSI volume's handle its full name)."""
    pvc, pv = copy.deepcopy(dict(pvc_template)), copy.deepcopy(dict(pv_template))
    pvc.setdefault("metadata", {})["name"] = f"pvc-{i}"
    pv_name = f"{ns}-vol-{i}"
    pv.setdefault("metadata", {})["name"] = pv_name
    spec = pv.setdefault("spec", {})
    if "csi" in spec:
        spec["csi"]["volumeHandle"] = pv_name
    elif "awsElasticBlockStore" in spec:
        spec["awsElasticBlockStore"]["volumeID"] = f"vol-{i}"
    spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": ns, "name": f"pvc-{i}", "apiVersion": "v1"}
    pv["status"] = {"phase": "Bound"}
    pvc.setdefault("spec", {})["volumeName"] = pv_name
    pvc["status"] = {"phase": "Bound"}
    return pvc, pv


def base_node(prefix: str) -> dict[str, Any]:
    res = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"generateName": prefix},
            "status": {"capacity": dict(res), "allocatable": dict(res), "phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True"}]}}  # fmt: skip


class ExecutionError(RuntimeError):
    """An op failed as it would fail upstream's test (a timeout, a rejected object)."""


@dataclass
class Window:
    """One measurement: its name, what it counts, and what was seen."""

    name: str
    namespaces: list[str]
    selector: dict[str, str]
    start: float
    probe: Any
    steady: bool = False  # a steady-state createPods: pods are still in flight when it closes
    result: dict[str, Any] = field(default_factory=dict)


class ApiError(RuntimeError):
    """An API server answer other than 2xx."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status


class Rest:
    """Create and delete any object through the API server, finding its resource by discovery (what
    upstream's createAny does with a REST mapper)."""

    def __init__(self, conn: Conn) -> None:
        import urllib3

        self.conn = conn
        self.http = urllib3.PoolManager(maxsize=32, ssl_context=conn.ssl_context(),
                                        cert_reqs="CERT_REQUIRED" if conn.verify else "CERT_NONE")  # fmt: skip
        self._mapping: dict[tuple[str, str], tuple[str, bool]] = {}
        self._lock = threading.Lock()

    def _resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        with self._lock:
            if (api_version, kind) not in self._mapping:
                path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
                data = self._call("GET", path)
                for r in data.get("resources", []):
                    if "/" not in r["name"]:
                        self._mapping[(api_version, r["kind"])] = (r["name"], r["namespaced"])
            if (api_version, kind) not in self._mapping:
                raise ExecutionError(f"the API server does not serve {kind} in {api_version}")
            return self._mapping[(api_version, kind)]

    def _call(self, method: str, path: str, body: Any = None, query: Sequence[tuple[str, str]] = ()) -> Any:
        from urllib.parse import urlencode

        url = f"{self.conn.host}{path}" + (f"?{urlencode(list(query))}" if query else "")
        headers = {**self.conn.headers, "Content-Type": "application/json", "Accept": "application/json"}
        resp = self.http.request(method, url, body=None if body is None else json.dumps(body).encode(),
                                 headers=headers, timeout=120.0)  # fmt: skip
        if resp.status >= 300:
            raise ApiError(resp.status, resp.data.decode(errors="replace"))
        return json.loads(resp.data) if resp.data else {}

    def path(self, obj: Mapping[str, Any], namespace: str | None, every_namespace: bool = False) -> str:
        plural, namespaced = self._resource(obj["apiVersion"], obj["kind"])
        prefix = f"/api/{obj['apiVersion']}" if "/" not in obj["apiVersion"] else f"/apis/{obj['apiVersion']}"
        if namespaced and not (every_namespace and not namespace):
            if not namespace:
                raise ExecutionError(f"{obj['kind']} is namespaced but no namespace was given")
            return f"{prefix}/namespaces/{namespace}/{plural}"
        return f"{prefix}/{plural}"

    def create(self, obj: Mapping[str, Any], namespace: str | None = None, tries: int = 20) -> dict[str, Any]:
        """POST with strict field validation, retried for a while (a type just created may not be ready)."""
        path = self.path(obj, namespace)
        for attempt in range(tries):
            try:
                return dict(self._call("POST", path, obj, [("fieldValidation", "Strict")]))
            except ApiError as e:
                if e.status in (400, 409, 422) or attempt == tries - 1:
                    raise ExecutionError(f"creating {obj['kind']} {obj.get('metadata', {}).get('name')}: {e}") from e
                time.sleep(1.0)
        raise AssertionError("unreachable")

    def delete(self, obj: Mapping[str, Any], name: str, namespace: str | None = None) -> None:
        try:
            self._call("DELETE", f"{self.path(obj, namespace)}/{name}")
        except ApiError as e:
            if e.status != 404:
                raise

    def update(self, obj: Mapping[str, Any], name: str, namespace: str | None = None,
               subresource: str = "") -> None:  # fmt: skip
        suffix = f"/{subresource}" if subresource else ""
        self._call("PUT", f"{self.path(obj, namespace)}/{name}{suffix}", obj)

    def list(self, api_version: str, kind: str, namespace: str | None = None,
             selector: str = "") -> list[dict[str, Any]]:  # fmt: skip
        """The objects of ``namespace``, or of every namespace when it is None, each with its apiVersion and
        kind (a list's items come without them)."""
        path = self.path({"apiVersion": api_version, "kind": kind}, namespace, every_namespace=True)
        items = self._call("GET", path, query=[("labelSelector", selector)] if selector else ()).get("items", [])
        return [{"apiVersion": api_version, "kind": kind, **o} for o in items]


def _rand5() -> str:
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=5))


class Executor:
    """One run of one workload: ``run()`` executes the resolved ops in order and returns the windows."""

    def __init__(self, case: config.TestCase, ops: Sequence[Mapping[str, Any]], rest: Rest, conn: Conn,
                 tracker: PodTracker, scheduler_name: str, probe: Callable[[], Any],
                 log: Callable[[str], None], creators: int = 32,
                 gates: Mapping[str, bool] | None = None) -> None:  # fmt: skip
        self.case, self.ops, self.rest, self.conn, self.tracker = case, ops, rest, conn, tracker
        self.gates = dict(gates or {})
        self.scheduler_name, self.probe, self.log, self.creators = scheduler_name, probe, log, creators
        self.pending: dict[str, int] = {}  # numPodsScheduledPerNamespace
        self.namespaces: set[str] = set()
        self.windows: list[Window] = []
        self.open: Window | None = None
        self.stop = threading.Event()
        self.background: list[threading.Thread] = []
        self.errors: list[str] = []
        self._templates: dict[Path, Template] = {}
        self._plain: dict[str, dict[str, Any]] = {}
        self.steady_made: dict[str, int] = {}  # namespace -> pods a steady-state op created
        self.nodes_created = 0

    # ---- helpers
    def template(self, rel: str) -> Template:
        path = self.case.path(rel)
        if path not in self._templates:
            self._templates[path] = Template(path.read_text(), str(path))
        return self._templates[path]

    def render(self, rel: str, env: Mapping[str, Any]) -> dict[str, Any]:
        obj = yaml.safe_load(self.template(rel).render(env))
        if not isinstance(obj, dict):
            raise ExecutionError(f"{rel} did not render to an object")
        return obj

    def ensure_namespace(self, ns: str, spec: Mapping[str, Any] | None = None) -> None:
        if ns in self.namespaces:
            return
        body = copy.deepcopy(dict(spec or {})) or {"apiVersion": "v1", "kind": "Namespace"}
        body.setdefault("apiVersion", "v1")
        body.setdefault("kind", "Namespace")
        body.setdefault("metadata", {})["name"] = ns
        try:
            self.rest.create(body)
        except ExecutionError as e:
            if "HTTP 409" not in str(e):
                raise
        self.namespaces.add(ns)
        self.pending.setdefault(ns, 0)

    def for_scheduler(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj.get("kind") == "Pod":
            obj.setdefault("spec", {})["schedulerName"] = self.scheduler_name
        return obj

    def _parallel(self, fn: Callable[[int], object], n: int, workers: int = 16) -> None:
        with ThreadPoolExecutor(max_workers=max(1, min(workers, n))) as pool:
            list(pool.map(fn, range(n)))

    # ---- the run
    def run(self) -> list[Window]:
        try:
            for index, op in enumerate(self.ops):
                code = op["opcode"]
                t0 = time.monotonic()
                getattr(self, f"op_{code}")(index, op)
                self.log(f"  op {index} {code}: {time.monotonic() - t0:.1f} s")
        finally:
            self.stop.set()
            for th in self.background:
                th.join(30)
        if self.open is not None:
            raise ExecutionError("startCollectingMetrics without stopCollectingMetrics")
        return self.windows

    def op_createNodes(self, index: int, op: Mapping[str, Any]) -> None:
        n = int(op.get("count") or 0)
        tp = dict(op.get("templateParams") or {})
        bodies = []
        taken: set[str] = set()
        for i in range(n):
            if op.get("nodeTemplatePath"):
                node = self.render(op["nodeTemplatePath"], {**tp, "Index": i, "Count": n})
            else:
                node = base_node(f"node-{index}-")
            meta = node.setdefault("metadata", {})
            if not meta.get("name"):
                # five random characters, as the API server's generateName; among 5000 nodes two draws would
                # collide in about one run of five, so a name already drawn is drawn again
                prefix = meta.pop("generateName", f"node-{index}-")
                while not meta.get("name") or meta["name"] in taken:
                    meta["name"] = prefix + _rand5()
            taken.add(meta["name"])
            meta.setdefault("labels", {})["kubernetes.io/hostname"] = meta["name"]
            bodies.append(node)
        self._prepare_nodes(op, bodies)
        self._parallel(lambda i: self.rest.create(bodies[i]), n)
        self._csi_nodes(op, bodies)
        self.nodes_created += n

    def _prepare_nodes(self, op: Mapping[str, Any], nodes: list[dict[str, Any]]) -> None:
        """The node strategies (runners.go), applied to the bodies rather than patched in afterwards."""
        label = op.get("labelNodePrepareStrategy")
        unique = op.get("uniqueNodeLabelStrategy")
        alloc = op.get("nodeAllocatableStrategy")
        for i, node in enumerate(nodes):
            labels = node["metadata"].setdefault("labels", {})
            if label:
                labels[label["labelKey"]] = label["labelValues"][i % len(label["labelValues"])]
            elif unique:
                labels[unique["labelKey"]] = str(uuid.uuid4())
            elif alloc:
                # Upstream patches the created node, whose allocatable the API server defaulted to its capacity.
                status = node.setdefault("status", {})
                status["allocatable"] = {**(status.get("allocatable") or status.get("capacity") or {}),
                                         **(alloc.get("nodeAllocatable") or {})}  # fmt: skip

    def _csi_nodes(self, op: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]) -> None:
        """NodeAllocatableStrategy's PrepareDependentObjects: a CSINode per node with the drivers'
        allocatable counts and the migrated in-tree plugins (what NodeVolumeLimits counts against)."""
        alloc = op.get("nodeAllocatableStrategy") or {}
        if not alloc or op.get("labelNodePrepareStrategy") or op.get("uniqueNodeLabelStrategy"):
            return
        drivers = dict(alloc.get("csiNodeAllocatable") or {})
        migrated = ",".join(alloc.get("migratedPlugins") or ())
        bodies = [csi_node(str(n["metadata"]["name"]), drivers, migrated) for n in nodes]
        self._parallel(lambda i: self.rest.create(bodies[i]), len(bodies))

    def op_createNamespaces(self, index: int, op: Mapping[str, Any]) -> None:
        spec = None
        if op.get("namespaceTemplatePath"):
            spec = yaml.safe_load(self.case.path(op["namespaceTemplatePath"]).read_text())
        for i in range(int(op.get("count") or 0)):
            self.ensure_namespace(f"{op['prefix']}-{i}", spec)

    def op_createPods(self, index: int, op: Mapping[str, Any], namespace: str | None = None) -> None:
        ns = namespace or op.get("namespace") or f"namespace-{index}"
        self.ensure_namespace(ns)
        n = int(op.get("count") or 0)
        make = self._pod_maker(index, op, ns, n)
        steady = bool(op.get("steadyState"))
        if op.get("collectMetrics"):
            self._start_window(str(index), [ns], {}, steady)
        if steady:
            self._steady(index, op, ns, make)
        elif op.get("persistentVolumeClaimTemplatePath"):
            self._parallel(lambda i: self._create_with_volume(op, ns, make(i), i), n, VOLUME_WORKERS)
        else:
            _, errors = create_pods(self.conn, [make(i) for i in range(n)], concurrency=self.creators)
            if errors:
                raise ExecutionError(f"op {index}: creating pods: {errors[:3]}")
        if op.get("skipWaitToCompletion"):
            self.pending[ns] = self.pending.get(ns, 0) + n
        elif not steady:
            self._wait(index, [ns], {}, {ns: n}, attempted=False)
        if op.get("collectMetrics"):
            self._stop_window()
        if steady:
            self._drain(index, ns)

    def _pod_maker(self, index: int, op: Mapping[str, Any], ns: str, n: int) -> Callable[[int], dict[str, Any]]:
        """The op's i-th pod (its template or makeBasePod, upstream's signature label, a name unique in
        the namespace, the scheduler under test)."""
        rel = op.get("podTemplatePath") or self.case.default_pod_template
        batch = int(op.get("signatureBatchSize") or 1) or 1
        tp = dict(op.get("templateParams") or {})

        def make(i: int) -> dict[str, Any]:
            pod = self.render(rel, {**tp, "Index": i, "Count": n}) if rel else base_pod()
            meta = pod.setdefault("metadata", {})
            meta.setdefault("labels", {})["signature"] = f"signature-label-{i // batch}"
            meta["name"] = meta.get("name") or f"{meta.pop('generateName', 'pod-')}{index}-{i}"
            meta["namespace"] = ns
            return self.for_scheduler(pod)

        return make

    def _create_with_volume(self, op: Mapping[str, Any], ns: str, pod: dict[str, Any], i: int) -> None:
        """CreatePodWithPersistentVolume with bindVolume: the claim ``pvc-<i>`` and the volume
        ``<namespace>-vol-<i>`` created already bound to each other (no volume controller takes part), then
        the pod using the claim as its only volume."""
        pvc, pv = volume_pair(self._yaml(op["persistentVolumeClaimTemplatePath"]),
                              self._yaml(op["persistentVolumeTemplatePath"]), ns, i)  # fmt: skip
        # Creating resets the status; it is written separately, as upstream does.
        created = self.rest.create(pvc, ns)
        self.rest.update({**created, "status": pvc["status"]}, pvc["metadata"]["name"], ns, "status")
        created = self.rest.create(pv)
        self.rest.update({**created, "status": pv["status"]}, pv["metadata"]["name"], None, "status")
        pod.setdefault("spec", {})["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": f"pvc-{i}"}}]
        self.rest.create(pod, ns)

    def _yaml(self, rel: str) -> dict[str, Any]:
        if rel not in self._plain:
            self._plain[rel] = yaml.safe_load(self.case.path(rel).read_text())
        return copy.deepcopy(dict(self._plain[rel]))

    def _steady(self, index: int, op: Mapping[str, Any], ns: str, make: Callable[[int], dict[str, Any]]) -> None:
        """createPodsSteadily: ``count`` pods, then for ``duration`` each pod seen scheduled is deleted
        (grace period 0) and one new pod created, so the scheduler always has ``count`` pods in flight."""
        n = int(op.get("count") or 0)
        if op.get("persistentVolumeClaimTemplatePath"):
            raise ExecutionError(f"op {index}: steady state with persistent volumes is not interpreted")
        _, errors = create_pods(self.conn, [make(i) for i in range(n)], concurrency=self.creators)
        if errors:
            raise ExecutionError(f"op {index}: creating pods: {errors[:3]}")
        deadline = time.monotonic() + float(op.get("duration") or 0)
        seen: set[str] = set()
        made = n  # names handed out
        created = [n]  # pods that exist or existed
        lock = threading.Lock()
        pod = {"apiVersion": "v1", "kind": "Pod"}

        def replace(i: int, name: str) -> None:
            try:
                self.rest._call("DELETE", f"{self.rest.path(pod, ns)}/{name}",
                                {"gracePeriodSeconds": 0, "propagationPolicy": "Background"})  # fmt: skip
                self.rest.create(make(i), ns)
                with lock:
                    created[0] += 1
            except Exception as e:  # reported with the row; the drain then waits for what exists
                self.errors.append(f"steady state {ns}/{name}: {e}"[:200])

        with ThreadPoolExecutor(max_workers=8) as pool:
            while time.monotonic() < deadline and not self.stop.is_set():
                fresh = [p.key for p in self.tracker.pods([ns]) if p.bound is not None and p.key not in seen]
                for key in fresh:
                    seen.add(key)
                    pool.submit(replace, made, key.split("/", 1)[1])
                    made += 1
                time.sleep(0.02)
        if not seen:
            raise ExecutionError(f"op {index}: no pod at all got scheduled in steady state")
        self.log(f"  op {index}: {len(seen)} pods scheduled in steady state, {created[0]} created")
        self.steady_made[ns] = created[0]

    def _drain(self, index: int, ns: str) -> None:
        """After a steady-state op: the pods still in flight get scheduled too (upstream stops watching;
        this is the check that none is left unschedulable). Every pod it made counts, deleted or not."""
        self._wait(index, [ns], {}, {ns: self.steady_made[ns]}, attempted=False)
        if self.windows and self.windows[-1].steady and ns in self.windows[-1].namespaces:
            self.windows[-1].result["drained"] = True

    def op_createPodSets(self, index: int, op: Mapping[str, Any]) -> None:
        for i in range(int(op.get("count") or 0)):
            self.op_createPods(index, op["createPodsOp"], f"{op['namespacePrefix']}-{i}")

    def op_createAny(self, index: int, op: Mapping[str, Any]) -> None:
        ns = op.get("namespace")
        if ns:
            self.ensure_namespace(ns)
        n = 1 if op.get("count") is None else int(op["count"])  # countParam may resolve to 0: none
        tp = dict(op.get("templateParams") or {})
        objs = [self.for_scheduler(self.render(op["templatePath"], {**tp, "Index": i, "Count": n})) for i in range(n)]
        self._parallel(lambda i: self.rest.create(objs[i], ns), n)

    def op_createPodGroups(self, index: int, op: Mapping[str, Any]) -> None:
        """createPodGroups: ``count`` PodGroups rendered from the template (``Index`` only, as upstream's env),
        then a wait of up to 10 s until the API server lists them all (upstream waits for its informer, so
        that the pods created next never reach a scheduler that has not seen their group)."""
        ns = str(op["namespace"])
        self.ensure_namespace(ns)
        n = int(op.get("count") or 0)
        tp = dict(op.get("templateParams") or {})
        objs = [self.render(op["templatePath"], {**tp, "Index": i}) for i in range(n)]
        self._parallel(lambda i: self.rest.create(objs[i], ns), n)
        deadline = time.monotonic() + PODGROUP_CACHE_TIMEOUT
        while n and len(self.rest.list(objs[0]["apiVersion"], objs[0]["kind"], ns)) < n:
            if time.monotonic() > deadline:
                raise ExecutionError(f"op {index}: timed out waiting for {n} PodGroups in {ns}")
            time.sleep(0.1)

    def op_updateAny(self, index: int, op: Mapping[str, Any]) -> None:
        """updateAny: each of ``count`` objects rendered from the template (``Index``, ``Count``) replaces
        the stored one without a resourceVersion, through the op's subresources, then its status; at
        ``updatePerSecond`` (a tick before each) or all at once."""
        ns = op.get("namespace")
        n = 1 if op.get("count") is None else int(op["count"])  # countParam may resolve to 0: none
        rate = int(op.get("updatePerSecond") or 0)
        sub = "/".join(op.get("subresources") or ())
        tp = dict(op.get("templateParams") or {})
        for i in range(n):
            if rate and self.stop.wait(1.0 / rate):
                return
            obj = self.for_scheduler(self.render(op["templatePath"], {**tp, "Index": i, "Count": n}))
            name = str(obj["metadata"]["name"])
            try:
                self.rest.update(obj, name, ns, sub)
                self.rest.update(obj, name, ns, "status")
            except ApiError as e:
                raise ExecutionError(f"op {index}: updating {obj['kind']} {name}: {e}") from e

    def op_allocResourceClaims(self, index: int, op: Mapping[str, Any]) -> None:
        from e2e.perf.suite.allocate import allocate_claims

        done = allocate_claims(self.rest, op.get("namespace") or None, self.gates)
        self.log(f"  op {index}: allocated {done} ResourceClaims")

    def op_churn(self, index: int, op: Mapping[str, Any]) -> None:
        ns = op.get("namespace") or f"namespace-{index}"
        self.ensure_namespace(ns)
        objs = [self.for_scheduler(yaml.safe_load(self.case.path(p).read_text())) for p in op["templatePaths"]]
        interval = (op.get("intervalMilliseconds") or 500) / 1000.0
        number = int(op.get("number") or 0)
        recreate = op.get("mode") == "recreate"

        def create(obj: dict[str, Any]) -> str:
            try:
                return str(self.rest.create(obj, ns, tries=1)["metadata"]["name"])
            except Exception:  # upstream ignores a failed churn create
                return ""

        def loop() -> None:
            ring: list[list[str]] = [[""] * max(number, 1) for _ in objs]
            count = 0
            while not self.stop.wait(interval):
                if not recreate and number and count >= number:
                    return
                for i, obj in enumerate(objs):
                    slot = count % max(number, 1)
                    if recreate and ring[i][slot]:
                        try:
                            self.rest.delete(obj, ring[i][slot], ns)
                        except Exception as e:  # reported, as upstream's tCtx.Errorf
                            self.errors.append(f"churn delete: {e}"[:200])
                        ring[i][slot] = ""
                    elif recreate:
                        ring[i][slot] = create(obj)
                    else:
                        create(obj)
                count += 1

        th = threading.Thread(target=loop, name=f"churn-{index}", daemon=True)
        th.start()
        self.background.append(th)

    def op_barrier(self, index: int, op: Mapping[str, Any]) -> None:
        namespaces = list(op.get("namespaces") or self.pending)
        for ns in namespaces:
            if ns not in self.pending:
                raise ExecutionError(f"op {index}: unknown namespace {ns}")
        attempted = op.get("stageRequirement") == "Attempted"
        self._wait(index, namespaces, dict(op.get("labelSelector") or {}),
                   {ns: self.pending[ns] for ns in namespaces}, attempted)  # fmt: skip
        if not attempted:
            for ns in namespaces:
                self.pending.pop(ns, None)

    def op_deletePods(self, index: int, op: Mapping[str, Any]) -> None:
        ns = op["namespace"]
        selector = dict(op.get("labelSelector") or {})
        names = [p.key.split("/", 1)[1] for p in self.tracker.pods([ns], selector) if not p.deleted]
        rate = int(op.get("deletePodsPerSecond") or 0)
        pod = {"apiVersion": "v1", "kind": "Pod"}

        def delete() -> None:
            if rate <= 0:
                sel = ",".join(f"{k}={v}" for k, v in selector.items())
                query = [("labelSelector", sel)] if sel else []
                self.rest._call("DELETE", self.rest.path(pod, ns), query=query)
                return
            for name in names:
                if self.stop.wait(1.0 / rate):
                    return
                try:
                    self.rest.delete(pod, name, ns)
                except Exception as e:  # upstream reports and goes on
                    self.errors.append(f"delete {ns}/{name}: {e}"[:200])

        if op.get("skipWaitToCompletion"):
            th = threading.Thread(target=delete, name=f"delete-{index}", daemon=True)
            th.start()
            self.background.append(th)
        else:
            delete()

    def op_sleep(self, index: int, op: Mapping[str, Any]) -> None:
        self.stop.wait(float(op.get("duration") or 0))

    def op_startCollectingMetrics(self, index: int, op: Mapping[str, Any]) -> None:
        self._start_window(op.get("name") or str(index), list(op["namespaces"]), dict(op.get("labelSelector") or {}))

    def op_stopCollectingMetrics(self, index: int, op: Mapping[str, Any]) -> None:
        self._stop_window()

    def op_startCollectingProfile(self, index: int, op: Mapping[str, Any]) -> None:
        """Upstream's CPU profile of its own test process (scheduler in it); here the scheduler is a process
        of its own, profiled with ``--profile`` instead."""

    op_stopCollectingProfile = op_startCollectingProfile

    # ---- waiting and measuring
    def _wait(self, index: int, namespaces: list[str], selector: dict[str, str], want: Mapping[str, int],
              attempted: bool) -> None:  # fmt: skip
        deadline = time.monotonic() + WAIT_TIMEOUT
        last_log = time.monotonic()
        while True:
            pods = self.tracker.pods(namespaces, selector)
            got = {ns: 0 for ns in namespaces}
            for p in pods:
                if p.bound is not None or (attempted and p.attempted):
                    got[p.key.split("/", 1)[0]] += 1
            if all(got[ns] >= want.get(ns, 0) for ns in namespaces):
                return
            now = time.monotonic()
            if now > deadline:
                stage = "attempted" if attempted else "scheduled"
                raise ExecutionError(f"op {index}: timed out waiting for pods to be {stage}: want {dict(want)}, "
                                     f"got {got}")  # fmt: skip
            if now - last_log > 30:
                self.log(f"  op {index}: waiting, want {dict(want)}, got {got}")
                last_log = now
            time.sleep(0.1)

    def _start_window(self, name: str, namespaces: list[str], selector: dict[str, str],
                      steady: bool = False) -> None:  # fmt: skip
        if self.open is not None:
            raise ExecutionError("metrics collection is overlapping")
        self.open = Window(name, namespaces, selector, time.monotonic(), self.probe(), steady)

    def _stop_window(self) -> None:
        if self.open is None:
            raise ExecutionError("missing startCollectingMetrics operation before stopping")
        w, self.open = self.open, None
        w.result = {"stop": time.monotonic(), "pods": self.tracker.pods(w.namespaces, w.selector),
                    "probe": self.probe()}  # fmt: skip
        self.windows.append(w)
