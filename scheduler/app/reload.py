"""Configuration reload without restart.

A ConfigReloader polls where the configuration came from (the ``--config`` file, which a mounted
ConfigMap updates in place, or the ConfigMap of ``--config-configmap`` read with a single GET) and,
when the content changed, validates it exactly as at start. A valid configuration is handed to the
scheduler, which swaps its profiles in between two scheduling cycles (``Scheduler.reconfigure``). An
invalid one is refused: one log line and one Warning Event naming the field, and the running
configuration stays. ``py_scheduler_config_reloads_total{result}`` counts both.

Settings read only at start (leaderElection, clientConnection) keep their start values; a reload that
changes them says so in its log line.
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from scheduler.config.errors import ConfigError, FieldError
from scheduler.config.load import build_registry, load_text
from scheduler.config.types import SchedulerConfiguration
from scheduler.metrics import Metrics
from scheduler.model.timefmt import micro_time

log = structlog.get_logger(__name__)

SA_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
REASON_REFUSED = "ConfigurationRefused"
REASON_RELOADED = "ConfigurationReloaded"


class Reconfigurable(Protocol):
    config: SchedulerConfiguration

    def reconfigure(self, config: SchedulerConfiguration, registry: Any) -> None: ...


class EventWriter(Protocol):
    def create_event(self, namespace: str, body: dict[str, Any]) -> str: ...


@dataclass(slots=True)
class ReloadSource:
    """Where the running configuration came from: how to read it again, its name for messages, the
    version loaded at start, and the object reload Events regard (None: the scheduler's own Pod)."""

    read: Callable[[], tuple[str, str]]
    name: str
    version: str
    regarding: dict[str, str] | None = None


def file_reader(path: str) -> Callable[[], tuple[str, str]]:
    """Content and a version (its hash) of a file; a ConfigMap volume swaps it atomically."""

    def read() -> tuple[str, str]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        return text, hashlib.sha256(text.encode()).hexdigest()

    return read


def own_pod_reference() -> dict[str, str]:
    """The scheduler's Pod as the object Events about a file configuration regard: POD_NAME (else the
    hostname, which is the pod name in a Deployment) in POD_NAMESPACE (else the service account's)."""
    namespace = os.environ.get("POD_NAMESPACE", "")
    if not namespace and os.path.exists(SA_NAMESPACE_FILE):
        with open(SA_NAMESPACE_FILE, encoding="utf-8") as f:
            namespace = f.read().strip()
    return {"apiVersion": "v1", "kind": "Pod", "namespace": namespace or "default",
            "name": os.environ.get("POD_NAME") or socket.gethostname()}


class ConfigReloader:
    """Polls ``read`` every ``interval`` seconds from a background thread."""

    def __init__(
        self,
        sched: Reconfigurable,
        read: Callable[[], tuple[str, str]],
        source: str,
        scheduler_names: list[str] | None,
        *,
        initial_version: str = "",
        metrics: Metrics | None = None,
        events: EventWriter | None = None,
        regarding: dict[str, str] | None = None,
        interval: float = 2.0,
        allow_new_extenders: bool = True,
    ) -> None:
        self.sched = sched
        self.read = read
        self.source = source
        self.names = scheduler_names
        self.version = initial_version
        self.metrics = metrics
        self.events = events
        self.regarding = regarding or own_pod_reference()
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="config-reload", daemon=True)
        self._last_read_error = ""
        # Extenders receive every pod's spec and every node: a reload may not send them anywhere new.
        self._start_extenders: frozenset[str] | None = None if allow_new_extenders else frozenset(
            e.url_prefix for e in sched.config.extenders)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check_once()
                self._last_read_error = ""
            except Exception as exc:  # a source that cannot be read now may be readable later
                if str(exc) != self._last_read_error:  # once per distinct problem, not every poll
                    self._last_read_error = str(exc)
                    log.warning("configuration source unreadable; keeping the running configuration",
                                source=self.source, error=str(exc))

    def check_once(self) -> str | None:
        """Read the source; on a new version, reload or refuse. Returns "success", "refused" or None
        (unchanged). A refused version is not retried until the content changes again. Whatever the
        refusal's cause (an invalid field, a plugin module not allowed, an extender the start-up
        configuration did not have, a plugin that raised, even SystemExit), the running configuration
        stays and the refusal gets one log line, a Warning Event and the metric."""
        text, version = self.read()
        if version == self.version:
            return None
        self.version = version
        try:
            cfg = load_text(text, self.source, self.names)
            self._check_extenders(cfg)
            self.sched.reconfigure(cfg, build_registry(cfg))
        except (Exception, SystemExit) as exc:  # a plugin's import or constructor may raise anything
            message = f"configuration in {self.source} refused, the running one stays: {_fields(exc)}"
            log.error(message)
            self._record("refused", "Warning", REASON_REFUSED, message)
            return "refused"
        restart_only = _restart_only_changes(self.sched.config, cfg)
        log.info("configuration accepted; swapping it in between scheduling cycles", source=self.source,
                 profiles=[p.scheduler_name for p in cfg.profiles], needs_restart=restart_only or None)
        self._record("success", "Normal", REASON_RELOADED,
                     f"configuration in {self.source} reloaded: profiles {[p.scheduler_name for p in cfg.profiles]}")
        return "success"

    def _check_extenders(self, cfg: SchedulerConfiguration) -> None:
        """Refuse extenders (by urlPrefix) that the start-up configuration did not have, naming the field."""
        if self._start_extenders is None:
            return
        errors = [FieldError(f"extenders[{i}].urlPrefix",
                             f"{e.url_prefix!r} is not an extender of the start-up configuration: a reload may not "
                             "add extenders (restart, or start with --allow-reload-extenders)")
                  for i, e in enumerate(cfg.extenders) if e.url_prefix not in self._start_extenders]
        if errors:
            raise ConfigError(errors, self.source)

    def _record(self, result: str, type_: str, reason: str, note: str) -> None:
        if self.metrics is not None:
            self.metrics.config_reloads.labels(result).inc()
        if self.events is None:
            return
        body = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"py-scheduler-config.{time.time_ns():x}", "namespace": self.regarding["namespace"]},
            "eventTime": micro_time(), "reportingController": "py-scheduler",
            "reportingInstance": f"py-scheduler-{socket.gethostname()}", "action": "Reload", "reason": reason,
            "type": type_, "note": note[:1024], "regarding": self.regarding,
        }
        try:
            self.events.create_event(self.regarding["namespace"], body)
        except Exception as exc:  # the log line above already says what happened
            log.warning("could not record the configuration event", error=str(exc))


def _fields(exc: BaseException) -> str:
    if isinstance(exc, ConfigError):
        return "; ".join(str(e) for e in exc.errors)
    if isinstance(exc, ValueError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _restart_only_changes(old: SchedulerConfiguration, new: SchedulerConfiguration) -> list[str]:
    """Fields read only at start that differ (they apply at the next restart)."""
    fields = (("leaderElection", old.leader_election, new.leader_election),
              ("clientConnection", old.client_connection, new.client_connection))
    return [name for name, a, b in fields if a != b]
