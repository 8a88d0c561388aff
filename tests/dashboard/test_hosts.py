"""The dashboard answers only its own host names and refuses cross-origin writes (DNS rebinding, another
site's page posting to it), against the real server on an ephemeral port."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.app.cli import dispatch, parser
from scheduler.dashboard.server import DashboardServer, accepted_hosts, host_name
from scheduler.dashboard.source import Source
from tests.dashboard.test_dashboard import CLUSTER, PY, FakeApi

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec: {schedulerName: py-scheduler, containers: [{name: c}]}\n"


@pytest.fixture
def fake() -> FakeApi:
    return FakeApi([dict(o) for o in CLUSTER])


def started(fake: FakeApi, host: str = "127.0.0.1", extra: tuple[str, ...] = ()) -> DashboardServer:
    srv = DashboardServer((host, 0), Source(fake, None, [PY]), accept=accepted_hosts(host, extra))
    srv.start()
    return srv


@pytest.fixture
def serve(fake: FakeApi) -> Iterator[DashboardServer]:
    srv = started(fake)
    yield srv
    srv.shutdown()
    srv.server_close()


def call(srv: DashboardServer, method: str, path: str, headers: dict[str, str],
         body: str | None = None) -> tuple[int, dict[str, Any]]:
    """One request with exactly these headers (``Host`` among them replaces http.client's own)."""
    conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=60)
    conn.request(method, path, body=body.encode() if body is not None else None, headers=headers)
    r = conn.getresponse()
    status, data = r.status, r.read()
    conn.close()
    return status, json.loads(data) if r.getheader("Content-Type") == "application/json" else {}


def port(srv: DashboardServer) -> int:
    return int(srv.server_address[1])


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}", "127.0.0.1.attacker.example:{port}",
                                  "localhost.:{port}", "10.0.0.1:{port}"])
def test_a_foreign_host_header_is_refused_before_anything_is_read(
    serve: DashboardServer, fake: FakeApi, host: str
) -> None:
    """DNS rebinding: a page of attacker.example whose name now resolves to 127.0.0.1 sends its own Host."""
    for path in ("/api/nodes", "/api/pending", "/", "/static/app.js"):
        status, body = call(serve, "GET", path, {"Host": host.format(port=port(serve))})
        assert status == 403, path
        assert path == "/" or path.startswith("/static") or body["error"].endswith("(add it with --accept-hosts)")
    assert fake.requests == 0


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LocalHost:{port}", "[::1]:{port}",
                                  "127.0.0.1"])
def test_the_dashboards_own_names_are_served(serve: DashboardServer, host: str) -> None:
    status, body = call(serve, "GET", "/api/nodes", {"Host": host.format(port=port(serve))})
    assert status == 200 and body["zones"]


def test_a_request_without_a_host_header_is_refused(serve: DashboardServer) -> None:
    with socket.create_connection(serve.server_address[:2], timeout=10) as s:
        s.sendall(b"GET /api/nodes HTTP/1.0\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 403 ")


def test_accept_hosts_adds_names_matched_whole(fake: FakeApi) -> None:
    srv = started(fake, extra=(r"dash\.example\.com", r"node-\d+"))
    try:
        for host, code in (("dash.example.com:8443", 200), ("node-7", 200), ("localhost", 200),
                           ("dash.example.com.attacker.net", 403), ("xdash.example.com", 403), ("node-7x", 403)):
            assert call(srv, "GET", "/api/nodes", {"Host": host})[0] == code, host
    finally:
        srv.shutdown()
        srv.server_close()


def test_the_bind_address_is_one_of_its_names_unless_a_wildcard(fake: FakeApi) -> None:
    srv = started(fake, host="127.0.0.2")
    try:
        assert call(srv, "GET", "/api/nodes", {"Host": f"127.0.0.2:{port(srv)}"})[0] == 200
    finally:
        srv.shutdown()
        srv.server_close()
    everywhere = accepted_hosts("0.0.0.0")
    assert not any(p.fullmatch("0.0.0.0") for p in everywhere) and len(everywhere) == 3
    assert any(p.fullmatch("[fd00::1]") for p in accepted_hosts("fd00::1"))
    assert [host_name(h) for h in ("[::1]:80", "[::1]", "a.b:80", "a.b", "a.b:x")] == [
        "[::1]", "[::1]", "a.b", "a.b", "a.b:x"]


@pytest.mark.parametrize(("header", "value"), [
    ("Origin", "http://attacker.example"),
    ("Origin", "http://localhost:3000"),  # another local site is another origin
    ("Origin", "null"),  # a sandboxed frame or a file: page
    ("Origin", "http://127.0.0.1:{port}.attacker.example"),
    ("Referer", "http://attacker.example/page.html"),
])  # fmt: skip
def test_a_cross_origin_write_is_refused_and_the_what_if_does_not_run(
    serve: DashboardServer, fake: FakeApi, header: str, value: str
) -> None:
    for method in ("POST", "PUT", "DELETE"):
        status, body = call(serve, method, "/api/whatif", {header: value.format(port=port(serve))}, POD)
        assert status == 403 and body["error"].startswith(f"cross-origin {method} from "), body
    assert fake.requests == 0


@pytest.mark.parametrize(("header", "value"), [
    ("Origin", "http://127.0.0.1:{port}"),
    ("Referer", "http://127.0.0.1:{port}/#nodes"),
    (None, None),  # no browser's cross-site request carries neither (curl, scripts)
])  # fmt: skip
def test_a_write_from_the_dashboards_own_page_runs(
    serve: DashboardServer, header: str | None, value: str | None
) -> None:
    headers = {header: value.format(port=port(serve))} if header and value else {}
    status, body = call(serve, "POST", "/api/whatif", headers, POD)
    assert status == 200 and body["pod"] == "default/w" and body["node"], body


def test_a_bad_accept_hosts_pattern_is_one_line_and_exit_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch(parser().parse_args(["dashboard", "--accept-hosts", "dash(", "--kubeconfig", "/nonexistent"])) == 2
    err = capsys.readouterr().err
    assert err.startswith("py-scheduler dashboard: --accept-hosts 'dash(': ") and err.count("\n") == 1
