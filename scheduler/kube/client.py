"""The Kubernetes API edge: credentials, TLS, and one HTTP stack for the scheduler's reads and writes.

Every write goes through one token bucket (clientConnection qps/burst) and tenacity retries for
transient failures: connection errors, 5xx and 429 (honouring Retry-After). 404 and 409 are final.

Requests bypass the generated API classes: their pydantic call validation and model coercion cost
more CPU per request than the request itself, for bodies the scheduler builds and never reads back. `RawApi`
sends JSON over Http11Pool with the ApiClient's credentials and TLS settings; lists (`list_pages`), the lease
and all writes use it.
The generated client serves only to load the kubeconfig (and, through a proxy, lends RawApi its urllib3 pool).
"""

from __future__ import annotations

import functools
import re
import ssl
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import orjson
import structlog
import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, stop_after_delay

from scheduler.edge import NotLeaderError
from scheduler.kube.http11 import Http11Pool, Request
from scheduler.kube.ratelimit import TokenBucket
from scheduler.kube.transform import trim
from scheduler.model.apierrors import APIStatusError, ConflictError, NotFoundError
from scheduler.model.jsonutil import plain

log = structlog.get_logger(__name__)

TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})


def load_api_client(kubeconfig: str | None, pool_size: int = 32) -> client.ApiClient:
    """An ApiClient from a kubeconfig path, $KUBECONFIG / ~/.kube/config, or the in-cluster config."""
    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)
        except config.ConfigException:
            config.load_kube_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = pool_size
    return client.ApiClient(cfg)


def ssl_context(cfg: Any) -> ssl.SSLContext:
    """The TLS settings of a client Configuration, for connections made outside its pool (the pod watch, the
    write client). Without verification the client certificate is still presented."""
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert) if cfg.ssl_ca_cert else ssl.create_default_context()
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_file and cfg.key_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    return ctx


def authorization(cfg: Any) -> str:
    """The Authorization header value of a client Configuration ("<scheme> <token>"; "" for
    client-certificate auth). The one place credentials are read: RawApi, the pod watch and kopf's login."""
    hook = getattr(cfg, "refresh_api_key_hook", None)
    if hook is not None:
        hook(cfg)  # in-cluster projected tokens rotate; the client refreshes them here
    header = cfg.get_api_key_with_prefix("BearerToken") or cfg.get_api_key_with_prefix("authorization") or ""
    if header and " " not in header:
        header = f"Bearer {header}"
    return str(header)


JSON = "application/json"
# A LIST answered with each item's metadata only (PartialObjectMetadataList), as client-go's metadata
# informers ask: a relist that only compares names or UIDs then never decodes specs and statuses.
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"  # custom resources take no strategic merge


class ApiError(ApiException):
    """An HTTP error from the API server whose text is the one line users read in `kubectl describe`: the
    Status message (`pods "p" not found`), as client-go's StatusError.Error(), never the client's
    multi-line dump with response headers."""

    def __str__(self) -> str:
        try:
            message = orjson.loads(self.body or b"{}").get("message")
        except (orjson.JSONDecodeError, AttributeError):
            message = None
        if isinstance(message, str) and message:
            return " ".join(message.split())
        return f"{self.status} {self.reason}".strip()


class ApiNotFound(ApiError, NotFoundError):
    """A 404 from the API server: catchable as the core's apierrors.NotFoundError and as the client's ApiException."""


class ApiConflict(ApiError, ConflictError):
    """A 409 from the API server: catchable as the core's apierrors.ConflictError and as the client's ApiException."""


_TYPED: dict[int, type[ApiError]] = {404: ApiNotFound, 409: ApiConflict}


def api_error(status: int, reason: str, body: str | None = None, headers: Mapping[str, str] | None = None) -> ApiError:
    """The exception for an error status: typed (ApiNotFound, ApiConflict) where the scheduler acts on it."""
    exc = _TYPED.get(status, ApiError)(status=status, reason=reason)
    exc.body = body
    exc.headers = dict(headers) if headers is not None else None
    return exc


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an API error (for log fields), None for anything else."""
    if isinstance(exc, ApiException | APIStatusError):
        return int(exc.status) if exc.status is not None else None
    return None


def _encoded(body: Any) -> bytes:
    """A request body's JSON: bytes are JSON already (a batched Binding's: orjson writes no bytes), anything
    else goes through orjson."""
    return body if type(body) is bytes else orjson.dumps(body, default=plain)


class Requester(Protocol):
    def request(
        self, method: str, path: str, body: Any = None, content_type: str = JSON, timeout: float | None = None,
        accept: str = JSON,
    ) -> bytes: ...


class RawApi:
    """JSON requests with an ApiClient's server, credentials and TLS settings; a status >= 400 raises
    ApiError, an ApiException like the client's (ApiNotFound / ApiConflict for 404 / 409). Requests go
    over Http11Pool; through a proxy, over the client's urllib3 pool instead."""

    AUTH_TTL = 60.0  # seconds an Authorization header is reused; token files rotate far more slowly

    def __init__(self, api: client.ApiClient, timeout: float = 30.0) -> None:
        self.cfg = api.configuration
        self.host = self.cfg.host.rstrip("/")
        self.user_agent = api.user_agent
        self._auth_cached: dict[str, str] = {}
        self._auth_expires = 0.0
        self._rendered: dict[tuple[str, str | None, str], str] = {}  # header lines by (accept, type, auth)
        self._direct: Http11Pool | None = None
        self._urllib3 = api.rest_client.pool_manager
        self._timeout = timeout
        if not getattr(self.cfg, "proxy", None):
            self._direct = Http11Pool(self.host, ssl_context(self.cfg), timeout=timeout,
                                      server_name=getattr(self.cfg, "tls_server_name", None))

    def auth_headers(self) -> dict[str, str]:
        """The Authorization header, refreshed once a minute: the kubeconfig refresh hook re-reads the
        config and the proxy environment on every call, which cost more than the request itself in a profile."""
        now = time.monotonic()
        if now >= self._auth_expires:
            header = authorization(self.cfg)
            self._auth_cached = {"Authorization": header} if header else {}
            self._auth_expires = now + self.AUTH_TTL
        return self._auth_cached

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = JSON, timeout: float | None = None,
        accept: str = JSON,
    ) -> bytes:
        """One request; ``timeout`` (seconds, default the client's) bounds connecting and each read."""
        data = None if body is None else _encoded(body)
        seconds = self._timeout if timeout is None else timeout
        sent_type = content_type if data is not None else None
        if self._direct is not None:
            r = self._direct.request(method, path, self._header_lines(accept, sent_type), data, timeout=seconds)
            return _payload_or_raise(r.status, r.reason, r.body, r)
        headers = self._header_dict(accept, sent_type)
        u = self._urllib3.request(method, self.host + path, body=data, headers=headers,
                                  timeout=urllib3.Timeout(total=seconds), retries=False, preload_content=True)
        return _payload_or_raise(u.status, u.reason or "", u.data, u)

    def pipeline(self, requests: Sequence[tuple[str, str, Any, str]]) -> list[bytes | Exception]:
        """(method, path, body, content type) requests sent in one write and answered in order (Http11Pool.pipeline);
        one payload or exception each (an error status is its ApiError). Through a proxy, one after another."""
        return self._several(requests, pipelined=True)

    def fanout(self, requests: Sequence[tuple[str, str, Any, str]]) -> list[bytes | Exception]:
        """The same requests each on a connection of its own, all sent before any answer is read
        (Http11Pool.fanout): the server handles them side by side. Through a proxy, one after another."""
        return self._several(requests, pipelined=False)

    def _several(self, requests: Sequence[tuple[str, str, Any, str]], pipelined: bool) -> list[bytes | Exception]:
        if self._direct is None:
            out: list[bytes | Exception] = []
            for method, path, body, content_type in requests:
                try:
                    out.append(self.request(method, path, body, content_type))
                except Exception as exc:
                    out.append(exc)
            return out
        lines: dict[str | None, str] = {}  # header lines by content type: rendered once for all the requests
        prepared: list[Request] = []
        for method, path, body, content_type in requests:
            sent = content_type if body is not None else None
            head = lines.get(sent)
            if head is None:
                head = lines[sent] = self._header_lines(JSON, sent)
            prepared.append((method, path, head, None if body is None else _encoded(body)))
        send = self._direct.pipeline if pipelined else self._direct.fanout
        results: list[bytes | Exception] = []
        for r in send(prepared, timeout=self._timeout):
            if isinstance(r, Exception):
                results.append(r)
            elif r.status < 400:
                results.append(r.body)
            else:
                try:
                    _payload_or_raise(r.status, r.reason, r.body, r)
                except ApiError as exc:
                    results.append(exc)
        return results

    def _header_dict(self, accept: str, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": self.user_agent, **self.auth_headers()}
        if content_type is not None:
            headers["Content-Type"] = content_type
        return headers

    def _header_lines(self, accept: str, content_type: str | None) -> str:
        """The request's header lines, rendered once per (accept, content type, credentials)."""
        auth = self.auth_headers().get("Authorization", "")
        key = (accept, content_type, auth)
        lines = self._rendered.get(key)
        if lines is None:
            if len(self._rendered) >= 64:  # rotated credentials leave stale entries behind
                self._rendered.clear()
            lines = "".join(f"{k}: {v}\r\n" for k, v in self._header_dict(accept, content_type).items())
            self._rendered[key] = lines
        return lines


class _HasHeaders(Protocol):
    @property
    def headers(self) -> Mapping[str, str]: ...


def _payload_or_raise(status: int, reason: str, payload: bytes, answer: _HasHeaders) -> bytes:
    """The body of a successful answer; an error status raises its ApiError (headers read only then)."""
    if status >= 400:
        raise api_error(status, reason, payload.decode("utf-8", "replace"),
                        {k.title(): v for k, v in answer.headers.items()})
    return payload


def list_pages(
    api: Requester, path: str, field_selector: str = "", limit: int = 500, accept: str = JSON
) -> Iterator[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """A paginated LIST as raw JSON (no model deserialization: it is ten times slower than orjson):
    each page's items and list metadata; the last page's resourceVersion is where a watch resumes.
    ``accept=METADATA_LIST`` asks for the items' metadata only."""
    cont = ""
    while True:
        query: dict[str, Any] = {"limit": limit}
        if cont:
            query["continue"] = cont
        if field_selector:
            query["fieldSelector"] = field_selector
        data = orjson.loads(api.request("GET", f"{path}?{urlencode(query)}", accept=accept) or b"{}")
        meta: dict[str, Any] = data.get("metadata") or {}
        yield [trim(item) for item in data.get("items") or []], meta
        cont = meta.get("continue") or ""
        if not cont:
            return


def list_all(api: Requester, path: str, field_selector: str = "", limit: int = 500,
             accept: str = JSON) -> Iterator[dict[str, Any]]:
    """Every item of a paginated LIST."""
    for items, _ in list_pages(api, path, field_selector, limit, accept):
        yield from items


def served_resources(api: Requester, group: str, version: str) -> set[str]:
    """The resources discovery lists for a (non-core) group version; empty when the API server does not serve
    it (404). Other failures raise: the caller decides whether an unknown answer means "not served"."""
    try:
        data = orjson.loads(api.request("GET", f"/apis/{group}/{version}") or b"{}")
    except NotFoundError:
        return set()
    return {str(r.get("name")) for r in data.get("resources") or []}


class PodIdentity(Protocol):
    """The fields of a pod that a Binding and an Event name: a Pod, or the writer child's light PodRef
    (building a Pod costs tens of microseconds that the child would pay twice a pod)."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def resource_version(self) -> str: ...
    @property
    def key(self) -> str: ...


# What urllib.parse.quote leaves as it is: Kubernetes names and namespaces (DNS labels and subdomains) always.
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]*")


def segment(text: str) -> str:
    """``quote(text)`` for one path segment; a plain name (every object's) skips quote's Python (two a write)."""
    return text if _UNQUOTED.fullmatch(text) else quote(text)


# "/api/v1/namespaces/<namespace>/pods/" by namespace: a Binding's path quotes only its pod's name.
_POD_PATHS: dict[str, str] = {}


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    prefix = _POD_PATHS.get(namespace)
    if prefix is None:
        if len(_POD_PATHS) >= 1024:  # namespaces come and go: bounded
            _POD_PATHS.clear()
        prefix = _POD_PATHS[namespace] = f"/api/v1/namespaces/{segment(namespace)}/pods/"
    return f"{prefix}{segment(name)}/{sub}" if sub else prefix + segment(name)


# The kinds plugins write through update_object / get_object / patch_object_status: kind -> (group, version).
WRITABLE_KINDS: dict[str, tuple[str, str]] = {
    "PersistentVolume": ("", "v1"),
    "PersistentVolumeClaim": ("", "v1"),
    "ResourceClaim": ("resource.k8s.io", "v1"),
}
_CLUSTER_SCOPED = frozenset({"PersistentVolume"})
_PLURALS = {"PersistentVolume": "persistentvolumes", "PersistentVolumeClaim": "persistentvolumeclaims",
            "ResourceClaim": "resourceclaims"}


def object_path(kind: str, namespace: str, name: str, sub: str = "") -> str:
    """The URL path of one object of a writable kind (ValueError for another kind)."""
    if kind not in WRITABLE_KINDS:
        raise ValueError(f"update_object: unsupported kind {kind}")
    group, version = WRITABLE_KINDS[kind]
    base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    if kind not in _CLUSTER_SCOPED:
        base += f"/namespaces/{segment(namespace)}"
    return f"{base}/{_PLURALS[kind]}/{segment(name)}" + (f"/{sub}" if sub else "")


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ApiException):
        return exc.status in TRANSIENT_STATUSES
    return isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError)


def backoff(attempt: int, exc: BaseException | None) -> float:
    """The wait after failed attempt ``attempt`` (from 1): exponential from 0.1 s, capped at 5 s; a 429's
    Retry-After wins when present."""
    if isinstance(exc, ApiException) and exc.status == 429 and exc.headers:
        try:
            return min(30.0, float(exc.headers.get("Retry-After", "1")))
        except ValueError:
            return 1.0
    return min(5.0, 0.1 * (2 ** (attempt - 1)))


MAX_ATTEMPTS = 6
MAX_SECONDS = 30.0


def retrying(max_attempts: int = MAX_ATTEMPTS, max_seconds: float = MAX_SECONDS, attempts_made: int = 0) -> Retrying:
    """Retries of transient errors; ``attempts_made`` before this loop count in the backoff."""

    def wait(state: RetryCallState) -> float:
        return backoff(state.attempt_number + attempts_made, state.outcome.exception() if state.outcome else None)

    return Retrying(
        retry=retry_if_exception(is_transient),
        wait=wait,
        stop=stop_after_attempt(max_attempts) | stop_after_delay(max_seconds),
        reraise=True,
    )


class ApiWriter:
    """The scheduler's writes, rate limited and retried: the live APIWriter of scheduler.edge (pod status
    patches, deletions, PV/PVC updates) plus bindings (ApiBinder) and events (ApiEventSink)."""

    def __init__(self, raw: Requester, limiter: TokenBucket, may_retry: Callable[[], bool] | None = None) -> None:
        """``may_retry``: asked before every retry (with leader election: whether this replica still leads);
        False ends the write with NotLeaderError instead of retrying it for up to MAX_SECONDS."""
        self.raw = raw
        self.limiter = limiter
        self.may_retry = may_retry

    def _request(self, method: str, path: str, body: Any = None, content_type: str = JSON,
                 first: bool = False) -> bytes:
        """Rate limited (``first``: ahead of the other writes waiting, TokenBucket.reserve); transient errors
        retried (MAX_ATTEMPTS in MAX_SECONDS). The first attempt is made directly: tenacity's setup (~9 us a call,
        two calls a pod) is paid only when there is a retry."""
        started = time.monotonic()
        self.limiter.wait(1, first)
        try:
            return self.raw.request(method, path, body, content_type)
        except Exception as exc:
            return self._retry(exc, started, method, path, body, content_type, first)

    def _retry(self, exc: Exception, started: float, method: str, path: str, body: Any, content_type: str,
               first: bool = False) -> bytes:
        """After a first attempt that failed with ``exc``: raise it if final, else the retries of ``_request``."""
        if not is_transient(exc) or time.monotonic() - started >= MAX_SECONDS:
            raise exc
        time.sleep(backoff(1, exc))
        for attempt in retrying(MAX_ATTEMPTS - 1, MAX_SECONDS - (time.monotonic() - started), attempts_made=1):
            with attempt:
                self._check_may_retry(method, path)
                self.limiter.wait(1, first)
                return self.raw.request(method, path, body, content_type)
        raise AssertionError("unreachable")

    def _check_may_retry(self, method: str, path: str) -> None:
        if self.may_retry is not None and not self.may_retry():
            raise NotLeaderError(f"not the leader any more: {method} {path} not retried")

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """One POST of the Binding subresource, rate limited and not retried: its retries are upstream's
        (ApiBinder, ``util.BindPod``). The uid precondition makes a bind of a recreated pod a 409."""
        self.limiter.wait()
        self.raw.request("POST", pod_path(namespace, name, "binding"), _binding(namespace, name, uid, node))

    def bind_many(self, bindings: Sequence[tuple[str, str, str, str]]) -> list[Exception | None]:
        """One POST each of several Bindings (namespace, name, uid, node), rate limited, sent side by side on
        connections of their own (RawApi.fanout); None or the error of each, not retried (as ``bind``)."""
        fanout = getattr(self.raw, "fanout", None)
        if fanout is None:
            return [error_of(functools.partial(self.bind, *b)) for b in bindings]
        self.limiter.wait(len(bindings))
        answers = fanout([("POST", pod_path(ns, name, "binding"), binding_json(ns, name, uid, node), JSON)
                          for ns, name, uid, node in bindings])
        return [answer if isinstance(answer, Exception) else None for answer in answers]

    def get(self, path: str) -> bytes:
        """GET one object (rate limited and retried like the writes it serves)."""
        return self._request("GET", path)

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Strategic merge: conditions merge by type, as the client's default patch did. A
        ``metadata.resourceVersion`` in the patch makes it conditional (409 if the pod changed)."""
        self._request("PATCH", pod_path(namespace, name, "status"), patch, STRATEGIC_MERGE)

    def patch_pod(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """JSON merge patch of the pod itself (`run --record-results` writes its annotations)."""
        self._request("PATCH", pod_path(namespace, name), patch, MERGE_PATCH)

    def delete_pod(self, namespace: str, name: str) -> None:
        """DELETE the pod with default options (graceful), as preemption evicts its victims."""
        self._request("DELETE", pod_path(namespace, name))

    def update_object(self, kind: str, obj: Mapping[str, Any], subresource: str = "") -> dict[str, Any]:
        """PUT a PersistentVolume or PersistentVolumeClaim (VolumeBinding's PreBind writes the claimRef /
        the selected-node annotation) or a ResourceClaim or its status (DynamicResources' PreBind and
        PostFilter) and return the object the API server stored. The object's resourceVersion makes it
        a conditional update: a concurrent change is a final 409."""
        meta = obj.get("metadata") or {}
        path = object_path(kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""), subresource)
        group, version = WRITABLE_KINDS[kind]
        body = {**obj, "apiVersion": f"{group}/{version}" if group else version, "kind": kind}
        data: dict[str, Any] = trim(orjson.loads(self._request("PUT", path, body) or b"{}"))
        return data

    def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        """GET one object of a kind the scheduler writes (404: NotFoundError)."""
        data: dict[str, Any] = trim(orjson.loads(self._request("GET", object_path(kind, namespace, name)) or b"{}"))
        return data

    def patch_object_status(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Strategic-merge-patch the status subresource (Unreserve's ``$patch: delete`` of a reservedFor entry)."""
        self._request("PATCH", object_path(kind, namespace, name, "status"), patch, STRATEGIC_MERGE)

    def create_object(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        """POST a new object of a writable kind (DynamicResources' extended-resource claim) and return it."""
        meta = obj.get("metadata") or {}
        path = object_path(kind, str(meta.get("namespace") or ""), "x").rsplit("/", 1)[0]
        group, version = WRITABLE_KINDS[kind]
        body = {**obj, "apiVersion": f"{group}/{version}" if group else version, "kind": kind}
        data: dict[str, Any] = trim(orjson.loads(self._request("POST", path, body) or b"{}"))
        return data

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """DELETE one object of a writable kind with default options."""
        self._request("DELETE", object_path(kind, namespace, name))

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Strategic-merge-patch a Workload API PodGroup's status subresource, as util.PatchPodGroupStatus: its
        conditions merge by type, so the patch names only the condition it sets. It goes ahead of the Bindings and
        Events waiting for the rate limiter: upstream's cycle waits for it, so it lags the group's cycle by one
        request there, and a scheduler killed then loses at most the condition of the cycle in flight."""
        path = f"/apis/scheduling.k8s.io/v1beta1/namespaces/{segment(namespace)}/podgroups/{segment(name)}/status"
        self._request("PATCH", path, patch, STRATEGIC_MERGE, first=True)

    def patch_custom_status(self, group: str, version: str, plural: str, namespace: str, name: str,
                            status: Mapping[str, Any]) -> None:
        """Merge-patch the status subresource of a namespaced custom resource (PodGroups)."""
        path = f"/apis/{group}/{version}/namespaces/{segment(namespace)}/{plural}/{segment(name)}/status"
        self._request("PATCH", path, {"status": status}, MERGE_PATCH)

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> str:
        """POST an Event; returns its name. A name the body gives is the created object's (a create keeps it),
        so the answer (the whole Event, once per scheduled pod) is decoded only for a generated name."""
        answer = self._request("POST", _events_path(namespace), body)
        name = (body.get("metadata") or {}).get("name")
        if name:
            return str(name)
        return str((orjson.loads(answer or b"{}").get("metadata") or {}).get("name", ""))

    def create_events(self, events: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Exception | None]:
        """POST several named Events (namespace, body) pipelined on one connection (RawApi.pipeline), each
        rate limited; None or the final error of each. One that failed transiently or went unanswered is
        retried alone as ``create_event`` retries; a 409 for it then means its first POST did land."""
        pipeline = getattr(self.raw, "pipeline", None)
        if pipeline is None or len(events) == 1:
            return [error_of(functools.partial(self.create_event, ns, body)) for ns, body in events]
        started = time.monotonic()
        self.limiter.wait(len(events))
        paths: dict[str, str] = {}  # by namespace: a burst's events are mostly in one or a few
        for ns, _ in events:
            if ns not in paths:
                paths[ns] = _events_path(ns)
        answers = pipeline([("POST", paths[ns], body, JSON) for ns, body in events])
        out: list[Exception | None] = []
        for (ns, body), answer in zip(events, answers, strict=True):
            if not isinstance(answer, Exception):
                out.append(None)
                continue
            try:
                self._retry(answer, started, "POST", _events_path(ns), body, JSON)
                out.append(None)
            except ConflictError as exc:
                out.append(None if not isinstance(answer, ApiException) else exc)  # unanswered, then AlreadyExists
            except Exception as exc:
                out.append(exc)
        return out

    def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self._request("PATCH", f"/apis/events.k8s.io/v1/namespaces/{segment(namespace)}/events/{segment(name)}",
                      patch, STRATEGIC_MERGE)


def error_of(call: Callable[[], object]) -> Exception | None:
    """The exception ``call`` raised, or None: one outcome of several writes made together."""
    try:
        call()
    except Exception as exc:
        return exc
    return None


def binding_json(namespace: str, name: str, uid: str, node: str) -> bytes:
    """``_binding``'s JSON, byte for byte as orjson writes it: from a template when orjson writes the four strings
    as they are (its dump of them is two quotes longer: ASCII, nothing escaped; every Kubernetes name and uid),
    else orjson's dump of the dict. The template is the cheaper of the two, and there is one Binding a
    scheduled pod."""
    text = namespace + name + uid + node
    if len(orjson.dumps(text)) == len(text) + 2:
        return (f'{{"apiVersion":"v1","kind":"Binding","metadata":{{"name":"{name}","namespace":"{namespace}",'
                f'"uid":"{uid}"}},"target":{{"apiVersion":"v1","kind":"Node","name":"{node}"}}}}'.encode())
    return orjson.dumps(_binding(namespace, name, uid, node))


def _binding(namespace: str, name: str, uid: str, node: str) -> dict[str, Any]:
    """A Binding of pod namespace/name (uid as a precondition) to ``node``."""
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def _events_path(namespace: str) -> str:
    return f"/apis/events.k8s.io/v1/namespaces/{segment(namespace)}/events"
