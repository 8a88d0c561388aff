"""The live Binder: the API server's Binding subresource (simulate's is whatif.offline.RecordingBinder)."""

from __future__ import annotations

import errno
import random
import time
from collections.abc import Callable, Sequence

import orjson
import structlog
from kubernetes.client.exceptions import ApiException

from scheduler.edge import BoundElsewhereError, NotLeaderError
from scheduler.kube.client import ApiWriter, PodIdentity, api_error, pod_path
from scheduler.model.apierrors import ConflictError

log = structlog.get_logger(__name__)

# client-go's retry.DefaultBackoff, which kube-scheduler's util.BindPod retries a Binding with: at most
# BIND_TRIES POSTs, waiting 10 ms, 50 ms, 250 ms between them, each stretched by up to 10 %.
BIND_TRIES = 4
BIND_FIRST_WAIT = 0.010
BIND_FACTOR = 5.0
BIND_JITTER = 0.1
# client-go's own request retries (rest.Request maxRetries) of answers that carry Retry-After (429s).
RETRY_AFTER_MAX = 10
RETRY_AFTER_CAP = 30.0

# apimachinery's knownReasons: a 500 or 503 whose Status names another known reason is not retried.
_KNOWN_REASONS = frozenset({
    "Unauthorized", "Forbidden", "NotFound", "AlreadyExists", "Conflict", "Gone", "Invalid", "ServerTimeout",
    "StorageReadError", "Timeout", "TooManyRequests", "BadRequest", "MethodNotAllowed", "NotAcceptable",
    "RequestEntityTooLarge", "UnsupportedMediaType", "InternalError", "Expired", "ServiceUnavailable",
})


def status_reason(exc: ApiException) -> str:
    """The Status ``reason`` of an API error's body ("" when the body is no Status)."""
    try:
        reason = orjson.loads(exc.body or b"{}").get("reason")
    except (orjson.JSONDecodeError, AttributeError):
        return ""
    return reason if isinstance(reason, str) else ""


def connection_refused(exc: BaseException) -> bool:
    """net.IsConnectionRefused: ECONNREFUSED anywhere in the chain of causes (urllib3 wraps it)."""
    seen: list[BaseException] = []
    todo: BaseException | None = exc
    while todo is not None and todo not in seen:
        if isinstance(todo, ConnectionRefusedError) or getattr(todo, "errno", None) == errno.ECONNREFUSED:
            return True
        seen.append(todo)
        reason = getattr(todo, "reason", None)
        todo = todo.__cause__ or todo.__context__ or (reason if isinstance(reason, BaseException) else None)
    return False


def bind_retriable(exc: BaseException) -> bool:
    """kube-scheduler's util.Retriable: an InternalError, a ServiceUnavailable or a refused connection."""
    if isinstance(exc, ApiException):
        reason = status_reason(exc)
        if reason in ("InternalError", "ServiceUnavailable"):
            return True
        return reason not in _KNOWN_REASONS and exc.status in (500, 503)
    return connection_refused(exc)


def retry_after(exc: BaseException) -> float | None:
    """Seconds an answer's Retry-After asks for (429, or a 5xx with the header), as client-go's request honours."""
    if not isinstance(exc, ApiException) or not exc.headers or not (exc.status == 429 or exc.status >= 500):
        return None
    value = exc.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return min(RETRY_AFTER_CAP, max(0.0, float(value)))
    except ValueError:
        return 1.0


def post_binding_with_retries(post: Callable[[], None], may_retry: Callable[[], bool] | None, what: str,
                              rng: random.Random | None = None, sleep: Callable[[float], None] = time.sleep,
                              first_error: Exception | None = None) -> None:
    """util.BindPod's retry.OnError(DefaultBackoff, Retriable, bind): the last retriable error is raised
    once the tries are spent, any other error at once. ``may_retry`` is asked before every retry (with
    leader election, whether this replica still leads): False ends the bind with NotLeaderError.
    ``first_error``: the first POST was made already (a batch's) and failed so; the tries go on from there."""
    wait = BIND_FIRST_WAIT
    tries = throttled = 0
    earlier = first_error
    while True:
        try:
            if earlier is not None:
                failed, earlier = earlier, None
                raise failed
            post()
            return
        except Exception as exc:
            asked = retry_after(exc)
            if asked is not None and throttled < RETRY_AFTER_MAX:
                throttled += 1
                pause = asked
            else:
                tries += 1
                if not bind_retriable(exc) or tries >= BIND_TRIES:
                    raise
                pause = wait * (1 + (rng or random).random() * BIND_JITTER)
                wait *= BIND_FACTOR
        sleep(pause)
        if may_retry is not None and not may_retry():
            raise NotLeaderError(f"not the leader any more: {what} not retried")


class ApiBinder:
    """POST pods/{name}/binding, retried as kube-scheduler retries it (post_binding_with_retries).

    A Binding whose POST died after the API server committed it and that is tried again is answered
    409; so a 409 is looked into rather than reported: the pod bound to our node is success, bound to
    another node is BoundElsewhereError, and a pod recreated under the same name (the uid precondition
    failed) is gone, like a 404."""

    def __init__(self, writer: ApiWriter) -> None:
        self.writer = writer

    def bind(self, pod: PodIdentity, node_name: str) -> None:
        self.bind_after(pod, node_name, None)

    def bind_batch(self, bindings: Sequence[tuple[PodIdentity, str]]) -> list[Exception | None]:
        """The first POST of each binding, side by side (ApiWriter.bind_many): None where it bound, else the
        error, which ``bind_after`` takes up as util.BindPod would after that POST."""
        return self.writer.bind_many([(pod.namespace, pod.name, pod.uid, node) for pod, node in bindings])

    def bind_after(self, pod: PodIdentity, node_name: str, first_error: Exception | None) -> None:
        """``bind``, or its remaining tries and the 409's resolution after a first POST that failed with
        ``first_error``."""
        def post() -> None:
            self.writer.bind(pod.namespace, pod.name, pod.uid, node_name)

        try:
            post_binding_with_retries(post, self.writer.may_retry, f"binding of {pod.key} to {node_name}",
                                      first_error=first_error)
        except ConflictError as exc:
            self._resolve_conflict(pod, node_name, exc)

    def _resolve_conflict(self, pod: PodIdentity, node_name: str, conflict: ConflictError) -> None:
        current = orjson.loads(self.writer.get(pod_path(pod.namespace, pod.name)))
        if (current.get("metadata") or {}).get("uid") != pod.uid:
            message = orjson.dumps({"message": f"pod {pod.key} was deleted and recreated"}).decode()
            raise api_error(404, "Not Found", message) from conflict
        bound_to = (current.get("spec") or {}).get("nodeName") or ""
        if bound_to == node_name:
            log.info("binding had already succeeded", pod=pod.key, node=node_name)
            return
        if bound_to:
            raise BoundElsewhereError(pod.key, bound_to) from conflict
        raise conflict
