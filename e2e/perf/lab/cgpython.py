"""``python -m e2e.perf.lab.cgpython``: callgrind's instruction counts by Python function (CPython 3.11, x86-64).

callgrind sees all Python code as one C function, the interpreter's evaluation loop. ``run`` runs a module
(as ``python -m`` would) with ``pyframes.c`` installed as the frame evaluator: each code object gets a
trampoline of its own, a distinct address callgrind counts as a function, and at exit the addresses' names
are written to ``--map``. ``report`` reads the callgrind file such a run dumped and prints, for each Python
function, its inclusive instructions (calls from other functions) and its own (inclusive less that of the
Python functions it called, so C calls such as numpy's stay with their caller), per ``--per`` (pods).
Telling which Python function made a call needs callgrind to keep the callers of the evaluator hook:

    PYTHONHASHSEED=0 valgrind --tool=callgrind --instr-atstart=no --separate-callers20=pyframes_eval \\
        python -m e2e.perf.lab.cgpython run --map /tmp/map -- -m e2e.perf.lab.inproc --callgrind ...
    python -m e2e.perf.lab.cgpython report callgrind.out.<pid>.1 /tmp/map --per 300 [--tree schedule_one]

Calls made more than 20 C frames below their Python caller are counted as "unattributed". The hook itself
costs ~10 % more instructions (CPython no longer inlines Python-to-Python calls): rank with it, and take
the figures from a run without it.
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import os
import re
import runpy
import subprocess
import sys
import sysconfig
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

HOOK = "pyframes_eval"  # the C function callgrind must separate by callers (--separate-callersN=)
_NAMED = re.compile(r"\((\d+)\)(?: (.*))?$")  # callgrind's name compression: "(id) name", later "(id)"


def build(directory: str) -> str:
    """pyframes.c compiled against this interpreter's headers into ``directory``; the shared object's path."""
    out = os.path.join(directory, "pyframes.so")
    src = os.path.join(os.path.dirname(__file__), "pyframes.c")
    include = sysconfig.get_paths()["include"]
    subprocess.run(["cc", "-O1", "-g", "-shared", "-fPIC", f"-I{include}", "-o", out, src], check=True)
    return out


def run(map_path: str, argv: list[str]) -> None:
    """Run ``-m module args`` (or a script path and its args) under the trampolines; write the map at exit."""
    with tempfile.TemporaryDirectory() as tmp:
        lib = ctypes.PyDLL(build(tmp))  # loaded before the directory goes: the mapping stays
    atexit.register(lambda: lib.pyframes_dump(map_path.encode()))
    if lib.pyframes_install() != 0:
        raise SystemExit("pyframes: could not install the frame evaluator")
    if argv[:1] == ["-m"]:
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")


def read_map(lines: Iterable[str], strip: Iterable[str] = ()) -> dict[int, str]:
    """address -> "file:line:qualname" from pyframes_dump's lines; each prefix of ``strip`` cut from the files."""
    prefixes = tuple(strip)
    names: dict[int, str] = {}
    for line in lines:
        address, name = line.rstrip("\n").split(" ", 1)
        for prefix in prefixes:
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        names[int(address, 16)] = name
    return names


@dataclass
class Profile:
    """Instructions by Python function: ``inclusive`` and ``own`` (less its Python callees'), ``calls``; ``edges``
    (caller, callee) -> the callee's inclusive instructions in those calls; ``unattributed``: calls whose Python
    caller was not among the kept callers."""

    inclusive: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    own: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    edges: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    edge_calls: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    unattributed: int = 0


def _python(names: dict[int, str], element: str) -> str | None:
    """The Python function a callgrind name (or context element) is the trampoline of, if any."""
    base = element.split("'", 1)[0]
    if not base.startswith("0x"):
        return None
    return names.get(int(base, 16))


def parse(lines: Iterable[str], names: dict[int, str]) -> Profile:
    """A callgrind file's calls into the trampolines, each credited to the nearest Python function among the
    callers kept in the hook's context name ("pyframes_eval'caller'caller's caller'...")."""
    profile = Profile()
    compressed: dict[str, str] = {}

    def name(text: str) -> str:
        m = _NAMED.match(text)
        if m is None:
            return text
        if m.group(2) is not None:
            compressed[m.group(1)] = m.group(2)
        return compressed[m.group(1)]

    fn = cfn = ""
    pending = 0  # the call count of a calls= line whose cost line comes next
    child: dict[str, int] = defaultdict(int)
    for line in lines:
        if line.startswith("fn="):
            fn = name(line[3:].rstrip("\n"))
        elif line.startswith("cfn="):
            cfn = name(line[4:].rstrip("\n"))
        elif line.startswith("calls="):
            pending = int(line[6:].split()[0])
        elif pending and line[:1] in "0123456789+-*":
            count, pending = pending, 0
            callee = _python(names, cfn)
            if callee is None or not fn.startswith(HOOK):
                continue
            caller = next((p for p in map(lambda e: _python(names, e), fn.split("'")[1:]) if p is not None), None)
            if caller == callee:
                continue  # recursion: counted at the outermost call
            cost = int(line.split()[1])
            profile.inclusive[callee] += cost
            profile.calls[callee] += count
            if caller is None:
                profile.unattributed += cost
            else:
                child[caller] += cost
                profile.edges[(caller, callee)] += cost
                profile.edge_calls[(caller, callee)] += count
    profile.own = {f: v - child[f] for f, v in profile.inclusive.items()}
    return profile


def ranking(profile: Profile, per: int, limit: int, by_own: bool = True) -> list[str]:
    """Lines "own inclusive calls function", ``per`` unit, the ``limit`` largest first."""
    key = profile.own if by_own else profile.inclusive
    out = [f"unattributed {profile.unattributed / per:,.0f}", f"{'own':>10} {'inclusive':>11} {'calls':>8}  function"]
    for f in sorted(key, key=lambda f: -key[f])[:limit]:
        out.append(f"{profile.own[f] / per:10,.0f} {profile.inclusive[f] / per:11,.0f} "
                   f"{profile.calls[f] / per:8.2f}  {f}")
    return out


def tree(profile: Profile, root: str, per: int, threshold: float) -> list[str]:
    """The call tree below each function whose name contains ``root``: "inclusive function (own, calls)" for
    callees of at least ``threshold`` instructions per unit, indented by depth, largest first (a function
    already on the path is not expanded again)."""
    callees: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for (caller, callee), cost in profile.edges.items():
        callees[caller].append((cost, callee))
    out: list[str] = []

    def walk(f: str, depth: int, path: frozenset[str]) -> None:
        for cost, callee in sorted(callees[f], reverse=True):
            if cost < threshold * per or callee in path:
                continue
            out.append(f"{cost / per:10,.0f} {'  ' * depth}{callee} (own {profile.own[callee] / per:,.0f}, "
                       f"{profile.edge_calls[(f, callee)] / per:.2f} calls)")
            walk(callee, depth + 1, path | {callee})

    for f in profile.inclusive:
        if root in f:
            out.append(f"{profile.inclusive[f] / per:10,.0f} {f} (own {profile.own[f] / per:,.0f})")
            walk(f, 1, frozenset({f}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a module or script with a trampoline per Python function")
    r.add_argument("--map", required=True, help="where the addresses' names are written at exit")
    r.add_argument("argv", nargs=argparse.REMAINDER, help="-- -m module args..., or -- script args...")
    p = sub.add_parser("report", help="instructions by Python function from a callgrind file of `run`")
    p.add_argument("callgrind")
    p.add_argument("map")
    p.add_argument("--per", type=int, default=1, help="divide every figure by this (measured pods)")
    p.add_argument("--limit", type=int, default=60)
    p.add_argument("--inclusive", action="store_true", help="rank by inclusive instructions, not own")
    p.add_argument("--tree", default=None, help="print the call tree below the functions whose name has this")
    p.add_argument("--threshold", type=float, default=3000, help="the tree's smallest edge, per unit")
    args = ap.parse_args()
    if args.command == "run":
        argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        run(args.map, argv)
        return
    with open(args.map, encoding="utf-8") as f:
        names = read_map(f, (os.getcwd() + os.sep, *sorted({p + os.sep for p in sys.path if p}, key=len,
                                                             reverse=True)))
    with open(args.callgrind, encoding="utf-8") as f:
        profile = parse(f, names)
    lines = tree(profile, args.tree, args.per, args.threshold) if args.tree else ranking(
        profile, args.per, args.limit, not args.inclusive)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
