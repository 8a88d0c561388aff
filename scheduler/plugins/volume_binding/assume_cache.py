"""The assume caches of VolumeBinding (upstream ``pkg/scheduler/framework/plugins/volumebinding/assume_cache.go``, now
``pkg/scheduler/util/assumecache``): PVs and PVCs as the watch delivered them, overlaid with the versions
the binder assumed at Reserve so that later pods do not choose the same PV.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from scheduler.plugins.helper.volume_util import (
    Obj,
    name_of,
    namespace_of,
    resource_version,
)

_PV = "v1.PersistentVolume"
_PVC = "v1.PersistentVolumeClaim"


class BindingError(Exception):
    """An error that fails the extension point (an Error status upstream)."""


# --- assume caches --------------------------------------------------------------------------------


class AssumeCache:
    """PVs or PVCs as the watch delivered them (the object store), overlaid with assumed versions.

    An assumed object hides the stored one while the stored one is not newer (by resourceVersion);
    once the watch delivers a newer version (e.g. the result of PreBind's write), that version wins and
    the assumption is dropped, as upstream's AssumeCache replaces latestObj on a newer informer event.
    """

    def __init__(self, kind: str, description: str, objects: Callable[[], Any]) -> None:
        self.kind = kind
        self.description = description
        self._objects = objects
        self._assumed: dict[str, Obj] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _split(key: str) -> tuple[str, str]:
        ns, sep, name = key.partition("/")
        return (ns, name) if sep else ("", key)

    @staticmethod
    def key_of(obj: Obj) -> str:
        ns = namespace_of(obj)
        return f"{ns}/{name_of(obj)}" if ns else name_of(obj)

    def _api(self, key: str) -> Obj | None:
        objects = self._objects()
        if objects is None:
            return None
        ns, name = self._split(key)
        obj: Obj | None = objects.get(self.kind, ns, name)
        return obj

    def _not_found(self, key: str) -> BindingError:
        return BindingError(f'could not find {self.description} "{key}"')

    def _latest(self, key: str, api: Obj) -> Obj:
        """Under the lock: the assumed version while the stored one is not newer."""
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        try:
            stale = resource_version(api) > resource_version(assumed)
        except ValueError:
            stale = True
        if stale:
            del self._assumed[key]
            return api
        return assumed

    def get(self, key: str) -> Obj:
        api = self._api(key)
        with self._lock:
            if api is None:
                self._assumed.pop(key, None)
                raise self._not_found(key)
            return self._latest(key, api)

    def get_api(self, key: str) -> Obj:
        api = self._api(key)
        if api is None:
            raise self._not_found(key)
        return api

    def list(self) -> list[Obj]:
        objects = self._objects()
        if objects is None:
            return []
        stored = list(objects.list(self.kind))
        with self._lock:
            return [self._latest(self.key_of(o), o) for o in stored]

    def assume(self, obj: Obj) -> None:
        key = self.key_of(obj)
        api = self._api(key)
        with self._lock:
            if api is None:
                raise self._not_found(key)
            stored = self._latest(key, api)
            try:
                new_v, stored_v = resource_version(obj), resource_version(stored)
            except ValueError as exc:
                raise BindingError(f"error parsing ResourceVersion for {self.description} {key!r}: {exc}") from None
            if new_v < stored_v:
                raise BindingError(
                    f'{self.description} "{key}" is out of sync (stored: {stored_v}, assume: {new_v})'
                )
            self._assumed[key] = obj

    def restore(self, key: str) -> None:
        with self._lock:
            self._assumed.pop(key, None)

    def assumed_count(self) -> int:
        with self._lock:
            return len(self._assumed)


def pv_cache(objects: Callable[[], Any]) -> AssumeCache:
    """The PersistentVolume assume cache (upstream NewPVAssumeCache)."""
    return AssumeCache("PersistentVolume", _PV, objects)


def pvc_cache(objects: Callable[[], Any]) -> AssumeCache:
    """The PersistentVolumeClaim assume cache (upstream NewPVCAssumeCache)."""
    return AssumeCache("PersistentVolumeClaim", _PVC, objects)
