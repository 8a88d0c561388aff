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
* ``DynamicResources`` is in the default set but allocates nothing: pods with resource claims are
  rejected (known limitation); VolumeBinding does not score (upstream only scores with the alpha
  StorageCapacityScoring gate) — see ``plugins/names``.

Plugin resolution follows upstream exactly (``default_plugins.go`` mergePluginSet, then the
framework's MultiPoint expansion):

1. ``multiPoint`` is merged into the default MultiPoint list: ``disabled: [{name: "*"}]`` drops every
   default; a disabled name drops that default; a default listed in ``enabled`` is replaced in place
   (default order kept, the new entry's weight taken, so a re-listed default without weight scores 1);
   other enabled plugins are appended in the given order. A plugin disabled in multiPoint is therefore
   expanded to no extension point.
2. Each extension point starts from its own ``enabled`` list (checked: the plugin implements the point,
   no duplicates). Unless that point has ``disabled: "*"``, the merged MultiPoint plugins implementing the
   point are added, skipping those disabled at the point. A plugin both in MultiPoint and in the point's
   own list is an explicit override: the final order is overrides (in the point's order), then MultiPoint
   plugins, then the point's remaining plugins.
3. Score weights come from the ``score`` list first, then from MultiPoint (specific > explicit multiPoint >
   default multiPoint).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from scheduler.config.args import (
    API_VERSION,
    check_keys,
    qualified_name_problem,
    resolve_args,
    want_bool,
    want_int,
    want_list,
    want_map,
    want_number,
    want_str,
)
from scheduler.config.defaults import DEFAULT_MULTIPOINT, INVALID_IN_V1, extension_points_of_class
from scheduler.config.duration import parse_duration
from scheduler.config.errors import ConfigError, ErrorList, FieldError
from scheduler.config.registry import DeclaresExtensionPoints, PluginNotAvailable, Registry, build_registry
from scheduler.config.types import (
    EXTENSION_POINTS,
    MAX_NODE_SCORE,
    MAX_TOTAL_SCORE,
    ClientConnection,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    LeaderElection,
    PluginRef,
    Profile,
    SchedulerConfiguration,
)
from scheduler.config.types_pluginargs import ARGS_TYPES, NodeResourcesFitArgs
from scheduler.plugins.names import IN_TREE_BY_NAME

__all__ = ["DEFAULT_SCHEDULER_NAME", "KIND", "ConfigError", "build_registry", "load", "load_dict", "load_text"]

log = logging.getLogger(__name__)

KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "py-scheduler"
EXTENSION_KEY = "pyScheduler"

_TOP_KEYS = frozenset(
    {
        "apiVersion",
        "kind",
        "parallelism",
        "leaderElection",
        "clientConnection",
        "enableProfiling",
        "enableContentionProfiling",
        "percentageOfNodesToScore",
        "podInitialBackoffSeconds",
        "podMaxBackoffSeconds",
        "profiles",
        "extenders",
        "delayCacheUntilActive",
        EXTENSION_KEY,
    }
)
_PROFILE_KEYS = frozenset({"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"})
_LEADER_KEYS = frozenset(
    {
        "leaderElect",
        "leaseDuration",
        "renewDeadline",
        "retryPeriod",
        "resourceLock",
        "resourceName",
        "resourceNamespace",
    }
)
_CLIENT_KEYS = frozenset({"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"})
_EXTENDER_KEYS = frozenset(
    {
        "urlPrefix",
        "filterVerb",
        "preemptVerb",
        "prioritizeVerb",
        "weight",
        "bindVerb",
        "enableHTTPS",
        "tlsConfig",
        "httpTimeout",
        "nodeCacheCapable",
        "managedResources",
        "ignorable",
    }
)
_EXTENDER_STRINGS = (
    ("urlPrefix", "url_prefix"),
    ("filterVerb", "filter_verb"),
    ("preemptVerb", "preempt_verb"),
    ("prioritizeVerb", "prioritize_verb"),
    ("bindVerb", "bind_verb"),
)
_TLS_KEYS = frozenset({"insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData"})
_EXT_KEYS = frozenset({"podMaxInUnschedulablePodsSeconds", "assumedPodTTLSeconds", "registry",
                       "opportunisticBatching"})


# --------------------------------------------------------------------------------------------- YAML


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys, as upstream's strict decoding does."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, list | dict):
            continue  # unhashable keys are rejected by the base constructor with its own message
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_document(text: str, source: str) -> Any:
    """YAML (or JSON, a subset) with duplicate keys rejected; errors name the line and column."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        problem = getattr(e, "problem", None) or str(e)
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        raise ConfigError([FieldError("", f"{where}: YAML error: {problem}")], source) from None


# --------------------------------------------------------------------------------------------- public API


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
    """A configuration document already read (a file's or a ConfigMap's content); ``source`` names it."""
    return load_dict(parse_document(text, source), scheduler_names, registry=registry, source=source)


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
    cfg = _Loader(errs, (registry or Registry()).copy(), names).load(data)
    errs.raise_if_any(source)
    return cfg


def apply_extender_ignored_resources(cfg: SchedulerConfiguration) -> None:
    """Resources an extender manages with ``ignoredByScheduler`` become NodeResourcesFit's
    ``ignoredResources`` in every profile, replacing what pluginConfig said (upstream buildExtenders:
    the extenders' list takes precedence)."""
    ignored = [r.name for ext in cfg.extenders for r in ext.managed_resources if r.ignored_by_scheduler]
    if not ignored:
        return
    for profile in cfg.profiles:
        args = profile.plugin_config.get("NodeResourcesFit")
        if isinstance(args, NodeResourcesFitArgs):
            profile.plugin_config["NodeResourcesFit"] = dataclasses.replace(args, ignored_resources=tuple(ignored))


# --------------------------------------------------------------------------------------------- internals


@dataclass(slots=True)
class _Entry:
    name: str
    weight: int | None
    path: str  # where it was enabled ("" for the default set)


@dataclass(slots=True)
class _PluginSet:
    enabled: list[_Entry] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


class _Loader:
    def __init__(self, errs: ErrorList, registry: Registry, names: list[str]) -> None:
        self.errs = errs
        self.registry = registry
        self.names = names
        self.plugin_registry: dict[str, str] = {}
        self._points_cache: dict[str, frozenset[str] | None] = {}
        self._missing: dict[str, str] = {}  # plugin -> why it cannot be provided

    # ---- top level

    def load(self, d: Mapping[str, Any]) -> SchedulerConfiguration:
        e = self.errs
        api = d.get("apiVersion")
        if api is None:
            e.add("apiVersion", f"required: must be {API_VERSION!r}")
        elif api != API_VERSION:
            e.add(
                "apiVersion",
                f"unsupported value {api!r}: only {API_VERSION!r} is supported "
                "(v1beta2 and v1beta3 were removed upstream in 1.28 and 1.29)",
            )
        kind = d.get("kind")
        if kind != KIND:
            e.add(
                "kind",
                f"required: must be {KIND!r}" if kind is None else f"unsupported value {kind!r}: must be {KIND!r}",
            )
        check_keys(d, _TOP_KEYS, "", e)

        cfg = SchedulerConfiguration(profiles=[])
        self._extension(d.get(EXTENSION_KEY), cfg)
        cfg.parallelism = self._int_field(d, "parallelism", 16, "parallelism")
        if cfg.parallelism <= 0:
            e.add("parallelism", f"invalid value {cfg.parallelism}: should be an integer value greater than zero")
        cfg.percentage_of_nodes_to_score = (
            self._percentage(d.get("percentageOfNodesToScore"), "percentageOfNodesToScore") or 0
        )
        initial = self._int_field(d, "podInitialBackoffSeconds", 1, "podInitialBackoffSeconds")
        maximum = self._int_field(d, "podMaxBackoffSeconds", 10, "podMaxBackoffSeconds")
        if initial <= 0:
            e.add("podInitialBackoffSeconds", f"invalid value {initial}: must be greater than 0")
        if maximum < initial:
            e.add(
                "podMaxBackoffSeconds",
                f"invalid value {maximum}: must be greater than or equal to podInitialBackoffSeconds ({initial})",
            )
        cfg.pod_initial_backoff_seconds = float(initial)
        cfg.pod_max_backoff_seconds = float(maximum)
        for key in ("enableProfiling", "enableContentionProfiling", "delayCacheUntilActive"):
            if d.get(key) is not None:
                want_bool(d[key], key, e)
        cfg.leader_election = self._leader_election(d.get("leaderElection"))
        cfg.client_connection = self._client_connection(d.get("clientConnection"))
        cfg.extenders = self._extenders(d.get("extenders"))

        resolved = self._profiles(d.get("profiles"))
        self._validate_common_queue_sort(resolved)
        cfg.profiles = resolved
        cfg.plugin_registry = dict(self.plugin_registry)
        apply_extender_ignored_resources(cfg)
        return cfg

    def _int_field(self, d: Mapping[str, Any], key: str, default: int, path: str) -> int:
        v = d.get(key)
        if v is None:
            return default
        got = want_int(v, path, self.errs)
        return default if got is None else got

    def _percentage(self, v: Any, path: str) -> int | None:
        if v is None:
            return None
        p = want_int(v, path, self.errs)
        if p is not None and not 0 <= p <= 100:
            self.errs.add(path, f"invalid value {p}: not in valid range [0-100]")
        return p

    def _extension(self, raw: Any, cfg: SchedulerConfiguration) -> None:
        e = self.errs
        m = want_map(raw, EXTENSION_KEY, e)
        if not m:
            return
        check_keys(m, _EXT_KEYS, EXTENSION_KEY, e)
        if m.get("podMaxInUnschedulablePodsSeconds") is not None:
            p = f"{EXTENSION_KEY}.podMaxInUnschedulablePodsSeconds"
            v = want_number(m["podMaxInUnschedulablePodsSeconds"], p, e)
            if v is not None and v <= 0:
                e.add(p, f"invalid value {v:g}: must be greater than 0")
            elif v is not None:
                cfg.pod_max_in_unschedulable_pods_seconds = v
        if m.get("assumedPodTTLSeconds") is not None:
            p = f"{EXTENSION_KEY}.assumedPodTTLSeconds"
            v = want_number(m["assumedPodTTLSeconds"], p, e)
            if v is not None and v < 0:
                e.add(p, f"invalid value {v:g}: must not be negative (0 = never expire)")
            elif v is not None:
                cfg.assumed_pod_ttl_seconds = v
        if m.get("opportunisticBatching") is not None:
            v = want_bool(m["opportunisticBatching"], f"{EXTENSION_KEY}.opportunisticBatching", e)
            if v is not None:
                cfg.opportunistic_batching = v
        reg = want_map(m.get("registry"), f"{EXTENSION_KEY}.registry", e) or {}
        for name, target in reg.items():
            p = f"{EXTENSION_KEY}.registry.{name}"
            if not isinstance(name, str) or not name:
                e.add(p, "plugin name must be a non-empty string")
                continue
            if want_str(target, p, e) is None:
                continue
            try:
                self.registry.register(name, target)
            except ValueError as err:
                e.add(p, str(err))
                continue
            try:
                self.registry.factory(name)
            except PluginNotAvailable as err:
                e.add(p, f"cannot import {target!r}: {err.reason}")
                continue
            except Exception as err:  # an import-time failure in the plugin's own module
                e.add(p, f"cannot import {target!r}: {type(err).__name__}: {err}")
                continue
            self.plugin_registry[name] = target

    def _leader_election(self, raw: Any) -> LeaderElection:
        e, p = self.errs, "leaderElection"
        le = LeaderElection()
        m = want_map(raw, p, e)
        if not m:
            return le
        check_keys(m, _LEADER_KEYS, p, e)
        if m.get("leaderElect") is not None:
            b = want_bool(m["leaderElect"], f"{p}.leaderElect", e)
            le.leader_elect = le.leader_elect if b is None else b
        for key, attr in (
            ("leaseDuration", "lease_duration_seconds"),
            ("renewDeadline", "renew_deadline_seconds"),
            ("retryPeriod", "retry_period_seconds"),
        ):
            if m.get(key) is None:
                continue
            try:
                setattr(le, attr, parse_duration(m[key]))
            except ValueError as err:
                e.add(f"{p}.{key}", str(err))
        for key, attr in (("resourceName", "resource_name"), ("resourceNamespace", "resource_namespace")):
            if m.get(key):  # "" keeps the default, as upstream's defaulting
                s = want_str(m[key], f"{p}.{key}", e)
                if s is not None:
                    setattr(le, attr, s)
        lock = m.get("resourceLock") or "leases"
        if le.leader_elect:
            if lock != "leases":
                e.add(f"{p}.resourceLock", f'invalid value {lock!r}: resourceLock value must be "leases"')
            for attr, key in (
                ("lease_duration_seconds", "leaseDuration"),
                ("renew_deadline_seconds", "renewDeadline"),
                ("retry_period_seconds", "retryPeriod"),
            ):
                if getattr(le, attr) <= 0:
                    e.add(f"{p}.{key}", "must be greater than zero")
            if le.lease_duration_seconds <= le.renew_deadline_seconds:
                e.add(f"{p}.leaseDuration", "LeaseDuration must be greater than RenewDeadline")
        return le

    def _client_connection(self, raw: Any) -> ClientConnection:
        e, p = self.errs, "clientConnection"
        cc = ClientConnection()
        m = want_map(raw, p, e)
        if not m:
            return cc
        check_keys(m, _CLIENT_KEYS, p, e)
        for key in ("kubeconfig", "acceptContentTypes", "contentType"):
            if m.get(key) is not None:
                want_str(m[key], f"{p}.{key}", e)
        if m.get("kubeconfig"):
            cc.kubeconfig = str(m["kubeconfig"])
        if m.get("qps") is not None:
            q = want_number(m["qps"], f"{p}.qps", e)
            if q:  # 0 -> scheduler default 50, as upstream
                cc.qps = q
        if m.get("burst") is not None:
            b = want_int(m["burst"], f"{p}.burst", e)
            if b is not None and b < 0:
                e.add(f"{p}.burst", f"invalid value {b}: must be non-negative")
            elif b:  # 0 -> scheduler default 100
                cc.burst = b
        return cc

    def _extenders(self, raw: Any) -> list[Extender]:
        e = self.errs
        items = want_list(raw, "extenders", e) or []
        out: list[Extender] = []
        binders = 0
        managed: set[str] = set()
        for i, item in enumerate(items):
            p = f"extenders[{i}]"
            m = want_map(item, p, e)
            if m is None:
                continue
            check_keys(m, _EXTENDER_KEYS, p, e)
            ext = Extender(url_prefix="")
            for key, attr in _EXTENDER_STRINGS:
                if m.get(key) is not None:
                    setattr(ext, attr, want_str(m[key], f"{p}.{key}", e) or "")
            for key, attr in (("enableHTTPS", "enable_https"), ("nodeCacheCapable", "node_cache_capable"),
                              ("ignorable", "ignorable")):
                if m.get(key) is not None:
                    setattr(ext, attr, bool(want_bool(m[key], f"{p}.{key}", e)))
            if not ext.url_prefix.startswith(("http://", "https://")):
                # Upstream accepts anything and fails every call; refusing at start names the problem.
                e.add(f"{p}.urlPrefix", f"invalid value {ext.url_prefix!r}: must be an http:// or https:// URL")
            if m.get("weight") is not None:
                ext.weight = want_int(m["weight"], f"{p}.weight", e) or 0
            if ext.prioritize_verb and ext.weight <= 0:
                e.add(f"{p}.weight", f"invalid value {ext.weight}: must have a positive weight applied to it")
            if ext.bind_verb:
                binders += 1
            if m.get("httpTimeout") is not None:
                try:
                    timeout = parse_duration(m["httpTimeout"])
                except ValueError as err:
                    e.add(f"{p}.httpTimeout", str(err))
                else:
                    if timeout < 0:
                        e.add(f"{p}.httpTimeout", f"invalid value {m['httpTimeout']!r}: must not be negative")
                    elif timeout > 0:  # 0 means the default, as upstream
                        ext.http_timeout_seconds = timeout
            if m.get("tlsConfig") is not None:
                ext.tls_config = self._extender_tls(m["tlsConfig"], f"{p}.tlsConfig")
            for j, res in enumerate(want_list(m.get("managedResources"), f"{p}.managedResources", e) or []):
                resource = self._managed_resource(res, f"{p}.managedResources[{j}]", managed)
                if resource is not None:
                    ext.managed_resources.append(resource)
            out.append(ext)
        if binders > 1:
            e.add("extenders", f"found {binders} extenders implementing bind: only one extender can implement bind")
        return out

    def _extender_tls(self, raw: Any, p: str) -> ExtenderTLSConfig:
        e = self.errs
        tls = ExtenderTLSConfig()
        m = want_map(raw, p, e) or {}
        check_keys(m, _TLS_KEYS, p, e)
        if m.get("insecure") is not None:
            tls.insecure = bool(want_bool(m["insecure"], f"{p}.insecure", e))
        for key, attr in (("serverName", "server_name"), ("certFile", "cert_file"), ("keyFile", "key_file"),
                          ("caFile", "ca_file")):
            if m.get(key) is not None:
                setattr(tls, attr, want_str(m[key], f"{p}.{key}", e) or "")
        for key, attr in (("certData", "cert_data"), ("keyData", "key_data"), ("caData", "ca_data")):
            text = want_str(m[key], f"{p}.{key}", e) if m.get(key) is not None else None
            if text:
                try:  # []byte fields are base64 in JSON and YAML, as Go encodes them
                    setattr(tls, attr, base64.b64decode(text, validate=True))
                except (binascii.Error, ValueError):
                    e.add(f"{p}.{key}", "illegal base64 data: must be the base64 encoding of the PEM bytes")
        return tls

    def _managed_resource(self, raw: Any, rp: str, seen: set[str]) -> ExtenderManagedResource | None:
        e = self.errs
        r = want_map(raw, rp, e)
        if r is None:
            return None
        check_keys(r, {"name", "ignoredByScheduler"}, rp, e)
        name = want_str(r.get("name"), f"{rp}.name", e)
        if name is None:
            return None
        if (problem := qualified_name_problem(name)) is not None:
            e.add(f"{rp}.name", f"invalid value {name!r}: {problem}")
        elif "/" not in name or name.startswith(("kubernetes.io/", "requests.")):
            e.add(f"{rp}.name", f"invalid value {name!r}: is an invalid extended resource name")
        if name in seen:
            e.add(f"{rp}.name", f"invalid value {name!r}: duplicate extender managed resource name")
        seen.add(name)
        ignored = r.get("ignoredByScheduler")
        return ExtenderManagedResource(name, bool(want_bool(ignored, f"{rp}.ignoredByScheduler", e))
                                       if ignored is not None else False)

    # ---- profiles

    def _profiles(self, raw: Any) -> list[Profile]:
        e = self.errs
        items = want_list(raw, "profiles", e)
        if items is None:
            return []
        items = [{} if item is None else item for item in items]
        if not items:
            items = [{"schedulerName": n} for n in self.names]
        elif len(items) == 1 and isinstance(items[0], Mapping) and items[0].get("schedulerName") is None:
            items = [{**items[0], "schedulerName": self.names[0]}]
        out: list[Profile] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            p = f"profiles[{i}]"
            m = want_map(item, p, e)
            if m is None:
                continue
            check_keys(m, _PROFILE_KEYS, p, e)
            name = m.get("schedulerName")
            if name is None or name == "":
                e.add(f"{p}.schedulerName", "required value")
                name = ""
            elif want_str(name, f"{p}.schedulerName", e) is None:
                name = ""
            elif name in seen:
                e.add(f"{p}.schedulerName", f"duplicate value {name!r} (also profiles[{seen[name]}].schedulerName)")
            else:
                seen[name] = i
            pct = self._percentage(m.get("percentageOfNodesToScore"), f"{p}.percentageOfNodesToScore")
            plugins = self._resolve_plugins(m.get("plugins"), f"{p}.plugins")
            plugin_config = self._plugin_config(m.get("pluginConfig"), f"{p}.pluginConfig", plugins)
            out.append(Profile(str(name), plugins, plugin_config, pct))
        return out

    def _plugin_set(self, raw: Any, path: str) -> _PluginSet:
        e = self.errs
        ps = _PluginSet()
        m = want_map(raw, path, e)
        if not m:
            return ps
        check_keys(m, {"enabled", "disabled"}, path, e)
        for i, item in enumerate(want_list(m.get("enabled"), f"{path}.enabled", e) or []):
            p = f"{path}.enabled[{i}]"
            pm = want_map(item, p, e)
            if pm is None:
                continue
            check_keys(pm, {"name", "weight"}, p, e)
            name = pm.get("name")
            if not isinstance(name, str) or not name:
                e.add(f"{p}.name", "required: a non-empty plugin name")
                continue
            if name in INVALID_IN_V1:
                e.add(f"{p}.name", f"invalid value {name!r}: was invalid in version {API_VERSION!r}")
                continue
            weight: int | None = None
            if pm.get("weight") is not None:
                weight = want_int(pm["weight"], f"{p}.weight", e)
                if weight is not None and weight < 0:
                    e.add(f"{p}.weight", f"invalid value {weight}: must not be negative (0 or absent means 1)")
                    weight = None
            ps.enabled.append(_Entry(name, weight, p))
        for i, item in enumerate(want_list(m.get("disabled"), f"{path}.disabled", e) or []):
            p = f"{path}.disabled[{i}]"
            pm = want_map(item, p, e)
            if pm is None:
                continue
            check_keys(pm, {"name", "weight"}, p, e)
            name = pm.get("name")
            if not isinstance(name, str) or not name:
                e.add(f"{p}.name", "required: a non-empty plugin name or '*'")
                continue
            ps.disabled.append(name)
        return ps

    def _points_of(self, name: str) -> frozenset[str] | None:
        """Extension points ``name`` implements; None when unknowable (a non-class factory) or missing.

        Missing plugins are recorded in ``self._missing`` (with the reason) for the caller to judge.
        """
        if name in self._points_cache:
            return self._points_cache[name]
        in_tree = IN_TREE_BY_NAME.get(name)
        points: frozenset[str] | None = in_tree.points if in_tree is not None else None
        if points is None:
            if not self.registry.known(name):
                self._missing[name] = (
                    "no such plugin (not in-tree, not in pyScheduler.registry, not 'pkg.module:Class')"
                )
            else:
                try:
                    obj = self.registry.factory(name)
                except PluginNotAvailable as err:
                    self._missing[name] = err.reason
                except Exception as err:  # the plugin's own module failed to import
                    self._missing[name] = f"import failed: {type(err).__name__}: {err}"
                else:
                    if isinstance(obj, type):
                        points = extension_points_of_class(obj)
                    elif isinstance(obj, DeclaresExtensionPoints):
                        points = frozenset(obj.extension_points)
        self._points_cache[name] = points
        return points

    def _exists(self, name: str) -> bool:
        """Known to the registry (in-tree plugins by the table, whether or not their module imports)."""
        if name in IN_TREE_BY_NAME:
            return True
        self._points_of(name)
        return name not in self._missing

    def _resolve_plugins(self, raw: Any, path: str) -> dict[str, list[PluginRef]]:
        e = self.errs
        m = want_map(raw, path, e) or {}
        check_keys(m, {*EXTENSION_POINTS, "multiPoint"}, path, e)
        enabled_at: dict[str, str] = {}

        # 1. mergePluginSet(default multiPoint, user multiPoint)
        user_mp = self._plugin_set(m.get("multiPoint"), f"{path}.multiPoint")
        mp_disabled = set(user_mp.disabled)
        user_by_name = {en.name: en for en in user_mp.enabled}  # last one wins, as upstream's map
        replaced: set[int] = set()
        multipoint: list[_Entry] = []
        if "*" not in mp_disabled:
            for default in DEFAULT_MULTIPOINT:
                name = default.name
                if name in mp_disabled:
                    continue
                if name in user_by_name:
                    custom = user_by_name[name]
                    replaced.add(id(custom))
                    multipoint.append(custom)
                else:
                    multipoint.append(_Entry(name, default.default_weight or None, ""))
        multipoint += [en for en in user_mp.enabled if id(en) not in replaced]
        mp_seen: set[str] = set()
        for en in multipoint:
            enabled_at.setdefault(en.name, en.path)
            if en.name in mp_seen:
                e.add(f"{en.path}.name", f"plugin {en.name!r} already registered in multiPoint")
            mp_seen.add(en.name)
            if not self._exists(en.name):
                continue
            if self._points_of(en.name) is None:
                e.add(
                    f"{en.path}.name",
                    f"cannot tell which extension points plugin {en.name!r} implements (its factory is not a "
                    "class): enable it at specific extension points instead of multiPoint",
                )

        # 2. per extension point: own list + MultiPoint expansion
        specific: dict[str, _PluginSet] = {}
        resolved: dict[str, list[_Entry]] = {}
        for point in EXTENSION_POINTS:
            ps = self._plugin_set(m.get(point), f"{path}.{point}")
            specific[point] = ps
            own: list[_Entry] = []
            own_names: set[str] = set()
            for en in ps.enabled:
                enabled_at.setdefault(en.name, en.path)
                if en.name in own_names:
                    e.add(f"{en.path}.name", f"plugin {en.name!r} already registered as {point}")
                    continue
                own_names.add(en.name)
                if self._exists(en.name):
                    points = self._points_of(en.name)
                    if points is not None and point not in points:
                        e.add(f"{en.path}.name", f"plugin {en.name!r} does not extend the {point} extension point")
                        continue
                own.append(en)
            if "*" in ps.disabled:
                resolved[point] = own
                continue
            disabled = set(ps.disabled)
            overrides: set[str] = set()
            from_mp: list[_Entry] = []
            for en in multipoint:
                points = self._points_of(en.name)
                if points is None or point not in points or en.name in disabled:
                    continue
                if en.name in own_names:
                    overrides.add(en.name)
                elif en.name not in {x.name for x in from_mp}:
                    from_mp.append(en)
            resolved[point] = (
                [en for en in own if en.name in overrides] + from_mp + [en for en in own if en.name not in overrides]
            )

        # 3. score weights: the score list first, then multiPoint; 0/absent -> 1
        weights: dict[str, int] = {}
        for en in specific["score"].enabled + multipoint:
            points = self._points_of(en.name)
            if en.name in weights or (points is not None and "score" not in points):
                continue
            weights[en.name] = en.weight or 1
        total = 0
        for en in resolved["score"]:
            total += weights.get(en.name, 1) * MAX_NODE_SCORE
        if total > MAX_TOTAL_SCORE:
            e.add(f"{path}.score", "total score of Score plugins could overflow")

        # Every enabled plugin must be providable (upstream: "... does not exist").
        for name, where in enabled_at.items():
            reason = self._missing.get(name)
            if reason is None and name in IN_TREE_BY_NAME:
                reason = self._unavailable_reason(name)
            if reason is not None:
                e.add(f"{where}.name" if where else path, f"plugin {name!r} is not available: {reason}")

        plugins = {
            point: [PluginRef(en.name, weights.get(en.name, 1) if point == "score" else 0) for en in entries]
            for point, entries in resolved.items()
        }
        n_sort = len(plugins["queueSort"])
        if n_sort != 1:
            e.add(f"{path}.queueSort", f"only one queue sort plugin required, but got {n_sort}")
        if not plugins["bind"]:
            e.add(f"{path}.bind", "at least one bind plugin is needed")
        return plugins

    def _plugin_config(
        self, raw: Any, path: str, plugins: Mapping[str, Sequence[PluginRef]]
    ) -> dict[str, Any]:
        e = self.errs
        enabled: list[str] = []
        for refs in plugins.values():
            for ref in refs:
                if ref.name not in enabled:
                    enabled.append(ref.name)
        given: dict[str, tuple[Any, str]] = {}
        for i, item in enumerate(want_list(raw, path, e) or []):
            p = f"{path}[{i}]"
            m = want_map(item, p, e)
            if m is None:
                continue
            check_keys(m, {"name", "args"}, p, e)
            name = m.get("name")
            if not isinstance(name, str) or not name:
                e.add(f"{p}.name", "required: a non-empty plugin name")
                continue
            if name in given:
                e.add(p, f"duplicate value {name!r}")
                continue
            if name in INVALID_IN_V1:
                e.add(p, f"invalid value {name!r}: was invalid in version {API_VERSION!r}")
                continue
            given[name] = (m.get("args"), f"{p}.args")
        out: dict[str, Any] = {}
        for name in enabled:
            args, apath = given.get(name, (None, f"{path}[{name}].args"))
            out[name] = resolve_args(self._args_type(name), args, apath, e)
        for name, (args, apath) in given.items():
            if name not in out:
                resolve_args(self._args_type(name), args, apath, e)  # validated as upstream, then ignored
                log.warning("pluginConfig for plugin %r ignored: the plugin is not enabled (%s)", name, apath)
        return out

    def _validate_common_queue_sort(self, profiles: list[Profile]) -> None:
        """All profiles share one queue, so they must sort it the same way (upstream validation)."""
        if len(profiles) < 2:
            return
        first = profiles[0]
        canon = [r.name for r in first.plugins["queueSort"]]
        canon_args = {n: first.plugin_config.get(n) for n in canon}
        for i, prof in enumerate(profiles[1:], start=1):
            names = [r.name for r in prof.plugins["queueSort"]]
            if names != canon:
                self.errs.add(
                    f"profiles[{i}].plugins.queueSort",
                    f"invalid value {names}: must be the same for all profiles (profiles[0] uses {canon})",
                )
            elif {n: prof.plugin_config.get(n) for n in names} != canon_args:
                self.errs.add(f"profiles[{i}].pluginConfig", "queueSort plugin args must be the same for all profiles")

    @staticmethod
    def _args_type(name: str) -> type | None:
        return ARGS_TYPES.get(name)

    def _unavailable_reason(self, name: str) -> str | None:
        """Why the registry cannot provide ``name`` (None: it can). Cached: imports happen once."""
        if name in self._missing:
            return self._missing[name]
        try:
            self.registry.factory(name)
        except PluginNotAvailable as err:
            self._missing[name] = err.reason
            return err.reason
        except Exception as err:  # the module exists but fails to import: a bug in the plugin
            reason = f"import failed: {type(err).__name__}: {err}"
            self._missing[name] = reason
            self.errs.add("", f"plugin {name!r}: {reason}")
            return reason
        return None
