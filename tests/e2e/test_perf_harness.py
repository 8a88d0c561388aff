"""Unit tests of the benchmark harness's pure parts (e2e/perf): statistics, summary ratios, the results JSON
shape, the markdown table, workload templates and sizes, /proc parsing and py-spy profile summaries."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from e2e.perf import goals, procstat, stats, sysprofile, workloads
from e2e.perf.__main__ import parse_sizes, plan
from e2e.perf.profile import area, by_thread, parse_raw, summarize
from e2e.perf.runner import cpu_breakdown, per_pod, per_thread_group, round_order
from e2e.perf.schedulers import kube_scheduler_config, py_scheduler_config, wait_ready

# ---- percentile / batch metrics


def test_percentile_interpolates_like_numpy() -> None:
    xs = [1.0, 2.0, 3.0, 4.0]
    assert stats.percentile(xs, 0) == 1.0
    assert stats.percentile(xs, 100) == 4.0
    assert stats.percentile(xs, 50) == 2.5
    assert stats.percentile(xs, 90) == pytest.approx(3.7)
    assert stats.percentile([5.0], 99) == 5.0
    assert stats.percentile([], 50) is None
    assert stats.percentile([3.0, 1.0, 2.0], 50) == 2.0  # unsorted input


def test_percentile_rejects_out_of_range() -> None:
    with pytest.raises(ValueError):
        stats.percentile([1.0], 101)


def test_batch_metrics_throughput_and_latency() -> None:
    created = {f"p{i}": 10.0 + i * 0.1 for i in range(10)}  # 10.0 .. 10.9
    bound = {f"p{i}": created[f"p{i}"] + 0.5 for i in range(10)}  # last at 11.4
    m = stats.batch_metrics(created, bound, expected=10)
    assert m["pods_per_second"] == pytest.approx(10 / 1.4, abs=0.1)
    assert m["latency_p50_ms"] == 500.0
    assert m["latency_p99_ms"] == 500.0
    assert m["all_bound"] is True
    assert m["bound"] == 10


def test_batch_metrics_partial_and_empty() -> None:
    m = stats.batch_metrics({"a": 0.0, "b": 0.0}, {"a": 2.0}, expected=2)
    assert m["all_bound"] is False
    assert m["bound"] == 1
    assert m["pods_per_second"] == 0.5
    empty = stats.batch_metrics({}, {}, expected=0)
    assert empty["pods_per_second"] is None and empty["all_bound"] is False
    # a binding of a pod the batch did not create is ignored
    assert stats.batch_metrics({"a": 0.0}, {"a": 1.0, "zz": 0.5}, expected=1)["bound"] == 1


def test_creation_rate() -> None:
    assert stats.creation_rate([0.0, 0.5, 1.0]) == 2.0
    assert stats.creation_rate([1.0]) is None


# ---- medians, ratios, JSON shape, markdown


def _run(sched: str, rep: int, pps: float | None, **kw: object) -> dict[str, object]:
    r: dict[str, object] = {
        "workload": "SchedulingBasic", "nodes": 500, "pods": 1000, "scheduler": sched, "repeat": rep,
        "pods_per_second": pps, "latency_p50_ms": 10.0, "latency_p90_ms": 20.0, "latency_p99_ms": 30.0,
        "cpu_seconds_per_1000": 1.0, "peak_rss_mb": 100.0, "all_bound": True,
    }  # fmt: skip
    r.update(kw)
    return r


RUNS = [
    _run("py", 1, 100.0), _run("kube", 1, 400.0), _run("ceiling", 1, 500.0),
    _run("py", 2, 120.0), _run("kube", 2, 380.0), _run("ceiling", 2, 520.0),
    _run("py", 3, 90.0), _run("kube", 3, 420.0), _run("ceiling", 3, 480.0),
]  # fmt: skip


def test_summary_ratios_use_medians() -> None:
    (s,) = stats.summarize(RUNS)
    assert s["py_over_kube"] == pytest.approx(100 / 400, abs=1e-3)
    assert s["py_over_ceiling"] == pytest.approx(100 / 500, abs=1e-3)
    assert s["py_pods_per_second"] == 100.0


def test_summary_missing_scheduler_gives_none() -> None:
    (s,) = stats.summarize([r for r in RUNS if r["scheduler"] != "kube"])
    assert s["py_over_kube"] is None
    assert s["py_over_ceiling"] is not None


def test_medians_ignore_failed_values() -> None:
    runs = [*RUNS, _run("py", 4, None, all_bound=False)]
    m = stats.medians(runs, "SchedulingBasic", 500, 1000, "py")
    assert m["n"] == 4
    assert m["pods_per_second"] == 100.0
    assert m["pods_per_second_min"] == 90.0 and m["pods_per_second_max"] == 120.0
    assert m["all_bound"] is False


def test_document_json_shape() -> None:
    doc = stats.document({"cpus": 2}, RUNS, {"note": "x"})
    assert set(doc) == {"machine", "runs", "summary", "notes"}
    assert json.loads(json.dumps(doc)) == doc
    for r in doc["runs"]:
        assert set(stats.RUN_KEYS) <= set(r)
    for s in doc["summary"]:
        assert set(stats.SUMMARY_KEYS) <= set(s)
    assert "notes" not in stats.document({}, RUNS)


def test_markdown_has_a_row_per_scheduler_and_ratios() -> None:
    md = stats.markdown(stats.document({"cpus": 2}, RUNS))
    rows = [line for line in md.splitlines() if line.startswith("| SchedulingBasic")]
    assert len(rows) == 4  # py, kube, ceiling + the ratio row
    assert "| py | 3 | 100.0 | 90.0-120.0 |" in md
    assert "| 0.250 | 0.200 |" in md


def test_suite_markdown_reports_groups_per_second() -> None:
    suite = {"size": "2-core", "upstream_workload": "5000Nodes_1000Gangs", "workload": "GangScheduling"}
    runs = [_run("py", 1, 50.0, groups_per_second=16.0, **suite), _run("kube", 1, 100.0, groups_per_second=32.5,
                                                                         **suite)]  # fmt: skip
    (row,) = [line for line in stats.suite_markdown(stats.document({}, runs)).splitlines()
              if line.startswith("| GangScheduling")]  # fmt: skip
    assert "| 50.0 | 100.0 | 0.50 | 16.00 | 32.50 |" in row
    plain = [_run(s, 1, 10.0, size="tiny", upstream_workload="5Nodes") for s in ("py", "kube")]
    assert "| 1.00 | - | - |" in stats.suite_markdown(stats.document({}, plain))  # no groups: no groups/s


# ---- workloads


@pytest.mark.parametrize("name", list(workloads.WORKLOADS))
def test_templates_are_upstream_shaped(name: str) -> None:
    wl = workloads.WORKLOADS[name]
    for make in (wl.init_template, wl.measure_template):
        t = make()
        (c,) = t["spec"]["containers"]
        assert c["name"] == "pause" and c["image"].startswith("registry.k8s.io/pause:")
        if wl.dra is not None:  # upstream's DRA pods request only their claim
            assert c["resources"] == {"claims": [{"name": "resource"}]}
            assert t["spec"]["resourceClaims"][0]["name"] == "resource"
        elif make not in (workloads.pod_with_label, workloads.pod_low_priority, workloads.pod_high_priority):
            assert c["resources"]["requests"] == {"cpu": "100m", "memory": "500Mi"}
            assert c["resources"]["limits"] == c["resources"]["requests"]


def test_pod_body_sets_name_namespace_scheduler_without_touching_template() -> None:
    t = workloads.pod_with_pod_anti_affinity()
    p = workloads.pod_body(t, "pod-1", "sched-1", "bench")
    assert p["metadata"]["name"] == "pod-1" and p["metadata"]["namespace"] == "sched-1"
    assert p["spec"]["schedulerName"] == "bench"
    assert "name" not in t["metadata"] and "schedulerName" not in t["spec"]
    term = p["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert set(term["namespaces"]) == {"sched-0", "sched-1"}
    assert term["labelSelector"]["matchLabels"] == p["metadata"]["labels"] == {"color": "green"}


def test_specific_templates() -> None:
    spread = workloads.pod_with_topology_spreading()["spec"]["topologySpreadConstraints"][0]
    assert spread["maxSkew"] == 5 and spread["whenUnsatisfiable"] == "DoNotSchedule"
    assert spread["topologyKey"] == "topology.kubernetes.io/zone"
    pref = workloads.pod_with_preferred_pod_affinity()["spec"]["affinity"]["podAffinity"]
    assert pref["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] == 1
    na = workloads.pod_with_node_affinity()["spec"]["affinity"]["nodeAffinity"]
    expr = na["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert expr == {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-0", "zone-1"]}
    svc = workloads.service()
    assert svc["spec"]["selector"] == workloads.pod_with_label()["metadata"]["labels"]


def test_sizes_follow_upstream() -> None:
    w = workloads.WORKLOADS
    assert w["SchedulingBasic"].sizes(500, 1000) == (500, 1000)
    assert w["SchedulingBasic"].sizes(5000, 10000) == (1000, 10000)
    assert w["SchedulingPodAntiAffinity"].sizes(500, 1000) == (100, 400)  # upstream 500Nodes
    assert w["SchedulingPodAntiAffinity"].sizes(5000, 2000) == (1000, 2000)
    assert w["TopologySpreading"].sizes(500, 1000) == (1000, 1000)
    assert w["SchedulingBasic"].sizes(500, 1000, init=0) == (0, 1000)
    assert w["PreemptionBasic"].sizes(1000, 3000) == (4000, 1000)  # upstream 1000Nodes: one preemptor per node


def test_preemption_basic_fills_nodes_then_needs_three_victims_each() -> None:
    """4 x 900m fill a 4-CPU node; a 3-CPU preemptor fits only once 3 of them are gone."""
    low, high = workloads.pod_low_priority(), workloads.pod_high_priority()
    cpu = {p["spec"]["priorityClassName"]: p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
           for p in (low, high)}
    assert cpu == {"perf-low": "900m", "perf-high": "3000m"}
    values = dict(workloads.WORKLOADS["PreemptionBasic"].priority_classes)
    assert values["perf-high"] > values["perf-low"]
    assert not workloads.WORKLOADS["PreemptionBasic"].ceiling
    assert workloads.pod_default()["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m", "unchanged"


def test_default_suite() -> None:
    suite = workloads.default_suite()
    assert ("SchedulingBasic", 5000, 10000) in suite
    assert ("PreemptionBasic", 1000, 1000) in suite
    assert {(w, n) for w, n, _ in suite if n >= workloads.LARGE_NODES} == {
        ("SchedulingBasic", 5000), *((w, 5000) for w in workloads.LARGE_SUITE_WORKLOADS)}
    dra = {n for n, w in workloads.WORKLOADS.items() if w.dra is not None}
    assert dra and {w for w, _, _ in suite} == set(workloads.WORKLOADS) - dra  # DRA: too slow here for make bench
    assert all(n < workloads.LARGE_NODES for _, n, _ in workloads.default_suite(skip_large=True))


def test_violations() -> None:
    assert workloads.violations("SchedulingPodAntiAffinity", {"a/1": "node-1", "b/2": "node-1", "b/3": "node-2"}) == 1
    assert workloads.violations("SchedulingNodeAffinity", {"a/1": "node-0", "b/2": "node-2", "b/3": "node-5"}) == 2
    spread = {f"sched-1/p{i}": "node-0" for i in range(7)}
    assert workloads.violations("TopologySpreading", spread) == 2  # skew 7 > maxSkew 5
    assert workloads.violations("SchedulingBasic", spread) is None


# ---- CLI planning, configs


def test_parse_sizes_and_plan() -> None:
    assert parse_sizes("500x1000, 1000X3000") == [(500, 1000), (1000, 3000)]

    class A:
        suite = "all"
        workload = ["SchedulingBasic,TopologySpreading"]
        nodes = 0
        pods = 0
        sizes = None
        skip_large = True

    assert plan(A()) == [  # type: ignore[arg-type]
        ("SchedulingBasic", 500, 1000), ("SchedulingBasic", 1000, 3000),
        ("TopologySpreading", 500, 1000), ("TopologySpreading", 1000, 3000),
    ]  # fmt: skip


def test_scheduler_configs() -> None:
    k = kube_scheduler_config("/k", "bench", 5000, 5000)
    assert k["clientConnection"] == {"kubeconfig": "/k", "qps": 5000, "burst": 5000}
    assert k["leaderElection"] == {"leaderElect": False}
    assert k["profiles"] == [{"schedulerName": "bench"}]
    p = py_scheduler_config("bench", {"SelectorSpread": 1})
    assert p["profiles"][0]["plugins"]["multiPoint"]["enabled"] == [{"name": "SelectorSpread", "weight": 1}]


# ---- /proc parsing, CPU accounting, profiles


def test_parse_stat_handles_spaces_in_comm() -> None:
    line = "123 (py sched (x)) S 1 2 3 4 5 6 7 8 9 10 " + f"{procstat.CLK_TCK * 3} {procstat.CLK_TCK} 0 0 20 0 1"
    ppid, cpu = procstat.parse_stat(line)
    assert ppid == 1 and cpu == pytest.approx(4.0)


def test_parse_status_and_proc_stat() -> None:
    assert procstat.parse_status_kb("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS: 10 kB\n", "VmHWM") == 2048
    assert procstat.parse_status_kb("Name: x\n", "VmHWM") is None
    t = procstat.CLK_TCK
    text = f"cpu  {t} 0 {t} {10 * t} {t} 0 0 0 0 0\ncpu0 ..."
    assert procstat.parse_proc_stat_busy(text) == pytest.approx(2.0)


def test_own_process_is_measurable() -> None:
    import os

    assert procstat.cpu_seconds(os.getpid()) > 0
    rss = procstat.peak_rss_mb(os.getpid())
    assert rss is not None and rss > 1


def test_cpu_breakdown() -> None:
    c0 = {"scheduler": 1.0, "kube-apiserver": 10.0, "etcd": 5.0, "watcher": 0.0}
    c1 = {"scheduler": 3.0, "kube-apiserver": 14.0, "etcd": 6.0, "watcher": 0.5}
    out = cpu_breakdown(c0, c1, harness=1.5, machine_busy=10.0, bound=1000)
    assert out["cpu_seconds_per_1000"] == 2.0
    assert out["kube-apiserver_cpu_seconds_per_1000"] == 4.0
    assert out["etcd_cpu_seconds_per_1000"] == 1.0
    assert out["harness_cpu_seconds_per_1000"] == 2.0
    assert out["foreign_cpu_seconds"] == 1.0  # 10 - (2 + 4 + 1 + 0.5 + 1.5)


def test_profile_summary() -> None:
    raw = [
        "main (a/scheduler/cli.py:10);loop (a/scheduler/scheduler.py:5);score (a/scheduler/plugins/x.py:3) 6",
        "main (a/scheduler/cli.py:10);loop (a/scheduler/scheduler.py:7);loads (/usr/lib/json/decoder.py:1) 3",
        "main (a/scheduler/cli.py:12);x (/v/site-packages/kopf/_core/r.py:9) 1",
        "garbage",
    ]
    stacks = parse_raw(raw)
    assert len(stacks) == 3
    s = summarize(stacks)
    assert s["samples"] == 10
    assert s["self"][0] == ("score (a/scheduler/plugins/x.py)", 6)
    assert ("main (a/scheduler/cli.py)", 10) in s["inclusive"]  # lines merged per function
    assert dict(s["areas"]) == {"scheduler/plugins": 6, "decoder": 3, "kopf": 1}
    assert area("f (/x/site-packages/urllib3/response.py:1)") == "urllib3"
    assert area("f (urllib3/util/wait.py:1)") == "urllib3"  # py-spy's short paths
    assert area("f (ssl.py:1)") == "ssl"
    assert area("f (scheduler/framework/runtime/framework.py:1)") == "scheduler/framework"


def test_profile_split_per_thread_group() -> None:
    raw = [
        "thread (11): scheduling;loop (a/scheduler/scheduler.py:5);score (a/scheduler/plugins/x.py:3) 4",
        "thread (12): binding_3;run (a/scheduler/schedule_one.py:9) 2",
        "thread (13): binding_12;run (a/scheduler/schedule_one.py:9) 1",
        "main (a/scheduler/cli.py:10) 1",
    ]
    threads = by_thread(parse_raw(raw))
    assert {name: sum(n for _, n in st) for name, st in threads.items()} == {"scheduling": 4, "binding": 3, "?": 1}
    assert threads["scheduling"][0][0] == ["loop (a/scheduler/scheduler.py)", "score (a/scheduler/plugins/x.py)"]


def test_watch_replay_feeds_every_event_through_the_scheduler() -> None:
    from e2e.perf.lab import watchreplay

    lines = watchreplay.watch_lines(pods=10, nodes=3, foreign=0.5)
    types = [orjson.loads(line)["type"] for line in lines]
    assert types == ["ADDED"] * 10 + ["MODIFIED"] * 20 + ["DELETED"] * 10
    events, _, sched = watchreplay.replay(pods=10, nodes=3, foreign=0.5, upto="ADDED")
    assert events == 10 and len(sched._pending) == 5, "another scheduler's pending pods are not queued"
    _, _, sched = watchreplay.replay(pods=10, nodes=3, foreign=0.5, upto="BOUND")
    assert sched.cache.pod_count() == 10 and not sched._pending, "once bound, every pod counts as usage"
    _, _, sched = watchreplay.replay(pods=10, nodes=3, foreign=0.5)
    assert sched.cache.pod_count() == 0


def test_gang_workload_marks_unfit_groups_and_counts_partial_ones() -> None:
    from e2e.perf.gang import LABEL, members, summarize

    bodies, unfit = members(groups=10, size=3, unfit=2)
    assert len(bodies) == 30 and unfit == {"pg-0000", "pg-0005"}
    big = [b for b in bodies if b["metadata"]["labels"][LABEL] in unfit]
    assert all(c["resources"]["requests"]["cpu"] == "5" for b in big for c in b["spec"]["containers"])
    posted = {f"sched-1/{b['metadata']['name']}": 0.0 for b in bodies}
    bound = {"sched-1/pg-0001-0": 1.0, "sched-1/pg-0001-1": 1.5, "sched-1/pg-0001-2": 2.0, "sched-1/pg-0002-0": 1.0}
    r = summarize(posted, bound, 10, 3, unfit, 20, [])
    assert (r["complete_groups"], r["partial_groups"], r["unfit_groups_bound_pods"]) == (1, 1, 0)
    assert r["seconds_to_last_complete_group"] == 2.0 and r["groups_per_second"] == 0.5


# ---- in-process harness (e2e/perf/lab/inproc.py)


def test_inproc_places_every_pod_and_batching_changes_no_placement(tmp_path: Any) -> None:
    from e2e.perf.lab import inproc

    off = tmp_path / "off.yaml"
    off.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "pyScheduler: {opportunisticBatching: false}\n")
    cpu_on, placed_on, _ = inproc.run("SchedulingBasic", 120, 150, None, 7)
    cpu_off, placed_off, _ = inproc.run("SchedulingBasic", 120, 150, str(off), 7)
    assert len(placed_on) == 150
    assert placed_on == placed_off
    assert cpu_on > 0 and cpu_off > 0


def test_inproc_late_watch_events_change_no_placement() -> None:
    """Confirmations and Running updates that land cycles after their bindings (as live) re-evaluate more
    nodes but must place every pod where the at-once confirmations do."""
    from e2e.perf.lab import inproc

    _, at_once, split = inproc.run("SchedulingBasic", 120, 150, None, 7)
    _, late, late_split = inproc.run("SchedulingBasic", 120, 150, None, 7, lag=10, running=True)
    assert late == at_once
    assert split.cycles > 0 and late_split.events > 0


def test_rounds_rotate_the_order_so_each_scheduler_takes_every_place() -> None:
    names = ["py", "kube", "ceiling"]
    rounds = [round_order(names, rep) for rep in range(1, 5)]
    assert rounds[0] == names
    assert rounds[1] == ["kube", "ceiling", "py"]
    assert rounds[3] == rounds[0]
    for place in range(3):
        assert sorted(r[place] for r in rounds[:3]) == sorted(names)
    assert round_order(["py"], 2) == ["py"]
    assert round_order([], 1) == []


# ---- goals


def _size(workload: str, nodes: int, pods: int, values: dict[str, dict[str, float]]) -> list[dict[str, object]]:
    """One run per scheduler of a size; ``values`` maps scheduler -> metric overrides."""
    return [_run(s, 1, v.get("pods_per_second", 100.0), workload=workload, nodes=nodes, pods=pods,
                 **{k: x for k, x in v.items() if k != "pods_per_second"})
            for s, v in values.items()]  # fmt: skip


def test_goals_are_decided_only_where_both_sides_ran() -> None:
    runs = _size("SchedulingBasic", 1000, 3000, {
        "py": {"pods_per_second": 360.0, "cpu_seconds_per_1000": 1.5},
        "kube": {"pods_per_second": 300.0, "cpu_seconds_per_1000": 2.0},
    })  # fmt: skip
    by_name = {g.name: g for g in goals.evaluate(runs)}
    assert set(by_name) == {
        "SchedulingBasic 1000/3000: py/kube pods/s", "SchedulingBasic 1000/3000: py/kube CPU per pod"}
    assert by_name["SchedulingBasic 1000/3000: py/kube pods/s"].value == pytest.approx(1.2)
    assert by_name["SchedulingBasic 1000/3000: py/kube pods/s"].met is True  # 1.2 >= 1.2
    assert by_name["SchedulingBasic 1000/3000: py/kube CPU per pod"].met is True  # 0.75 <= 1.0
    assert goals.evaluate(runs[:1]) == []  # py alone decides nothing


def test_goals_fail_below_target_and_cover_growth_rss_and_paced_latency() -> None:
    runs = [
        *_size("SchedulingBasic", 1000, 3000, {"py": {"cpu_seconds_per_1000": 1.0},
                                               "ceiling": {"pods_per_second": 120.0}}),
        *_size("SchedulingBasic", 5000, 10000, {"py": {"cpu_seconds_per_1000": 1.4, "peak_rss_mb": 300.0},
                                                "kube": {"peak_rss_mb": 150.0}}),
        *_size("SchedulingBasic", 15000, 10000, {"py": {"cpu_seconds_per_1000": 9.0}, "kube": {}}),  # not the growth
        *_size("TopologySpreading", 500, 1000, {"py": {"pods_per_second": 99.0}, "kube": {}}),
        *_size("SchedulingNodeAffinity", 1000, 3000, {"py": {}, "kube": {}}),  # no goal at 1000 nodes
        *_size("SchedulingBasic @100/s", 1000, 3000, {"py": {"latency_p99_ms": 10.0},
                                                      "kube": {"latency_p99_ms": 20.0}}),
    ]  # fmt: skip
    by_name = {g.name: g for g in goals.evaluate(runs)}
    assert by_name["SchedulingBasic 1000/3000: py/ceiling pods/s"].met is False  # 100/120 < 0.9
    assert by_name["SchedulingBasic 5000/10000: py/kube peak RSS"].met is False  # 2.0 > 1.5
    growth = by_name["SchedulingBasic: py CPU per pod, 5000 over 1000 nodes"]
    assert growth.value == pytest.approx(1.4) and growth.met is False
    assert by_name["TopologySpreading 500/1000: py/kube pods/s"].met is False  # 0.99 < 1.0
    assert by_name["SchedulingBasic @100/s 1000/3000: py/kube p99 latency"].met is True
    assert not any(name.startswith("SchedulingNodeAffinity") for name in by_name)
    doc = stats.document({}, runs)
    doc["goals"] = [g.as_dict() for g in goals.evaluate(runs)]
    md = stats.markdown(doc)
    assert "| TopologySpreading 500/1000: py/kube pods/s | 0.990 | >= 1 | NO |" in md
    assert "| SchedulingBasic @100/s 1000/3000: py/kube p99 latency | 0.500 | <= 1 | yes |" in md


def test_thread_groups_drop_worker_numbers() -> None:
    assert procstat.thread_group("binding_12") == "binding"
    assert procstat.thread_group("events-3") == "events"
    assert procstat.thread_group("scheduling") == "scheduling"
    assert procstat.thread_group("7") == "7"


def test_thread_cpu_of_this_process_names_a_busy_thread() -> None:
    import os
    import threading

    from scheduler.app import threadnames

    done = threading.Event()
    seen: dict[str, float] = {}

    def spin() -> None:
        threadnames.name_current_thread("perf-spin_3")
        while time.thread_time() < 0.05:  # this thread's own CPU time
            pass
        seen.update(procstat.thread_cpu_seconds(os.getpid()))
        done.set()

    t = threading.Thread(target=spin)
    t.start()
    t.join()
    assert done.is_set()
    assert seen.get("perf-spin", 0.0) >= 0.03  # clock ticks of 10 ms


def test_per_thread_group_is_per_1000_pods_largest_first() -> None:
    out = per_thread_group({"binding": 1.0, "scheduling": 2.0}, {"binding": 1.5, "scheduling": 4.0, "events": 0.25,
                                                                 "idle": 0.0}, 500)
    assert list(out.items()) == [("scheduling", 4.0), ("binding", 1.0), ("events", 0.5)]


def test_context_switches_count_a_thread_going_to_sleep() -> None:
    import os
    import threading

    before = procstat.context_switches(os.getpid())
    for _ in range(5):
        threading.Event().wait(0.002)  # each wait sleeps in the kernel: a voluntary switch
    voluntary, involuntary = procstat.switches_between(before, procstat.context_switches(os.getpid()))
    assert voluntary >= 5
    assert involuntary >= 0


def test_a_thread_ending_between_readings_does_not_lower_the_count() -> None:
    """/proc forgets an ended thread's switches: a plain sum over live threads went down (3571 -> 3562 in a
    `make test` run) when one of pytest's threads ended between the two readings."""
    import os
    import threading

    go = threading.Event()

    def busy_then_exit() -> None:
        for _ in range(20):
            threading.Event().wait(0.001)
        go.wait()

    t = threading.Thread(target=busy_then_exit)
    t.start()
    while t.ident is None or t.native_id not in procstat.context_switches(os.getpid()):
        threading.Event().wait(0.001)
    for _ in range(20):  # until the thread's 20 sleeps are behind it (it then waits on `go`)
        threading.Event().wait(0.005)
    before = procstat.context_switches(os.getpid())
    assert before[t.native_id][0] >= 20
    go.set()
    t.join()
    threading.Event().wait(0.002)
    voluntary, involuntary = procstat.switches_between(before, procstat.context_switches(os.getpid()))
    assert voluntary >= 1 and involuntary >= 0


def test_switches_between_counts_new_threads_from_zero_and_skips_ended_ones() -> None:
    before = {1: (100, 10), 2: (50, 5), 3: (70, 7)}
    after = {1: (130, 12), 3: (2, 1), 4: (9, 3)}  # 2 ended; 3's id was reused by a new thread; 4 is new
    assert procstat.switches_between(before, after) == (30 + 2 + 9, 2 + 1 + 3)


def test_per_pod_divides_increments_by_bound_pods() -> None:
    assert per_pod((2000, 500), 1000) == [2.0, 0.5]
    assert per_pod((7, 3), 0) == [7.0, 3.0]  # nothing bound: per run, not a division by zero


def test_ceiling_events_ratio_appears_only_when_it_ran() -> None:
    runs = [*RUNS, _run("ceiling-events", 1, 400.0), _run("ceiling-events", 2, 410.0), _run("ceiling-events", 3, 390.0)]
    (s,) = stats.summarize(runs)
    assert s["py_over_ceiling_events"] == pytest.approx(100 / 400, abs=1e-3)
    md = stats.markdown(stats.document({}, runs))
    assert "| py / ceiling-events |" in md and "| 0.250 | 0.200 | 0.250 |" in md
    assert "ceiling-events" not in stats.markdown(stats.document({}, RUNS))


def test_pod_times_are_offsets_from_the_batch_start(tmp_path: Any) -> None:
    from e2e.perf.runner import write_pod_times

    path = tmp_path / "pod-times.json"
    write_pod_times(path, 100.0, 1.7e9, {"ns/a": 100.5, "ns/b": 101.0}, {"ns/a": 100.75})
    doc = json.loads(path.read_text())
    assert doc == {"start_wall": 1.7e9, "pods": {"ns/a": [0.5, 0.75], "ns/b": [1.0, None]}}


def test_dra_sizes_follow_upstream_5000pods_500nodes() -> None:
    w = workloads.WORKLOADS
    tmpl, ref = w["SchedulingWithResourceClaimTemplate"], w["SchedulingWithResourceClaim"]
    assert tmpl.sizes(500, 2500) == (0, 2500) and tmpl.sizes(500, 9999) == (0, 2500)  # half the devices free
    assert tmpl.dra is not None and tmpl.dra.devices == 10 and tmpl.dra.allocated_claims(500) == 2500
    assert ref.sizes(500, 2500) == (2500, 2500) and ref.sizes(500, 9999) == (2500, 2500)  # 1000 devices x 5 pods
    assert ref.dra is not None and ref.dra.devices == 2 and ref.dra.shared_claims
    assert not tmpl.ceiling and not ref.ceiling
    assert tmpl.dra.controllers == ("resourceclaim-controller",) and ref.dra.controllers == ()


def test_dra_object_makers() -> None:
    cls = workloads.device_class()
    assert cls["metadata"]["name"] == "test-class"
    assert cls["spec"]["selectors"] == [{"cel": {"expression": 'device.driver == "test-driver.cdi.k8s.io"'}}]
    sl = workloads.resource_slice(7, "node-7", 10)
    assert sl["metadata"]["name"] == sl["spec"]["pool"]["name"] == "resourceslice-7"
    assert sl["spec"]["nodeName"] == "node-7" and sl["spec"]["driver"] == "test-driver.cdi.k8s.io"
    assert sl["spec"]["pool"] == {"name": "resourceslice-7", "generation": 1, "resourceSliceCount": 1}
    devs = sl["spec"]["devices"]
    assert [d["name"] for d in devs] == [f"basic-device-{k}" for k in range(10)]
    assert devs[3]["attributes"]["pciRoot"] == {"string": "01"}  # the PCI root cycles over 2
    assert devs[3]["attributes"]["resource.kubernetes.io/pciBusID"] == {"string": "0000:03:00.0"}
    assert devs[0]["capacity"] == {"memory": {"value": "24480Mi"}, "millicores": {"value": "1k"}}
    claim = workloads.resource_claim(4, "sched-1")
    assert claim["metadata"] == {"name": "test-claim-4", "namespace": "sched-1"}
    assert claim["spec"] == workloads.resource_claim_template("sched-1")["spec"]["spec"]
    (req,) = claim["spec"]["devices"]["requests"]
    assert req == {"name": "req-0", "exactly": {"deviceClassName": "test-class"}}
    alloc = workloads.claim_allocation("node-2", "resourceslice-2", "basic-device-5")
    assert alloc["devices"]["results"] == [{"request": "req-0", "driver": "test-driver.cdi.k8s.io",
                                            "pool": "resourceslice-2", "device": "basic-device-5"}]
    term = alloc["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]
    assert term == {"key": "metadata.name", "operator": "In", "values": ["node-2"]}


def test_dra_pod_templates_and_shared_claims() -> None:
    t = workloads.pod_with_claim_template()
    assert t["spec"]["resourceClaims"] == [{"name": "resource", "resourceClaimTemplateName": "test-claim-template"}]
    ref = workloads.pod_with_claim_ref()
    bodies = [workloads.pod_body(ref, f"pod-{i}", "sched-1", "bench") for i in range(11)]
    for i, b in enumerate(bodies):
        workloads.claim_for_pod(b, i)
    names = [b["spec"]["resourceClaims"][0]["resourceClaimName"] for b in bodies]
    assert names[:5] == ["test-claim-0"] * 5 and names[5:10] == ["test-claim-1"] * 5 and names[10] == "test-claim-2"
    assert ref["spec"]["resourceClaims"][0]["resourceClaimName"] == "test-claim-0"  # template untouched
    assert workloads.shared_claims(11) == 3 and workloads.shared_claims(2500) == 500


def test_dra_allocation_plan_fills_random_nodes_lowest_device_first() -> None:
    from e2e.perf import dra

    nodes = [f"node-{i}" for i in range(4)]
    plan = dra.plan_allocations(nodes, 3, 10, seed=1)
    assert len(set(plan)) == 10 and plan == dra.plan_allocations(nodes, 3, 10, seed=1)
    per_node: dict[int, list[int]] = {}
    for node, dev in plan:
        per_node.setdefault(node, []).append(dev)
    assert all(devs == list(range(len(devs))) and len(devs) <= 3 for devs in per_node.values())
    assert len(dra.plan_allocations(nodes, 3, 12)) == 12
    with pytest.raises(ValueError, match="do not fit"):
        dra.plan_allocations(nodes, 3, 13)


def test_context_switches_are_split_by_thread_group() -> None:
    before = {1: (10, 1), 2: (5, 0), 3: (100, 9)}
    after = {1: (14, 2), 2: (6, 0), 3: (2, 1), 4: (3, 0)}  # 3: a reused id (new thread), 4: started meanwhile
    groups = {1: "binding", 2: "binding", 3: "events", 4: "scheduling"}
    assert procstat.switches_by_group(before, after, groups) == {
        "binding": (5, 1), "events": (2, 1), "scheduling": (3, 0)}
    assert procstat.switches_between(before, after) == (10, 2)


def test_perf_trace_summaries_are_summed_per_thread_group() -> None:
    text = """
 Summary of events:

 binding_0 (101), 40 events, 10.0%

   syscall            calls  errors  total       min       avg       max       stddev
                                     (msec)    (msec)    (msec)    (msec)        (%)
   --------------- --------  ------ -------- --------- --------- ---------     ------
   futex                  12      3     1.000     0.001     0.010     0.100      5.00%
   write                   4      0     0.100     0.010     0.020     0.030      1.00%

 binding_1 (102), 20 events, 5.0%

   syscall            calls  errors  total       min       avg       max       stddev
   --------------- --------  ------ -------- --------- --------- ---------     ------
   futex                   6      0     0.500     0.001     0.010     0.100      5.00%

 events-0 (103), 8 events, 2.0%

   syscall            calls  errors  total       min       avg       max       stddev
   --------------- --------  ------ -------- --------- --------- ---------     ------
   poll                    2      0     0.500     0.001     0.010     0.100      5.00%
"""
    by_group = sysprofile.syscalls_by_group(text)
    assert by_group == {"binding": {"futex": 18, "write": 4}, "events": {"poll": 2}}
    assert "binding: 11.0 calls/pod: futex 9.00, write 2.00" in sysprofile.format_syscalls(by_group, pods=2)


def test_cgparts_evaluates_each_part_between_marks() -> None:
    """Outside valgrind the marks are plain calls: each part runs its warm-up and measured calls, in order."""
    from e2e.perf.lab import cgparts

    class Marks:
        def __init__(self) -> None:
            self.events: list[str] = []

        def cgmark_start(self) -> None:
            self.events.append("start")

        def cgmark_stop(self) -> None:
            self.events.append("stop")

    names = cgparts.setup("SchedulingBasic", 30, 4)
    seen: list[str] = []
    names["seen"] = seen
    marks = Marks()
    reported: list[tuple[int, str]] = []
    cgparts.measure(names, ["seen.append(p.name)", "fwk.sign_pod(p) is not None"], 4, marks,
                    lambda n, part: reported.append((n, part)))
    assert marks.events == ["start", "stop", "start", "stop"]
    assert seen == [f"pod-{i}" for i in range(4, 4 + cgparts.WARMUP)] + [f"pod-{i}" for i in range(4)]
    assert [n for n, _ in reported] == [1, 2]


def _child(log: Path, code: str) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT)


def test_wait_ready_waits_for_py_schedulers_start_line(tmp_path: Path) -> None:
    """The suite measures nothing of py-scheduler's start-up: it waits for the line logged once the caches
    are synced; a scheduler that exits first is an error, and kube-scheduler is not waited for."""
    proc = _child(tmp_path / "py.log", "import time; time.sleep(0.3); print('py-scheduler started', flush=True); "
                  "time.sleep(5)")
    t0 = time.monotonic()
    try:
        wait_ready("py", proc, tmp_path)
        assert time.monotonic() - t0 >= 0.3
        assert "py-scheduler started" in (tmp_path / "py.log").read_text()
    finally:
        proc.kill()
        proc.wait()
    gone = _child(tmp_path / "py-w0.log", "print('starting')")
    gone.wait()
    with pytest.raises(RuntimeError, match="did not start"):
        wait_ready("py-w0", gone, tmp_path)
    t0 = time.monotonic()
    wait_ready("kube", gone, tmp_path)
    assert time.monotonic() - t0 < 0.1
