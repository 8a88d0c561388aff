"""kube-scheduler's serving contract for `py-scheduler run`: flags and the HealthServer they describe.

* ``--secure-port`` (default 10259, 0: off) on ``--bind-address`` (default 0.0.0.0): HTTPS with
  ``--tls-cert-file``/``--tls-private-key-file``, else a self-signed certificate made at start and kept
  in memory (kube-scheduler makes one too when it has no --cert-dir). /metrics (and any other path but
  ``--authorization-always-allow-paths``, default /healthz,/readyz,/livez) is authenticated with a
  TokenReview and authorized with a SubjectAccessReview through the API server (serving/delegated_auth.py).
* ``--metrics-port`` (default 0: off): the same endpoints over plain HTTP without authentication, bound
  to 127.0.0.1 only, for a client on the same host (a sidecar, a test, ``kubectl port-forward``).
"""

from __future__ import annotations

import argparse
import resource
from typing import TYPE_CHECKING

import structlog

from scheduler.serving.health import ALWAYS_ALLOW_PATHS, HealthServer
from scheduler.serving.serving import self_signed_tls_context, server_tls_context

if TYPE_CHECKING:
    from kubernetes import client

    from scheduler.metrics import Metrics

log = structlog.get_logger(__name__)

SECURE_PORT = 10259  # kube-scheduler's
LOCALHOST = "127.0.0.1"


def add_flags(r: argparse.ArgumentParser) -> None:
    """The serving flags of `run` (kube-scheduler's names and defaults, and --metrics-port)."""
    r.add_argument("--secure-port", type=int, default=SECURE_PORT,
                   help="HTTPS port of /healthz, /readyz, /livez and /metrics, as kube-scheduler's (default "
                        f"{SECURE_PORT}; 0: off); /metrics needs a bearer token that RBAC allows to get it")
    r.add_argument("--bind-address", default="0.0.0.0",
                   help="address of --secure-port (default 0.0.0.0, every interface; :: for IPv6)")
    r.add_argument("--tls-cert-file", default=None,
                   help="certificate (chain, PEM) of --secure-port; without it a self-signed one is made at start")
    r.add_argument("--tls-private-key-file", default=None, help="private key (PEM) of --tls-cert-file")
    r.add_argument("--authorization-always-allow-paths", default=",".join(ALWAYS_ALLOW_PATHS),
                   help="paths of --secure-port served without authentication and authorization (default "
                        f"{','.join(ALWAYS_ALLOW_PATHS)})")
    r.add_argument("--metrics-port", type=int, default=0,
                   help="also serve /metrics, /healthz and /readyz over plain HTTP without authentication, on "
                        f"{LOCALHOST} only (0: off, the default)")


def validate(args: argparse.Namespace) -> str | None:
    """A problem with the serving flags, or None."""
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        return "--tls-cert-file and --tls-private-key-file go together"
    for name in ("secure_port", "metrics_port"):
        if not 0 <= getattr(args, name) <= 65535:
            return f"--{name.replace('_', '-')} must be in [0, 65535]"
    return None


def health_server(args: argparse.Namespace, api: client.ApiClient, metrics: Metrics) -> HealthServer | None:
    """The endpoints the flags ask for (not started), or None when every port is off."""
    if not args.secure_port and not args.metrics_port:
        return None
    _raise_open_files_limit()
    health = HealthServer(registry=metrics.registry, on_scrape_error=metrics.scrape_errors.inc)
    if args.secure_port:
        from scheduler.kube.client import RawApi
        from scheduler.serving.delegated_auth import DelegatedAuth

        if args.tls_cert_file:
            tls = server_tls_context(args.tls_cert_file, args.tls_private_key_file)
        else:
            tls, _ = self_signed_tls_context()
            log.info("no --tls-cert-file: serving a self-signed certificate made at start")
        paths = [p.strip() for p in args.authorization_always_allow_paths.split(",") if p.strip()]
        health.add_listener(args.bind_address, args.secure_port, tls=tls,
                            guard=DelegatedAuth(RawApi(api, timeout=10.0)), always_allow_paths=paths)
    if args.metrics_port:
        health.add_listener(LOCALHOST, args.metrics_port)
    return health


def _raise_open_files_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit, as Go programs (kube-scheduler) do at start: the secure
    port admits up to 1024 connections, which the usual soft limit of 1024 would not leave room for."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else max(soft, 65536),
                                                        hard))
        except (ValueError, OSError) as exc:
            log.info("could not raise the open files limit", soft=soft, hard=hard, error=str(exc))
