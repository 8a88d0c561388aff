"""A real scheduler extender for the tests: an HTTP server on 127.0.0.1 speaking extender/v1.

One server serves several extenders through the first path segment of the URL, so a config can list
``http://127.0.0.1:<port>/<mode>`` entries with different behaviours:

* ``ok``: answers from its settings (nodes to fail, scores, nodes allowed for preemption, a bind hook);
* ``slow``: the same after sleeping ``slow_seconds`` (to exceed ``httpTimeout``);
* ``broken``: HTTP 500 for every verb.

Every request is recorded (mode, verb, decoded body) so tests assert on the exact wire format.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ExtenderBehaviour:
    failed: dict[str, str] = field(default_factory=dict)  # node -> reason (FailedNodes)
    unresolvable: dict[str, str] = field(default_factory=dict)  # node -> reason (FailedAndUnresolvableNodes)
    scores: dict[str, int] = field(default_factory=dict)  # node -> 0..10 (others score 0)
    preempt_nodes: set[str] | None = None  # candidates kept by preempt (None: all)
    bind: Callable[[dict[str, Any]], str] | None = None  # returns the Error to answer ("" = bound)
    slow_seconds: float = 2.0


@dataclass
class Request:
    mode: str
    verb: str
    body: Any


class ExtenderServer:
    """``tls``: (certificate file, key file) to serve HTTPS instead of HTTP."""

    def __init__(self, tls: tuple[str, str] | None = None) -> None:
        self.behaviour = ExtenderBehaviour()
        self.requests: list[Request] = []
        self.bindings: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
                _, mode, verb = [*self.path.split("/", 2), "", ""][:3]
                with server._lock:
                    server.requests.append(Request(mode, verb, body))
                if mode == "broken":
                    self.send_error(500, "broken on purpose")
                    return
                if mode == "slow":
                    time.sleep(server.behaviour.slow_seconds)
                try:
                    answer = server.answer(verb, body)
                except Exception as exc:  # a test bug should show up as a 500, not hang the client
                    self.send_error(500, str(exc))
                    return
                data = json.dumps(answer).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._scheme = "http"
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
            self._scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="extender",
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    def start(self) -> ExtenderServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def calls(self, verb: str, mode: str = "ok") -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests if r.verb == verb and r.mode == mode]

    # ----- answers

    def answer(self, verb: str, body: Any) -> Any:
        b = self.behaviour
        if verb == "filter":
            names = body["NodeNames"] if body["NodeNames"] is not None else [
                n["metadata"]["name"] for n in body["Nodes"]["items"]]
            keep = [n for n in names if n not in b.failed and n not in b.unresolvable]
            result: dict[str, Any] = {
                "FailedNodes": {n: r for n, r in b.failed.items() if n in names},
                "FailedAndUnresolvableNodes": {n: r for n, r in b.unresolvable.items() if n in names},
                "Error": "",
            }
            if body["NodeNames"] is not None:
                result["NodeNames"] = keep
            else:
                result["Nodes"] = {"metadata": {}, "items": [n for n in body["Nodes"]["items"]
                                                            if n["metadata"]["name"] in keep]}
            return result
        if verb == "prioritize":
            names = body["NodeNames"] if body["NodeNames"] is not None else [
                n["metadata"]["name"] for n in body["Nodes"]["items"]]
            return [{"Host": n, "Score": b.scores.get(n, 0)} for n in names]
        if verb == "bind":
            with self._lock:
                self.bindings.append(body)
            return {"Error": b.bind(body) if b.bind is not None else ""}
        if verb == "preempt":
            if body.get("NodeNameToMetaVictims") is not None:
                victims = body["NodeNameToMetaVictims"]
            else:
                victims = {node: {"Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]],
                                  "NumPDBViolations": v["NumPDBViolations"]}
                           for node, v in body["NodeNameToVictims"].items()}
            keep = b.preempt_nodes
            return {"NodeNameToMetaVictims": {n: v for n, v in victims.items() if keep is None or n in keep}}
        raise ValueError(f"unknown verb {verb}")
