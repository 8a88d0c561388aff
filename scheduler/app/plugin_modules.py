"""Which code a configuration may make `py-scheduler run` import: the operator decides at start.

A configuration names out-of-tree plugins by import path (``pyScheduler.registry`` or a profile's plugin
name), and importing a module runs it. So `run` imports plugins only from the modules the operator
allowed when starting it: those of ``--plugin-module`` and those that installed packages declare in the
``py_scheduler.plugins`` entry-point group. A configuration naming any other module is refused, naming the
field, and the module is never imported. After the start-up configuration has loaded, a reload may use
only the modules it used, and only its extenders (which receive every pod and node), unless
``--allow-reload-plugin-modules`` / ``--allow-reload-extenders`` say otherwise.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata

import structlog

log = structlog.get_logger(__name__)

ENTRY_POINT_GROUP = "py_scheduler.plugins"


def add_flags(r: argparse.ArgumentParser) -> None:
    add_module_flag(r)
    r.add_argument("--allow-reload-plugin-modules", action="store_true",
                   help="let a configuration reload import allowed plugin modules the start-up configuration did "
                        "not use (default: a reload may use only those)")
    r.add_argument("--allow-reload-extenders", action="store_true",
                   help="let a configuration reload add extenders (urlPrefix) the start-up configuration did not "
                        "have (default: refused; extenders receive every pod and node)")


def add_module_flag(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """--plugin-module, for `run` and for `simulate` (where, given, it restricts as `run` does)."""
    p.add_argument("--plugin-module", action="append", default=[], metavar="MODULE",
                   help=f"{prefix}a module (with its submodules) that out-of-tree plugins may be imported from "
                        f"(repeatable); the modules of installed {ENTRY_POINT_GROUP} entry points are allowed too, "
                        "no other")


def entry_point_modules() -> list[str]:
    """The modules of the installed packages' plugin entry points (``name = "module:Class"``)."""
    modules = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        module = ep.value.partition(":")[0].strip()
        if module:
            modules.append(module)
    return modules


def restrict(args: argparse.Namespace) -> None:
    """Before the start-up configuration loads: plugins only from the allowed modules."""
    from scheduler.config.registry import PLUGIN_MODULES

    allowed = sorted({*args.plugin_module, *entry_point_modules()})
    PLUGIN_MODULES.allow_only(allowed)
    log.info("out-of-tree plugin modules allowed", modules=allowed)


def seal(args: argparse.Namespace) -> None:
    """After it loaded: reloads use only the modules it used, unless --allow-reload-plugin-modules."""
    from scheduler.config.registry import PLUGIN_MODULES

    if not args.allow_reload_plugin_modules:
        PLUGIN_MODULES.seal("a reload may add plugin modules only with --allow-reload-plugin-modules")


@contextmanager
def what_if_modules(modules: list[str]) -> Iterator[None]:
    """`simulate --plugin-module`: plugins load as they would in `run` started with the same flags (only
    from these modules and the entry points'), so a candidate configuration that `run` would refuse is
    refused before it is deployed. Without the flag a what-if loads what its configuration names (it runs
    on the operator's machine, with the operator's files)."""
    from scheduler.config.registry import PLUGIN_MODULES

    if not modules:
        yield
        return
    PLUGIN_MODULES.allow_only(sorted({*modules, *entry_point_modules()}))
    try:
        yield
    finally:
        PLUGIN_MODULES.allow_all()
