"""Plugin registry: the map from a plugin name to the factory that builds it (upstream
``pkg/scheduler/framework/runtime/registry.go``), and the building of a configuration's registry.

Why here and not in the framework as upstream: the config loader resolves plugins by this registry (to
expand MultiPoint for out-of-tree plugins and to name a missing plugin where it was enabled), and the
config imports no framework or plugin module; the framework takes any mapping of names to factories.

Why lazily: importing every in-tree plugin up front would make one broken module break every profile,
including profiles that never use it. The registry only records import paths (the in-tree ones from
``plugins/names``) and imports a module the first time a factory is asked for; a missing module or class
becomes :class:`PluginNotAvailable`, which the config loader turns into an error naming the plugin.

Third-party plugins are referenced by Python import path, either directly as the plugin name
(``"my.module:MyPlugin"``) or registered under a name (``Registry.register("MyPlugin",
"my.module:MyPlugin")``, which is what the ``pyScheduler.registry`` config extension does).

A factory is anything callable as ``factory(args, handle)`` (the framework's ``PluginFactory``); a plugin
class constructed as ``Cls(args, handle)`` is its own factory, so ``factory(name)`` returns the class.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from scheduler.config.types import SchedulerConfiguration
from scheduler.plugins.names import IN_TREE

__all__ = [
    "PLUGIN_MODULES",
    "DeclaresExtensionPoints",
    "PluginModules",
    "PluginNotAvailable",
    "Registry",
    "build_registry",
    "is_import_path",
]

# What the framework calls to build a plugin (its ``PluginFactory`` protocol: ``factory(args, handle)``).
PluginFactory = Callable[[Any, Any], Any]


@runtime_checkable
class DeclaresExtensionPoints(Protocol):
    """A plugin factory that is not a class names the extension points (``filter``, ``score``, ...) its
    plugin implements, so the config loader can expand MultiPoint for it (classes are inspected)."""

    extension_points: Collection[str]


_IMPORT_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")


def is_import_path(name: str) -> bool:
    """True for ``"pkg.mod:Class"``: such a plugin name is resolved by import rather than by lookup."""
    return bool(_IMPORT_PATH.match(name))


class PluginNotAvailable(LookupError):
    """The registry cannot provide this plugin: unknown name, missing module or missing class."""

    def __init__(self, plugin: str, reason: str) -> None:
        super().__init__(f"plugin {plugin!r} is not available: {reason}")
        self.plugin = plugin
        self.reason = reason


IN_TREE_PACKAGE = "scheduler.plugins"


class PluginModules:
    """The modules plugins may be imported from: the in-tree package always; others only when allowed.

    Why: a configuration (a file, a ConfigMap, a reload of either) names plugins by import path, and an
    import runs the module's top-level code: whoever could edit the ConfigMap could run ``os:system``.
    `run` allows the modules of --plugin-module and of the ``py_scheduler.plugins`` entry points, then
    ``seal``s the set after loading its start-up configuration, so that a reload may use only modules
    that configuration used (unless the operator allowed more). ``None`` (the default, for the library,
    the what-if commands and tests) allows every module."""

    def __init__(self) -> None:
        self._allowed: frozenset[str] | None = None  # by the operator; None: every module
        self._used: frozenset[str] | None = None  # once sealed: the allowed modules the start-up configuration used
        self._imported: set[str] = set()
        self.sealed_hint = ""

    def allow_only(self, modules: Iterator[str] | list[str] | frozenset[str]) -> None:
        self._allowed = frozenset(modules)
        self._used = None
        self.sealed_hint = ""

    def allow_all(self) -> None:
        self._allowed = self._used = None
        self.sealed_hint = ""

    def seal(self, hint: str) -> None:
        """From now on allow only the out-of-tree modules imported so far; ``hint`` says how to allow more."""
        self._used = frozenset(self._imported)
        self.sealed_hint = hint

    def refusal(self, module: str) -> str | None:
        """Why ``module`` may not be imported, or None when it may."""
        if module == IN_TREE_PACKAGE or module.startswith(IN_TREE_PACKAGE + "."):
            return None
        if not _within(module, self._allowed):
            return (f"module {module!r} is not an allowed plugin module (allow it with --plugin-module or an entry "
                    f"point in the py_scheduler.plugins group); it was not imported")
        if not _within(module, self._used):
            return f"module {module!r} was not used by the start-up configuration ({self.sealed_hint})"
        return None

    def imported(self, module: str) -> None:
        if not (module == IN_TREE_PACKAGE or module.startswith(IN_TREE_PACKAGE + ".")):
            self._imported.add(module)


def _within(module: str, packages: frozenset[str] | None) -> bool:
    """``module`` is one of ``packages`` or inside one (None: no restriction)."""
    return packages is None or any(module == m or module.startswith(m + ".") for m in packages)


# The process's policy: `run` restricts it at start (app/plugin_modules.py).
PLUGIN_MODULES = PluginModules()


def _import(plugin: str, path: str) -> Any:
    """Import ``module:attr``, if PLUGIN_MODULES allows the module (else it is not imported at all). Only
    a missing module *itself* means 'not available'.

    An ImportError raised from inside an existing plugin module (a bug in it, or a missing dependency)
    is re-raised untouched, so a broken plugin is never mistaken for an unimplemented one.
    """
    module_name, _, attr = path.partition(":")
    refusal = PLUGIN_MODULES.refusal(module_name)
    if refusal is not None:
        raise PluginNotAvailable(plugin, refusal)
    PLUGIN_MODULES.imported(module_name)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            raise PluginNotAvailable(plugin, f"module {module_name!r} does not exist") from None
        raise
    try:
        return getattr(module, attr)
    except AttributeError:
        raise PluginNotAvailable(plugin, f"module {module_name!r} has no attribute {attr!r}") from None


def _is_plugin_factory(obj: object) -> bool:
    """A plugin class (its ``name`` a string, as the framework files weights and args by it), or a factory
    function that declares its extension points: never an arbitrary callable such as ``os:system``."""
    if isinstance(obj, type):
        return isinstance(getattr(obj, "name", None), str)
    return callable(obj) and isinstance(getattr(obj, "extension_points", None), (list, tuple, set, frozenset))


class Registry:
    """Name -> plugin factory, resolved lazily.

    Entries are either import paths (strings, imported on first use) or factories registered
    directly (tests, the simulator, embedding code). A name that is itself an import path
    (``"pkg.mod:Class"``) needs no entry.
    """

    def __init__(self, in_tree: Mapping[str, str] | None = None) -> None:
        self._paths: dict[str, str] = dict(IN_TREE if in_tree is None else in_tree)
        self._factories: dict[str, PluginFactory] = {}

    def copy(self) -> Registry:
        """An independent registry with the same entries (the loader adds config entries to a copy)."""
        r = Registry(self._paths)
        r._factories = dict(self._factories)
        return r

    def register(self, name: str, factory: PluginFactory | str) -> None:
        """Add a plugin. ``factory`` is a factory/class or an ``"pkg.mod:Class"`` import path.

        Registering a name twice is an error, as upstream's Registry.Merge: silently replacing an
        in-tree plugin would make a profile run something other than what its name says.
        """
        if not name:
            raise ValueError("plugin name must not be empty")
        if name in self._paths or name in self._factories:
            raise ValueError(f"a plugin named {name!r} is already registered")
        if isinstance(factory, str):
            if not is_import_path(factory):
                raise ValueError(f"plugin {name!r}: {factory!r} is not an import path of the form 'pkg.module:Class'")
            self._paths[name] = factory
        else:
            if not callable(factory):
                raise ValueError(f"plugin {name!r}: factory must be callable")
            self._factories[name] = factory

    def known(self, name: str) -> bool:
        """True when the name is registered or is an import path; says nothing about importability."""
        return name in self._factories or name in self._paths or is_import_path(name)

    def import_path(self, name: str) -> str | None:
        """The import path behind a name, or None for directly registered factories and unknown names."""
        if name in self._factories:
            return None
        if name in self._paths:
            return self._paths[name]
        return name if is_import_path(name) else None

    def factory(self, name: str) -> PluginFactory:
        """The factory for ``name``; raises PluginNotAvailable naming the plugin when it cannot be had."""
        f = self._factories.get(name)
        if f is not None:
            return f
        path = self.import_path(name)
        if path is None:
            raise PluginNotAvailable(name, "no plugin of that name is registered")
        obj = _import(name, path)
        if not _is_plugin_factory(obj):
            raise PluginNotAvailable(
                name, f"{path!r} is not a plugin class (a class with a string 'name') nor a factory that "
                      "declares its extension_points")
        factory: PluginFactory = obj
        return factory

    def get(self, name: str, default: PluginFactory | None = None) -> PluginFactory | None:
        """Mapping-style lookup for the framework runtime: None when the plugin cannot be had."""
        try:
            return self.factory(name)
        except PluginNotAvailable:
            return default

    def available(self, name: str) -> bool:
        """True when ``factory(name)`` would succeed (imports the module if needed)."""
        try:
            self.factory(name)
        except PluginNotAvailable:
            return False
        return True

    def names(self) -> Iterator[str]:
        """Registered names (not counting ad-hoc import-path names)."""
        yield from self._paths
        yield from (n for n in self._factories if n not in self._paths)


def build_registry(cfg: SchedulerConfiguration, base: Registry | None = None) -> Registry:
    """The registry a framework should build ``cfg``'s plugins from: ``base`` plus the config's entries
    (upstream: the in-tree registry merged with the out-of-tree one)."""
    reg = (base or Registry()).copy()
    for name, path in cfg.plugin_registry.items():
        if not reg.known(name) or reg.import_path(name) != path:
            reg.register(name, path)
    return reg
