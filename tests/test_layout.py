"""The layering rules of scheduler/, read from the source: the core never imports the API edge, no
module imports another that imports it back, no package (directory) imports another that imports it
back, and every CLI option explains itself. Imports for annotations only (``if TYPE_CHECKING:``) count
like any other: a cycle hidden from the interpreter is still a cycle for the reader."""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path

from scheduler.app.cli import parser

ROOT = Path(__file__).resolve().parent.parent / "scheduler"
CORE = ("model", "config", "framework", "plugins", "cache", "queue", "testing")
EDGE_PACKAGES = ("kopf", "aiohttp", "kubernetes")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(path: Path) -> str:
    """The package (directory) a module belongs to: itself for an ``__init__.py``."""
    return module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]


def imports(path: Path) -> Iterator[str]:
    """Absolute names of everything the module imports, wherever the import statement stands: a lazy
    import inside a function, or one under ``if TYPE_CHECKING:``, still couples the modules."""
    tree = ast.parse(path.read_text())
    package = package_of(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{a.name}" for a in node.names)


def sources() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def test_core_never_imports_the_api_edge() -> None:
    offences = []
    for name, path in sources().items():
        if name.split(".")[1:2] and name.split(".")[1] in CORE:
            for imported in imports(path):
                top = imported.split(".")[0]
                edge = imported.startswith(("scheduler.kube", "scheduler.app")) or (
                    top in EDGE_PACKAGES and not imported.startswith("kubernetes.utils")
                )
                if edge:
                    offences.append(f"{name} imports {imported}")
    assert offences == []


def _graph() -> dict[str, set[str]]:
    mods = sources()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        graph[name] = {m for m in imports(path) if m in mods and m != name and not name.startswith(m + ".")}
    return graph


def _package_graph() -> dict[str, set[str]]:
    """Package -> the packages its modules import (a module importing its own ancestor package aside:
    Python imports the ancestors of every module anyway)."""
    mods = sources()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        here = graph.setdefault(package_of(path), set())
        for m in imports(path):
            if m in mods and not name.startswith(m + "."):
                there = package_of(mods[m])
                if there != package_of(path):
                    here.add(there)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_no_package_cycles() -> None:
    """As upstream's Go packages: config imports the leaf ``plugins/names``, never the plugins that
    import config; the extender wire types live in a leaf the framework and the HTTP client share."""
    assert _cycles(_package_graph()) == []


def _scheduler_imports(prefix: str) -> dict[str, set[str]]:
    """Module -> the scheduler modules it imports, for the modules under ``prefix``."""
    mods = sources()
    return {
        name: {m for m in imports(path) if m in mods and m != name and not name.startswith(m + ".")}
        for name, path in mods.items()
        if name == prefix or name.startswith(prefix + ".")
    }


def test_config_imports_only_model_and_the_leaf_plugin_names() -> None:
    """Upstream's config imports ``plugins/names`` alone of the framework's packages."""
    allowed = ("scheduler.config", "scheduler.model", "scheduler.plugins.names")
    offences = [
        f"{name} imports {m}"
        for name, deps in _scheduler_imports("scheduler.config").items()
        for m in deps
        if not any(m == a or m.startswith(a + ".") for a in allowed)
    ]
    assert offences == []


def test_leaves_import_nothing_of_their_peers() -> None:
    """``plugins/names`` imports no scheduler module; the extender wire types only the model."""
    assert _scheduler_imports("scheduler.plugins.names") == {"scheduler.plugins.names": set()}
    wire = _scheduler_imports("scheduler.framework.extenderv1")["scheduler.framework.extenderv1"]
    assert wire and all(m.startswith("scheduler.model") for m in wire)


def test_cycle_detection_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _options(p: argparse.ArgumentParser, where: str = "py-scheduler") -> Iterator[tuple[str, argparse.Action]]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{where} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield where, action


def test_every_cli_option_has_help() -> None:
    missing = [f"{where} {'/'.join(a.option_strings) or a.dest}" for where, a in _options(parser()) if not a.help]
    assert missing == []
