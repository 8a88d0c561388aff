"""structlog set-up: JSON lines when not on a terminal, key-value pairs on a terminal."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import orjson
import structlog
from structlog.typing import EventDict, WrappedLogger

from scheduler.model.timefmt import micro_time


class _CurrentStderr:
    """Writes to sys.stderr as it is at write time: a stream bound at configure time may have been replaced
    and closed since (pytest's capture between tests that run the CLI in-process)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _dumps(obj: Any, **kw: Any) -> str:
    """JSONRenderer's serializer: orjson renders a binding's line in a third of json.dumps' time (one line
    per scheduled pod, from the binding threads); what orjson refuses (an integer beyond 64 bits) goes
    to json.dumps."""
    try:
        return orjson.dumps(obj, default=kw.get("default"), option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(obj, **kw)


def _timestamp(logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
    """The line's UTC time with microseconds, as structlog's ISO TimeStamper writes it (but always with
    six digits), formatted without a datetime per line."""
    event_dict["timestamp"] = micro_time()
    return event_dict


def configure(level: str = "INFO", json_lines: bool | None = None) -> None:
    if json_lines is None:
        json_lines = not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer(serializer=_dumps)
        if json_lines
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            _timestamp,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper(), logging.INFO)),
        logger_factory=structlog.WriteLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
    # kopf and the client log through stdlib logging; keep them to warnings.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    for name in ("kopf", "kubernetes", "urllib3", "aiohttp"):
        logging.getLogger(name).setLevel(logging.WARNING)
