"""kube-scheduler's serving contract on the real control plane: the secure port answers /healthz while
500 connections are held open, without the memory they used to cost, and /metrics is authenticated
(TokenReview) and authorized (SubjectAccessReview) through the API server: a ServiceAccount that RBAC
allows to get /metrics gets 200, one it does not allow 403, a token the API server does not accept 401,
and a request without a token is anonymous (system:anonymous), which RBAC does not allow: 403, as
kube-scheduler answers."""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from e2e.kube import unique, wait_for
from e2e.process import stop_scheduler
from e2e.rbac import request_token
from tests.integration.conftest import SchedulerProc, free_port

HALF_OPEN = 500


def https_get(port: int, path: str, token: str | None = None) -> tuple[int, bytes]:
    """One GET over TLS (the certificate is self-signed: not verified), Connection: close."""
    ctx = ssl._create_unverified_context()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname="localhost") as s:
        auth = f"Authorization: Bearer {token}\r\n" if token is not None else ""
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{auth}\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def secure(start_py_scheduler: Callable[..., SchedulerProc]) -> Iterator[tuple[SchedulerProc, int]]:
    """A py-scheduler serving its secure port on a free port (it serves a schedulerName nobody uses)."""
    port = free_port()
    proc = start_py_scheduler("--secure-port", str(port), "--bind-address", "127.0.0.1",
                              "--scheduler-name", "serving-it", name="serving")
    wait_for(lambda: "py-scheduler started" in proc.log_text(), 60, what="scheduler started")
    yield proc, port
    stop_scheduler(proc.proc)


@pytest.fixture
def readers(api: client.ApiClient, core: client.CoreV1Api, ns: str) -> Iterator[tuple[str, str]]:
    """Tokens of two ServiceAccounts of ``ns``: one that RBAC allows to get /metrics, one it does not."""
    rbac = client.RbacAuthorizationV1Api(api)
    name = unique("metrics-reader")
    for sa in ("allowed", "other"):
        core.create_namespaced_service_account(ns, {"metadata": {"name": sa}})
    rbac.create_cluster_role({"metadata": {"name": name},
                              "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    rbac.create_cluster_role_binding({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "allowed", "namespace": ns}]})
    try:
        yield request_token(api, ns, "allowed", 600), request_token(api, ns, "other", 600)
    finally:
        rbac.delete_cluster_role_binding(name)
        rbac.delete_cluster_role(name)


def test_metrics_are_served_to_whom_rbac_allows(secure: tuple[SchedulerProc, int], readers: tuple[str, str]) -> None:
    proc, port = secure
    allowed, other = readers
    code, body = https_get(port, "/metrics", allowed)
    assert code == 200 and b"scheduler_schedule_attempts_total" in body
    code, body = https_get(port, "/metrics", other)
    assert code == 403
    status: dict[str, Any] = json.loads(body)
    assert status["reason"] == "Forbidden" and "cannot get path \"/metrics\"" in status["message"]
    assert https_get(port, "/metrics", "not-a-token")[0] == 401
    code, body = https_get(port, "/metrics")  # anonymous: RBAC decides, and allows nothing to system:anonymous
    assert code == 403 and b"system:anonymous" in body
    assert https_get(port, "/healthz") == (200, b"ok\n")  # the health paths need no token
    assert https_get(port, "/readyz")[0] == 200
    assert proc.proc.poll() is None


def test_held_connections_neither_stop_healthz_nor_cost_memory(secure: tuple[SchedulerProc, int]) -> None:
    """500 connections opened and left silent, half of them after starting the TLS handshake's ClientHello
    (a few bytes of it): /healthz is answered while every one of them is still open."""
    proc, port = secure
    before = rss_mb(proc.proc.pid)
    held: list[socket.socket] = []
    try:
        for i in range(HALF_OPEN):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            if i % 2:
                s.sendall(b"\x16\x03\x01\x02\x00\x01")  # the start of a ClientHello record, then nothing
            held.append(s)
        assert https_get(port, "/healthz") == (200, b"ok\n")
        for s in held:  # all still held open by the server: a read finds no data and no end of stream
            s.setblocking(False)
            with pytest.raises(BlockingIOError):
                s.recv(1)
        during = rss_mb(proc.proc.pid)
    finally:
        for s in held:
            s.close()
    assert during - before < 50, f"RSS {before:.1f} -> {during:.1f} MB with {HALF_OPEN} connections held"
    assert https_get(port, "/healthz") == (200, b"ok\n")
