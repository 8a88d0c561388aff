"""A Binding is retried as kube-scheduler's util.BindPod retries it: retry.DefaultBackoff (4 tries, 10 ms
times 5 each step, 10 % jitter) for InternalError, ServiceUnavailable and a refused connection only."""

from __future__ import annotations

import random

import orjson
import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from scheduler.edge import NotLeaderError
from scheduler.kube.binder import BIND_TRIES, bind_retriable, post_binding_with_retries
from scheduler.kube.client import api_error


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
            raise urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection") from inner  # type: ignore[arg-type]
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
