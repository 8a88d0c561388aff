"""Delegated authentication and authorization of the secure port's requests, as kube-scheduler does.

kube-scheduler (k8s.io/apiserver's DelegatingAuthenticationOptions and DelegatingAuthorizationOptions)
authenticates a bearer token with a TokenReview and authorizes the request with a SubjectAccessReview
(non-resource path, verb from the method: get), both through the API server, caching each answer
for 10 seconds. A request without credentials is anonymous (``system:anonymous``, group
``system:unauthenticated``) and is authorized like any other, so RBAC decides (403 unless bound); a
token the API server does not accept is 401. Paths in --authorization-always-allow-paths (the health
paths) never reach this guard, so probes never wait on the API server.

The scheduler's ServiceAccount needs ``create`` on tokenreviews and subjectaccessreviews: the
manifests bind ``system:auth-delegator`` for that, as upstream's do. Client certificates (the
front-proxy and client-CA paths of upstream's delegated authentication) are not supported.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
import structlog

from scheduler.kube.client import Requester
from scheduler.serving.serving import Request, Response

log = structlog.get_logger(__name__)

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
_VERBS = {"GET": "get", "HEAD": "head"}

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


class _TtlCache(Generic[T]):
    """Answers by key for ``ttl`` seconds, at most ``size`` of them (the oldest go first)."""

    def __init__(self, size: int, clock: Callable[[], float]) -> None:
        self._entries: OrderedDict[Hashable, tuple[float, T]] = OrderedDict()
        self._size = size
        self._clock = clock
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> tuple[bool, T | None]:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None or hit[0] <= self._clock():
                return False, None
            return True, hit[1]

    def put(self, key: Hashable, value: T, ttl: float) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (self._clock() + ttl, value)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


class DelegatedAuth:
    """The secure port's Guard: TokenReview, then SubjectAccessReview, through ``api``."""

    def __init__(
        self, api: Requester, token_ttl: float = 10.0, allow_ttl: float = 10.0, deny_ttl: float = 10.0,
        cache_size: int = 1024, timeout: float = 10.0, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._token_ttl, self._allow_ttl, self._deny_ttl = token_ttl, allow_ttl, deny_ttl
        self._timeout = timeout
        self._tokens: _TtlCache[User | None] = _TtlCache(cache_size, clock)
        self._decisions: _TtlCache[tuple[bool, str]] = _TtlCache(cache_size, clock)

    # --- Guard -----------------------------------------------------------------------------------------

    def admit(self, request: Request) -> Response | None:
        """None when the request may be served; else 401 (credentials not accepted), 403 (not allowed)
        or 500 (the API server could not be asked; the detail is logged)."""
        token = _bearer_token(request.headers.get("authorization", ""))
        if token is None:
            return _status(401, "Unauthorized", "Unauthorized")
        try:
            user = self.authenticate(token) if token else User(ANONYMOUS, groups=(UNAUTHENTICATED,))
        except Exception as exc:
            log.warning("token review failed", error=f"{type(exc).__name__}: {exc}")
            return _status(401, "Unauthorized", "Unauthorized")
        if user is None:
            return _status(401, "Unauthorized", "Unauthorized")
        verb = _VERBS.get(request.method, request.method.lower())
        try:
            allowed, _ = self.authorize(user, verb, request.path)
        except Exception as exc:
            log.warning("subject access review failed", user=user.name, path=request.path,
                        error=f"{type(exc).__name__}: {exc}")
            return _status(500, "InternalError", "Internal Server Error: authorization failed")
        if not allowed:
            return _status(403, "Forbidden",
                           f'forbidden: User "{user.name}" cannot {verb} path "{request.path}"')
        return None

    # --- the reviews -----------------------------------------------------------------------------------

    def authenticate(self, token: str) -> User | None:
        """The token's user, or None when the API server does not accept it (cached)."""
        key = hashlib.sha256(token.encode()).digest()
        hit, user = self._tokens.get(key)
        if hit:
            return user
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        status = _json(self._api.request("POST", TOKEN_REVIEWS, body, timeout=self._timeout)).get("status") or {}
        user = None
        if status.get("authenticated"):
            info = status.get("user") or {}
            pairs = (info.get("extra") or {}).items()
            extra = tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in pairs))
            user = User(str(info.get("username") or ""), str(info.get("uid") or ""),
                        tuple(str(g) for g in info.get("groups") or ()), extra)
        self._tokens.put(key, user, self._token_ttl)
        return user

    def authorize(self, user: User, verb: str, path: str) -> tuple[bool, str]:
        """(allowed, reason) for ``verb`` on the non-resource ``path`` (cached: allowed and denied)."""
        key = (user, verb, path)
        hit, decision = self._decisions.get(key)
        if hit and decision is not None:
            return decision
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups),
                                "nonResourceAttributes": {"path": path, "verb": verb}}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        status = _json(self._api.request("POST", SUBJECT_ACCESS_REVIEWS, body, timeout=self._timeout)).get(
            "status") or {}
        decision = (bool(status.get("allowed")) and not status.get("denied"), str(status.get("reason") or ""))
        self._decisions.put(key, decision, self._allow_ttl if decision[0] else self._deny_ttl)
        return decision


def _bearer_token(header: str) -> str | None:
    """"" for no credentials, the token of ``Bearer <token>``, None for anything else (401)."""
    if not header:
        return ""
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def _json(raw: bytes) -> dict[str, Any]:
    data = orjson.loads(raw)
    return data if isinstance(data, dict) else {}


def _status(code: int, reason: str, message: str) -> Response:
    """A metav1.Status body, as the API server's filters answer."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    return Response(code, orjson.dumps(body) + b"\n", "application/json")
