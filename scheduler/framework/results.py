"""What each plugin said during one scheduling attempt, recorded through the framework's CycleObserver.

One recorder serves `simulate` and `explain` (per-node filter verdicts, raw / normalized / weighted
scores) and `run --record-results`, which writes kube-scheduler-simulator's result annotations: the
same keys and JSON shapes as that project's resultstore, so its UI and tools read py-scheduler's
decisions. Every leaf is a string there (scores too), maps are encoded as Go's json.Marshal would
(compact, keys sorted).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.config.duration import format_duration
from scheduler.framework.status import Code, Status
from scheduler.model.pod import Pod

PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"
SELECTED_NODE = PREFIX + "selected-node"
RESULT_HISTORY = PREFIX + "result-history"
PASSED = "passed"
SUCCESS = "success"
WAIT = "wait"
PREEMPTION_VICTIM = "preemption victim"  # the simulator's PostFilterNominatedMessage
# Pod annotations are limited to 256 KiB in total; the history gives way first.
MAX_ANNOTATION_BYTES = 200 * 1024
# Attempts kept (by pod): far above the pods in flight at once (the binding workers' queue) and the
# one pod at a time that `simulate` and `explain` read back.
MAX_OPEN_ATTEMPTS = 10_000


def status_text(status: Status | None) -> str:
    """The simulator's value for a plugin status: "success", "wait", "" for Skip, else the message."""
    if status is None or status.code == Code.SUCCESS:
        return SUCCESS
    if status.code == Code.WAIT:
        return WAIT
    if status.code == Code.SKIP:
        return ""
    return status.message


@dataclass(slots=True)
class AttemptResult:
    """One attempt of one pod, plugin by plugin (node -> plugin -> value for the per-node points)."""

    pre_filter_status: dict[str, str] = field(default_factory=dict)
    pre_filter_result: dict[str, list[str]] = field(default_factory=dict)
    filter: dict[str, dict[str, str]] = field(default_factory=dict)
    post_filter: dict[str, dict[str, str]] = field(default_factory=dict)
    pre_score: dict[str, str] = field(default_factory=dict)
    raw_score: dict[str, dict[str, int]] = field(default_factory=dict)
    normalized_score: dict[str, dict[str, int]] = field(default_factory=dict)
    final_score: dict[str, dict[str, int]] = field(default_factory=dict)
    reserve: dict[str, str] = field(default_factory=dict)
    permit: dict[str, str] = field(default_factory=dict)
    permit_timeout: dict[str, str] = field(default_factory=dict)
    pre_bind: dict[str, str] = field(default_factory=dict)
    bind: dict[str, str] = field(default_factory=dict)
    selected_node: str = ""

    def total(self, node: str) -> int:
        return sum(self.final_score.get(node, {}).values())

    def score_details(self) -> dict[str, dict[str, dict[str, int]]]:
        """node -> plugin -> {raw, normalized, weighted}: what `simulate` and `explain` print."""
        return {
            node: {
                plugin: {"raw": raw, "normalized": self.normalized_score[node][plugin],
                         "weighted": self.final_score[node][plugin]}
                for plugin, raw in plugins.items()
            }
            for node, plugins in self.raw_score.items()
        }

    def annotations(self) -> dict[str, str]:
        """The simulator's annotations for this attempt (without the history)."""
        def strings(m: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, str]]:
            return {n: {p: str(v) for p, v in ps.items()} for n, ps in m.items()}

        values: dict[str, Any] = {
            "prefilter-result-status": self.pre_filter_status,
            "prefilter-result": self.pre_filter_result,
            "filter-result": self.filter,
            "postfilter-result": self.post_filter,
            "prescore-result": self.pre_score,
            "score-result": strings(self.raw_score),
            "finalscore-result": strings(self.final_score),
            "reserve-result": self.reserve,
            "permit-result": self.permit,
            "permit-result-timeout": self.permit_timeout,
            "prebind-result": self.pre_bind,
            "bind-result": self.bind,
        }
        out = {PREFIX + k: go_json(v) for k, v in values.items()}
        out[SELECTED_NODE] = self.selected_node
        return out


def go_json(value: Any) -> str:
    """json.Marshal's form: compact, map keys sorted."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def with_history(current: Mapping[str, str], previous: str | None, cap: int) -> dict[str, str]:
    """``current`` plus result-history: the previous entries (unparseable ones dropped) and this one,
    the newest last, at most ``cap`` entries and within MAX_ANNOTATION_BYTES (oldest dropped first)."""
    history: list[Any] = []
    if previous:
        try:
            parsed = json.loads(previous)
            history = [h for h in parsed if isinstance(h, dict)] if isinstance(parsed, list) else []
        except ValueError:
            history = []
    history = [*history, dict(current)][-cap:] if cap > 0 else []
    size = sum(len(k) + len(v) for k, v in current.items())
    while history:
        encoded = go_json(history)
        if size + len(encoded) <= MAX_ANNOTATION_BYTES:
            return {**current, RESULT_HISTORY: encoded}
        history = history[1:]
    return dict(current)


class ResultRecorder:
    """The CycleObserver: keeps each pod's latest attempt (by uid), the newest MAX_OPEN_ATTEMPTS of
    them. Plugins run on the scheduling thread and (Permit's wait, PreBind, Bind) on binding workers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[str, AttemptResult] = {}

    def result(self, uid: str) -> AttemptResult | None:
        with self._lock:
            return self._results.get(uid)

    def take(self, uid: str) -> AttemptResult | None:
        """The attempt's result, forgotten here (`run --record-results` takes each when it ends)."""
        with self._lock:
            return self._results.pop(uid, None)

    def _get(self, pod: Pod) -> AttemptResult:
        r = self._results.get(pod.uid)
        if r is None:
            r = self._results[pod.uid] = AttemptResult()
        return r

    def begin(self, pod: Pod) -> None:
        with self._lock:
            self._results.pop(pod.uid, None)  # re-inserted last: the oldest attempts come first
            self._results[pod.uid] = AttemptResult()
            if len(self._results) > MAX_OPEN_ATTEMPTS:
                # Never taken (offline runs, a pod deleted mid-binding): the oldest gives way.
                del self._results[next(iter(self._results))]

    def plugin_status(self, point: str, pod: Pod, plugin: str, status: Status | None) -> None:
        with self._lock:
            r = self._get(pod)
            by_point = {"PreFilter": r.pre_filter_status, "PreScore": r.pre_score, "Reserve": r.reserve,
                        "Permit": r.permit, "PreBind": r.pre_bind, "Bind": r.bind}
            by_point[point][plugin] = status_text(status)

    def pre_filter_result(self, pod: Pod, plugin: str, node_names: set[str]) -> None:
        with self._lock:
            self._get(pod).pre_filter_result[plugin] = sorted(node_names)

    def filter_status(self, pod: Pod, node: str, plugin: str, status: Status | None) -> None:
        text = PASSED if status is None or status.code == Code.SUCCESS else status.message
        with self._lock:
            self._get(pod).filter.setdefault(node, {})[plugin] = text

    def post_filter_result(self, pod: Pod, plugin: str, nominated_node: str, nodes: Sequence[str]) -> None:
        with self._lock:
            r = self._get(pod)
            for node in nodes:
                entry = r.post_filter.setdefault(node, {})
                if node == nominated_node:
                    entry[plugin] = PREEMPTION_VICTIM

    def scores(
        self, pod: Pod, nodes: Sequence[str], plugins: Mapping[str, tuple[Sequence[int], Sequence[int], int]]
    ) -> None:
        with self._lock:
            r = self._get(pod)
            for node in nodes:  # score plugins first, then each prioritizing extender adds its own
                r.raw_score.setdefault(node, {})
                r.normalized_score.setdefault(node, {})
                r.final_score.setdefault(node, {})
            for plugin, (raw, normalized, weight) in plugins.items():
                for node, before, after in zip(nodes, raw, normalized, strict=True):
                    r.raw_score[node][plugin] = before
                    r.normalized_score[node][plugin] = after
                    r.final_score[node][plugin] = after * weight

    def permit_timeout(self, pod: Pod, plugin: str, seconds: float) -> None:
        with self._lock:
            self._get(pod).permit_timeout[plugin] = format_duration(seconds)

    def selected_node(self, pod: Pod, node: str) -> None:
        with self._lock:
            self._get(pod).selected_node = node
