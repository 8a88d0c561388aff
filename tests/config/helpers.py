"""Helpers for config tests: a registry in which every in-tree plugin is 'implemented', and accessors.

Most tests must not depend on which plugin modules other engineers have written so far, so they
resolve against a registry whose in-tree names all map to a dummy class (extension points then come
from the static table in scheduler/config/defaults.py, exactly as for the real modules).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.config.load import load_dict
from scheduler.config.registry import Registry
from scheduler.config.types import Profile, SchedulerConfiguration
from scheduler.plugins.names import IN_TREE

API = "kubescheduler.config.k8s.io/v1"


class DummyPlugin:
    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        self.args = args


def full_registry(missing: Mapping[str, str] | None = None) -> Registry:
    """Every in-tree plugin available, except ``missing`` (name -> import path that will not resolve)."""
    missing = dict(missing or {})
    reg = Registry(in_tree=missing)
    for name in IN_TREE:
        if name not in missing:
            reg.register(name, DummyPlugin)
    return reg


def doc(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "KubeSchedulerConfiguration", **fields}


def one_profile(plugins: Mapping[str, Any] | None = None, plugin_config: list[Any] | None = None) -> dict[str, Any]:
    prof: dict[str, Any] = {"schedulerName": "s"}
    if plugins is not None:
        prof["plugins"] = plugins
    if plugin_config is not None:
        prof["pluginConfig"] = plugin_config
    return doc(profiles=[prof])


def resolve(d: Mapping[str, Any] | None, registry: Registry | None = None) -> SchedulerConfiguration:
    return load_dict(d, registry=registry or full_registry())


def profile(d: Mapping[str, Any] | None, registry: Registry | None = None) -> Profile:
    return resolve(d, registry).profiles[0]


def names(p: Profile, point: str) -> list[str]:
    return [r.name for r in p.plugins[point]]


def scores(p: Profile) -> list[tuple[str, int]]:
    return [(r.name, r.weight) for r in p.plugins["score"]]
