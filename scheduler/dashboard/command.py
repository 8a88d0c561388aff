"""`py-scheduler dashboard`: the scheduler's decisions on the live cluster as a web page.

Read-only (the ClusterRole in manifests/readonly/ is enough), served from the package (the page is
plain HTML, CSS and JavaScript shipped as package data: no build step, nothing fetched from the
network). The answers are the engines': `explain` for one pod's decision, `simulate --from-cluster`
and `capacity` for the what-if box; see docs/dashboard.md.
"""

from __future__ import annotations

import argparse
import os
import sys

from scheduler.framework.features import Features, parse_feature_gates

DEFAULT_ADDRESS = "127.0.0.1:8080"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `dashboard` subcommand (one call from cli.parser)."""
    d = sub.add_parser("dashboard", help="a read-only web page of the scheduler's decisions on the live cluster")
    d.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: $KUBECONFIG, else in-cluster)")
    d.add_argument("--address", default=DEFAULT_ADDRESS, metavar="HOST:PORT",
                   help=f"where to serve the page (default {DEFAULT_ADDRESS}; port 0 picks a free one)")
    d.add_argument("--accept-hosts", action="append", default=[], metavar="REGEX",
                   help="also answer requests whose Host header names a host this regular expression matches (whole "
                        "name, without the port; repeatable). Default: only localhost, 127.0.0.1, [::1] and the "
                        "--address host; other hosts get 403, as kubectl proxy's --accept-hosts")
    d.add_argument("--config", default=None,
                   help="KubeSchedulerConfiguration file: its profiles' schedulerNames are the pods shown, and "
                        "explain and the what-if box use them (default: the default profile)")
    d.add_argument("--scheduler-name", action="append", default=[],
                   help="show pods of this schedulerName (repeatable; default: the profiles of --config, else "
                        "py-scheduler)")
    d.add_argument("--metrics-url", default=None, metavar="URL",
                   help="the scheduler's /metrics (e.g. http://127.0.0.1:10259/metrics): queue sizes and "
                        "attempts per second on the Scheduler page")
    d.add_argument("--metrics-token-file", default=None, metavar="FILE",
                   help="a bearer token for --metrics-url (e.g. behind kube-rbac-proxy)")
    d.add_argument("--feature-gates", type=_feature_gates, default=None, metavar="GATE=BOOL,...",
                   help="the scheduler's feature gates, as `run` takes them: with GenericWorkload=true a pod group's "
                        "page and its members' decisions are explained with the group")
    d.add_argument("--refresh-seconds", type=float, default=5.0,
                   help="how often an open page refreshes itself (default 5)")


def _feature_gates(spec: str) -> Features:
    """--feature-gates as `run` parses them (the engines' build_scheduler applies them to the default profile)."""
    try:
        return parse_feature_gates(spec)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--address {text!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted. Problems found at start (kubeconfig, configuration, address) are one
    line on stderr and exit status 2; once serving, every problem is a message on the page."""
    from scheduler.config.load import ConfigError, load
    from scheduler.dashboard.server import DashboardServer, accepted_hosts
    from scheduler.dashboard.source import Source
    from scheduler.kube.snapshot import ClusterReadError, connect

    try:
        address = _address(args.address)
        accept = accepted_hosts(address[0], args.accept_hosts)
        names = args.scheduler_name or [p.scheduler_name for p in load(args.config, None).profiles]
        token = None
        if args.metrics_token_file:
            with open(args.metrics_token_file) as f:
                token = f.read().strip()
        raw = connect(args.kubeconfig or os.environ.get("KUBECONFIG") or None)
        source = Source(raw, args.config, names, metrics_url=args.metrics_url, metrics_token=token,
                        features=args.feature_gates)
        server = DashboardServer(address, source, refresh_seconds=args.refresh_seconds, accept=accept)
    except (ConfigError, ClusterReadError, ValueError) as exc:
        print(f"py-scheduler dashboard: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"py-scheduler dashboard: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"py-scheduler dashboard serving on {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
