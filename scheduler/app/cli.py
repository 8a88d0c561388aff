"""`py-scheduler run` (the controller); `simulate`, `explain` and `capacity` (what-if, offline or on a
read-only snapshot of the live cluster)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from scheduler import KUBE_SCHEDULER_TARGET, version
from scheduler.app import logging as sched_logging
from scheduler.app import plugin_modules
from scheduler.config.defaults import set_workload_gates
from scheduler.dashboard import command as dashboard
from scheduler.framework.features import Features, parse_feature_gates
from scheduler.serving import endpoints

if TYPE_CHECKING:
    from scheduler.app.reload import ReloadSource
    from scheduler.config.types import SchedulerConfiguration



def _run(args: argparse.Namespace) -> int:
    """The configuration (exit 2 when invalid), then the server's Setup and Run (app/server.py)."""
    from scheduler.app import threadnames
    from scheduler.config.load import ConfigError
    from scheduler.kube.configmap import ConfigMapError

    threadnames.install()  # before any thread starts: `top -H` and the benchmark tell them apart
    problem = endpoints.validate(args)
    if problem is not None:
        print(f"py-scheduler: {problem}", file=sys.stderr)
        return 2
    plugin_modules.restrict(args)  # plugins load only from the modules the operator allowed
    try:
        cfg, reload_source = load_configuration(args)
    except (ConfigError, ConfigMapError, OSError) as exc:
        print(f"py-scheduler: invalid configuration: {exc}", file=sys.stderr)
        return 2
    plugin_modules.seal(args)
    if args.leader_elect is not None:
        cfg.leader_election.leader_elect = args.leader_elect
    elif not (args.config or args.config_configmap):
        cfg.leader_election.leader_elect = False  # no config file: one process (dev, tests), no Lease
    from scheduler.app.server import serve  # the API edge, imported only by the command that needs it
    from scheduler.framework.runtime import PluginInitError

    try:
        return serve(args, cfg, reload_source)
    except PluginInitError as exc:  # an out-of-tree plugin refused its args: as invalid as a bad field
        print(f"py-scheduler: invalid configuration: {exc}", file=sys.stderr)
        return 2


POLICY_CONFIGMAP_KEY = "policy.cfg"  # upstream SchedulerPolicyConfigMapKey


def load_configuration(args: argparse.Namespace) -> tuple[SchedulerConfiguration, ReloadSource | None]:
    """--config, --config-configmap, --policy-config-file or --policy-configmap (at most one; a Policy with
    --config is an error, as upstream), or the defaults for --scheduler-name. The source is returned for
    reloading when it is a KubeSchedulerConfiguration."""
    from scheduler.app.reload import ReloadSource, file_reader
    from scheduler.config.errors import ConfigError, FieldError
    from scheduler.config.load import load, load_text
    from scheduler.config.policy import load_policy, load_policy_text

    names = args.scheduler_name or None
    given = [f for f, v in (("--config", args.config), ("--config-configmap", args.config_configmap),
                            ("--policy-config-file", args.policy_config_file),
                            ("--policy-configmap", args.policy_configmap)) if v]
    if len(given) > 1:
        raise ConfigError([FieldError("", f"{' and '.join(given)} cannot be used together")])
    if args.policy_config_file:
        return load_policy(args.policy_config_file, names), None
    if args.policy_configmap or args.config_configmap:
        from scheduler.kube.client import RawApi, load_api_client
        from scheduler.kube.configmap import config_map_reader

        api = RawApi(load_api_client(args.kubeconfig or os.environ.get("KUBECONFIG") or None))
        if args.policy_configmap:
            ns, name = args.policy_configmap_namespace, args.policy_configmap
            text, _ = config_map_reader(api, ns, name, POLICY_CONFIGMAP_KEY)()
            return load_policy_text(text, f"ConfigMap {ns}/{name}", names), None
        ns, _, name = args.config_configmap.partition("/")
        if not ns or not name:
            raise ConfigError([FieldError("", f"--config-configmap {args.config_configmap!r}: expected NS/NAME")])
        read = config_map_reader(api, ns, name, args.config_configmap_key)
        text, version = read()
        source = f"ConfigMap {ns}/{name}"
        regarding = {"apiVersion": "v1", "kind": "ConfigMap", "namespace": ns, "name": name}
        return load_text(text, source, names), ReloadSource(read, source, version, regarding)
    if args.config:
        cfg = load(args.config, names)
        read = file_reader(args.config)
        return cfg, ReloadSource(read, args.config, read()[1])
    return load(None, names), None


def _live_cluster(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The read-only snapshot of the cluster of --kubeconfig (raises ClusterReadError)."""
    from scheduler.kube.snapshot import connect, read_snapshot

    return read_snapshot(connect(args.kubeconfig)).all()


def _print_json(value: Any) -> None:
    import json

    json.dump(value, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _what_if(command: str, body: Callable[[], int]) -> int:
    """Run a what-if command: bad input and cluster errors are one line on stderr, never a traceback."""
    from scheduler.kube.snapshot import ClusterReadError
    from scheduler.whatif.simulate import SimulationError

    try:
        return body()
    except ClusterReadError as exc:
        print(f"py-scheduler {command}: {exc}", file=sys.stderr)
        return 1
    except SimulationError as exc:
        print(f"py-scheduler {command}: {exc}", file=sys.stderr)
        return 2


def _simulate(args: argparse.Namespace) -> int:
    from scheduler.whatif.simulate import format_table, run_simulation

    def body() -> int:
        if not args.cluster and not args.from_cluster:
            print("py-scheduler simulate: give --cluster FILE, --from-cluster, or both", file=sys.stderr)
            return 2
        live = _live_cluster(args) if args.from_cluster else None
        if args.compare:
            return _compare(args, live)
        sim = run_simulation(args.cluster, args.pods, args.config, seed=args.seed, tie_break=args.tie_break,
                             live=live, policy_path=args.policy_config_file, features=args.feature_gates)
        if args.output == "json":
            _print_json(sim.to_json())
        else:
            sys.stdout.write(format_table(sim))
        return 0

    with plugin_modules.what_if_modules(args.plugin_module):
        return _what_if("simulate", body)


def _compare(args: argparse.Namespace, live: list[dict[str, Any]] | None) -> int:
    """simulate --compare RUNNING: the pods under the running configuration and under --config, side by side."""
    from scheduler.whatif.simulate import format_comparison, run_comparison

    cmp = run_comparison(args.cluster, args.pods, args.compare, args.config, seed=args.seed, tie_break=args.tie_break,
                         live=live, candidate_policy=args.policy_config_file, features=args.feature_gates)
    if args.output == "json":
        _print_json(cmp.to_json())
    else:
        sys.stdout.write(format_comparison(cmp))
    return 0


def _color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


POD_GROUP_PREFIXES = ("podgroup/", "podgroups/")  # explain's name for a Workload API pod group, as kubectl's TYPE/NAME


def _explain(args: argparse.Namespace) -> int:
    from scheduler.kube.snapshot import connect, get_pod, read_snapshot
    from scheduler.whatif.explain import explain, format_explain
    from scheduler.whatif.explain_podgroup import explain_pod_group

    def body() -> int:
        kind, _, name = args.pod.rpartition("/")
        group = f"{kind}/" in POD_GROUP_PREFIXES
        if group and not args.feature_gates.enable_generic_workload:
            print("py-scheduler explain: pod groups need --feature-gates GenericWorkload=true (as the scheduler "
                  "runs)", file=sys.stderr)
            return 2
        raw = connect(args.kubeconfig)
        if group:
            cluster = read_snapshot(raw).all()
            result = explain_pod_group(args.namespace, name, cluster, args.config, args.feature_gates)
        else:
            pod = get_pod(raw, args.namespace, name if kind == "pod" else args.pod)
            result = explain(pod, read_snapshot(raw).all(), args.config, args.feature_gates)
        if args.output == "json":
            _print_json(result)
        else:
            sys.stdout.write(format_explain(result, args.nodes, _color()))
        return 0

    return _what_if("explain", body)


class _Progress:
    """A bar on stderr, only on a terminal and only once the run has taken more than a second."""

    def __init__(self, total: int | None) -> None:
        self.total = total
        self.start = time.monotonic()
        self.shown = False
        self.enabled = sys.stderr.isatty() and sys.stdout.isatty()  # none when the output is piped

    def __call__(self, count: int) -> None:
        if not self.enabled or time.monotonic() - self.start < 1.0:
            return
        self.shown = True
        if self.total:
            done = count * 30 // self.total
            sys.stderr.write(f"\r[{'#' * done}{'.' * (30 - done)}] {count}/{self.total} placed")
        else:
            sys.stderr.write(f"\r{count} placed")
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _capacity(args: argparse.Namespace) -> int:
    from scheduler.whatif.capacity import capacity, format_capacity
    from scheduler.whatif.priority_admission import PriorityAdmission
    from scheduler.whatif.simulate import SimulationError, admitted, invalid_fields, load_objects, pods_to_place

    def body() -> int:
        if not args.cluster and not args.from_cluster:
            print("py-scheduler capacity: give --cluster FILE, --from-cluster, or both", file=sys.stderr)
            return 2
        pods = pods_to_place(args.pod)
        if len(pods) != 1:
            raise SimulationError(f"{args.pod}: expected exactly one Pod, found {len(pods)} objects")
        objects = load_objects(args.cluster) if args.cluster else []
        admission = PriorityAdmission.from_objects([o for o in objects if not invalid_fields(o)],
                                                   complete=not args.from_cluster)
        pod, errors = admitted(pods[0], admission)
        if errors:  # the API server would reject it: nothing to count
            raise SimulationError(f"{args.pod}: " + "; ".join(errors))
        cluster = _live_cluster(args) if args.from_cluster else []
        for o in objects:
            o, errors = admitted(o, admission)
            for error in errors:
                print(f"py-scheduler capacity: invalid {error} (left out)", file=sys.stderr)
            if not errors:
                cluster.append(o)
        progress = _Progress(args.max)
        try:
            result = capacity(pod, cluster, args.config, max_count=args.max, live=args.from_cluster,
                              source=args.cluster or "the live cluster", progress=progress)
        finally:
            progress.close()
        if args.output == "json":
            _print_json(result)
        else:
            sys.stdout.write(format_capacity(result))
        return 0

    return _what_if("capacity", body)


def _feature_gates(spec: str) -> Features:
    """--feature-gates; the workload gates also change the default profile (set before any config is loaded)."""
    try:
        features = parse_feature_gates(spec)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    set_workload_gates(features.enable_generic_workload, features.enable_topology_aware_workload_scheduling)
    return features


KUBECONFIG_HELP = "kubeconfig file (default: $KUBECONFIG, else in-cluster)"
DEFAULT_PROFILE_CONFIG_HELP = "KubeSchedulerConfiguration file (default: the default profile)"
OUTPUT_HELP = "table for people, json for tools"


def _cluster_source(p: argparse.ArgumentParser) -> None:
    """The cluster a what-if command starts from (simulate, capacity): a file, the live cluster, or both."""
    p.add_argument("--cluster", default=None,
                   help="YAML/JSON file of nodes, bound pods and other objects (with --from-cluster: added on top)")
    p.add_argument("--from-cluster", action="store_true", help="start from a read-only snapshot of the live cluster")
    p.add_argument("--kubeconfig", default=None, help="kubeconfig file for --from-cluster (default: $KUBECONFIG)")


def _output(p: argparse.ArgumentParser, help_text: str = OUTPUT_HELP) -> None:
    p.add_argument("--output", choices=["table", "json"], default="table", help=help_text)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="py-scheduler", description=__doc__)
    p.add_argument("--version", action="version",
                   version=f"%(prog)s {version()} (decides as kube-scheduler {KUBE_SCHEDULER_TARGET})")
    p.add_argument("--log-level", default=os.environ.get("PY_SCHEDULER_LOG_LEVEL"),
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"], type=str.upper,
                   help="log threshold (default $PY_SCHEDULER_LOG_LEVEL, else INFO for run and WARNING for the "
                        "what-if commands, whose answer is their output). One JSON line per scheduling attempt "
                        "with pod, node, profile, cycle, attempts (and message): bindings and a pod's first "
                        "unschedulable verdict at INFO, its retries at DEBUG, errors at WARNING")
    sub = p.add_subparsers(dest="command", required=True)
    _run_options(sub.add_parser("run", help="run the scheduler against a cluster"))
    _simulate_options(sub.add_parser("simulate", help="schedule pods against a cluster described in YAML, offline"))
    _explain_options(sub.add_parser(
        "explain", help="why a pod goes (or went) where it does, on a snapshot of the live cluster"))
    _capacity_options(sub.add_parser(
        "capacity", help="how many copies of a pod fit, placed one by one by the scheduler"))
    dashboard.add_parser(sub)
    return p


def _run_options(r: argparse.ArgumentParser) -> None:
    r.add_argument("--kubeconfig", default=None, help=KUBECONFIG_HELP)
    r.add_argument("--config", default=None,
                   help="KubeSchedulerConfiguration file; edits are reloaded without restart")
    r.add_argument("--config-configmap", default=None, metavar="NAMESPACE/NAME",
                   help="read the KubeSchedulerConfiguration from this ConfigMap (key --config-configmap-key) "
                        "instead of --config; edits are reloaded without restart")
    r.add_argument("--config-configmap-key", default="config.yaml",
                   help="the key of --config-configmap holding the configuration (default config.yaml)")
    r.add_argument("--config-reload-seconds", type=float, default=2.0,
                   help="how often --config / --config-configmap is checked for changes (0: never reload)")
    r.add_argument("--policy-config-file", default=None,
                   help="a seed-era scheduler Policy (kind: Policy, apiVersion: v1; JSON or YAML) instead of --config")
    r.add_argument("--policy-configmap", default=None,
                   help=f"read the Policy from this ConfigMap's {POLICY_CONFIGMAP_KEY!r} key instead of --config")
    r.add_argument("--policy-configmap-namespace", default="kube-system",
                   help="namespace of --policy-configmap (default kube-system)")
    r.add_argument("--scheduler-name", action="append", default=[],
                   help="serve this schedulerName (repeatable; default py-scheduler) when --config has no profiles")
    endpoints.add_flags(r)
    plugin_modules.add_flags(r)
    r.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=None,
                   help="campaign for the leader Lease before scheduling (default: leaderElection.leaderElect of "
                        "--config; off without --config)")
    r.add_argument("--qps", type=float, default=None, help="client QPS for API writes (config default 50)")
    r.add_argument("--burst", type=int, default=None, help="client burst for API writes (config default 100)")
    r.add_argument("--bind-workers", type=int, default=16,
                   help="binding cycles run at once on the binding pool (default 16): those of pods with PreBind work "
                        "or that waited at Permit, and retries; other pods' Bindings are posted in batches of up to "
                        "32 from one thread")
    r.add_argument("--api-writer-processes", type=int, default=0, metavar="N",
                   help="post Bindings and events from N child processes, off the scheduling process's GIL "
                        "(default 0: threads of this process; opt-in until a 16-core "
                        "measurement shows the gain, docs/performance.md)")
    _feature_gates_option(r, "both values of SchedulerAsyncPreemption (default true; false evicts preemption "
                             "victims on the scheduling thread) and ")
    r.add_argument("--gc-full-scan-seconds", type=float, default=3600.0,
                   help="freeze what survives each middle or full garbage collection, and collect the frozen "
                        "objects once this often (default 3600; 0 leaves CPython's default collector)")
    r.add_argument("--malloc-arena-max", type=int, default=2, metavar="N",
                   help="cap glibc's malloc arenas (default 2; 0 keeps glibc's 8 a core): fewer heaps to fragment "
                        "under pod churn")
    r.add_argument("--malloc-trim-seconds", type=float, default=60.0,
                   help="hand the C heap's free pages back to the kernel this often (default 60; 0 never)")
    r.add_argument("--resync-seconds", type=float, default=300.0,
                   help="relist every watched kind this often and reconcile the cache (default 300)")
    r.add_argument("--pod-watch", choices=["stream", "kopf"], default="stream",
                   help="pods through the thin list-watch (default: no gap between list and watch, "
                        "deletions missed during an outage are synthesized, ~20x less CPU per event) "
                        "or through kopf's @on.event")
    r.add_argument("--record-results", action="store_true",
                   help="write kube-scheduler-simulator's result annotations on each pod scheduled "
                        "(needs patch on pods: manifests/record-results/)")


def _feature_gates_option(p: argparse.ArgumentParser, async_preemption: str) -> None:
    """--feature-gates, one parser and one set of refusals for `run` and `simulate`."""
    p.add_argument("--feature-gates", type=_feature_gates, default=Features(), metavar="GATE=BOOL,...",
                   help=f"kube-scheduler v1.37's scheduler feature gates; {async_preemption}"
                        "StorageCapacityScoring (default true; false: VolumeBinding does not score), "
                        "GenericWorkload and TopologyAwareWorkloadScheduling (default false; true: the Workload API's "
                        "pod groups, docs/gang-scheduling.md), the others only at v1.37's default (see "
                        "docs/kube-scheduler-v1.37.md)")


def _simulate_options(s: argparse.ArgumentParser) -> None:
    _cluster_source(s)
    s.add_argument("--pods", required=True, help="YAML/JSON file of pods to place, in order")
    s.add_argument("--config", default=None, help=DEFAULT_PROFILE_CONFIG_HELP)
    s.add_argument("--policy-config-file", default=None, help="a seed-era scheduler Policy instead of --config")
    s.add_argument("--compare", default=None, metavar="RUNNING_CONFIG",
                   help="place the pods twice, under this KubeSchedulerConfiguration (the one running) and under "
                        "--config (the candidate), and show per pod where each puts it and whether they differ")
    plugin_modules.add_module_flag(s, "as in `run` (given, plugins load only from these and the entry points): ")
    _feature_gates_option(s, "as `run` takes them: SchedulerAsyncPreemption (accepted; preemption is always "
                             "synchronous here), ")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--seed", type=int, default=None,
                   help="seed the random draws (preemption's offset, extenders' tie-break), for repeatable output")
    g.add_argument("--tie-break", choices=["heap", "name"], default="heap",
                   help="among equal best nodes: kube-scheduler v1.37's heap order over the nodes examined "
                        "(default), or the first by name")
    _output(s)


def _explain_options(e: argparse.ArgumentParser) -> None:
    e.add_argument("pod", metavar="POD", help="the pod's name, or podgroup/NAME: a Workload API pod group (needs "
                                              "--feature-gates GenericWorkload=true)")
    e.add_argument("-n", "--namespace", default="default", help="the pod's namespace (default: default)")
    e.add_argument("--kubeconfig", default=None, help=KUBECONFIG_HELP)
    e.add_argument("--config", default=None,
                   help="KubeSchedulerConfiguration file: the profile of the pod's schedulerName (default: the "
                        "default profile)")
    _feature_gates_option(e, "as `run` takes them (GenericWorkload=true: a member is explained with its pod group), ")
    _output(e)
    e.add_argument("--nodes", type=int, default=20, help="scored nodes shown in the table (default 20)")


def _capacity_options(c: argparse.ArgumentParser) -> None:
    c.add_argument("--pod", required=True, help="POD.yaml: the pod to replicate")
    _cluster_source(c)
    c.add_argument("--config", default=None, help=DEFAULT_PROFILE_CONFIG_HELP)
    c.add_argument("--max", type=int, default=None, help="stop after this many copies (default: no limit)")
    _output(c, 'table for people; json: {"count": N, "nodes": {node: n}, "message": why it stopped}')


def dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command (main without the process-wide logging set-up, for tests)."""
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "run": _run, "simulate": _simulate, "explain": _explain, "capacity": _capacity, "dashboard": dashboard.run,
    }
    return commands[args.command](args)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    sched_logging.configure(args.log_level or ("INFO" if args.command == "run" else "WARNING"))
    return dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
