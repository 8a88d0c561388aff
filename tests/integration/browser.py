"""A real headless browser for the dashboard's tests: Debian's `chromium`, installed when missing (as
prometheus.py installs Prometheus), driven over the DevTools protocol with websocket-client (already a
dependency of the kubernetes client; no WebDriver needed).

Chromium starts with a fresh profile and everything that would reach the network turned off (the
network here is closed; without those flags it stalls on start-up), on a free debugging port it
writes to DevToolsActivePort.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import websocket

from e2e.debian import ensure_binary

CHROMIUM = "chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--remote-allow-origins=*", "--remote-debugging-port=0",
]
WIDTH, HEIGHT = 1200, 800
T = TypeVar("T")


def ensure_chromium() -> str:
    """Path of chromium; installs Debian's package when it is missing."""
    return ensure_binary(CHROMIUM)


class Browser:
    """One headless chromium and one page of it, driven over the DevTools protocol."""

    def __init__(self, timeout: float = 60.0) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="py-scheduler-chromium-"))
        self.log = open(self.profile / "chromium.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [ensure_chromium(), *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={WIDTH},{HEIGHT}",
             "about:blank"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self._ids = itertools.count(1)
        port = self._debugging_port(timeout)
        self.ws = websocket.create_connection(self._page_socket(port, timeout), timeout=timeout,
                                              suppress_origin=True)
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})

    def _debugging_port(self, timeout: float) -> int:
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited: {(self.profile / 'chromium.log').read_text()[-2000:]}")
            if marker.exists() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            time.sleep(0.1)
        raise RuntimeError("chromium did not open its debugging port")

    def _page_socket(self, port: int, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            if pages:
                return str(pages[0]["webSocketDebuggerUrl"])
            time.sleep(0.1)
        raise RuntimeError("chromium has no page")

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One DevTools command; events that arrive meanwhile are skipped."""
        msg_id = next(self._ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result") or {})

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('text')} "
                               f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result.get("result", {}).get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})
        self.wait(lambda: self.js("document.readyState") == "complete", what=f"{url} loaded")

    def text(self, selector: str) -> str | None:
        """The visible text of the first element matching ``selector`` (None when there is none)."""
        value = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
                        f"return e ? e.innerText : null; }})()")
        return None if value is None else str(value)

    def texts(self, selector: str) -> list[str]:
        return list(self.js(f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.innerText)"))

    def wait(self, check: Callable[[], T], timeout: float = 60.0, what: str = "condition") -> T:
        """Poll ``check`` until it returns something truthy; fail with the page's error line if not."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; page error: {self.text('#error')!r}")
            time.sleep(0.25)

    def wait_text(self, selector: str, timeout: float = 60.0) -> str:
        return self.wait(lambda: self.text(selector), timeout, what=selector)

    def key(self, key: str, code: str = "", key_code: int = 0, shift: bool = False) -> None:
        """Press and release one key, as a person at the keyboard would (focus moves with Tab)."""
        base = {"key": key, "code": code or key, "windowsVirtualKeyCode": key_code, "modifiers": 8 if shift else 0}
        self.call("Input.dispatchKeyEvent", {**base, "type": "rawKeyDown"})
        if len(key) == 1 or key == "Enter":
            self.call("Input.dispatchKeyEvent", {**base, "type": "char", "text": "\r" if key == "Enter" else key})
        self.call("Input.dispatchKeyEvent", {**base, "type": "keyUp"})

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        """A PNG of the page (its whole height when ``full_page``, up to 1600 pixels: the docs keep them small)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            height = min(1600, int(self.js("document.documentElement.scrollHeight")))
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": WIDTH, "height": max(height, 200), "scale": 1})
        data = self.call("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(15)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
            self.log.close()
            shutil.rmtree(self.profile, ignore_errors=True)
