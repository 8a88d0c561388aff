"""docs/testing-kit.md's worked example runs as written (with the example plugin's sources on the path)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def example_on_path() -> Iterator[None]:
    src = str(ROOT / "examples" / "node-label-score" / "src")
    sys.path.insert(0, src)
    try:
        yield
    finally:
        sys.path.remove(src)


@pytest.mark.usefixtures("example_on_path")
def test_the_worked_example_passes() -> None:
    text = (ROOT / "docs" / "testing-kit.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/testing-kit.md", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert len(tests) == 3
    for test in tests:
        test()
