"""Every upstream file or package that scheduler/'s docstrings and comments cite exists in the pinned Go modules.

The citation pattern: a path from its Go module's root. ``pkg/...`` (or ``cmd/...``, ``plugin/...``) is
k8s.io/kubernetes; any other module is named in full, ``k8s.io/<module>/<path>``. Neither carries a version:
the pin is e2e/cluster/gobin/go.mod's. A file of another release names that release,
``k8s.io/kubernetes@v1.16.0/pkg/...``, and is not checked (the module cache holds only the pin). A bare
``something.go`` that is not such a path breaks the pattern. Integration: the module cache is filled by the
build of the control plane binaries."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GO_MOD = ROOT / "e2e" / "cluster" / "gobin" / "go.mod"
KUBERNETES = "k8s.io/kubernetes"

# A path ending in .go, or a k8s.io/<module>/... path, not part of a longer word (API groups such as
# scheduling.k8s.io/v1 are preceded by a dot).
GO_FILE = re.compile(r"(?<![\w.@/-])([\w.@/-]*\w\.go)\b")
MODULE_PATH = re.compile(r"(?<![\w.@/-])(k8s\.io/[\w.@/-]*[\w])")
KUBERNETES_ROOTS = ("pkg/", "cmd/", "plugin/")


def module_versions() -> dict[str, str]:
    """k8s.io module -> its pinned version, from the go.mod's require directives and, winning over them (a
    staging module is required as v0.0.0), its replace directives."""
    required: dict[str, str] = {}
    replaced: dict[str, str] = {}
    for line in GO_MOD.read_text().splitlines():
        m = re.match(r"\s*(?:require\s+)?(k8s\.io/[\w.-]+)\s+(=>\s+k8s\.io/[\w.-]+\s+)?(v[\w.+-]+)", line)
        if m:
            (replaced if m.group(2) else required)[m.group(1)] = m.group(3)
    return required | replaced


def module_cache() -> Path | None:
    env = os.environ.get("GOMODCACHE")
    if env:
        return Path(env)
    go = shutil.which("go")
    if go is not None:
        out = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, check=False).stdout.strip()
        if out:
            return Path(out)
    return Path.home() / "go" / "pkg" / "mod"


def citations() -> Iterator[tuple[str, str]]:
    """(where, cited path) for every upstream path in scheduler/'s sources."""
    for path in sorted((ROOT / "scheduler").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{number}"
            for m in GO_FILE.finditer(line):
                if not m.group(1).startswith("k8s.io/"):
                    yield where, m.group(1)
            for m in MODULE_PATH.finditer(line):
                yield where, m.group(1)


def resolve(cited: str, versions: dict[str, str], cache: Path) -> Path | None:
    """Where ``cited`` is in the module cache; None for a file of another release (not checkable here)."""
    if cited.startswith(KUBERNETES_ROOTS):
        module, rest, version = KUBERNETES, cited, None
    else:
        m = re.match(r"(k8s\.io/[\w.-]+)(?:@(v[\w.+-]+))?(?:/(.*))?$", cited)
        assert m is not None, cited
        module, version, rest = m.group(1), m.group(2), m.group(3) or ""
        if module == KUBERNETES and rest == "" and version is None:
            return cache / f"{module}@{versions[module]}"
    if version is not None and version != versions.get(module):
        return None
    assert module in versions, f"{cited}: {module} is not a pinned module"
    return cache / f"{module}@{versions[module]}" / rest


def test_citation_pattern_is_recognised() -> None:
    versions = {KUBERNETES: "v1.37.2", "k8s.io/kube-scheduler": "v0.37.2"}
    cache = Path("/c")
    assert resolve("pkg/scheduler/schedule_one.go", versions, cache) == Path(
        "/c/k8s.io/kubernetes@v1.37.2/pkg/scheduler/schedule_one.go")
    assert resolve("k8s.io/kube-scheduler/framework/listers.go", versions, cache) == Path(
        "/c/k8s.io/kube-scheduler@v0.37.2/framework/listers.go")
    assert resolve("k8s.io/kubernetes@v1.16.0/pkg/scheduler/algorithm/predicates/predicates.go", versions,
                   cache) is None
    found = list(GO_FILE.finditer("as upstream's ``schedule_one.go`` and scheduling.k8s.io/v1 say"))
    assert [m.group(1) for m in found] == ["schedule_one.go"]
    assert [m.group(1) for m in MODULE_PATH.finditer("scheduling.k8s.io/v1 and k8s.io/api/core/v1")] == [
        "k8s.io/api/core/v1"]


def test_every_cited_upstream_path_exists_in_the_pinned_modules() -> None:
    versions = module_versions()
    cache = module_cache()
    pinned = cache / f"{KUBERNETES}@{versions[KUBERNETES]}" if cache is not None else None
    if pinned is None or not pinned.is_dir():
        pytest.skip(f"no Go module cache with {KUBERNETES}@{versions[KUBERNETES]} (it is filled by building the "
                    "control plane binaries: make binaries)")
    assert cache is not None
    bare, missing = [], []
    cited = list(citations())
    for where, path in cited:
        if not path.startswith("k8s.io/") and not path.startswith(KUBERNETES_ROOTS):
            bare.append(f"{where}: {path}")
            continue
        target = resolve(path, versions, cache)
        if target is not None and not target.exists():
            missing.append(f"{where}: {path}")
    assert len(cited) > 50, "the citations were not found: the pattern no longer matches the sources"
    assert bare == [], "cite upstream files by their path from the module root (pkg/... or k8s.io/<module>/...)"
    assert missing == [], "cited upstream paths not in the pinned modules"
