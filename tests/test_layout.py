"""The layering rules of scheduler/, read from the source: the core never imports the API edge nor the
commands built on it, no module imports another that imports it back, no package (directory, or a module
directly under scheduler/) imports another that imports it back, the commands' packages (serving, whatif,
dashboard) never import the command line that imports them, and every CLI option explains itself.
Imports for annotations only (``if TYPE_CHECKING:``) count like any other: a cycle hidden from the
interpreter is still a cycle for the reader."""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path

from scheduler.app.cli import parser

ROOT = Path(__file__).resolve().parent.parent / "scheduler"
CORE = ("model", "config", "framework", "plugins", "cache", "queue", "testing")
# The edge and what is built on it: the API server's client, the command line, the secure port, the what-if
# commands and the dashboard.
OUTSIDE_THE_CORE = ("scheduler.kube", "scheduler.app", "scheduler.serving", "scheduler.whatif", "scheduler.dashboard")
# The packages the command line wires together; they never import it back.
COMMANDS = ("scheduler.serving", "scheduler.whatif", "scheduler.dashboard")
EDGE_PACKAGES = ("kopf", "aiohttp", "kubernetes")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(path: Path) -> str:
    """The package (directory) a module belongs to: itself for an ``__init__.py``."""
    return module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]


def unit_of(path: Path) -> str:
    """The unit of the package-cycle check: the package, except that a module directly under scheduler/
    (``edge.py``, ``schedule_one.py``) is a unit of its own; lumped together as ``scheduler`` they would hide
    a cycle such as plugins -> edge -> framework -> plugins."""
    return module_name(path) if path.parent == ROOT and path.name != "__init__.py" else package_of(path)


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
                edge = imported.startswith(OUTSIDE_THE_CORE) or (
                    top in EDGE_PACKAGES and not imported.startswith("kubernetes.utils")
                )
                if edge:
                    offences.append(f"{name} imports {imported}")
    assert offences == []


def test_the_core_imports_no_module_above_it() -> None:
    """The modules directly under scheduler/ (edge.py, scheduler.py, schedule_one.py, metrics.py, ...) are built
    on the core, so the core imports none of them: plugins once imported ``edge`` for two error types while
    ``edge`` imports the framework (those errors now live in the leaf ``model/apierrors``). The exception is
    the testing kit: it runs a whole scheduling cycle (``schedule_one``'s algorithm) for a plugin's author, so
    it stands above that module; it still imports no edge (the test above)."""
    mods = sources()
    above = {name for name, path in mods.items() if path.parent == ROOT and path.name != "__init__.py"}
    below = tuple(p for p in CORE if p != "testing")
    offences = [
        f"{name} imports {m}"
        for name, path in mods.items()
        if name.split(".")[1:2] and name.split(".")[1] in below
        for m in imports(path)
        if m in above
    ]
    assert offences == []


def _graph() -> dict[str, set[str]]:
    mods = sources()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        graph[name] = {m for m in imports(path) if m in mods and m != name and not name.startswith(m + ".")}
    return graph


def _package_graph() -> dict[str, set[str]]:
    """Unit (package, or top-level module) -> the units its modules import (a module importing its own
    ancestor package aside: Python imports the ancestors of every module anyway)."""
    mods = sources()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        here = graph.setdefault(unit_of(path), set())
        for m in imports(path):
            if m in mods and not name.startswith(m + "."):
                there = unit_of(mods[m])
                if there != unit_of(path):
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
    import config; the extender wire types live in a leaf the framework and the HTTP client share. A module
    directly under scheduler/ is a unit of its own (``unit_of``)."""
    assert _cycles(_package_graph()) == []


def test_top_level_modules_are_units_of_the_package_graph() -> None:
    """The check sees ``edge.py`` apart from ``scheduler/__init__.py``: a package importing it is an edge to
    ``scheduler.edge``, so a cycle through it is found."""
    graph = _package_graph()
    assert "scheduler.framework" in graph["scheduler.edge"]
    assert any("scheduler.edge" in deps for unit, deps in graph.items() if unit.startswith("scheduler.kube"))


def test_the_commands_never_import_the_command_line() -> None:
    """The command line (scheduler.app) imports serving, whatif and dashboard to wire them; they import
    nothing of it, so each can be used (and tested) without the process set-up."""
    offences = [
        f"{name} imports {m}"
        for prefix in COMMANDS
        for name, deps in _scheduler_imports(prefix).items()
        for m in deps
        if m == "scheduler.app" or m.startswith("scheduler.app.")
    ]
    assert offences == []


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
