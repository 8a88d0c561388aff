"""structlog set-up: JSON lines when not on a terminal, key-value pairs on a terminal."""

from __future__ import annotations

import logging
import sys

import structlog


class _CurrentStderr:
    """Writes to sys.stderr as it is at write time: a stream bound at configure time may have been replaced
    and closed since (pytest's capture between tests that run the CLI in-process)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure(level: str = "INFO", json_lines: bool | None = None) -> None:
    if json_lines is None:
        json_lines = not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json_lines else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper(), logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
    # kopf and the client log through stdlib logging; keep them to warnings.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    for name in ("kopf", "kubernetes", "urllib3", "aiohttp"):
        logging.getLogger(name).setLevel(logging.WARNING)
