"""e2e/perf/lab/cgpython.py: callgrind's calls into the per-function trampolines credited to the right Python
functions, and the shim itself naming the functions a program ran."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.perf.lab import cgpython

ROOT = Path(__file__).resolve().parents[2]

# f (0x1000) calls g (0x2000) twice and h (0x3000) once; g calls h; g also recurses ('2); the top call of f
# comes from outside any kept Python caller. Name compression as callgrind writes it: "(id) name" once.
CALLGRIND = """\
events: Ir
fn=(1) pyframes_eval'_PyEval_Vector'PyObject_Call
calls=1 0
cfn=(2) 0x0000000000001000
0 1000
fn=(3) pyframes_eval'_PyEval_Vector'_PyEval_EvalFrameDefault'0x0000000000001000'pyframes_eval
calls=2 0
cfn=(4) 0x0000000000002000
0 400
calls=1 0
cfn=(5) 0x0000000000003000
0 100
fn=(6) pyframes_eval'2'_PyEval_EvalFrameDefault'0x0000000000002000
cfn=(5)
calls=3 0
0 90
cfn=(7) 0x0000000000002000'2
calls=1 0
0 50
fn=(1)
0 7
"""

NAMES = {0x1000: "a.py:1:f", 0x2000: "a.py:9:g", 0x3000: "b.py:4:h"}


def test_calls_are_credited_to_the_nearest_python_caller() -> None:
    profile = cgpython.parse(CALLGRIND.splitlines(keepends=True), NAMES)
    assert dict(profile.inclusive) == {"a.py:1:f": 1000, "a.py:9:g": 400, "b.py:4:h": 190}
    assert profile.own == {"a.py:1:f": 500, "a.py:9:g": 310, "b.py:4:h": 190}
    assert dict(profile.calls) == {"a.py:1:f": 1, "a.py:9:g": 2, "b.py:4:h": 4}
    assert profile.edges[("a.py:9:g", "b.py:4:h")] == 90
    assert profile.unattributed == 1000


def test_ranking_and_tree_per_unit() -> None:
    profile = cgpython.parse(CALLGRIND.splitlines(keepends=True), NAMES)
    lines = cgpython.ranking(profile, per=10, limit=2)
    assert lines[2].split() == ["50", "100", "0.10", "a.py:1:f"]
    assert len(lines) == 4
    tree = cgpython.tree(profile, "a.py:1:f", per=10, threshold=5)
    assert [line.split()[:2] for line in tree] == [["100", "a.py:1:f"], ["40", "a.py:9:g"], ["9", "b.py:4:h"],
                                                   ["10", "b.py:4:h"]]
    assert [len(line[11:]) - len(line[11:].lstrip()) for line in tree] == [0, 2, 4, 2]  # h below g, then below f
    assert tree[1].endswith("(own 31, 0.20 calls)")


def test_map_lines_and_prefixes() -> None:
    names = cgpython.read_map(["7f00 /repo/scheduler/x.py:3:F.m\n", "7f10 <string>:1:<module>\n"], ["/repo/"])
    assert names == {0x7F00: "scheduler/x.py:3:F.m", 0x7F10: "<string>:1:<module>"}


@pytest.mark.skipif(shutil.which("cc") is None or sys.version_info[:2] != (3, 11) or sys.platform != "linux",
                    reason="the shim is built with cc against CPython 3.11's internal frame layout (x86-64 Linux)")
def test_the_shim_names_the_functions_a_program_ran(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text("def leaf(x):\n    return x + 1\n\n\n"
                      "def outer():\n    return sum(leaf(i) for i in range(3))\n\n\nprint(outer())\n")
    map_path = tmp_path / "map"
    done = subprocess.run([sys.executable, "-m", "e2e.perf.lab.cgpython", "run", "--map", str(map_path), "--",
                           str(script)], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "6"
    names = cgpython.read_map(map_path.read_text().splitlines())
    qualnames = {name.rsplit(":", 1)[1] for name in names.values()}
    assert {"leaf", "outer", "outer.<locals>.<genexpr>"} <= qualnames
    assert len(set(names)) == len(names)  # one trampoline a code object
