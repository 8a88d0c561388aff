"""structlog set-up: JSON lines when not on a terminal, key-value pairs on a terminal."""

from __future__ import annotations

import json
import logging
import sys
import threading
from typing import Any

import orjson
import structlog
from structlog.typing import EventDict, WrappedLogger

from scheduler.model.timefmt import micro_time


class _StderrLogger:
    """structlog's WriteLogger for sys.stderr as it is at write time (a stream bound at configure time may have
    been replaced and closed since: pytest's capture between tests that run the CLI in-process). A line-buffered
    stream (stderr always is, since Python 3.9) has written the line by the end of ``write``: it is flushed
    again only when it is not line-buffered, one call fewer a line than WriteLogger makes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def msg(self, message: str) -> None:
        stream = sys.stderr
        with self._lock:
            stream.write(message + "\n")
            if not getattr(stream, "line_buffering", False):
                stream.flush()

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


_STDERR_LOGGER = _StderrLogger()


def _stderr_logger(*args: Any) -> _StderrLogger:
    """The logger factory: one logger for every ``get_logger(name)`` (the arguments are ignored, as
    WriteLoggerFactory ignores them)."""
    return _STDERR_LOGGER


class _JSONRenderer(structlog.processors.JSONRenderer):
    """structlog's JSONRenderer, serialized by orjson called directly: orjson renders a binding's line in a third
    of json.dumps' time, without a serializer's call and keyword dict (one line per scheduled pod, from the binding
    threads); what orjson refuses (an integer beyond 64 bits) goes to json.dumps."""

    def __init__(self) -> None:
        super().__init__()
        self._default = self._dumps_kw["default"]  # structlog's fallback for what JSON has no type for

    def __call__(self, logger: WrappedLogger, name: str, event_dict: EventDict) -> str:
        try:
            return orjson.dumps(event_dict, default=self._default, option=orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:
            return json.dumps(event_dict, default=self._default)


def _timestamp(logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
    """The line's UTC time with microseconds, as structlog's ISO TimeStamper writes it (but always with
    six digits), formatted without a datetime per line."""
    event_dict["timestamp"] = micro_time()
    return event_dict


# structlog's registry of the context variables bind_contextvars made; while it is empty, merge_contextvars adds
# nothing to a line. Read where structlog keeps it; a structlog without it never takes the direct path.
_BOUND_CONTEXTVARS: dict[str, Any] | None = getattr(structlog.contextvars, "_CONTEXT_VARS", None)


def _direct_method(base: type, name: str, chain: list[Any]) -> Any:
    """The logger method ``name`` (a level's) that renders the line as ``chain`` (configure's processors, its
    last the renderer) would, without running the chain: what merge_contextvars, add_log_level, the timestamp
    and format_exc_info do to a line with no context, no exception and no positional arguments is to add
    ``level`` and ``timestamp`` in that order. Every scheduled pod logs a line ("bound", on the binding
    thread), so the chain's generic steps weighed on every bound pod (docs/performance-record.md). Any other
    call, and any logger whose processors are no longer this chain (structlog configured again by a user),
    takes the chain."""
    renderer = chain[-1]
    through_chain = getattr(base, name)

    def method(self: Any, event: str, *args: Any, **kw: Any) -> Any:
        if (args or self._context or self._processors is not chain or "exc_info" in kw
                or _BOUND_CONTEXTVARS is None or _BOUND_CONTEXTVARS):
            return through_chain(self, event, *args, **kw)
        kw["event"] = event
        kw["level"] = name
        kw["timestamp"] = micro_time()
        return getattr(self._logger, name)(renderer(self._logger, name, kw))

    method.__name__ = name
    return method


def _wrapper_class(level: int, chain: list[Any]) -> type:
    """structlog's filtering bound logger for ``level``, its enabled level methods rendering directly
    (``_direct_method``); the disabled ones stay structlog's no-ops."""
    base = structlog.make_filtering_bound_logger(level)
    methods = {name: _direct_method(base, name, chain)
               for number, name in ((logging.DEBUG, "debug"), (logging.INFO, "info"), (logging.WARNING, "warning"),
                                    (logging.ERROR, "error"), (logging.CRITICAL, "critical"))
               if number >= level}
    return type(f"Direct{base.__name__}", (base,), methods)


def configure(level: str = "INFO", json_lines: bool | None = None) -> None:
    if json_lines is None:
        json_lines = not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        _JSONRenderer()
        if json_lines
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    chain: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _timestamp,
        structlog.processors.format_exc_info,
        renderer,
    ]
    structlog.configure(
        processors=chain,
        wrapper_class=_wrapper_class(getattr(logging, level.upper(), logging.INFO), chain),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=True,
    )
    # kopf and the client log through stdlib logging; keep them to warnings.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    for name in ("kopf", "kubernetes", "urllib3", "aiohttp"):
        logging.getLogger(name).setLevel(logging.WARNING)
