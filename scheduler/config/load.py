"""Load a KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``) into a SchedulerConfiguration.

Why it looks like upstream: operators bring configs written for kube-scheduler; those must load
unchanged, resolve to the same plugins in the same order with the same weights, and be rejected
for the same reasons (strict decoding, v1 validation), with the field named.

Accepted document::

    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    parallelism: 16
    percentageOfNodesToScore: 0
    podInitialBackoffSeconds: 1
    podMaxBackoffSeconds: 10
    leaderElection: {leaderElect, leaseDuration: "15s", renewDeadline: "10s", retryPeriod: "2s",
                     resourceLock: leases, resourceNamespace, resourceName}
    clientConnection: {kubeconfig, qps, burst, contentType, acceptContentTypes}
    enableProfiling / enableContentionProfiling / delayCacheUntilActive: accepted, not used
    extenders: [...]            # HTTP extenders (Extender); validated as upstream: weight, one binder, resources
    profiles:
    - schedulerName: ...
      percentageOfNodesToScore: ...
      plugins: {<extension point>|multiPoint: {enabled: [{name, weight}], disabled: [{name}]}}
      pluginConfig: [{name, args}]
    pyScheduler:                # our extensions; not part of upstream's API
      podMaxInUnschedulablePodsSeconds: 300   # upstream: the deprecated flag --pod-max-in-unschedulable-pods-duration
      assumedPodTTLSeconds: 0                  # 0 = assumed pods never expire (upstream); the seed era used 30
      registry: {MyPlugin: "pkg.module:MyPlugin"}   # out-of-tree plugins, by import path
      opportunisticBatching: true              # alike pods reuse the previous one's verdicts and scores
                                               # (same decisions; framework/batch.py); false turns it off

Differences from upstream, on purpose:

* Scheduler name. With no file, one profile per requested scheduler name (default ``["py-scheduler"]``).
  A file with no profiles gets the same. A file with exactly one profile without ``schedulerName`` gets
  the first requested name (``"py-scheduler"`` by default) where upstream uses ``"default-scheduler"``:
  this scheduler runs next to kube-scheduler and must not claim its pods by default.
* A plugin the registry cannot provide is an error naming it and where it was enabled.
* Score weights: 0 or absent resolves to 1 (upstream); any explicit positive number is kept as given with
  no upper bound other than upstream's overflow check (Σ weight·100 ≤ MaxInt64). Negative weights are
  rejected (upstream silently accepts them).
* pluginConfig for a plugin that is not enabled is validated (as upstream) and then ignored (upstream
  ignores it too); the resolved ``Profile.plugin_config`` holds args for every enabled plugin: its typed
  Args (``types_pluginargs``), the mapping as given for plugins without an args type (``{}`` if none).
* VolumeBinding does not score (upstream only scores with the alpha
  StorageCapacityScoring gate) — see ``plugins/names``.

The parts: ``strict_yaml`` (the document), ``decode`` (its sections), ``multipoint`` (a profile's plugins,
with the resolution rules), ``registry`` (the plugins by name).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from scheduler.config.args import API_VERSION
from scheduler.config.decode import DEFAULT_SCHEDULER_NAME, KIND, Decoder, apply_extender_ignored_resources
from scheduler.config.errors import ConfigError, ErrorList, FieldError
from scheduler.config.registry import Registry, build_registry
from scheduler.config.strict_yaml import parse_document
from scheduler.config.types import SchedulerConfiguration

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "ConfigError",
    "apply_extender_ignored_resources",
    "build_registry",
    "load",
    "load_dict",
    "load_text",
    "parse_document",
]



def load(
    path: str | os.PathLike[str] | None,
    scheduler_names: list[str] | None = None,
    *,
    registry: Registry | None = None,
) -> SchedulerConfiguration:
    """Read and resolve the config file at ``path``; with None, the defaults for ``scheduler_names``.

    Raises ConfigError (with the file name) for unreadable files, YAML errors (with line and column)
    and every validation problem (with the field path).
    """
    if path is None:
        return load_dict(None, scheduler_names, registry=registry)
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError([FieldError("", f"cannot read {source}: {e.strerror or e}")], source) from None
    return load_text(text, source, scheduler_names, registry=registry)


def load_text(
    text: str, source: str, scheduler_names: list[str] | None = None, *, registry: Registry | None = None
) -> SchedulerConfiguration:
    """A configuration document already read (a file's or a ConfigMap's content); ``source`` names it.

    An empty document is refused for its missing apiVersion and kind, as kube-scheduler refuses an empty
    file, rather than read as "all defaults" (load_dict's None): a reload that caught a file between its
    truncation and its write would otherwise swap every profile for the default one."""
    data = parse_document(text, source)
    return load_dict({} if data is None else data, scheduler_names, registry=registry, source=source)


def load_dict(
    data: Mapping[str, Any] | None,
    scheduler_names: list[str] | None = None,
    *,
    registry: Registry | None = None,
    source: str = "",
) -> SchedulerConfiguration:
    """Resolve an already parsed config document (None: no file, all defaults).

    ``registry`` defaults to the in-tree registry; config ``pyScheduler.registry`` entries are added to a
    copy of it. Raises ConfigError listing every problem found.
    """
    names = list(scheduler_names) if scheduler_names else [DEFAULT_SCHEDULER_NAME]
    errs = ErrorList()
    if data is None:
        data = {"apiVersion": API_VERSION, "kind": KIND}
    if not isinstance(data, Mapping):
        errs.add("", f"the document must be an object (a KubeSchedulerConfiguration), got {type(data).__name__}")
        errs.raise_if_any(source)
    cfg = Decoder(errs, (registry or Registry()).copy(), names).load(data)
    errs.raise_if_any(source)
    return cfg
