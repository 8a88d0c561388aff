"""HTTPExtender: the scheduler's client of an HTTP extender (upstream ``pkg/scheduler/extender.go``).

Each verb is ``POST <urlPrefix without trailing "/">/<verb>`` with a JSON body; any status but 200
is an error. The wire format is ``k8s.io/kube-scheduler/extender/v1``, whose types carry no JSON
tags, so keys are the Go field names (``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes`` ...) while
the embedded Pod and Node objects keep their API casing. Answers are read as Go's decoder reads
them: keys match case-insensitively.

The client is the standard library's (urllib): proxies from the environment apply, as for Go's
default transport. ``httpTimeout`` (default 5 s) bounds the whole exchange, as Go's client timeout
does: every socket opened for it is shut down when it passes, so an extender that trickles its answer
cannot hold a cycle longer. Unlike Go's client, redirects are not followed (a POST answered 302 would
become a GET to wherever the extender points: every pod's spec and every node go out in these
requests) and an answer is read up to MAX_RESPONSE_BYTES. Messages (pod conditions and events) name
the URL without its user information; a configuration that turns certificate verification off
(``insecure``, or ``enableHTTPS`` without a CA) is logged as a warning once.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import os
import socket
import ssl
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import structlog

from scheduler.config.types import Extender as ExtenderConfig
from scheduler.config.types import ExtenderTLSConfig
from scheduler.framework.extender import Extender, ExtenderError, FilterResult
from scheduler.framework.extenderv1 import HostPriority, Victims
from scheduler.framework.listers import SharedLister
from scheduler.framework.types import NodeInfo
from scheduler.model.jsonutil import plain
from scheduler.model.pod import Pod

log = structlog.get_logger(__name__)

MAX_RESPONSE_BYTES = 64 << 20  # an answer with every node of a 5000-node cluster is about 25 MB
_READ_CHUNK = 1 << 16
_exchange = threading.local()  # .sockets: the sockets the current thread's exchange opened


class HTTPExtender:
    """One configured extender; implements ``scheduler.framework.extender.Extender``."""

    def __init__(self, config: ExtenderConfig) -> None:
        self.config = config
        self.url_prefix = config.url_prefix
        self.managed_resources = frozenset(r.name for r in config.managed_resources)
        self._opener = urllib.request.build_opener(_NoRedirects(), _HTTPHandler(), *_https_handlers(config))
        self._shown_url = redact(self.url_prefix)

    def __repr__(self) -> str:
        return f"HTTPExtender({self.url_prefix!r})"

    # ----- capabilities

    def name(self) -> str:
        return self.url_prefix

    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    def is_ignorable(self) -> bool:
        return self.config.ignorable

    def is_interested(self, pod: Pod) -> bool:
        """Every pod when no resources are managed; else pods whose containers or init containers
        request or limit one of them."""
        if not self.managed_resources:
            return True
        spec = pod.raw.get("spec") or {}
        for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
            resources = c.get("resources") or {}
            for key in ("requests", "limits"):
                if self.managed_resources.intersection(resources.get(key) or {}):
                    return True
        return False

    # ----- verbs

    def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> FilterResult:
        """The extender's verdict on ``nodes``. Passing nodes it names must come from the input
        (upstream checks this for NodeNames; here for Nodes too, and the scheduler keeps its own
        NodeInfo of each node rather than a node object echoed back)."""
        if not self.config.filter_verb:
            return FilterResult(list(nodes), {}, {})
        result = _object(self._send(self.config.filter_verb, self._extender_args(pod, nodes)), "ExtenderFilterResult")
        error = _field(result, "Error")
        if error:
            raise ExtenderError(str(error))
        by_name = {n.name: n for n in nodes}
        names = _field(result, "NodeNames") if self.config.node_cache_capable else None
        if names is None:
            node_list = _field(result, "Nodes")
            names = None if node_list is None else [_node_name(n) for n in _field(node_list, "items") or []]
        passed: list[NodeInfo] = []
        for name in names or []:
            node_info = by_name.get(name) if isinstance(name, str) else None
            if node_info is None:
                raise ExtenderError(
                    f"extender {self.url_prefix!r} claims a filtered node {name!r} which is not found in the "
                    "input node list")
            passed.append(node_info)
        return FilterResult(passed, _reasons(result, "FailedNodes"), _reasons(result, "FailedAndUnresolvableNodes"))

    def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[HostPriority], int]:
        if not self.config.prioritize_verb:
            return [HostPriority(n.name, 0) for n in nodes], 0
        answer = self._send(self.config.prioritize_verb, self._extender_args(pod, nodes))
        if answer is None:
            return [], self.config.weight
        if not isinstance(answer, list):
            raise ExtenderError(f"extender {self.url_prefix!r}: HostPriorityList must be a list")
        out = []
        for entry in answer:
            host, score = _field(_object(entry, "HostPriority"), "Host"), _field(entry, "Score")
            if not isinstance(host, str) or isinstance(score, bool) or not isinstance(score, int):
                raise ExtenderError(f"extender {self.url_prefix!r}: invalid HostPriority {entry!r}")
            out.append(HostPriority(host, score))
        return out, self.config.weight

    def bind(self, pod: Pod, node_name: str) -> None:
        if not self.config.bind_verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        args = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node_name}
        error = _field(_object(self._send(self.config.bind_verb, args), "ExtenderBindingResult"), "Error")
        if error:
            raise ExtenderError(str(error))

    def process_preemption(
        self, pod: Pod, node_name_to_victims: Mapping[str, Victims], nodes: SharedLister
    ) -> dict[str, Victims]:
        """Send the candidates (whole victim pods, or only their UIDs when the extender caches nodes)
        and map the answer's NodeNameToMetaVictims back to the pods on those nodes."""
        if not self.config.preempt_verb:
            raise ExtenderError(f"preempt verb is not defined for extender {self.url_prefix} but run into "
                                "ProcessPreemption")
        args: dict[str, Any] = {"Pod": pod.raw}
        if self.config.node_cache_capable:
            args["NodeNameToMetaVictims"] = {
                node: {"Pods": [{"UID": p.uid} for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for node, v in node_name_to_victims.items()
            }
        else:
            args["NodeNameToVictims"] = {
                node: {"Pods": [p.raw for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for node, v in node_name_to_victims.items()
            }
        result = _object(self._send(self.config.preempt_verb, args), "ExtenderPreemptionResult")
        meta = _field(result, "NodeNameToMetaVictims") or {}
        return {node: self._victims(node, _object(mv, "MetaVictims"), nodes) for node, mv in _object(
            meta, "NodeNameToMetaVictims").items()}

    def _victims(self, node_name: str, meta: Mapping[str, Any], nodes: SharedLister) -> Victims:
        node_info = nodes.get(node_name)
        if node_info is None:
            raise ExtenderError(f'nodeinfo not found for node name "{node_name}"')
        on_node = node_info.pods
        pods = []
        for mp in _field(meta, "Pods") or []:
            uid = _field(_object(mp, "MetaPod"), "UID")
            if uid not in on_node:
                raise ExtenderError(
                    f"extender: {self.url_prefix} claims to preempt pod (UID: {uid}) on node: {node_name}, "
                    "but the pod is not found on that node")
            pods.append(on_node[uid])
        violations = _field(meta, "NumPDBViolations") or 0
        return Victims(pods, violations if isinstance(violations, int) else 0)

    # ----- transport

    def _extender_args(self, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[str, Any]:
        """ExtenderArgs: NodeNames for an extender that caches nodes, else the whole Node objects."""
        if self.config.node_cache_capable:
            return {"Pod": pod.raw, "Nodes": None, "NodeNames": [n.name for n in nodes]}
        items = [n.node.raw for n in nodes if n.node is not None]
        return {"Pod": pod.raw, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}

    def _send(self, verb: str, args: Any) -> Any:
        url = self.url_prefix.rstrip("/") + "/" + verb
        shown = self._shown_url.rstrip("/") + "/" + verb
        body = orjson.dumps(args, default=plain)
        request = urllib.request.Request(url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        seconds = self.config.http_timeout_seconds
        sockets: list[socket.socket] = []
        expired = threading.Event()

        def expire() -> None:  # the exchange's deadline: whatever it is doing, it ends now
            expired.set()
            for sock in list(sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(seconds, expire)
        timer.daemon = True
        _exchange.sockets = sockets
        timer.start()
        try:
            with self._opener.open(request, timeout=seconds) as response:
                status = response.status
                data = _read_capped(response)
        except urllib.error.HTTPError as exc:
            raise ExtenderError(f"failed {verb} with extender at URL {shown}, code {exc.code}") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            if expired.is_set():
                reason = f"timed out after {seconds:g}s (the extender's httpTimeout)"
            raise ExtenderError(f'Post "{shown}": {reason}') from None
        finally:
            timer.cancel()
            _exchange.sockets = None
        if expired.is_set():
            raise ExtenderError(f'Post "{shown}": timed out after {seconds:g}s (the extender\'s httpTimeout)')
        if data is None:
            raise ExtenderError(f"extender at URL {shown}: its answer to {verb} exceeds {MAX_RESPONSE_BYTES} bytes")
        if status != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {shown}, code {status}")
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ExtenderError(f"extender at URL {shown}: invalid JSON answer to {verb}: {exc}") from None


def _read_capped(response: http.client.HTTPResponse) -> bytes | None:
    """The body, or None when it is longer than MAX_RESPONSE_BYTES (not read beyond that)."""
    length = response.getheader("Content-Length")
    if length is not None and length.isdigit() and int(length) > MAX_RESPONSE_BYTES:
        return None
    parts: list[bytes] = []
    size = 0
    while chunk := response.read(_READ_CHUNK):
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            return None
        parts.append(chunk)
    return b"".join(parts)


def redact(url: str) -> str:
    """The URL without user information (``https://user:secret@host`` -> ``https://host``)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A 3xx answer is the extender's answer (an error), never a request elsewhere."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> None:
        return None


def _register(sock: socket.socket | None) -> None:
    """Put a socket the current exchange opened under its deadline."""
    sockets = getattr(_exchange, "sockets", None)
    if sockets is not None and sock is not None:
        sockets.append(sock)


class _DeadlineHTTPConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _register(self.sock)


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_DeadlineHTTPConnection, req)


def build_extenders(configs: Sequence[ExtenderConfig]) -> list[Extender]:
    """The configured extenders, ignorable ones last (upstream buildExtenders): a failing ignorable
    extender then cannot have narrowed the nodes a required one sees."""
    built: list[Extender] = [HTTPExtender(c) for c in configs]
    return [e for e in built if not e.is_ignorable()] + [e for e in built if e.is_ignorable()]


# ----- decoding helpers (Go's encoding/json matches keys case-insensitively)


def _field(obj: Any, name: str) -> Any:
    if not isinstance(obj, Mapping):
        return None
    if name in obj:
        return obj[name]
    lower = name.lower()
    return next((v for k, v in obj.items() if isinstance(k, str) and k.lower() == lower), None)


def _object(value: Any, type_name: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ExtenderError(f"cannot decode the extender's answer: {type_name} must be an object")
    return value


def _reasons(result: Mapping[str, Any], key: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in _object(_field(result, key), key).items()}


def _node_name(node: Any) -> Any:
    return (node.get("metadata") or {}).get("name") if isinstance(node, Mapping) else None


# ----- TLS (upstream makeTransport)


def _https_handlers(config: ExtenderConfig) -> list[urllib.request.BaseHandler]:
    """An HTTPS handler with the extender's TLS settings. With enableHTTPS and no CA, the server's
    certificate is not verified, as upstream."""
    tls = config.tls_config or ExtenderTLSConfig()
    has_ca = bool(tls.ca_file or tls.ca_data)
    if tls == ExtenderTLSConfig() and not config.enable_https:  # an https URL all the same: verified
        return [_HTTPSHandler(ssl.create_default_context(), "")]
    ctx = ssl.create_default_context(
        cafile=tls.ca_file or None, cadata=tls.ca_data.decode() if tls.ca_data else None)
    if tls.insecure or (config.enable_https and not has_ca):
        log.warning("extender TLS certificates are not verified: set tlsConfig.caFile or caData",
                    extender=redact(config.url_prefix), insecure=tls.insecure or None,
                    reason="tlsConfig.insecure" if tls.insecure else "enableHTTPS without a CA, as upstream")
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    _load_client_certificate(ctx, tls)
    return [_HTTPSHandler(ctx, tls.server_name)]


def _load_client_certificate(ctx: ssl.SSLContext, tls: ExtenderTLSConfig) -> None:
    if tls.cert_file and tls.key_file:
        ctx.load_cert_chain(tls.cert_file, tls.key_file)
        return
    if not (tls.cert_data and tls.key_data):
        return
    # ssl loads certificates from files only; the PEM bytes live in a private file for the call.
    with tempfile.TemporaryDirectory(prefix="extender-tls-") as d:
        cert, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
        for path, data in ((cert, tls.cert_data), (key, tls.key_data)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(data)
        ctx.load_cert_chain(cert, key)


class _ServerNameConnection(http.client.HTTPSConnection):
    """HTTPS connection that verifies (and sends SNI for) ``server_name`` instead of the URL's host."""

    def __init__(self, *args: Any, server_name: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._server_name = server_name

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        _register(sock)
        self.sock = self._context.wrap_socket(sock, server_hostname=self._server_name)  # type: ignore[attr-defined]


class _DeadlineHTTPSConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _register(self.sock)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, context: ssl.SSLContext, server_name: str) -> None:
        super().__init__(context=context)
        self._ctx = context
        self._server_name = server_name

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        if not self._server_name:
            return self.do_open(_DeadlineHTTPSConnection, req, context=self._ctx)
        conn = functools.partial(_ServerNameConnection, server_name=self._server_name)
        return self.do_open(conn, req, context=self._ctx)
