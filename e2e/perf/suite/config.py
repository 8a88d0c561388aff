"""Upstream's scheduler_perf test cases as data: read from the Go module cache, parameters substituted.

kube-scheduler v1.37.2 describes its benchmark in ``test/integration/scheduler_perf/**/performance-config.yaml``:
each test case has a ``workloadTemplate`` (a list of ops: createNodes, createPods, churn, barrier, ...) and
``workloads`` (named parameter sets such as ``500Nodes``, with labels, feature gates and a ``threshold``).
This module reads them as they are (nothing of upstream is copied into this repository), resolves an op's
``countParam``/``templateParams``/``durationParam`` for a workload as upstream's ``patchParams`` does, says why a
case or workload cannot run here (:func:`skip_reason`), and adds the sizes of this harness: ``2-core`` (the
first workload labelled ``performance``, its counts scaled down to :data:`TWO_CORE_NODES` nodes and
:data:`TWO_CORE_PODS` pods) and ``tiny`` (upstream's smallest workload that can run, for the smoke test).
Pure: no API server, so tests/e2e/test_perf_suite.py covers it with inline fixtures.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

KUBE_VERSION = "v1.37.2"
SUITE_PATH = "test/integration/scheduler_perf"
TWO_CORE = "2-core"
TINY = "tiny"
# The 2-core size: what one scheduler run on this shared 2-core machine finishes in about a minute.
TWO_CORE_NODES = 500
TWO_CORE_PODS = 2000

# Ops this harness runs (e2e/perf/suite/executor.py); anything else skips the workload with its name.
SUPPORTED_OPS = frozenset({
    "createNodes", "createNamespaces", "createPods", "createPodSets", "createAny", "updateAny", "churn", "barrier",
    "deletePods", "allocResourceClaims", "sleep", "startCollectingMetrics", "stopCollectingMetrics",
    "startCollectingProfile", "stopCollectingProfile", "createPodGroups",
})  # fmt: skip


class ConfigError(ValueError):
    """An upstream file this harness cannot read as scheduler_perf would."""


def module_cache() -> Path:
    """``go env GOMODCACHE`` ($GOMODCACHE, else ~/go/pkg/mod when Go is not installed)."""
    env = os.environ.get("GOMODCACHE")
    if env:
        return Path(env)
    try:
        out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True, timeout=30)
        if out.stdout.strip():
            return Path(out.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return Path.home() / "go" / "pkg" / "mod"


def suite_dir(cache: Path | None = None) -> Path:
    """Where upstream's scheduler_perf lives in the module cache (the binary build fills it)."""
    return (cache or module_cache()) / f"k8s.io/kubernetes@{KUBE_VERSION}" / SUITE_PATH


@dataclass(frozen=True)
class UpstreamWorkload:
    """One entry of a test case's ``workloads``."""

    name: str
    params: Mapping[str, Any]
    labels: tuple[str, ...] = ()
    threshold: float | None = None
    feature_gates: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class TestCase:
    """One test case; ``base`` is its config file's directory (template paths are relative to it)."""

    name: str
    base: Path
    ops: tuple[Mapping[str, Any], ...]
    workloads: tuple[UpstreamWorkload, ...]
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    default_pod_template: str | None = None
    scheduler_config: str | None = None
    labels: tuple[str, ...] = ()
    group: str = ""  # the directory under scheduler_perf (misc, affinity, dra/...)

    __test__ = False  # not a pytest class

    def workload(self, name: str) -> UpstreamWorkload:
        for w in self.workloads:
            if w.name == name:
                return w
        raise KeyError(f"{self.name} has no workload {name!r}; it has {', '.join(w.name for w in self.workloads)}")

    def gates(self, w: UpstreamWorkload) -> dict[str, bool]:
        """The test case's feature gates with the workload's over them (upstream's order)."""
        return {**self.feature_gates, **w.feature_gates}

    def path(self, rel: str) -> Path:
        return (self.base / rel).resolve()


def _threshold(raw: Any) -> float | None:
    """``threshold`` is a number or a map of topic -> number; the default topic is the bare number."""
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        return None
    return float(raw) or None


def parse_cases(text: str, base: Path, group: str = "") -> list[TestCase]:
    """The test cases of one performance-config.yaml's text."""
    out = []
    for tc in yaml.safe_load(text) or []:
        workloads = tuple(
            UpstreamWorkload(
                name=w["name"], params=_go_numbers(w.get("params") or {}), labels=tuple(w.get("labels") or ()),
                threshold=_threshold(w.get("threshold")), feature_gates=dict(w.get("featureGates") or {}),
            )
            for w in tc.get("workloads") or []
        )
        out.append(TestCase(
            name=tc["name"], base=base, ops=tuple(tc.get("workloadTemplate") or ()), workloads=workloads,
            feature_gates=dict(tc.get("featureGates") or {}), default_pod_template=tc.get("defaultPodTemplatePath"),
            scheduler_config=tc.get("schedulerConfigPath"), labels=tuple(tc.get("labels") or ()), group=group,
        ))  # fmt: skip
    return out


def _go_numbers(params: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters as scheduler_perf holds them: JSON-decoded, so every number is a float64."""
    return {k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v for k, v in params.items()}


def load_cases(root: Path | None = None) -> dict[str, TestCase]:
    """Every test case under ``root`` (:func:`suite_dir` by default), by name, in file order."""
    root = root or suite_dir()
    if not root.is_dir():
        raise ConfigError(f"{root} is missing: upstream's scheduler_perf comes with the Go module cache that "
                          f"`make binaries` (e2e/cluster/build.sh) fills")  # fmt: skip
    cases: dict[str, TestCase] = {}
    for f in sorted(root.rglob("performance-config.yaml")):
        group = str(f.parent.relative_to(root))
        for tc in parse_cases(f.read_text(), f.parent, group):
            if tc.name in cases:
                raise ConfigError(f"test case {tc.name} is defined twice ({f})")
            cases[tc.name] = tc
    return cases


# ---- parameters


def param(params: Mapping[str, Any], ref: str) -> Any:
    """The value of ``$name`` (upstream's ``w.Params.get``)."""
    if not ref.startswith("$"):
        raise ConfigError(f"parameter reference {ref!r} must start with $")
    key = ref[1:]
    if key not in params:
        raise ConfigError(f"parameter {key} is undefined")
    return params[key]


def count(params: Mapping[str, Any], ref: str) -> int:
    return int(float(param(params, ref)))


def resolve_template_params(tp: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``resolveTemplateParams``: a string ``$name`` is the workload's parameter, ``$name|default`` falls back
    to the YAML value after the bar."""
    out = dict(tp)
    for k, v in tp.items():
        if not (isinstance(v, str) and v.startswith("$")):
            continue
        key, sep, default = v[1:].partition("|")
        if key in params:
            out[k] = params[key]
        elif sep and key:
            out[k] = yaml.safe_load(default)
            if isinstance(out[k], int) and not isinstance(out[k], bool):
                out[k] = float(out[k])
        else:
            raise ConfigError(f"parameter {key!r} not found")
    return out


def _duration(text: str) -> float:
    """A Go duration (``1s``, ``500ms``, ``1m30s``) in seconds."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    total, num, i = 0.0, "", 0
    while i < len(text):
        c = text[i]
        if c.isdigit() or c == ".":
            num += c
            i += 1
            continue
        unit = next((u for u in ("ns", "us", "µs", "ms", "s", "m", "h") if text.startswith(u, i)), None)
        if unit is None or not num:
            raise ConfigError(f"bad duration {text!r}")
        total += float(num) * units[unit]
        num, i = "", i + len(unit)
    if num:
        raise ConfigError(f"bad duration {text!r}: missing unit")
    return total


def resolve_op(op: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """One op with its parameters in place (``patchParams``): ``count`` from ``countParam`` (times
    ``countMultiplierParam``), ``duration`` in seconds, ``steadyState``, ``templateParams``; nested
    ``createPodsOp`` of createPodSets too."""
    out = dict(op)
    if "countParam" in op:
        out["count"] = count(params, op["countParam"])
    if "countMultiplierParam" in op:
        out["count"] = out.get("count", 0) * count(params, op["countMultiplierParam"])
    if "signatureBatchSizeParam" in op:
        out["signatureBatchSize"] = count(params, op["signatureBatchSizeParam"])
    if "durationParam" in op:
        out["duration"] = _duration(str(param(params, op["durationParam"])))
    elif isinstance(op.get("duration"), str):
        out["duration"] = _duration(op["duration"])
    if "steadyStateParam" in op:
        out["steadyState"] = bool(param(params, op["steadyStateParam"]))
    if op.get("templateParams"):
        out["templateParams"] = resolve_template_params(op["templateParams"], params)
    if op.get("opcode") == "createPodSets":
        out["createPodsOp"] = resolve_op(op["createPodsOp"], params)
    return out


def resolve_ops(case: TestCase, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The case's workloadTemplate for these parameters, in order."""
    return [resolve_op(op, params) for op in case.ops]


def totals(ops: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """(nodes, pods) that resolved ops create: createNodes, createPods and createPodSets' counts."""
    nodes = pods = 0
    for op in ops:
        code = op.get("opcode")
        if code == "createNodes":
            nodes += int(op.get("count") or 0)
        elif code == "createPods":
            pods += int(op.get("count") or 0)
        elif code == "createPodSets":
            pods += int(op.get("count") or 0) * int(op["createPodsOp"].get("count") or 0)
    return nodes, pods


# ---- what can run here


def _opcodes(ops: Iterable[Mapping[str, Any]]) -> set[str]:
    return {str(op.get("opcode")) for op in ops}


def case_skip_reason(case: TestCase) -> str | None:
    """Why no workload of the case runs here, or None."""
    codes = _opcodes(case.ops)
    unsupported = sorted(codes - SUPPORTED_OPS)
    if unsupported:
        return f"op {', '.join(unsupported)} is not interpreted by e2e/perf/suite yet"
    return None


def _unserved(case: TestCase, gates: Mapping[str, bool]) -> str | None:
    """Why kube-apiserver with these gates would refuse the case's PodGroups (LocalCluster serves only the
    API versions its gates need), or None."""
    from e2e.cluster.cluster import served_apis

    served = {entry.removesuffix("=true") for entry in served_apis(gates)}
    for version in sorted(_pod_group_versions(case) - served):
        return f"creates PodGroups of {version}, which kube-apiserver does not serve with its gates"
    return None


def _pod_group_versions(case: TestCase) -> set[str]:
    """The API versions of the objects its createPodGroups ops create (read from their templates)."""
    out = set()
    for op in case.ops:
        if op.get("opcode") == "createPodGroups" and op.get("templatePath"):
            path = case.path(str(op["templatePath"]))
            for line in path.read_text().splitlines() if path.is_file() else ():
                if line.startswith("apiVersion:"):
                    out.add(line.split(":", 1)[1].strip())
    return out


GateCheck = Callable[[Mapping[str, bool]], str | None]


def workload_skip_reason(case: TestCase, w: UpstreamWorkload, gate_check: GateCheck | None = None) -> str | None:
    """Why this workload does not run here (the case's reason first), or None. ``gate_check`` judges its
    feature gates for py-scheduler (a reason, or None when it builds them)."""
    reason = case_skip_reason(case)
    if reason:
        return reason
    gates = case.gates(w)
    reason = _unserved(case, gates)
    if reason:
        return reason
    try:
        ops = resolve_ops(case, w.params)
    except ConfigError as e:  # upstream's patchParams fails such a workload too (none is labelled for a run)
        return f"upstream's parameters do not resolve: {e}"
    if totals(ops)[1] == 0:
        return "creates no pods: it measures the control plane, not a scheduler"
    if gate_check is not None:
        return gate_check(gates)
    return None


@dataclass(frozen=True)
class Size:
    """A named parameter set of a case: one of upstream's workloads or one this harness derives from one."""

    name: str
    params: Mapping[str, Any]
    upstream: UpstreamWorkload  # the workload it is, or is derived from (labels, gates, threshold)
    nodes: int
    pods: int


def count_params(case: TestCase) -> set[str]:
    """Parameters that count objects (named by an op's countParam): the ones a smaller size scales; every
    other one (devices per node, claims per node, durations) keeps its value. A countMultiplierParam is the
    size of each group (pods per PodGroup, the gang's minCount in its template too): scaling it would change
    what a group is, so a smaller size has fewer groups of the same size."""
    names: set[str] = set()

    def visit(op: Mapping[str, Any]) -> None:
        if isinstance(op.get("countParam"), str):
            names.add(op["countParam"][1:])
        if isinstance(op.get("createPodsOp"), Mapping):
            visit(op["createPodsOp"])

    for op in case.ops:
        visit(op)
    return names


def scaled(case: TestCase, w: UpstreamWorkload, nodes: int, pods: int) -> dict[str, Any]:
    """``w``'s parameters with every count scaled by the same factor so that the workload creates at most
    ``nodes`` nodes and ``pods`` pods (never scaled up; a count that was positive stays at least 1)."""
    n, p = totals(resolve_ops(case, w.params))
    factor = min(1.0, nodes / n if n else 1.0, pods / p if p else 1.0)
    counts = count_params(case)
    out = dict(w.params)
    for k in counts:
        v = float(out[k])
        out[k] = float(max(1, round(v * factor))) if v > 0 else v
    return out


def sizes(case: TestCase, gate_check: GateCheck | None = None) -> dict[str, Size]:
    """The sizes a case runs at: ``2-core`` and ``tiny`` first, then upstream's workloads that can run here."""
    ok = [w for w in case.workloads if workload_skip_reason(case, w, gate_check) is None]
    if not ok:
        return {}

    def size(name: str, params: Mapping[str, Any], w: UpstreamWorkload) -> Size:
        n, p = totals(resolve_ops(case, params))
        return Size(name, params, w, n, p)

    upstream = {w.name: size(w.name, w.params, w) for w in ok}
    perf = [w for w in ok if "performance" in w.labels]
    base = perf[0] if perf else max(ok, key=lambda w: (upstream[w.name].pods, upstream[w.name].nodes))
    two_core = size(TWO_CORE, scaled(case, base, TWO_CORE_NODES, TWO_CORE_PODS), base)
    smallest = min(ok, key=lambda w: (upstream[w.name].pods, upstream[w.name].nodes))
    tiny = Size(TINY, smallest.params, smallest, upstream[smallest.name].nodes, upstream[smallest.name].pods)
    return {TWO_CORE: two_core, TINY: tiny, **upstream}


def performance_sizes(case: TestCase, gate_check: GateCheck | None = None) -> list[Size]:
    """Upstream's workloads labelled ``performance`` that can run here (``--suite full``)."""
    return [s for name, s in sizes(case, gate_check).items()
            if name not in (TWO_CORE, TINY) and "performance" in s.upstream.labels]  # fmt: skip
