"""The entry point of an API writer child (`run --api-writer-processes N`; scheduler/kube/writerproc.py):
``python -m scheduler.app.apiwriter SETTINGS`` builds the API client from the parent's settings
(kubeconfig, QPS/burst, log level) and serves the parent's frames on stdin until told to stop."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence

import orjson

from scheduler.app import logging as sched_logging
from scheduler.app.threadnames import name_current_thread
from scheduler.kube.binder import ApiBinder
from scheduler.kube.client import ApiWriter, RawApi, load_api_client
from scheduler.kube.ratelimit import TokenBucket
from scheduler.kube.recorder import ApiEventSink
from scheduler.kube.writerproc import ChildWriter


def child_command(kubeconfig: str | None, qps: float, burst: int, log_level: str = "INFO") -> list[str]:
    """The argv of a writer child: this interpreter, this module, the settings as one JSON argument."""
    return [sys.executable, "-m", "scheduler.app.apiwriter", orjson.dumps(
        {"kubeconfig": kubeconfig, "qps": qps, "burst": burst, "log_level": log_level}).decode()]


def child_main(argv: Sequence[str]) -> int:
    """Serve until the parent sends "q" (finish the writes held, then exit) or goes away (exit at once:
    it may have lost the Lease, and nothing more may be written)."""
    settings = orjson.loads(argv[0])
    name_current_thread("api-writer")  # the process's name in the benchmark's per-process CPU
    for sig in (signal.SIGINT, signal.SIGTERM):  # a terminal's ^C or a group kill: the parent decides, then "q"
        signal.signal(sig, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb")  # the frames' own descriptor: nothing else may print into it
    os.dup2(2, 1)
    sched_logging.configure(settings.get("log_level") or "INFO")
    raw = RawApi(load_api_client(settings.get("kubeconfig")))
    writer = ApiWriter(raw, TokenBucket(float(settings["qps"]), int(settings["burst"])))
    sink = ApiEventSink(writer)
    child = ChildWriter(ApiBinder(writer), sink, out)
    writer.may_retry = child.may_write
    if not child.serve(sys.stdin.buffer):
        os._exit(0)
    child.finish()
    sink.close()
    sink.join(5.0)
    return 0


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
