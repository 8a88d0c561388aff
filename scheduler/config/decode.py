"""The sections of a KubeSchedulerConfiguration decoded and validated as upstream's v1 defaulting and
validation do (``pkg/scheduler/apis/config/v1/defaults.go``, ``pkg/scheduler/apis/config/validation/validation.go``):
the top level, leaderElection, clientConnection, extenders, profiles with their pluginConfig, and our ``pyScheduler``
extension. A profile's ``plugins`` section is ``multipoint``'s.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.config.args import (
    API_VERSION,
    check_keys,
    named_items,
    qualified_name_problem,
    resolve_args,
    want_bool,
    want_int,
    want_list,
    want_map,
    want_number,
    want_str,
)
from scheduler.config.defaults import INVALID_IN_V1
from scheduler.config.duration import parse_duration
from scheduler.config.errors import ErrorList
from scheduler.config.multipoint import PluginResolver
from scheduler.config.registry import PluginNotAvailable, Registry
from scheduler.config.types import (
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

__all__ = ["DEFAULT_SCHEDULER_NAME", "KIND", "Decoder", "apply_extender_ignored_resources"]

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


class Decoder:
    """Decodes and validates a parsed document section by section into a SchedulerConfiguration; every
    problem is added to ``errs`` with its field path, decoding goes on to find the others."""

    def __init__(self, errs: ErrorList, registry: Registry, names: list[str]) -> None:
        self.errs = errs
        self.registry = registry
        self.names = names
        self.plugin_registry: dict[str, str] = {}
        self.plugins = PluginResolver(errs, registry)

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
            plugins = self.plugins.resolve(m.get("plugins"), f"{p}.plugins")
            plugin_config = self._plugin_config(m.get("pluginConfig"), f"{p}.pluginConfig", plugins)
            out.append(Profile(str(name), plugins, plugin_config, pct))
        return out

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
        for name, m, p in named_items(raw, path, {"name", "args"}, e):
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

