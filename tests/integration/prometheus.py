"""A real Prometheus for the tests: Debian's `prometheus` binary, installed when missing, run on a free
port with a throw-away config and storage directory (never the Debian service)."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from e2e.debian import ensure_binary

PROMETHEUS = "prometheus"


def ensure_prometheus() -> str:
    """Path of the prometheus binary; installs Debian's package when it is missing."""
    return ensure_binary(PROMETHEUS)


class Prometheus:
    """One prometheus process scraping ``targets`` every second; query() runs PromQL over the HTTP API."""

    def __init__(self, workdir: Path, port: int, targets: list[str], job: str = "py-scheduler",
                 token: str | None = None) -> None:
        """``token``: scrape over HTTPS with this bearer token (the secure port, as the ServiceMonitor does;
        the certificate is self-signed), else plain HTTP."""
        self.workdir = workdir
        self.port = port
        self.job = job
        workdir.mkdir(parents=True, exist_ok=True)
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}],
        }
        if token is not None:
            token_file = workdir / "token"
            token_file.write_text(token)
            config["scrape_configs"][0].update({  # type: ignore[index]
                "scheme": "https", "authorization": {"credentials_file": str(token_file)},
                "tls_config": {"insecure_skip_verify": True}})
        (workdir / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        binary = ensure_prometheus()
        log = open(self.workdir / "prometheus.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [binary, f"--config.file={self.workdir / 'prometheus.yml'}",
             f"--storage.tsdb.path={self.workdir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(self.workdir / 'prometheus.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError("prometheus did not become ready")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def api(self, path: str, **params: str) -> dict[str, Any]:
        """GET /api/v1/<path>; returns the JSON body, also for 4xx answers (status "error")."""
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return dict(json.load(r))
        except urllib.error.HTTPError as exc:
            return dict(json.load(exc))

    def query(self, expr: str) -> dict[str, Any]:
        return self.api("query", query=expr)

    def scalar(self, expr: str) -> float | None:
        """The single value of an instant query, None when it returns no series."""
        body = self.query(expr)
        if body.get("status") != "success":
            raise AssertionError(f"{expr}: {body.get('errorType')}: {body.get('error')}")
        result = body["data"]["result"]
        if not result:
            return None
        assert len(result) == 1, f"{expr}: {len(result)} series"
        return float(result[0]["value"][1])
