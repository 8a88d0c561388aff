"""`py-scheduler run`: ``setup`` builds the scheduler and what it talks to, ``run`` starts it and serves
until kopf stops (upstream cmd/kube-scheduler/app/server.go, Setup and Run).

Everything that must be stopped is pushed on one ExitStack as soon as it exists, so teardown is the
reverse of construction: leadership is given up first (the binding gate closes), then the feeds
(reloader, pod streams, resync), the scheduler, its writers, and the health server last.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from contextlib import ExitStack
from dataclasses import dataclass

import structlog
from kubernetes import client

from scheduler.app import gcpolicy, malloc
from scheduler.app.apiwriter import child_command
from scheduler.app.reload import ConfigReloader, ReloadSource
from scheduler.config.load import build_registry
from scheduler.config.types import SchedulerConfiguration
from scheduler.edge import APIWriter, Binder, EventRecorder
from scheduler.kube.binder import ApiBinder
from scheduler.kube.client import ApiWriter, RawApi, load_api_client
from scheduler.kube.kinds import NON_TERMINAL_PODS, OBJECT_KINDS, gated_kinds
from scheduler.kube.leaderelection import LeaderElector, LeaderGatedWriter, leader_gated_binder
from scheduler.kube.operator import run_operator
from scheduler.kube.podgroups import PODGROUP_KINDS, ApiPodGroupWriter, podgroups_served
from scheduler.kube.podgroupstatus import ApiPodGroupStatusWriter
from scheduler.kube.podstream import PodStream, wait_synced
from scheduler.kube.ratelimit import TokenBucket
from scheduler.kube.recorder import ApiEventSink
from scheduler.kube.results import ResultWriter
from scheduler.kube.sync import Resyncer, initial_sync
from scheduler.kube.writerproc import ProcessBinder, ProcessEventSink, WriterProcess
from scheduler.metrics import Metrics
from scheduler.plugins.helper.podgroup import POD_GROUP_LABEL
from scheduler.scheduler import Scheduler
from scheduler.serving import endpoints
from scheduler.serving.health import HealthServer, event_check

log = structlog.get_logger(__name__)


@dataclass
class Server:
    """What ``setup`` built and ``run`` starts (upstream's CompletedConfig and Scheduler)."""

    args: argparse.Namespace
    cfg: SchedulerConfiguration
    reload_source: ReloadSource | None
    api: client.ApiClient
    raw: RawApi
    writer: ApiWriter
    metrics: Metrics
    sched: Scheduler
    kinds: dict[str, tuple[str, str, str]]
    elector: LeaderElector | None
    watch_podgroups: bool
    stop: threading.Event  # set once shutdown begins: losing the Lease then is no reason to exit
    synced: threading.Event  # /readyz's caches-synced
    members_listed: threading.Event  # PodGroup status is written once the members are listed
    qps: float
    burst: int


def serve(args: argparse.Namespace, cfg: SchedulerConfiguration, reload_source: ReloadSource | None) -> int:
    """Setup, then Run until the operator stops; everything built is stopped on the way out."""
    malloc.limit_arenas(args.malloc_arena_max)  # before any thread of ours allocates
    with ExitStack() as stack:
        stack.callback(log.info, "py-scheduler stopped")
        run(setup(args, cfg, reload_source, stack), stack)
    return 0


def setup(args: argparse.Namespace, cfg: SchedulerConfiguration, reload_source: ReloadSource | None,
          stack: ExitStack) -> Server:
    """The API clients, health server, leader elector, writers and the Scheduler, not yet started."""
    kubeconfig = args.kubeconfig or cfg.client_connection.kubeconfig or os.environ.get("KUBECONFIG") or None
    api = load_api_client(kubeconfig)
    qps = args.qps if args.qps is not None else cfg.client_connection.qps
    burst = args.burst if args.burst is not None else cfg.client_connection.burst
    raw = RawApi(api)  # reads and writes share one connection pool; the lease has its own below
    writer = ApiWriter(raw, TokenBucket(qps, burst))
    metrics = Metrics()
    synced, stop, members_listed = threading.Event(), threading.Event(), threading.Event()
    stop_on_signals(stop)  # before anything serves: a SIGTERM while starting is a clean stop too
    health = _health(args, api, metrics, synced, stack)
    elector = _elector(api, cfg, stop, health) if cfg.leader_election.leader_elect else None
    binder, sink = _binder_and_sink(args, kubeconfig, qps, burst, writer, elector, stack)
    api_writer: APIWriter = writer
    if elector is not None:
        binder = leader_gated_binder(binder, elector)  # a replica that is not leading never binds
        api_writer = LeaderGatedWriter(writer, elector)  # nor evicts pods or binds volumes
        writer.may_retry = lambda: elector.is_leader  # nor retries a write once it no longer leads
    kinds = {**OBJECT_KINDS, **gated_kinds(args.feature_gates)}  # the Workload API's PodGroups with GenericWorkload
    podgroup_writer = None
    if podgroups_served(raw):  # Coscheduling's PodGroups; a cluster without the CRD starts as before
        kinds.update(PODGROUP_KINDS)
        leading = (lambda: elector.is_leader) if elector is not None else (lambda: True)
        podgroup_writer = ApiPodGroupWriter(writer, controller=cfg.profiles[0].scheduler_name, leading=leading,
                                            ready=members_listed)
        stack.callback(podgroup_writer.close)
    else:
        log.info("PodGroup CRD (scheduling.x-k8s.io/v1alpha1) not served; Coscheduling sees no PodGroups")
    status_writer = None
    if args.feature_gates.enable_generic_workload:  # the PodGroupInitiallyScheduled condition, off the cycle
        status_writer = ApiPodGroupStatusWriter(
            writer, leading=(lambda: elector.is_leader) if elector is not None else (lambda: True))
        stack.callback(status_writer.close)
    results = None
    if args.record_results:
        results = ResultWriter(writer)
        stack.callback(results.close)
    sched = Scheduler(cfg, build_registry(cfg), binder, sink, metrics, writer=api_writer,
                      bind_workers=args.bind_workers, podgroup_writer=podgroup_writer, observer=results,
                      pod_group_status_writer=status_writer,
                      cycle_observer=results.recorder if results is not None else None, features=args.feature_gates,
                      leading=(lambda: elector.is_leader) if elector is not None else None)
    stack.callback(sched.stop)
    return Server(args, cfg, reload_source, api, raw, writer, metrics, sched, kinds, elector,
                  podgroup_writer is not None, stop, synced, members_listed, qps, burst)


def _binder_and_sink(args: argparse.Namespace, kubeconfig: str | None, qps: float, burst: int, writer: ApiWriter,
                     elector: LeaderElector | None, stack: ExitStack) -> tuple[Binder, EventRecorder]:
    """Bindings and events in this process (--api-writer-processes 0) or in writer children
    (scheduler/kube/writerproc.py), which are closed after the scheduler stops."""
    local = ApiEventSink(writer)
    stack.callback(local.close)
    n = api_writer_processes(args.api_writer_processes)
    if n == 0:
        return ApiBinder(writer), local
    leading = (lambda: elector.is_leader) if elector is not None else None
    command = child_command(kubeconfig, qps, burst, args.log_level or "INFO")
    children = [WriterProcess(command, leading, name=f"api-writer-{i}") for i in range(n)]
    for child in children:
        stack.callback(child.close)
    binder = ProcessBinder(children)
    log.info("API writes in child processes", processes=n, pids=[c.pid for c in children])
    return binder, ProcessEventSink(binder, local)


def api_writer_processes(flag: int | None) -> int:
    """The flag's value, 0 (threads of this process) when unset: the child is opt-in. On 2 cores it costs
    more CPU in all than it frees, and its gain where cores are free (a few per cent going by the GIL
    profile in docs/performance-record.md) is not measured yet; a hung child also stalls the binding workers."""
    return max(0, flag or 0)


def stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set ``stop`` until kopf installs its own handlers (which set the same flag): without
    this, a SIGTERM during the initial sync (a rollout of a starting replica) killed the process outright,
    exit -15, skipping the drain and the Lease release. Upstream installs its handler first thing, too."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: object) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)


def _health(args: argparse.Namespace, api: client.ApiClient, metrics: Metrics, synced: threading.Event,
            stack: ExitStack) -> HealthServer | None:
    """/metrics, /healthz and /readyz on --secure-port (HTTPS, as kube-scheduler's) and --metrics-port
    (plain, 127.0.0.1), started now; None when both are off (serving/endpoints.py)."""
    health = endpoints.health_server(args, api, metrics)
    if health is None:
        return None
    health.add_readiness_check("caches-synced", event_check(synced, "initial list not finished"))
    health.start()
    stack.callback(health.stop)
    return health


def _elector(api: client.ApiClient, cfg: SchedulerConfiguration, stop: threading.Event,
             health: HealthServer | None) -> LeaderElector:
    """The Lease campaign (its own connection pool); losing the Lease while not stopping exits at once."""

    def stopped_leading() -> None:
        if not stop.is_set():  # lost, not asked to stop: exit at once, as kube-scheduler does
            log.error("leader election lost; exiting")
            sys.stderr.flush()
            os._exit(1)

    elector = LeaderElector(RawApi(api, timeout=10.0), cfg.leader_election, on_stopped_leading=stopped_leading)
    if health is not None:
        health.add_readiness_check("leader-election", elector.readiness)
        health.add_liveness_check("leader-election", elector.liveness)
    return elector


def run(server: Server, stack: ExitStack) -> None:
    """List and watch, start scheduling (at once, or when this replica acquires the Lease), reload the
    configuration when it changes, and serve kopf's watches until it stops (SIGTERM/SIGINT)."""
    args, sched = server.args, server.sched
    stream_pods = args.pod_watch == "stream"
    initial_sync(server.raw, sched, server.kinds, pods=not stream_pods)
    resync = Resyncer(server.raw, sched, period=args.resync_seconds, kinds=server.kinds)
    resync.start()
    stack.callback(resync.stop)
    _start_pod_streams(server, resync, stream_pods, stack)
    server.members_listed.set()
    server.synced.set()
    if args.gc_full_scan_seconds > 0:
        gcpolicy.install(args.gc_full_scan_seconds)
    if args.malloc_trim_seconds > 0:
        stack.callback(malloc.Trimmer(args.malloc_trim_seconds).start().stop)
    if server.stop.is_set():  # stopped while starting: neither campaign nor schedule
        log.info("stop requested while starting; stopping")
        return
    if server.elector is not None:
        server.elector.start(on_started_leading=sched.start)  # scheduling starts with the Lease
        stack.callback(server.elector.stop)  # stop leading (the binding gate closes), then release the Lease
        # ...but first (callbacks run last-in first-out) stop taking pods and let the binding cycles in flight
        # finish while this replica still leads: a new leader never sees bindings of ours after it took over.
        stack.callback(sched.stop)
    else:
        sched.start()
    stack.callback(server.stop.set)  # runs first: a Lease lost from here on is no reason to exit
    _start_reloader(server, stack)
    log.info("py-scheduler started", profiles=[p.scheduler_name for p in server.cfg.profiles], qps=server.qps,
             burst=server.burst)
    run_operator(sched, server.api.configuration, kinds=server.kinds, stop_flag=server.stop,
                 watch_pods=not stream_pods, on_listed=resync.listed)


def _start_pod_streams(server: Server, resync: Resyncer, stream_pods: bool, stack: ExitStack) -> None:
    """The thin list-watches of pods, each listed before scheduling starts."""
    sched = server.sched
    streams = []
    if server.watch_podgroups:  # group members in every phase (the main stream skips terminal pods)
        streams.append(PodStream(server.raw, sched.on_group_pod_event, label_selector=POD_GROUP_LABEL))
    if stream_pods:
        # A pod watch that expired means the node watch has too: reconcile nodes without waiting for kopf.
        streams.append(PodStream(server.raw, sched.on_pod_event, field_selector=NON_TERMINAL_PODS,
                                 on_relist=lambda: resync.listed("Node")))
    for stream in streams:
        stream.start()
        stack.callback(stream.stop)
        if not wait_synced(stream):
            log.error("pod list did not complete; scheduling starts anyway")


def _start_reloader(server: Server, stack: ExitStack) -> None:
    """Poll --config / --config-configmap and apply a changed configuration (0 seconds: never)."""
    source, args = server.reload_source, server.args
    if source is None or args.config_reload_seconds <= 0:
        return
    reloader = ConfigReloader(server.sched, source.read, source.name, args.scheduler_name or None,
                              initial_version=source.version, metrics=server.metrics, events=server.writer,
                              regarding=source.regarding, interval=args.config_reload_seconds,
                              allow_new_extenders=args.allow_reload_extenders)
    reloader.start()
    stack.callback(reloader.stop)
