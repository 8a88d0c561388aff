"""A Binding is retried as kube-scheduler's util.BindPod retries it: retry.DefaultBackoff (4 tries, 10 ms
times 5 each step, 10 % jitter) for InternalError, ServiceUnavailable and a refused connection only."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import orjson
import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from scheduler.edge import BatchBinder, NotLeaderError
from scheduler.kube.binder import BIND_TRIES, ApiBinder, bind_retriable, post_binding_with_retries
from scheduler.kube.client import ApiWriter, _binding, api_error, binding_json
from scheduler.kube.leaderelection import leader_gated_binder
from scheduler.kube.ratelimit import TokenBucket
from scheduler.model.pod import pod_from_api
from tests.builders import api_pod


def status(code: int, reason: str) -> Exception:
    return api_error(code, "x", orjson.dumps({"kind": "Status", "code": code, "reason": reason}).decode())


class Post:
    """Raises the given errors in turn, then succeeds."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


def run(post: Post, may_retry: list[bool] | None = None) -> list[float]:
    waits: list[float] = []
    ask = (lambda: may_retry[0]) if may_retry is not None else None
    post_binding_with_retries(post, ask, "binding", rng=random.Random(0), sleep=waits.append)
    return waits


@pytest.mark.parametrize(("error", "retriable"), [
    (status(500, "InternalError"), True),
    (status(503, "ServiceUnavailable"), True),
    (status(500, ""), True),  # an unknown reason: the code decides
    (api_error(503, "Service Unavailable", "not a Status"), True),
    (status(500, "Timeout"), False),  # a known reason other than the two
    (status(502, ""), False),
    (status(504, ""), False),
    (status(409, "Conflict"), False),
    (status(404, "NotFound"), False),
    (ConnectionRefusedError(111, "refused"), True),
    (ConnectionResetError(104, "reset"), False),
    (TimeoutError("read timed out"), False),
])
def test_which_errors_are_retried(error: Exception, retriable: bool) -> None:
    assert bind_retriable(error) is retriable


def test_a_refused_connection_wrapped_by_urllib3_is_retried() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as inner:
            raise urllib3.exceptions.NewConnectionError(None,
                                                        "Failed to establish a new connection") from inner  # type: ignore[arg-type]
    except urllib3.exceptions.NewConnectionError as wrapped:
        assert bind_retriable(wrapped)


def test_four_tries_with_the_default_backoff_then_the_last_error() -> None:
    post = Post(*[status(500, "InternalError") for _ in range(5)])
    waits: list[float] = []
    with pytest.raises(ApiException) as raised:
        post_binding_with_retries(post, None, "binding", rng=random.Random(0), sleep=waits.append)
    assert post.calls == BIND_TRIES
    assert raised.value.status == 500
    assert len(waits) == 3
    for got, base in zip(waits, (0.010, 0.050, 0.250), strict=True):
        assert base <= got <= base * 1.1


def test_success_after_retries_and_no_retry_of_other_errors() -> None:
    post = Post(status(503, "ServiceUnavailable"), ConnectionRefusedError(111, "refused"))
    assert len(run(post)) == 2 and post.calls == 3
    post = Post(status(502, ""), status(500, "InternalError"))
    with pytest.raises(ApiException) as raised:
        run(post)
    assert raised.value.status == 502
    assert post.calls == 1


def test_a_429_waits_its_retry_after_without_spending_a_try() -> None:
    throttled = api_error(429, "Too Many Requests", orjson.dumps({"reason": "TooManyRequests"}).decode(),
                          {"Retry-After": "2"})
    post = Post(throttled, throttled, status(500, "InternalError"))
    assert run(post) == [2.0, 2.0, pytest.approx(0.010, rel=0.1)]
    assert post.calls == 4


def test_leadership_is_checked_before_each_retry() -> None:
    post = Post(status(500, "InternalError"), status(500, "InternalError"))
    leading = [False]
    with pytest.raises(NotLeaderError):
        run(post, leading)
    assert post.calls == 1


def test_a_batch_s_failed_first_post_counts_as_the_first_try() -> None:
    """bind_after: the batch made the first POST; the retries go on from its error, never past BIND_TRIES."""
    post = Post(*[status(500, "InternalError") for _ in range(5)])
    waits: list[float] = []
    with pytest.raises(ApiException):
        post_binding_with_retries(post, None, "binding", rng=random.Random(0), sleep=waits.append,
                                  first_error=status(503, "ServiceUnavailable"))
    assert post.calls == BIND_TRIES - 1 and len(waits) == 3
    post = Post()
    with pytest.raises(ApiException) as raised:
        post_binding_with_retries(post, None, "binding", sleep=waits.append, first_error=status(403, "Forbidden"))
    assert raised.value.status == 403 and post.calls == 0, "an error that is not retried ends it at once"


class Fanout:
    """A Requester with ``fanout``: answers each Binding by its pod's name (``errors``), recording the requests."""

    def __init__(self, errors: dict[str, Exception]) -> None:
        self.errors = errors
        self.fanned: list[list[tuple[str, str, Any, str]]] = []
        self.alone: list[str] = []

    def request(self, method: str, path: str, body: Any = None, content_type: str = "", timeout: float | None = None,
                ) -> bytes:
        self.alone.append(path)
        error = self.errors.get(body["metadata"]["name"])
        if error is not None:
            raise error
        return b"{}"

    def fanout(self, requests: Sequence[tuple[str, str, Any, str]]) -> list[bytes | Exception]:
        """As RawApi: a bytes body is the JSON sent (a batch's Bindings come rendered)."""
        decoded = [(m, path, orjson.loads(body) if isinstance(body, bytes) else body, t)
                   for m, path, body, t in requests]
        self.fanned.append(decoded)
        return [self.errors.get(body["metadata"]["name"], b"{}") for _, _, body, _ in decoded]


def test_a_batch_posts_each_binding_once_side_by_side_and_follows_up_its_errors_alone() -> None:
    refused, gone = ConnectionRefusedError(111, "refused"), status(404, "NotFound")
    raw = Fanout({"a": refused, "b": gone})
    binder = ApiBinder(ApiWriter(raw, TokenBucket(0, 1)))
    pods = [pod_from_api(api_pod(n)) for n in ("a", "b", "c")]
    outcomes = binder.bind_batch([(p, "n1") for p in pods])
    assert outcomes == [refused, gone, None]
    assert [(m, path, body["target"]["name"], body["metadata"]["uid"]) for m, path, body, _ in raw.fanned[0]] == [
        ("POST", f"/api/v1/namespaces/default/pods/{n}/binding", "n1", f"uid-{n}") for n in ("a", "b", "c")]
    assert raw.alone == []
    raw.errors.pop("a")  # the refused one goes through on its retry
    binder.bind_after(pods[0], "n1", refused)
    assert raw.alone == ["/api/v1/namespaces/default/pods/a/binding"]
    with pytest.raises(ApiException):
        binder.bind_after(pods[1], "n1", gone)
    assert len(raw.alone) == 1, "a 404 is not retried"


def test_a_gated_batch_binds_nothing_once_the_replica_stops_leading() -> None:
    raw = Fanout({})
    leader = type("L", (), {"is_leader": False})()
    gated = leader_gated_binder(ApiBinder(ApiWriter(raw, TokenBucket(0, 1))), leader)
    assert isinstance(gated, BatchBinder)
    p = pod_from_api(api_pod("a"))
    assert all(isinstance(o, NotLeaderError) for o in gated.bind_batch([(p, "n1")]))
    with pytest.raises(NotLeaderError):
        gated.bind_after(p, "n1", None)
    assert raw.fanned == [] and raw.alone == []
    leader.is_leader = True
    assert gated.bind_batch([(p, "n1")]) == [None] and len(raw.fanned) == 1


def test_a_batched_binding_is_the_json_orjson_writes_for_its_dict() -> None:
    """binding_json's template, and its fall-back for strings that need escaping, byte for byte."""
    rng = random.Random(3)
    alphabet = 'abz09.-_/ "\\\x00\x1f\x7féß€\u2028\U0001f600'
    cases = [("default", "pod-1", "2f0c5b7e-6d1a-4c4e-9a57-0d8e3b1f4a21", "node-1"), ("", "", "", "")]
    cases += [tuple("".join(rng.choice(alphabet) for _ in range(rng.randrange(6))) for _ in range(4))
              for _ in range(2000)]
    for ns, name, uid, node in cases:
        rendered = binding_json(ns, name, uid, node)
        assert rendered == orjson.dumps(_binding(ns, name, uid, node))
    with pytest.raises(orjson.JSONEncodeError):  # a lone surrogate fails as the dict's dump does
        binding_json("ns", "\ud800", "uid", "node")
